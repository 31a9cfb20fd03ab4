package suite

import (
	"encoding/json"

	"github.com/weexcore/exchange/bench/load"
	"github.com/weexcore/exchange/config"
	"github.com/weexcore/exchange/engine"
)

// ServerConfig returns the benchmark's server configuration (docs/API.md,
// "Configuration"): the markets' coins, one spot market per load.Market,
// rate limits disabled, no configured users (the generator creates its own
// through the admin API). It is built from the server's own config types.
func ServerConfig(markets []load.Market, adminToken string) ([]byte, error) {
	cfg := config.Config{
		AdminToken: adminToken,
		FeeUID:     1,
		// Disabled, and huge in case a server ignores the switch: the
		// benchmark measures the order path, not the limiter's refusals.
		RateLimits: config.RateLimits{IPWeight: 1 << 40, UIDWeight: 1 << 40, Enabled: false},
		Contracts:  []config.ContractConfig{},
		Users:      []config.UserConfig{},
	}
	seen := map[string]bool{}
	addCoin := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		cfg.Coins = append(cfg.Coins, config.CoinConfig{Coin: name, Name: name, CoinID: int64(len(cfg.Coins) + 1),
			Scale: 8, DepositAllEnable: true, WithdrawAllEnable: true,
			NetworkList: []config.NetworkConfig{{Network: name, IsDefault: true, DepositEnable: true,
				WithdrawEnable: true, WithdrawFee: "0", WithdrawMin: "0", WithdrawIntegerMultiple: "0.00000001",
				MinConfirm: 1, DepositDust: "0"}}})
	}
	for _, m := range markets {
		addCoin(m.Quote)
		addCoin(m.Base)
		big := load.FormatFixed(m.MaxQty*100, m.StepDecimals)
		cfg.Spot = append(cfg.Spot, config.SpotConfig{
			SpotConfig: engine.SpotConfig{Symbol: m.Symbol, BaseAsset: m.Base, QuoteAsset: m.Quote,
				TickSize: m.TickSize(), StepSize: m.StepSize(),
				MinTradeAmount: load.FormatFixed(m.MinQty, m.StepDecimals), MaxTradeAmount: big,
				TakerFeeRate: "0.001", MakerFeeRate: "0.0008",
				BuyLimitPriceRatio: "0.1", SellLimitPriceRatio: "0.1",
				MarketBuyLimitSize: big, MarketSellLimitSize: big,
				MarketFallbackPriceRatio: "0.05", EnableTrade: true},
			EnableDisplay: true, DisplayDigitMerge: m.TickSize(), DisplayHot: true})
	}
	return json.MarshalIndent(&cfg, "", "  ")
}
