package edge

import (
	"cmp"
	"slices"

	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// ctArgSymbol resolves the optional V3 symbol query parameter (nil: none).
func (s *Server) ctArgSymbol(ctx *fasthttp.RequestCtx) (*contract, *apiError) {
	args := ctx.QueryArgs()
	if !args.Has("symbol") {
		return nil, nil
	}
	k := s.contractV3(args.Peek("symbol"))
	if k == nil {
		return nil, vcSymV3.e
	}
	return k, nil
}

// ctOfOrder returns the contract an order id belongs to (its low 10 bits
// are the market), or nil.
func (s *Server) ctOfOrder(id int64) *contract {
	return s.contractOf(engine.MarketID(id & (engine.MaxMarkets - 1)))
}

// ctOrderRef reads symbol / orderId / origClientOrderId (or clientOrderId)
// of GET and DELETE /capi/v3/order. k is nil when neither symbol nor
// orderId names the contract.
func (s *Server) ctOrderRef(ctx *fasthttp.RequestCtx) (k *contract, id int64, cid []byte, e *apiError) {
	if e = checkArgs(ctx, "symbol", "orderId", "origClientOrderId", "clientOrderId"); e != nil {
		return
	}
	if k, e = s.ctArgSymbol(ctx); e != nil {
		return
	}
	args := ctx.QueryArgs()
	if args.Has("orderId") {
		var ok bool
		if id, ok = parseInt(args.Peek("orderId")); !ok || id <= 0 {
			return nil, 0, nil, newErr(400, codeParam, "orderId must be a positive integer")
		}
		ko := s.ctOfOrder(id)
		if ko == nil || k != nil && k != ko {
			return nil, 0, nil, errCtNotFound
		}
		return ko, id, nil, nil
	}
	for _, n := range [...]string{"origClientOrderId", "clientOrderId"} {
		if args.Has(n) {
			cid = args.Peek(n)
			if len(cid) == 0 || len(cid) > engine.ClientIDMax {
				return nil, 0, nil, errCtNotFound
			}
			return k, 0, cid, nil
		}
	}
	return nil, 0, nil, newErr(400, codeParamMissing, "either orderId or origClientOrderId must be sent")
}

// ctContracts returns k alone, or every contract when k is nil.
func (s *Server) ctContracts(k *contract) []*contract {
	if k != nil {
		return []*contract{k}
	}
	return s.contracts
}

// handleCtGetOrder: GET /capi/v3/order (ccxt fetchOrder): the user's
// order, working or finished.
func handleCtGetOrder(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	k, id, cid, e := s.ctOrderRef(ctx)
	if e != nil {
		return e
	}
	for _, kk := range s.ctContracts(k) {
		v, ok, err := s.node.Order(c.user, c.uid, kk.spec.ID, id, cid, s.deadline())
		if err != nil {
			return s.queryErr(err)
		}
		if ok {
			st.buf = appendCtOrder(st.buf, kk, &v)
			return nil
		}
	}
	return errCtNotFound
}

// handleCtCancel: DELETE /capi/v3/order (ccxt cancelOrder): answers the
// order record after the cancel.
func handleCtCancel(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	k, id, cid, e := s.ctOrderRef(ctx)
	if e != nil {
		return e
	}
	if k == nil { // by client id in any contract: the one where it is working
		for _, kk := range s.contracts {
			v, ok, err := s.node.Order(c.user, c.uid, kk.spec.ID, 0, cid, s.deadline())
			if err != nil {
				return s.queryErr(err)
			}
			if ok && v.Status.Working() {
				k = kk
				break
			}
		}
		if k == nil {
			return errCtNotFound
		}
	}
	r := core.AcquireRequest()
	r.Cmd = engine.Cmd{Kind: engine.CmdCancel, Market: k.spec.ID, User: c.user, UID: c.uid, OrderID: id}
	if id == 0 {
		r.Cmd.Text.Set(cid)
	}
	if e := s.run(r); e != nil {
		return e
	}
	defer core.ReleaseRequest(r)
	if r.Out.Reject != engine.OK || !r.HasOrder {
		return ctRejectErr(r.Out.Reject)
	}
	st.buf = appendCtOrder(st.buf, k, &r.Order)
	return nil
}

// handleCtCancelBatch: DELETE /capi/v3/batchOrders {"symbol"?,
// "orderIdList":[..] | "origClientOrderIdList":[..]} (ccxt cancelOrders:
// a JSON body, signed; at most 10 ids). Answers {"orderList":[...]}: the
// cancelled order records, or {"orderId" | "origClientOrderId",
// "errorCode","errorMsg"} for ids that failed.
func handleCtCancelBatch(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx); e != nil {
		return e
	}
	return s.cancelBatch(ctx, st, c, &s.ctCancel)
}

// handleCtCancelAll: DELETE /capi/v3/allOpenOrders[?symbol=] (ccxt
// cancelAllOrders on swap): one CmdCancelAll per contract (every contract
// without symbol). Answers the orders it cancelled, oldest first: those
// working when the request arrived, read back from history once the
// cancels are durable (an order placed while the request runs is
// cancelled too but may be missing from the answer).
func handleCtCancelAll(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return e
	}
	k, e := s.ctArgSymbol(ctx)
	if e != nil {
		return e
	}
	id := engine.AllContracts
	if k != nil {
		id = k.spec.ID
	}
	orders, err := s.node.OpenOrders(c.user, c.uid, id, s.deadline(), st.orders[:0])
	st.orders = orders
	if err != nil {
		return s.queryErr(err)
	}
	ks := s.ctContracts(k)
	reqs := make([]*core.Request, len(ks))
	for i, kk := range ks {
		r := core.AcquireRequest()
		r.Cmd = engine.Cmd{Kind: engine.CmdCancelAll, Market: kk.spec.ID, User: c.user, UID: c.uid}
		if e := s.submit(r); e != nil {
			core.ReleaseRequest(r)
			for _, r := range reqs[:i] {
				if s.wait(r) == nil {
					core.ReleaseRequest(r)
				}
			}
			return e
		}
		reqs[i] = r
	}
	var failed *apiError
	for _, r := range reqs {
		if e := s.wait(r); e != nil {
			if failed == nil {
				failed = e
			}
			continue
		}
		if r.Out.Reject != engine.OK && failed == nil {
			failed = ctRejectErr(r.Out.Reject)
		}
		core.ReleaseRequest(r)
	}
	if failed != nil {
		return failed
	}
	b := append(st.buf, '[')
	first := true
	for i := range orders {
		o := &orders[i]
		kk := s.contractOf(o.Market)
		v, ok, err := s.store.Order(c.uid, o.Market, o.OrderID, nil)
		if err != nil {
			return s.queryErr(err)
		}
		if kk == nil || !ok || v.Status != engine.StatusCanceled {
			continue // it finished otherwise before the cancel
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendCtOrder(b, kk, &v)
	}
	st.buf = append(b, ']')
	return nil
}

// ctListArgs reads what openOrders, order/history and userTrades share:
// the optional symbol, startTime/endTime, and limit (1..max, default def).
func (s *Server) ctListArgs(ctx *fasthttp.RequestCtx, def, maxLimit int64) (k *contract, start, end, limit int64, e *apiError) {
	if k, e = s.ctArgSymbol(ctx); e != nil {
		return
	}
	if start, end, e = timeRange(ctx); e != nil {
		return
	}
	limit, e = argIntIn(ctx, "limit", def, 1, maxLimit)
	return
}

// handleCtOpenOrders: GET /capi/v3/openOrders[?symbol=&startTime=&endTime=&limit=]
// (ccxt fetchOpenOrders on swap): working orders created within the
// range, oldest first, at most limit (1..100, default 100).
func handleCtOpenOrders(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "startTime", "endTime", "limit"); e != nil {
		return e
	}
	k, start, end, limit, e := s.ctListArgs(ctx, 100, 100)
	if e != nil {
		return e
	}
	id := engine.AllContracts
	if k != nil {
		id = k.spec.ID
	}
	orders, err := s.node.OpenOrders(c.user, c.uid, id, s.deadline(), st.orders[:0])
	st.orders = orders
	if err != nil {
		return s.queryErr(err)
	}
	b := append(st.buf, '[')
	n := int64(0)
	for i := range orders {
		o := &orders[i]
		kk := s.contractOf(o.Market)
		if kk == nil || o.TimeMs < start || o.TimeMs > end {
			continue
		}
		if n == limit {
			break
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendCtOrder(b, kk, o)
	}
	st.buf = append(b, ']')
	return nil
}

// handleCtHistory: GET /capi/v3/order/history[?symbol=&startTime=&endTime=&limit=]
// (ccxt fetchClosedOrders / fetchCanceledOrders on swap): finished orders
// (FILLED, CANCELED, EXPIRED) created within the range, oldest first, at
// most limit (1..1000, default 100).
func handleCtHistory(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "startTime", "endTime", "limit"); e != nil {
		return e
	}
	k, start, end, limit, e := s.ctListArgs(ctx, 100, 1000)
	if e != nil {
		return e
	}
	orders := st.orders[:0]
	for _, kk := range s.ctContracts(k) {
		n := int64(0)
		err := s.store.FinishedOrders(c.uid, kk.spec.ID, start, end, func(o *engine.OrderView) bool {
			if o.TimeMs < start || o.TimeMs > end {
				return o.TimeMs < start // before the range: go on; after: done
			}
			orders = append(orders, *o)
			n++
			return n < limit
		})
		if err != nil {
			st.orders = orders
			return s.queryErr(err)
		}
	}
	st.orders = orders
	engine.SortOrders(orders)
	if int64(len(orders)) > limit {
		orders = orders[:limit]
	}
	b := append(st.buf, '[')
	for i := range orders {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCtOrder(b, s.contractOf(orders[i].Market), &orders[i])
	}
	st.buf = append(b, ']')
	return nil
}

// handleCtUserTrades: GET /capi/v3/userTrades[?symbol=&startTime=&endTime=&limit=&orderId=]
// (ccxt fetchMyTrades / fetchOrderTrades on swap): the user's fills,
// oldest first, at most limit (1..1000, default 100).
func handleCtUserTrades(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "startTime", "endTime", "limit", "orderId"); e != nil {
		return e
	}
	k, start, end, limit, e := s.ctListArgs(ctx, 100, 1000)
	if e != nil {
		return e
	}
	orderID, e := argInt(ctx, "orderId", 0)
	if e != nil {
		return e
	}
	fetch := int(limit)
	if orderID != 0 {
		ko := s.ctOfOrder(orderID)
		if ko == nil || k != nil && k != ko {
			st.buf = append(st.buf, "[]"...)
			return nil
		}
		k, fetch = ko, 1000
	}
	trades := st.trades[:0]
	for _, kk := range s.ctContracts(k) {
		var err error
		trades, err = s.store.Trades(c.uid, kk.spec.ID, start, end, fetch, trades)
		if err != nil {
			st.trades = trades
			return s.queryErr(err)
		}
	}
	st.trades = trades
	if k == nil && len(s.contracts) > 1 {
		slices.SortStableFunc(trades, func(a, b engine.Trade) int {
			return cmp.Or(cmp.Compare(a.TimeMs, b.TimeMs), cmp.Compare(a.TradeID, b.TradeID))
		})
	}
	b := append(st.buf, '[')
	n := int64(0)
	for i := range trades {
		t := &trades[i]
		kk := s.contractOf(t.Market)
		if kk == nil {
			continue
		}
		maker := t.MakerUID == c.uid
		order, fee, pos, pnl, side := t.TakerOrder, t.TakerFee, t.TakerPos, t.TakerPnl, t.TakerSide
		if maker {
			order, fee, pos, pnl, side = t.MakerOrder, t.MakerFee, t.MakerPos, t.MakerPnl, 3-t.TakerSide
		}
		if orderID != 0 && order != orderID {
			continue
		}
		if n == limit {
			break
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = s.appendCtTrade(b, kk, t, order, fee, pnl, side, pos, maker)
	}
	st.buf = append(b, ']')
	return nil
}

// appendCtTrade appends one userTrades row: the user's side of fill t.
func (s *Server) appendCtTrade(b []byte, k *contract, t *engine.Trade, order int64, fee, pnl engine.Amount, side engine.Side, pos engine.PosSide, maker bool) []byte {
	sp := k.spec
	mc := s.margin(k)
	b = append(b, `{"id":`...)
	b = appendInt(b, t.TradeID)
	b = append(b, `,"orderId":`...)
	b = appendInt(b, order)
	b = append(b, `,"symbol":`...)
	b = appendStr(b, sp.V3Symbol)
	b = append(b, `,"side":"`...)
	b = append(b, name(sideNames[:], int(side))...)
	b = append(b, `","positionSide":"`...)
	b = append(b, name(posSideNames[:], int(pos))...)
	b = append(b, `","buyer":`...)
	b = appendBool(b, side == engine.Buy)
	b = append(b, `,"maker":`...)
	b = appendBool(b, maker)
	b = append(b, `,"price":"`...)
	b = sp.AppendPrice(b, t.Price)
	b = append(b, `","qty":"`...)
	b = sp.AppendQty(b, t.Qty)
	b = append(b, `","quoteQty":"`...)
	b = engine.AppendFixed(b, int64(t.Quote), sp.QuoteScale)
	b = append(b, `","commission":"`...)
	b = appendAmount(b, mc, fee)
	b = append(b, `","commissionAsset":`...)
	b = appendStr(b, mc.Name)
	b = append(b, `,"realizedPnl":"`...)
	b = appendAmount(b, mc, pnl)
	b = append(b, `","time":`...)
	b = appendInt(b, t.TimeMs)
	return append(b, '}')
}

// handleCtClosePositions: POST /capi/v3/closePositions {"symbol"?} (ccxt
// closePosition / closeAllPositions): a MARKET close of each of the
// user's positions in the contract (every contract without symbol) for
// its size less its working closes, split into orders of at most
// maxOrderSize. Answers one element per close order: {"positionId",
// "successOrderId", "errorMessage", "success", "symbol", "positionSide",
// "status", "executedQty"}; a position whose whole size is already
// claimed by working closes gets success false.
func handleCtClosePositions(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var a ctBody
	d := &st.sc
	body := ctx.Request.Body()
	if len(body) == 0 {
		body = []byte("{}")
	}
	d.reset(body)
	if d.kind() != '{' {
		return errJSON
	}
	a.decode(d, closeFields)
	if !d.end() {
		return errJSON
	}
	if a.bad != nil {
		return a.bad.e
	}
	var k *contract
	if f := &a.f[0]; f.has {
		var v *verr
		if k, v = ctSymbol(f, s.contractV3, vcSymV3); v != nil {
			return v.e
		}
	}
	id := engine.AllContracts
	if k != nil {
		id = k.spec.ID
	}
	pos, _, _, err := s.node.Positions(c.user, c.uid, id, s.deadline(), nil)
	if err != nil {
		return s.queryErr(err)
	}
	type closeOrder struct {
		k   *contract
		p   *engine.PositionView
		q   engine.Qty
		req *core.Request
		err *apiError
	}
	var cls []closeOrder
	for i := range pos {
		p := &pos[i]
		kk := s.contractOf(p.Market)
		if kk == nil {
			continue
		}
		free := p.Size - p.Closing
		if free <= 0 {
			cls = append(cls, closeOrder{k: kk, p: p, err: errNothingToClose})
			continue
		}
		maxQ := kk.spec.MaxQty
		parts := (free + maxQ - 1) / maxQ
		for j := engine.Qty(0); j < parts; j++ {
			q := free / parts
			if j < free%parts {
				q++
			}
			cls = append(cls, closeOrder{k: kk, p: p, q: q})
		}
	}
	for i := range cls {
		cl := &cls[i]
		if cl.err != nil {
			continue
		}
		r := core.AcquireRequest()
		r.Cmd = engine.Cmd{Kind: engine.CmdPlace, Market: cl.k.spec.ID, User: c.user, UID: c.uid,
			Side: engine.Sell, Pos: cl.p.Side, Type: engine.Market, TIF: engine.IOC, Qty: cl.q}
		if cl.p.Side == engine.Short {
			r.Cmd.Side = engine.Buy
		}
		if e := s.submit(r); e != nil {
			core.ReleaseRequest(r)
			cl.err = e
			continue
		}
		cl.req = r
	}
	b := append(st.buf, '[')
	for i := range cls {
		cl := &cls[i]
		if i > 0 {
			b = append(b, ',')
		}
		if r := cl.req; r != nil {
			if e := s.wait(r); e != nil {
				cl.err = e
			} else {
				if r.Out.Reject != engine.OK || !r.HasOrder {
					cl.err = ctRejectErr(r.Out.Reject)
				} else {
					b = append(b, `{"positionId":`...)
					b = appendInt(b, positionID(c.uid, cl.k.spec.ID, cl.p.Side))
					b = append(b, `,"successOrderId":`...)
					b = appendInt(b, r.Order.OrderID)
					b = append(b, `,"errorMessage":"","success":true,"symbol":`...)
					b = appendStr(b, cl.k.spec.V3Symbol)
					b = append(b, `,"positionSide":"`...)
					b = append(b, name(posSideNames[:], int(cl.p.Side))...)
					b = append(b, `","status":"`...)
					b = append(b, name(statusNames[:], int(r.Order.Status))...)
					b = append(b, `","executedQty":"`...)
					b = cl.k.spec.AppendQty(b, r.Order.ExecutedQty)
					b = append(b, `"}`...)
				}
				core.ReleaseRequest(r)
			}
		}
		if cl.err != nil {
			b = append(b, `{"positionId":`...)
			b = appendInt(b, positionID(c.uid, cl.k.spec.ID, cl.p.Side))
			b = append(b, `,"successOrderId":0,"errorMessage":`...)
			b = appendStr(b, cl.err.msg)
			b = append(b, `,"success":false,"symbol":`...)
			b = appendStr(b, cl.k.spec.V3Symbol)
			b = append(b, `,"positionSide":"`...)
			b = append(b, name(posSideNames[:], int(cl.p.Side))...)
			b = append(b, `"}`...)
		}
	}
	st.buf = append(b, ']')
	return nil
}

var (
	closeFields       = []string{"symbol"}
	errNothingToClose = newErr(400, codeOrderRejected, "nothing to close: working close orders already cover the position")
)
