package edge

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

func handleTime(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	st.buf = append(st.buf, `{"serverTime":`...)
	st.buf = appendInt(st.buf, st.nowMs)
	st.buf = append(st.buf, '}')
	return nil
}

func handlePing(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	st.buf = append(st.buf, "{}"...)
	return nil
}

func handleCoins(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx); e != nil {
		return e
	}
	st.buf = append(st.buf, s.coinsBody...)
	return nil
}

// appendSymbolInfo builds m's exchangeInfo record (docs/API.md, "GET /api/v3/exchangeInfo") once.
func (s *Server) appendSymbolInfo(b []byte, m *market) []byte {
	c := m.cfg
	base, quote := &s.coins[m.spec.Base], &s.coins[m.spec.Quote]
	str := func(k, v string) {
		b = append(b, ',')
		b = appendStr(b, k)
		b = append(b, ':')
		b = appendStr(b, v)
	}
	boolean := func(k string, v bool) {
		b = append(b, ',')
		b = appendStr(b, k)
		b = append(b, ':')
		b = appendBool(b, v)
	}
	b = append(b, `{"symbol":`...)
	b = appendStr(b, c.Symbol)
	status := "TRADING"
	if !c.EnableTrade {
		status = "BREAK"
	}
	str("status", status)
	str("baseAsset", c.BaseAsset)
	b = append(b, `,"baseAssetPrecision":`...)
	b = appendInt(b, int64(base.Scale))
	str("quoteAsset", c.QuoteAsset)
	b = append(b, `,"quoteAssetPrecision":`...)
	b = appendInt(b, int64(quote.Scale))
	str("tickSize", c.TickSize)
	str("stepSize", c.StepSize)
	str("minTradeAmount", c.MinTradeAmount)
	str("maxTradeAmount", c.MaxTradeAmount)
	str("takerFeeRate", c.TakerFeeRate)
	str("makerFeeRate", c.MakerFeeRate)
	str("buyLimitPriceRatio", c.BuyLimitPriceRatio)
	str("sellLimitPriceRatio", c.SellLimitPriceRatio)
	str("marketBuyLimitSize", c.MarketBuyLimitSize)
	str("marketSellLimitSize", c.MarketSellLimitSize)
	str("marketFallbackPriceRatio", c.MarketFallbackPriceRatio)
	boolean("enableTrade", c.EnableTrade)
	boolean("enableDisplay", c.EnableDisplay)
	str("displayDigitMerge", c.DisplayDigitMerge)
	boolean("displayNew", c.DisplayNew)
	boolean("displayHot", c.DisplayHot)
	return append(b, '}')
}

// appendCoins builds the GET /api/v3/coins body once.
func (s *Server) appendCoins(b []byte) []byte {
	b = append(b, '[')
	for i, co := range s.cfg.Coins {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"coin":`...)
		b = appendStr(b, co.Coin)
		b = append(b, `,"name":`...)
		b = appendStr(b, co.Name)
		b = append(b, `,"depositAllEnable":`...)
		b = appendBool(b, co.DepositAllEnable)
		b = append(b, `,"withdrawAllEnable":`...)
		b = appendBool(b, co.WithdrawAllEnable)
		b = append(b, `,"networkList":[`...)
		for j, n := range co.NetworkList {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"network":`...)
			b = appendStr(b, n.Network)
			b = append(b, `,"coin":`...)
			b = appendStr(b, co.Coin)
			b = append(b, `,"name":`...)
			b = appendStr(b, n.Network)
			b = append(b, `,"isDefault":`...)
			b = appendBool(b, n.IsDefault)
			b = append(b, `,"depositEnable":`...)
			b = appendBool(b, n.DepositEnable)
			b = append(b, `,"withdrawEnable":`...)
			b = appendBool(b, n.WithdrawEnable)
			b = append(b, `,"withdrawFee":`...)
			b = appendStr(b, n.WithdrawFee)
			b = append(b, `,"withdrawMin":`...)
			b = appendStr(b, n.WithdrawMin)
			b = append(b, `,"withdrawIntegerMultiple":`...)
			if n.WithdrawIntegerMultiple == "" {
				b = append(b, "null"...)
			} else {
				b = append(b, n.WithdrawIntegerMultiple...) // a BigDecimal: a JSON number
			}
			b = append(b, `,"minConfirm":`...)
			b = appendInt(b, int64(n.MinConfirm))
			b = append(b, `,"withdrawTag":`...)
			b = appendBool(b, n.WithdrawTag)
			b = append(b, `,"depositDust":`...)
			b = appendStr(b, n.DepositDust)
			b = append(b, `,"contractAddress":`...)
			b = appendStr(b, n.ContractAddress)
			b = append(b, `,"contractAddressUrl":`...)
			b = appendStr(b, n.ContractAddressURL)
			for _, kv := range [...]struct {
				k string
				v *string
			}{{"depositDesc", n.DepositDesc}, {"withdrawDesc", n.WithdrawDesc}, {"withdrawInternalMin", n.WithdrawInternalMin}} {
				b = append(b, ',')
				b = appendStr(b, kv.k)
				b = append(b, ':')
				if kv.v == nil {
					b = append(b, "null"...)
				} else {
					b = appendStr(b, *kv.v)
				}
			}
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	return append(b, ']')
}

// handleExchangeInfo: GET /api/v3/exchangeInfo[?symbol=|symbols=][&symbolStatus=TRADING].
func handleExchangeInfo(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "symbols", "symbolStatus"); e != nil {
		return e
	}
	args := ctx.QueryArgs()
	if args.Has("symbol") && args.Has("symbols") {
		return newErr(400, codeParamCombination, "symbol and symbols cannot be sent together")
	}
	tradingOnly := false
	if args.Has("symbolStatus") {
		if string(args.Peek("symbolStatus")) != "TRADING" {
			return newErr(400, codeParam, "symbolStatus: only TRADING is supported")
		}
		tradingOnly = true
	}
	var want []bool // by market id; nil: all
	if args.Has("symbol") {
		m, e := s.argSymbol(ctx, true)
		if e != nil {
			return e
		}
		want = make([]bool, len(s.markets))
		want[m.spec.ID] = true
	} else if args.Has("symbols") {
		names, e := parseSymbols(args.Peek("symbols"))
		if e != nil {
			return e
		}
		want = make([]bool, len(s.markets))
		for _, n := range names {
			m := s.bySymbol[n]
			if m == nil {
				return newErr(400, codeSymbol, "invalid symbol "+n)
			}
			want[m.spec.ID] = true
		}
	}
	b := append(st.buf, `{"timezone":"UTC","serverTime":`...)
	b = appendInt(b, st.nowMs)
	b = append(b, `,"symbols":[`...)
	first := true
	for _, m := range s.markets {
		if want != nil && !want[m.spec.ID] || tradingOnly && !m.cfg.EnableTrade {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, m.info...)
	}
	st.buf = append(b, "]}"...)
	return nil
}

// parseSymbols reads "A,B" or a JSON array ["A","B"].
func parseSymbols(v []byte) ([]string, *apiError) {
	bad := newErr(400, codeParam, `symbols must be a comma-separated list or a JSON array of strings`)
	v = bytes.TrimSpace(v)
	var out []string
	if len(v) > 0 && v[0] == '[' {
		var d scanner
		d.reset(v)
		if !d.arrayStart() {
			return nil, bad
		}
		for d.nextElem() {
			sv, ok := d.str()
			if !ok {
				return nil, bad
			}
			out = append(out, string(sv))
		}
		if !d.end() {
			return nil, bad
		}
	} else {
		for _, p := range strings.Split(string(v), ",") {
			out = append(out, strings.TrimSpace(p))
		}
	}
	if len(out) == 0 || len(out) > 100 {
		return nil, bad
	}
	return out, nil
}

// marketArg resolves the required symbol of a market data endpoint to its
// market: a spot symbol on /api/v3 (spotArg), a V3 contract name on
// /capi/v3 (contractArg). The spot and contract endpoints share the rest.
type marketArg func(s *Server, ctx *fasthttp.RequestCtx) (*engine.MarketSpec, *apiError)

func spotArg(s *Server, ctx *fasthttp.RequestCtx) (*engine.MarketSpec, *apiError) {
	m, e := s.argSymbol(ctx, true)
	if e != nil {
		return nil, e
	}
	return m.spec, nil
}

// handleDepth: GET /api/v3/market/depth?symbol=&limit= (default 15, max 200).
func handleDepth(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	return s.depth(ctx, st, spotArg)
}

func (s *Server) depth(ctx *fasthttp.RequestCtx, st *reqState, arg marketArg) *apiError {
	if e := checkArgs(ctx, "symbol", "limit"); e != nil {
		return e
	}
	sp, e := arg(s, ctx)
	if e != nil {
		return e
	}
	limit, e := argIntIn(ctx, "limit", 15, 1, 200)
	if e != nil {
		return e
	}
	book, err := s.node.Depth(sp.ID, int(limit), s.deadline(), st.bids[:0], st.asks[:0])
	st.bids, st.asks = book.Bids, book.Asks
	if err != nil {
		return s.queryErr(err)
	}
	bids, asks := book.Bids, book.Asks
	side := func(b []byte, lv []engine.Level) []byte {
		b = append(b, '[')
		for i := range lv {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `["`...)
			b = sp.AppendPrice(b, lv[i].Price)
			b = append(b, `","`...)
			b = sp.AppendQty(b, lv[i].Qty)
			b = append(b, `"]`...)
		}
		return append(b, ']')
	}
	b := append(st.buf, `{"asks":`...)
	b = side(b, asks)
	b = append(b, `,"bids":`...)
	b = side(b, bids)
	b = append(b, `,"lastUpdateId":`...)
	b = strconv.AppendUint(b, book.Seq, 10)
	b = append(b, `,"time":`...)
	b = appendInt(b, st.nowMs)
	st.buf = append(b, '}')
	return nil
}

// handleMarketTrades: GET /api/v3/market/trades?symbol=&limit= (default 100, max 1000).
func handleMarketTrades(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	return s.marketTrades(ctx, st, spotArg)
}

func (s *Server) marketTrades(ctx *fasthttp.RequestCtx, st *reqState, arg marketArg) *apiError {
	if e := checkArgs(ctx, "symbol", "limit"); e != nil {
		return e
	}
	sp, e := arg(s, ctx)
	if e != nil {
		return e
	}
	limit, e := argIntIn(ctx, "limit", 100, 1, 1000)
	if e != nil {
		return e
	}
	trades, err := s.store.MarketTrades(sp.ID, int(limit), st.trades[:0])
	st.trades = trades
	if err != nil {
		return s.queryErr(err)
	}
	quote := &s.coins[sp.Quote]
	b := append(st.buf, '[')
	for i := range trades {
		t := &trades[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":"`...)
		b = appendInt(b, t.TradeID)
		b = append(b, `","price":"`...)
		b = sp.AppendPrice(b, t.Price)
		b = append(b, `","qty":"`...)
		b = sp.AppendQty(b, t.Qty)
		b = append(b, `","quoteQty":"`...)
		b = appendAmount(b, quote, t.Quote)
		b = append(b, `","time":`...)
		b = appendInt(b, t.TimeMs)
		b = append(b, `,"isBuyerMaker":`...)
		b = appendBool(b, t.TakerSide == engine.Sell)
		b = append(b, `,"isBestMatch":true}`...)
	}
	st.buf = append(b, ']')
	return nil
}

// tickerMarkets resolves the optional symbol of the ticker endpoints.
func (s *Server) tickerMarkets(ctx *fasthttp.RequestCtx) ([]*market, bool, *apiError) {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return nil, false, e
	}
	m, e := s.argSymbol(ctx, false)
	if e != nil {
		return nil, false, e
	}
	if m != nil {
		return []*market{m}, true, nil
	}
	return s.markets, false, nil
}

// tickers answers a ticker endpoint: one object per market, written by
// one, in an array unless the request named a symbol.
func (s *Server) tickers(ctx *fasthttp.RequestCtx, st *reqState,
	one func(b []byte, m *market) ([]byte, *apiError)) *apiError {
	ms, single, e := s.tickerMarkets(ctx)
	if e != nil {
		return e
	}
	b := st.buf
	if !single {
		b = append(b, '[')
	}
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		if b, e = one(b, m); e != nil {
			return e
		}
	}
	if !single {
		b = append(b, ']')
	}
	st.buf = b
	return nil
}

// handleTickerPrice: GET /api/v3/market/ticker/price[?symbol=].
func handleTickerPrice(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	return s.tickers(ctx, st, func(b []byte, m *market) ([]byte, *apiError) {
		book, err := s.node.Depth(m.spec.ID, 0, s.deadline(), st.bids[:0], st.asks[:0])
		if err != nil {
			return b, s.queryErr(err)
		}
		last := book.Last
		b = append(b, `{"symbol":`...)
		b = appendStr(b, m.spec.Symbol)
		b = append(b, `,"price":"`...)
		b = m.spec.AppendPrice(b, last)
		return append(b, `"}`...), nil
	})
}

// handleBookTicker: GET /api/v3/market/ticker/bookTicker[?symbol=].
func handleBookTicker(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	return s.tickers(ctx, st, func(b []byte, m *market) ([]byte, *apiError) {
		book, err := s.node.Depth(m.spec.ID, 1, s.deadline(), st.bids[:0], st.asks[:0])
		if err != nil {
			return b, s.queryErr(err)
		}
		bids, asks := book.Bids, book.Asks
		b = append(b, `{"symbol":`...)
		b = appendStr(b, m.spec.Symbol)
		b = appendBest(b, m.spec, "bid", bids)
		b = appendBest(b, m.spec, "ask", asks)
		b = append(b, `,"time":`...)
		b = appendInt(b, st.nowMs)
		return append(b, '}'), nil
	})
}

func appendBest(b []byte, sp *engine.MarketSpec, side string, lv []engine.Level) []byte {
	var p engine.Price
	var q engine.Qty
	if len(lv) > 0 {
		p, q = lv[0].Price, lv[0].Qty
	}
	b = append(b, `,"`...)
	b = append(b, side...)
	b = append(b, `Price":"`...)
	b = sp.AppendPrice(b, p)
	b = append(b, `","`...)
	b = append(b, side...)
	b = append(b, `Qty":"`...)
	b = sp.AppendQty(b, q)
	return append(b, '"')
}

// handleTicker24h: GET /api/v3/market/ticker/24hr[?symbol=], over the
// last 24 hours of durable candles (journal.Store.Window).
func handleTicker24h(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	from := st.nowMs - 24*3600*1000
	return s.tickers(ctx, st, func(b []byte, m *market) ([]byte, *apiError) {
		sp := m.spec
		book, err := s.node.Depth(sp.ID, 1, s.deadline(), st.bids[:0], st.asks[:0])
		if err != nil {
			return b, s.queryErr(err)
		}
		w, err := s.store.Window(sp.ID, from, st.nowMs)
		if err != nil {
			return b, s.queryErr(err)
		}
		b = s.appendTicker24h(b, sp, sp.Symbol, book.Bids, book.Asks, book.Last, &w, st.nowMs)
		return append(b, '}'), nil
	})
}

// appendTicker24h appends a 24-hour ticker object named name, without its
// closing brace (a contract's adds its mark price): w is the window's
// durable candles.
func (s *Server) appendTicker24h(b []byte, sp *engine.MarketSpec, name string, bids, asks []engine.Level, last engine.Price,
	w *journal.Candle, nowMs int64) []byte {
	open, high, low, vol, qvol, count, openT := w.Open, w.High, w.Low, w.Volume, w.QuoteVolume, w.Trades, w.OpenMs
	if count == 0 {
		open, high, low = last, last, last
	}
	b = append(b, `{"symbol":`...)
	b = appendStr(b, name)
	b = append(b, `,"priceChange":"`...)
	b = engine.AppendFixed(b, int64(last-open)*sp.TickUnits, sp.PriceDecimals)
	b = append(b, `","priceChangePercent":"`...)
	pct := int64(0)
	if open > 0 {
		pct = int64(last-open) * 1_000_000 / int64(open)
	}
	b = engine.AppendFixed(b, pct, 6)
	b = append(b, `","lastPrice":"`...)
	b = sp.AppendPrice(b, last)
	b = append(b, '"')
	b = appendBest(b, sp, "bid", bids)
	b = appendBest(b, sp, "ask", asks)
	b = append(b, `,"openPrice":"`...)
	b = sp.AppendPrice(b, open)
	b = append(b, `","highPrice":"`...)
	b = sp.AppendPrice(b, high)
	b = append(b, `","lowPrice":"`...)
	b = sp.AppendPrice(b, low)
	b = append(b, `","volume":"`...)
	b = sp.AppendQty(b, vol)
	b = append(b, `","quoteVolume":"`...)
	b = appendAmount(b, &s.coins[sp.Quote], qvol)
	b = append(b, `","openTime":`...)
	b = appendInt(b, openT)
	b = append(b, `,"closeTime":`...)
	b = appendInt(b, nowMs)
	b = append(b, `,"count":`...)
	b = appendInt(b, count)
	return b
}

// handleKlines: GET /api/v3/market/klines?symbol=&interval=&startTime=&endTime=&limit=
// (default 500, max 1000): candles from the durable 1m/1h/1d rows
// (journal.Klines), oldest first, as WEEX's arrays of eleven.
func handleKlines(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	return s.klines(ctx, st, spotArg)
}

func (s *Server) klines(ctx *fasthttp.RequestCtx, st *reqState, arg marketArg) *apiError {
	if e := checkArgs(ctx, "symbol", "interval", "startTime", "endTime", "limit"); e != nil {
		return e
	}
	sp, e := arg(s, ctx)
	if e != nil {
		return e
	}
	args := ctx.QueryArgs()
	if !args.Has("interval") {
		return newErr(400, codeParamMissing, "parameter interval is required")
	}
	var iv *journal.Interval
	for i := range journal.Intervals {
		if journal.Intervals[i].Name == string(args.Peek("interval")) {
			iv = &journal.Intervals[i]
		}
	}
	if iv == nil {
		return newErr(400, codeParam, "invalid interval: one of 1m 5m 15m 30m 1h 2h 4h 6h 8h 12h 1d 1w 1M")
	}
	start, end, e := timeRange(ctx)
	if e != nil {
		return e
	}
	limit, e := argIntIn(ctx, "limit", 500, 1, 1000)
	if e != nil {
		return e
	}
	candles, err := s.store.Klines(sp.ID, iv, start, end, int(limit))
	if err != nil {
		return s.queryErr(err)
	}
	quote := &s.coins[sp.Quote]
	b := append(st.buf, '[')
	for i := range candles {
		k := &candles[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendInt(b, k.OpenMs)
		for _, p := range [...]engine.Price{k.Open, k.High, k.Low, k.Close} {
			b = append(b, `,"`...)
			b = sp.AppendPrice(b, p)
			b = append(b, '"')
		}
		b = append(b, `,"`...)
		b = sp.AppendQty(b, k.Volume)
		b = append(b, `",`...)
		b = appendInt(b, iv.End(k.OpenMs)-1)
		b = append(b, `,"`...)
		b = appendAmount(b, quote, k.QuoteVolume)
		b = append(b, `",`...)
		b = appendInt(b, k.Trades)
		b = append(b, `,"`...)
		b = sp.AppendQty(b, k.TakerBuyVolume)
		b = append(b, `","`...)
		b = appendAmount(b, quote, k.TakerBuyQuote)
		b = append(b, `"]`...)
	}
	st.buf = append(b, ']')
	return nil
}
