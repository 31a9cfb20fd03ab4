package edge

import (
	"math"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// handleOpenOrders: GET /api/v3/openOrders[?symbol=].
func handleOpenOrders(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return e
	}
	m, e := s.argSymbol(ctx, false)
	if e != nil {
		return e
	}
	id := engine.AllMarkets
	if m != nil {
		id = m.spec.ID
	}
	orders, err := s.node.OpenOrders(c.user, c.uid, id, s.deadline(), st.orders[:0])
	st.orders = orders
	if err != nil {
		return s.queryErr(err)
	}
	st.buf = s.appendOrders(st.buf, orders)
	return nil
}

// appendOrders appends orders as a JSON array of order records.
func (s *Server) appendOrders(b []byte, orders []engine.OrderView) []byte {
	b = append(b, '[')
	for i := range orders {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendOrder(b, s.markets[orders[i].Market], &orders[i])
	}
	return append(b, ']')
}

// timeRange reads startTime/endTime (Unix ms, inclusive).
func timeRange(ctx *fasthttp.RequestCtx) (start, end int64, e *apiError) {
	if start, e = argInt(ctx, "startTime", 0); e != nil {
		return
	}
	if end, e = argInt(ctx, "endTime", math.MaxInt64); e != nil {
		return
	}
	if end < start {
		return 0, 0, errStartAfterEnd
	}
	return
}

// historyArgs reads what allOrders and myTrades share: the required
// symbol, startTime/endTime, and limit (1..1000, default 100).
func (s *Server) historyArgs(ctx *fasthttp.RequestCtx) (m *market, start, end, limit int64, e *apiError) {
	if m, e = s.argSymbol(ctx, true); e != nil {
		return
	}
	if start, end, e = timeRange(ctx); e != nil {
		return
	}
	limit, e = argIntIn(ctx, "limit", 100, 1, 1000)
	return
}

// handleAllOrders: GET /api/v3/allOrders?symbol=&startTime=&endTime=&limit=&page=.
func handleAllOrders(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "startTime", "endTime", "limit", "page"); e != nil {
		return e
	}
	m, start, end, limit, e := s.historyArgs(ctx)
	if e != nil {
		return e
	}
	page, e := argIntIn(ctx, "page", 1, 1, 1_000_000)
	if e != nil {
		return e
	}
	orders, err := s.node.AllOrders(c.user, c.uid, m.spec.ID, start, end, int((page-1)*limit), int(limit), s.deadline(), st.orders[:0])
	st.orders = orders
	if err != nil {
		return s.queryErr(err)
	}
	st.buf = s.appendOrders(st.buf, orders)
	return nil
}

// handleMyTrades: GET /api/v3/myTrades?symbol=&startTime=&endTime=&limit=&orderId=.
func handleMyTrades(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "startTime", "endTime", "limit", "orderId"); e != nil {
		return e
	}
	m, start, end, limit, e := s.historyArgs(ctx)
	if e != nil {
		return e
	}
	orderID, e := argInt(ctx, "orderId", 0)
	if e != nil {
		return e
	}
	fetch := int(limit)
	if orderID != 0 {
		fetch = 1000
	}
	trades, err := s.store.Trades(c.uid, m.spec.ID, start, end, fetch, st.trades[:0])
	st.trades = trades
	if err != nil {
		return s.queryErr(err)
	}
	sp := m.spec
	base, quote := &s.coins[sp.Base], &s.coins[sp.Quote]
	b := append(st.buf, '[')
	n := 0
	for i := range trades {
		t := &trades[i]
		maker := t.MakerUID == c.uid
		order, fee := t.TakerOrder, t.TakerFee
		buyer := t.TakerSide == engine.Buy
		if maker {
			order, fee, buyer = t.MakerOrder, t.MakerFee, !buyer
		}
		if orderID != 0 && order != orderID || int64(n) == limit {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"symbol":`...)
		b = appendStr(b, sp.Symbol)
		b = append(b, `,"id":`...)
		b = appendInt(b, t.TradeID)
		b = append(b, `,"orderId":`...)
		b = appendInt(b, order)
		b = append(b, `,"price":"`...)
		b = sp.AppendPrice(b, t.Price)
		b = append(b, `","qty":"`...)
		b = sp.AppendQty(b, t.Qty)
		b = append(b, `","quoteQty":"`...)
		b = appendAmount(b, quote, t.Quote)
		b = append(b, `","commission":"`...)
		feeCoin := quote
		if buyer {
			feeCoin = base
		}
		b = appendAmount(b, feeCoin, fee)
		b = append(b, `","commissionAsset":`...)
		b = appendStr(b, feeCoin.Name)
		b = append(b, `,"time":`...)
		b = appendInt(b, t.TimeMs)
		b = append(b, `,"isBuyer":`...)
		b = appendBool(b, buyer)
		b = append(b, `,"isMaker":`...)
		b = appendBool(b, maker)
		b = append(b, `,"maker":`...) // what ccxt reads
		b = appendBool(b, maker)
		b = append(b, '}')
	}
	st.buf = append(b, ']')
	return nil
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendAccountHead appends the start of the account answer: the
// commission fields, which hold the highest maker and taker rates of the
// spot markets (rates are per market here; a client that budgets fees
// wants the bound), as WEEX words them: makerCommission in units of
// 0.01%, commissionRates as decimals.
func appendAccountHead(b []byte, specs []*engine.MarketSpec) []byte {
	var maker, taker int64
	for _, sp := range specs {
		maker, taker = max(maker, sp.MakerRate), max(taker, sp.TakerRate)
	}
	const perBasisPoint = engine.RateOne / 10_000
	b = append(b, `{"makerCommission":`...)
	b = appendInt(b, maker/perBasisPoint)
	b = append(b, `,"takerCommission":`...)
	b = appendInt(b, taker/perBasisPoint)
	b = append(b, `,"commissionRates":{"maker":"`...)
	b = engine.AppendFixed(b, maker, engine.RateDecimals)
	b = append(b, `","taker":"`...)
	b = engine.AppendFixed(b, taker, engine.RateDecimals)
	return append(b, `"},"canTrade":true,"canWithdraw":true,"canDeposit":true,"updateTime":`...)
}

// handleAccount: GET /api/v3/account/.
func handleAccount(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx); e != nil {
		return e
	}
	bals, err := s.node.Balances(c.user, s.deadline(), st.bals[:0])
	st.bals = bals
	if err != nil {
		return s.queryErr(err)
	}
	b := append(st.buf, s.accountHead...)
	b = appendInt(b, st.nowMs)
	b = append(b, `,"accountType":"SPOT","balances":[`...)
	for i := range bals {
		if i > 0 {
			b = append(b, ',')
		}
		co := &s.coins[bals[i].Coin]
		b = append(b, `{"asset":`...)
		b = appendStr(b, co.Name)
		b = append(b, `,"free":"`...)
		b = appendAmount(b, co, bals[i].Avail)
		b = append(b, `","locked":"`...)
		b = appendAmount(b, co, bals[i].Frozen)
		b = append(b, `"}`...)
	}
	b = append(b, `],"permissions":["SPOT"],"uid":`...)
	b = appendInt(b, c.uid)
	st.buf = append(b, '}')
	return nil
}

// handleIncome: POST /api/v3/tax/income {coin, bizType, month, limit, page}.
func handleIncome(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var a bodyArgs
	if e := a.decode(&st.sc, ctx.Request.Body(), incomeFields); e != nil {
		return e
	}
	coin, biz, month := a.str[0], a.str[1], a.str[2]
	hasCoin, hasBiz, hasMonth := a.has[0], a.has[1], a.has[2]
	limit, page := a.intOr(3, 10), a.intOr(4, 1)
	if limit < 1 || limit > 200 {
		return limitErr("limit", 1, 200)
	}
	if page < 1 || page > 1_000_000 {
		return limitErr("page", 1, 1_000_000)
	}
	coinID := journal.CoinAll
	if hasCoin {
		coinID = -2
		for i := range s.coins {
			if s.coins[i].Name == string(coin) {
				coinID = i
			}
		}
		if coinID == -2 {
			return newErr(400, codeParam, "unknown coin")
		}
	}
	var bt engine.BizType
	if hasBiz {
		if bt = engine.ParseBizType(biz); bt == 0 {
			return newErr(400, codeParam, "unknown bizType")
		}
	}
	now := time.UnixMilli(st.nowMs).UTC()
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	if hasMonth {
		t, err := time.Parse("2006-01", string(month))
		if err != nil || len(month) != 7 {
			return newErr(400, codeParam, "month must be YYYY-MM")
		}
		from = t
	}
	to := from.AddDate(0, 1, 0)
	bills, err := s.store.Bills(c.uid, coinID, journal.Biz(bt), from.UnixMilli(), to.UnixMilli(), int((page-1)*limit), int(limit), st.bills[:0])
	st.bills = bills
	if err != nil {
		return s.queryErr(err)
	}
	st.buf = s.appendBills(append(st.buf, '['), bills)
	st.buf = append(st.buf, ']')
	return nil
}
