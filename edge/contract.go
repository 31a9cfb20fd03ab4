package edge

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/config"
	"github.com/weexcore/exchange/engine"
)

// Contracts (docs/API.md, "Perpetual contracts"). A contract has two
// names: the V2 one (cmt_btcusdt) on /capi/v2 and the V3 one (BTCUSDT, the
// same string as a spot symbol) on /capi/v3; the path family tells them
// apart, and a V2 name on V3 (or the reverse) is an unknown symbol.

// contract is one contract market as the edge serves it.
type contract struct {
	spec *engine.MarketSpec
	cfg  *config.ContractConfig
	info []byte // the /capi/v3/market/exchangeInfo record, precomputed
}

// contractV3 returns the contract named sym on /capi/v3, or nil.
func (s *Server) contractV3(sym []byte) *contract { return s.byV3[string(sym)] }

// contractV2 returns the contract named sym on /capi/v2, or nil.
func (s *Server) contractV2(sym []byte) *contract { return s.byV2[string(sym)] }

// contractOf returns the contract of market id, or nil.
func (s *Server) contractOf(id engine.MarketID) *contract {
	if id < engine.ContractBase || int(id-engine.ContractBase) >= len(s.contracts) {
		return nil
	}
	return s.contracts[id-engine.ContractBase]
}

// margin returns k's margin coin (its spot id; the futures wallet is
// spec.Margin).
func (s *Server) margin(k *contract) *engine.Coin { return &s.coins[k.spec.Margin.Spot()] }

// appendContractInfo builds k's exchangeInfo record once: every field
// ccxt's parseMarket reads, in the shape of WEEX's contract records.
func (s *Server) appendContractInfo(b []byte, k *contract) []byte {
	c, sp := k.cfg, k.spec
	str := func(key, v string) {
		b = append(b, ',')
		b = appendStr(b, key)
		b = append(b, ':')
		b = appendStr(b, v)
	}
	num := func(key string, v int64) {
		str(key, strconv.FormatInt(v, 10))
	}
	b = append(b, `{"symbol":`...)
	b = appendStr(b, c.Symbol)
	num("contractId", c.ContractID)
	str("baseAsset", c.BaseAsset)
	str("quoteAsset", c.QuoteAsset)
	str("marginAsset", c.MarginAsset)
	num("pricePrecision", int64(sp.PriceDecimals))
	num("quantityPrecision", int64(sp.QtyDecimals))
	num("baseAssetPrecision", int64(s.coins[sp.Base].Scale))
	num("quotePrecision", int64(s.coins[sp.Quote].Scale))
	str("tickSize", c.TickSize)
	str("stepSize", c.StepSize)
	str("contractVal", c.ContractVal)
	b = append(b, `,"delivery":[`...)
	for h := 0; h < 24; h += c.FundingIntervalHours {
		if h > 0 {
			b = append(b, ',')
		}
		b = appendStr(b, twoDigits(h)+":00:00")
	}
	b = append(b, `],"forwardContractFlag":true`...)
	num("minLeverage", int64(c.MinLeverage))
	num("maxLeverage", int64(c.MaxLeverage))
	num("defaultLeverage", int64(c.DefaultLeverage))
	str("buyLimitPriceRatio", c.BuyLimitPriceRatio)
	str("sellLimitPriceRatio", c.SellLimitPriceRatio)
	str("marketFallbackPriceRatio", c.MarketFallbackPriceRatio)
	str("makerFeeRate", c.MakerFeeRate)
	str("takerFeeRate", c.TakerFeeRate)
	str("minOrderSize", c.MinOrderSize)
	str("maxOrderSize", c.MaxOrderSize)
	str("maxPositionSize", c.MaxPositionSize)
	str("marketOpenLimitSize", c.MaxOrderSize)
	str("maintenanceMarginRate", c.MaintenanceMarginRate)
	b = append(b, `,"enableTrade":`...)
	b = appendBool(b, c.EnableTrade)
	return append(b, '}')
}

func twoDigits(h int) string {
	if h < 10 {
		return "0" + strconv.Itoa(h)
	}
	return strconv.Itoa(h)
}

// GET /capi/v3/market/exchangeInfo[?symbol=]: {"symbols":[...]}, every
// contract or the one named.
func handleContractInfo(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return e
	}
	st.buf = append(st.buf, `{"symbols":[`...)
	if sym := ctx.QueryArgs().Peek("symbol"); len(sym) > 0 {
		k := s.contractV3(sym)
		if k == nil {
			return errSymbolInvalid
		}
		st.buf = append(st.buf, k.info...)
	} else {
		for i, k := range s.contracts {
			if i > 0 {
				st.buf = append(st.buf, ',')
			}
			st.buf = append(st.buf, k.info...)
		}
	}
	st.buf = append(st.buf, "]}"...)
	return nil
}
