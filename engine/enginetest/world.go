package enginetest

import (
	"fmt"

	"github.com/weexcore/exchange/engine"
)

// FeeUID is the fee account of the standard world.
const FeeUID = 1

// Coins returns the standard world's coins: USDT (scale 6), BTC and ETH
// (scale 8).
func Coins() []engine.Coin {
	return []engine.Coin{
		{ID: 0, Name: "USDT", ExternalID: 2, Scale: 6},
		{ID: 1, Name: "BTC", ExternalID: 1, Scale: 8},
		{ID: 2, Name: "ETH", ExternalID: 3, Scale: 8},
	}
}

// MarketConfigs returns the standard world's spot markets. They differ on
// purpose: a tick that is not a power of ten (ETHUSDT 0.05), a zero maker
// fee, asymmetric price bands, a crypto quote coin, a disabled market.
//
//	id symbol   tick    step   min    max   taker  maker  band(b/s)  caps(b/s) fallback
//	0  BTCUSDT  0.01    0.0001 0.001  100   0.002  0.001  0.1/0.1    5/3       0.05
//	1  ETHUSDT  0.05    0.01   0.01   1000  0.001  0      0.05/0.2   100/100   0.1
//	2  ETHBTC   0.00001 0.001  0.001  10000 0.0015 0.0005 0.1/0.1    500/500   0.02
//	3  OFFUSDT  0.01    0.0001 0.001  100   0.002  0.001  0.1/0.1    5/3       0.05 (trading disabled)
func MarketConfigs() []engine.SpotConfig {
	return []engine.SpotConfig{
		{Symbol: "BTCUSDT", BaseAsset: "BTC", QuoteAsset: "USDT", TickSize: "0.01", StepSize: "0.0001",
			MinTradeAmount: "0.001", MaxTradeAmount: "100", TakerFeeRate: "0.002", MakerFeeRate: "0.001",
			BuyLimitPriceRatio: "0.1", SellLimitPriceRatio: "0.1", MarketBuyLimitSize: "5", MarketSellLimitSize: "3",
			MarketFallbackPriceRatio: "0.05", EnableTrade: true},
		{Symbol: "ETHUSDT", BaseAsset: "ETH", QuoteAsset: "USDT", TickSize: "0.05", StepSize: "0.01",
			MinTradeAmount: "0.01", MaxTradeAmount: "1000", TakerFeeRate: "0.001", MakerFeeRate: "0",
			BuyLimitPriceRatio: "0.05", SellLimitPriceRatio: "0.2", MarketBuyLimitSize: "100", MarketSellLimitSize: "100",
			MarketFallbackPriceRatio: "0.1", EnableTrade: true},
		{Symbol: "ETHBTC", BaseAsset: "ETH", QuoteAsset: "BTC", TickSize: "0.00001", StepSize: "0.001",
			MinTradeAmount: "0.001", MaxTradeAmount: "10000", TakerFeeRate: "0.0015", MakerFeeRate: "0.0005",
			BuyLimitPriceRatio: "0.1", SellLimitPriceRatio: "0.1", MarketBuyLimitSize: "500", MarketSellLimitSize: "500",
			MarketFallbackPriceRatio: "0.02", EnableTrade: true},
		{Symbol: "OFFUSDT", BaseAsset: "BTC", QuoteAsset: "USDT", TickSize: "0.01", StepSize: "0.0001",
			MinTradeAmount: "0.001", MaxTradeAmount: "100", TakerFeeRate: "0.002", MakerFeeRate: "0.001",
			BuyLimitPriceRatio: "0.1", SellLimitPriceRatio: "0.1", MarketBuyLimitSize: "5", MarketSellLimitSize: "3",
			MarketFallbackPriceRatio: "0.05", EnableTrade: false},
	}
}

// Specs parses configs over coins (market i gets MarketID i).
func Specs(coins []engine.Coin, configs []engine.SpotConfig) []*engine.MarketSpec {
	var specs []*engine.MarketSpec
	for i, c := range configs {
		var base, quote engine.Coin
		for _, k := range coins {
			if k.Name == c.BaseAsset {
				base = k
			}
			if k.Name == c.QuoteAsset {
				quote = k
			}
		}
		s, err := engine.NewMarketSpec(engine.MarketID(i), c, base, quote)
		if err != nil {
			panic(fmt.Sprintf("enginetest: %v", err))
		}
		specs = append(specs, s)
	}
	return specs
}

// SmallCoins are the coins of the runtime's and the journal's tests: BTC
// and ETH (scale 8), USDT (scale 6).
func SmallCoins() []engine.Coin {
	return []engine.Coin{
		{ID: 0, Name: "BTC", ExternalID: 1, Scale: 8},
		{ID: 1, Name: "ETH", ExternalID: 2, Scale: 8},
		{ID: 2, Name: "USDT", ExternalID: 3, Scale: 6},
	}
}

// SmallSpecs returns the first n of BTCUSDT, ETHUSDT and ETHBTC over
// SmallCoins: step 0.0001, tick 0.01 (0.0001 for ETHBTC), taker 0.1%,
// maker 0.05%, price bands of 50%.
func SmallSpecs(n int) []*engine.MarketSpec {
	var cs []engine.SpotConfig
	for _, p := range [][3]string{{"BTC", "USDT", "0.01"}, {"ETH", "USDT", "0.01"}, {"ETH", "BTC", "0.0001"}}[:n] {
		cs = append(cs, engine.SpotConfig{Symbol: p[0] + p[1], BaseAsset: p[0], QuoteAsset: p[1],
			TickSize: p[2], StepSize: "0.0001", MinTradeAmount: "0.0001", MaxTradeAmount: "1000",
			TakerFeeRate: "0.001", MakerFeeRate: "0.0005", BuyLimitPriceRatio: "0.5", SellLimitPriceRatio: "0.5",
			MarketBuyLimitSize: "100", MarketSellLimitSize: "100", MarketFallbackPriceRatio: "0.05", EnableTrade: true})
	}
	return Specs(SmallCoins(), cs)
}

// Cluster is engines sharing one Accounts: market engines (market i on
// shard i % shards) and a ledger engine (shard number shards) for deposits,
// withdrawals and users.
type Cluster struct {
	Acc     *engine.Accounts
	Engines []*engine.Engine // market shards
	Ledger  *engine.Engine
	All     []*engine.Engine // market shards then the ledger
}

// NewCluster builds a cluster over the standard world split into shards.
func NewCluster(shards int) *Cluster {
	coins := Coins()
	specs := Specs(coins, MarketConfigs())
	cl := &Cluster{Acc: engine.NewAccounts(coins)}
	for s := 0; s < shards; s++ {
		var own []*engine.MarketSpec
		for _, m := range specs {
			if int(m.ID)%shards == s {
				own = append(own, m)
			}
		}
		cl.Engines = append(cl.Engines, engine.New(s, cl.Acc, own, FeeUID))
	}
	cl.Ledger = engine.New(shards, cl.Acc, nil, FeeUID)
	cl.All = append(append([]*engine.Engine(nil), cl.Engines...), cl.Ledger)
	return cl
}

// Route returns the engine that applies c and its shard number.
func (cl *Cluster) Route(c *engine.Cmd) *engine.Engine {
	if c.Kind == engine.CmdPlace || c.Kind == engine.CmdCancel || c.Kind == engine.CmdCancelAll || c.Kind == engine.CmdSetRules {
		for _, e := range cl.Engines {
			if e.Owns(c.Market) {
				return e
			}
		}
		// an unknown market: any market shard answers INVALID_SYMBOL
		return cl.Engines[0]
	}
	return cl.Ledger
}
