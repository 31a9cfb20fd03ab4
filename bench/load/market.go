package load

import (
	"fmt"
	"strconv"
	"strings"
)

// Market describes how the generator quotes one spot market or perpetual
// contract: prices and quantities are integers in ticks and steps, written
// with the market's decimals.
type Market struct {
	Symbol, Base, Quote string
	// Contract marks a USDT-margined perpetual (docs/API.md, "Perpetual
	// contracts"): Symbol is its V3 name, V2Symbol its V2 name; orders go
	// to /capi/v3/order and open positions (BUY LONG, SELL SHORT), margined
	// in Quote's futures wallet.
	Contract       bool
	V2Symbol       string
	TickDecimals   int   // price decimals: tickSize = 10^-TickDecimals
	StepDecimals   int   // quantity decimals: stepSize = 10^-StepDecimals
	Mid            int64 // reference price in ticks; makers quote around it
	Spread         int64 // makers quote Mid ± [1, Spread] ticks
	MinQty, MaxQty int64 // order quantity range in steps
}

// TickSize returns the tick size as a decimal string.
func (m *Market) TickSize() string { return unitString(m.TickDecimals) }

// StepSize returns the step size as a decimal string.
func (m *Market) StepSize() string { return unitString(m.StepDecimals) }

func unitString(decimals int) string {
	if decimals == 0 {
		return "1"
	}
	return "0." + strings.Repeat("0", decimals-1) + "1"
}

// AppendFixed appends v * 10^-decimals as a plain decimal string (v >= 0).
func AppendFixed(dst []byte, v int64, decimals int) []byte {
	if decimals == 0 {
		return strconv.AppendInt(dst, v, 10)
	}
	var pow int64 = 1
	for i := 0; i < decimals; i++ {
		pow *= 10
	}
	dst = strconv.AppendInt(dst, v/pow, 10)
	dst = append(dst, '.')
	frac := v % pow
	var tmp [20]byte
	f := strconv.AppendInt(tmp[:0], frac, 10)
	for i := len(f); i < decimals; i++ {
		dst = append(dst, '0')
	}
	return append(dst, f...)
}

// FormatFixed is AppendFixed into a string.
func FormatFixed(v int64, decimals int) string { return string(AppendFixed(nil, v, decimals)) }

// DefaultMarkets are the markets of the benchmark configuration.
func DefaultMarkets() []Market {
	return []Market{
		{Symbol: "BTCUSDT", Base: "BTC", Quote: "USDT", TickDecimals: 2, StepDecimals: 6, Mid: 5000000, Spread: 200, MinQty: 100, MaxQty: 10000},
		{Symbol: "ETHUSDT", Base: "ETH", Quote: "USDT", TickDecimals: 2, StepDecimals: 4, Mid: 300000, Spread: 200, MinQty: 10, MaxQty: 5000},
		{Symbol: "SOLUSDT", Base: "SOL", Quote: "USDT", TickDecimals: 2, StepDecimals: 2, Mid: 15000, Spread: 100, MinQty: 10, MaxQty: 1000},
		{Symbol: "BNBUSDT", Base: "BNB", Quote: "USDT", TickDecimals: 2, StepDecimals: 3, Mid: 60000, Spread: 200, MinQty: 10, MaxQty: 1000},
		{Symbol: "XRPUSDT", Base: "XRP", Quote: "USDT", TickDecimals: 4, StepDecimals: 1, Mid: 6000, Spread: 100, MinQty: 100, MaxQty: 10000},
		{Symbol: "DOGEUSDT", Base: "DOGE", Quote: "USDT", TickDecimals: 5, StepDecimals: 0, Mid: 15000, Spread: 200, MinQty: 10, MaxQty: 5000},
		{Symbol: "ADAUSDT", Base: "ADA", Quote: "USDT", TickDecimals: 4, StepDecimals: 1, Mid: 4500, Spread: 100, MinQty: 100, MaxQty: 10000},
		{Symbol: "LTCUSDT", Base: "LTC", Quote: "USDT", TickDecimals: 2, StepDecimals: 3, Mid: 8000, Spread: 100, MinQty: 10, MaxQty: 5000},
	}
}

// DefaultContracts are the perpetual contracts of the benchmark
// configuration: config/default.json's two, with its tick and step sizes,
// quoted around the same prices as the spot markets of the same name.
func DefaultContracts() []Market {
	return []Market{
		{Symbol: "BTCUSDT", V2Symbol: "cmt_btcusdt", Contract: true, Base: "BTC", Quote: "USDT", TickDecimals: 1, StepDecimals: 4, Mid: 500000, Spread: 200, MinQty: 1, MaxQty: 100},
		{Symbol: "ETHUSDT", V2Symbol: "cmt_ethusdt", Contract: true, Base: "ETH", Quote: "USDT", TickDecimals: 2, StepDecimals: 3, Mid: 300000, Spread: 200, MinQty: 1, MaxQty: 500},
	}
}

// SelectMarkets returns the markets of all named in the comma-separated list
// (empty: all).
func SelectMarkets(all []Market, list string) ([]Market, error) {
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	var out []Market
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		found := false
		for _, m := range all {
			if m.Symbol == s {
				out = append(out, m)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("load: unknown market %q", s)
		}
	}
	return out, nil
}
