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
	return ServerConfigWith(markets, nil, adminToken)
}

// ServerConfigWith is ServerConfig with perpetual contracts as well, in
// config/default.json's shape (fees, leverage 1-100 at 20 by default,
// bands, funding), with the generator's tick and step sizes, room for
// positions that only grow through a run (the generator opens, never
// closes), and an insurance account (uid 2) as contracts require.
func ServerConfigWith(markets, contracts []load.Market, adminToken string) ([]byte, error) {
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
	spot := map[string]bool{}
	for _, m := range markets {
		spot[m.Symbol] = true
	}
	for i, m := range contracts {
		addCoin(m.Quote)
		addCoin(m.Base)
		index := ""
		if spot[m.Symbol] {
			index = m.Symbol
		}
		cfg.InsuranceUID = 2
		cfg.Contracts = append(cfg.Contracts, config.ContractConfig{ContractConfig: engine.ContractConfig{
			Symbol: m.Symbol, V2Symbol: m.V2Symbol, ContractID: int64(i + 1),
			BaseAsset: m.Base, QuoteAsset: m.Quote, MarginAsset: m.Quote, ContractVal: "1",
			TickSize: m.TickSize(), StepSize: m.StepSize(),
			MinOrderSize: load.FormatFixed(m.MinQty, m.StepDecimals), MaxOrderSize: load.FormatFixed(m.MaxQty*100, m.StepDecimals),
			MaxPositionSize: load.FormatFixed(m.MaxQty*10_000_000, m.StepDecimals),
			MakerFeeRate:    "0.0002", TakerFeeRate: "0.0006",
			MinLeverage: 1, MaxLeverage: 100, DefaultLeverage: 20, MaintenanceMarginRate: "0.005",
			BuyLimitPriceRatio: "0.05", SellLimitPriceRatio: "0.05", MarketFallbackPriceRatio: "0.05",
			IndexSymbol: index, FundingIntervalHours: 8, InterestRate: "0.0001", MaxFundingRate: "0.0075",
			EnableTrade: true}})
	}
	return json.MarshalIndent(&cfg, "", "  ")
}
