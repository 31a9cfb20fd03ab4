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

// InsuranceUID is the insurance account of the contract world
// (NewContractCluster). It trades like any user.
const InsuranceUID = 2

// ContractConfigs returns two perpetuals, the first of the contract
// world's (WorldContractConfigs), which get the market ids
// engine.ContractBase + i. They differ on purpose: a USDT- and
// a BTC-margined contract, a tick that is not a power of ten, a zero maker
// fee, tiny notionals where every rounding shows (ETHBTC: one tick times
// one step is one satoshi), a position limit below the order size limit.
//
//	id  symbol       tick    step   min    max  maxPos taker   maker  lev(min/max/def) band  fallback
//	512 cmt_btcusdt  0.5     0.0001 0.0001 10   4      0.0006  0.0002 1/100/20         0.05  0.05
//	513 cmt_ethbtc   0.00001 0.001  0.001  500  800    0.001   0      2/50/10          0.1   0.02
func ContractConfigs() []engine.ContractConfig {
	return []engine.ContractConfig{
		{Symbol: "BTCUSDT", V2Symbol: "cmt_btcusdt", ContractID: 1, BaseAsset: "BTC", QuoteAsset: "USDT", MarginAsset: "USDT",
			ContractVal: "1", TickSize: "0.5", StepSize: "0.0001", MinOrderSize: "0.0001", MaxOrderSize: "10", MaxPositionSize: "4",
			MakerFeeRate: "0.0002", TakerFeeRate: "0.0006", MinLeverage: 1, MaxLeverage: 100, DefaultLeverage: 20,
			MaintenanceMarginRate: "0.005", BuyLimitPriceRatio: "0.05", SellLimitPriceRatio: "0.05",
			MarketFallbackPriceRatio: "0.05", IndexSymbol: "BTCUSDT", FundingIntervalHours: 8,
			InterestRate: "0.0001", MaxFundingRate: "0.0075", EnableTrade: true},
		{Symbol: "ETHBTC", V2Symbol: "cmt_ethbtc", ContractID: 2, BaseAsset: "ETH", QuoteAsset: "BTC", MarginAsset: "BTC",
			ContractVal: "1", TickSize: "0.00001", StepSize: "0.001", MinOrderSize: "0.001", MaxOrderSize: "500", MaxPositionSize: "800",
			MakerFeeRate: "0", TakerFeeRate: "0.001", MinLeverage: 2, MaxLeverage: 50, DefaultLeverage: 10,
			MaintenanceMarginRate: "0.01", BuyLimitPriceRatio: "0.1", SellLimitPriceRatio: "0.1",
			MarketFallbackPriceRatio: "0.02", IndexSymbol: "ETHBTC", FundingIntervalHours: 8,
			InterestRate: "0.0001", MaxFundingRate: "0.0075", EnableTrade: true},
	}
}

// WorldContractConfigs returns the perpetuals of the contract world
// (NewContractCluster): ContractConfigs and a second USDT-margined one, so
// that a cross account can span two contracts.
//
//	id  symbol       tick  step  min   max  maxPos taker   maker  lev(min/max/def) mmr    band  fallback
//	514 cmt_ethusdt  0.01  0.001 0.001 100  40     0.0005  0.0002 1/75/10          0.0075 0.05  0.05
func WorldContractConfigs() []engine.ContractConfig {
	eth := engine.ContractConfig{Symbol: "ETHUSDT", V2Symbol: "cmt_ethusdt", ContractID: 3, BaseAsset: "ETH", QuoteAsset: "USDT", MarginAsset: "USDT",
		ContractVal: "1", TickSize: "0.01", StepSize: "0.001", MinOrderSize: "0.001", MaxOrderSize: "100", MaxPositionSize: "40",
		MakerFeeRate: "0.0002", TakerFeeRate: "0.0005", MinLeverage: 1, MaxLeverage: 75, DefaultLeverage: 10,
		MaintenanceMarginRate: "0.0075", BuyLimitPriceRatio: "0.05", SellLimitPriceRatio: "0.05",
		MarketFallbackPriceRatio: "0.05", IndexSymbol: "ETHUSDT", FundingIntervalHours: 8,
		InterestRate: "0.0001", MaxFundingRate: "0.0075", EnableTrade: true}
	return append(ContractConfigs(), eth)
}

// ContractSpecs parses configs over coins (contract i gets the market id
// engine.ContractBase + i).
func ContractSpecs(coins []engine.Coin, configs []engine.ContractConfig) []*engine.MarketSpec {
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
		s, err := engine.NewContractSpec(engine.ContractBase+engine.MarketID(i), c, base, quote)
		if err != nil {
			panic(fmt.Sprintf("enginetest: %v", err))
		}
		specs = append(specs, s)
	}
	return specs
}

// Cluster is engines sharing one Accounts: market engines (market i on
// shard i % shards) and a ledger engine (shard number shards) for deposits,
// withdrawals and users, and, in the contract world, every contract market
// with transfers and contract settings.
type Cluster struct {
	Acc     *engine.Accounts
	Engines []*engine.Engine // market shards
	Ledger  *engine.Engine
	All     []*engine.Engine // market shards then the ledger

	contracts bool // built by NewContractCluster
}

// NewCluster builds a cluster over the standard world split into shards.
func NewCluster(shards int) *Cluster { return newCluster(shards, false) }

// NewContractCluster builds a cluster over the standard world split into
// shards, with the contracts of WorldContractConfigs owned by the ledger engine
// and InsuranceUID as its insurance account.
func NewContractCluster(shards int) *Cluster { return newCluster(shards, true) }

// Fresh returns an empty cluster of the same shape as cl (a restart).
func (cl *Cluster) Fresh() *Cluster { return newCluster(len(cl.Engines), cl.contracts) }

func newCluster(shards int, contracts bool) *Cluster {
	coins := Coins()
	specs := Specs(coins, MarketConfigs())
	cl := &Cluster{Acc: engine.NewAccounts(coins), contracts: contracts}
	for s := 0; s < shards; s++ {
		var own []*engine.MarketSpec
		for _, m := range specs {
			if int(m.ID)%shards == s {
				own = append(own, m)
			}
		}
		cl.Engines = append(cl.Engines, engine.New(s, cl.Acc, own, FeeUID))
	}
	var cts []*engine.MarketSpec
	if contracts {
		cts = ContractSpecs(coins, WorldContractConfigs())
	}
	cl.Ledger = engine.New(shards, cl.Acc, cts, FeeUID)
	if contracts {
		cl.Ledger.SetInsuranceUID(InsuranceUID)
	}
	cl.All = append(append([]*engine.Engine(nil), cl.Engines...), cl.Ledger)
	return cl
}

// Route returns the engine that applies c: a market's shard for orders in
// it (the ledger for contract markets), the ledger for everything else
// (deposits, withdrawals, users, rebates, transfers, contract settings).
func (cl *Cluster) Route(c *engine.Cmd) *engine.Engine {
	if c.Kind == engine.CmdPlace || c.Kind == engine.CmdCancel || c.Kind == engine.CmdCancelAll || c.Kind == engine.CmdSetRules {
		if cl.Ledger.Owns(c.Market) { // a contract market
			return cl.Ledger
		}
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
