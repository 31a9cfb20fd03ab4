package suite

import (
	"encoding/json"

	"github.com/weexcore/exchange/bench/load"
)

// ServerConfig returns the benchmark's server configuration (SPEC §1): the
// markets' coins, one spot market per load.Market, rate limits disabled,
// no configured users (the generator creates its own through the admin
// API).
func ServerConfig(markets []load.Market, adminToken string) ([]byte, error) {
	type network struct {
		Network                 string  `json:"network"`
		IsDefault               bool    `json:"isDefault"`
		DepositEnable           bool    `json:"depositEnable"`
		WithdrawEnable          bool    `json:"withdrawEnable"`
		WithdrawFee             string  `json:"withdrawFee"`
		WithdrawMin             string  `json:"withdrawMin"`
		WithdrawIntegerMultiple string  `json:"withdrawIntegerMultiple"`
		MinConfirm              int     `json:"minConfirm"`
		WithdrawTag             bool    `json:"withdrawTag"`
		DepositDust             string  `json:"depositDust"`
		ContractAddress         string  `json:"contractAddress"`
		ContractAddressURL      string  `json:"contractAddressUrl"`
		DepositDesc             *string `json:"depositDesc"`
		WithdrawDesc            *string `json:"withdrawDesc"`
		WithdrawInternalMin     *string `json:"withdrawInternalMin"`
	}
	type coin struct {
		Coin              string    `json:"coin"`
		Name              string    `json:"name"`
		CoinID            int       `json:"coinId"`
		Scale             int       `json:"scale"`
		DepositAllEnable  bool      `json:"depositAllEnable"`
		WithdrawAllEnable bool      `json:"withdrawAllEnable"`
		NetworkList       []network `json:"networkList"`
	}
	type spot struct {
		Symbol                   string `json:"symbol"`
		BaseAsset                string `json:"baseAsset"`
		QuoteAsset               string `json:"quoteAsset"`
		TickSize                 string `json:"tickSize"`
		StepSize                 string `json:"stepSize"`
		MinTradeAmount           string `json:"minTradeAmount"`
		MaxTradeAmount           string `json:"maxTradeAmount"`
		TakerFeeRate             string `json:"takerFeeRate"`
		MakerFeeRate             string `json:"makerFeeRate"`
		BuyLimitPriceRatio       string `json:"buyLimitPriceRatio"`
		SellLimitPriceRatio      string `json:"sellLimitPriceRatio"`
		MarketBuyLimitSize       string `json:"marketBuyLimitSize"`
		MarketSellLimitSize      string `json:"marketSellLimitSize"`
		MarketFallbackPriceRatio string `json:"marketFallbackPriceRatio"`
		EnableTrade              bool   `json:"enableTrade"`
		EnableDisplay            bool   `json:"enableDisplay"`
		DisplayDigitMerge        string `json:"displayDigitMerge"`
		DisplayNew               bool   `json:"displayNew"`
		DisplayHot               bool   `json:"displayHot"`
	}
	var coins []coin
	seen := map[string]bool{}
	addCoin := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		coins = append(coins, coin{Coin: name, Name: name, CoinID: len(coins) + 1, Scale: 8,
			DepositAllEnable: true, WithdrawAllEnable: true,
			NetworkList: []network{{Network: name, IsDefault: true, DepositEnable: true, WithdrawEnable: true,
				WithdrawFee: "0", WithdrawMin: "0", WithdrawIntegerMultiple: "0.00000001", MinConfirm: 1,
				DepositDust: "0"}}})
	}
	var spots []spot
	for _, m := range markets {
		addCoin(m.Quote)
		addCoin(m.Base)
		spots = append(spots, spot{Symbol: m.Symbol, BaseAsset: m.Base, QuoteAsset: m.Quote,
			TickSize: m.TickSize(), StepSize: m.StepSize(),
			MinTradeAmount: load.FormatFixed(m.MinQty, m.StepDecimals),
			MaxTradeAmount: load.FormatFixed(m.MaxQty*100, m.StepDecimals),
			TakerFeeRate:   "0.001", MakerFeeRate: "0.0008",
			BuyLimitPriceRatio: "0.1", SellLimitPriceRatio: "0.1",
			MarketBuyLimitSize: load.FormatFixed(m.MaxQty*100, m.StepDecimals), MarketSellLimitSize: load.FormatFixed(m.MaxQty*100, m.StepDecimals),
			MarketFallbackPriceRatio: "0.05", EnableTrade: true, EnableDisplay: true,
			DisplayDigitMerge: m.TickSize(), DisplayHot: true})
	}
	cfg := map[string]any{
		"admin_token": adminToken,
		"fee_uid":     1,
		// Disabled, and huge in case a server ignores the switch: the
		// benchmark measures the order path, not the limiter's refusals.
		"rate_limits": map[string]any{"ip_weight_per_10s": int64(1) << 40, "uid_weight_per_10s": int64(1) << 40, "enabled": false},
		"coins":       coins,
		"spot":        spots,
		"contracts":   []any{},
		"users":       []any{},
	}
	return json.MarshalIndent(cfg, "", "  ")
}
