package edge

import (
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"
	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// verr is a validation failure of one order: an element error in a batch
// (name, msg) or a top-level error on the single-order endpoint.
type verr struct {
	name string // batch errorCode
	e    *apiError
}

func ve(name string, status, code int, msg string) *verr {
	return &verr{name, newErr(status, code, msg)}
}

var (
	vSideMissing = ve("INVALID_SIDE", 400, codeParamMissing, "parameter side is required")
	vSide        = ve("INVALID_SIDE", 400, codeSide, "invalid side: must be BUY or SELL")
	vTypeMissing = ve("INVALID_TYPE", 400, codeParamMissing, "parameter type is required")
	vType        = ve("INVALID_TYPE", 400, codeType, "invalid type: must be LIMIT or MARKET")
	vTIFMissing  = ve("INVALID_TIME_IN_FORCE", 400, codeTIF, "timeInForce is required for LIMIT orders")
	vTIF         = ve("INVALID_TIME_IN_FORCE", 400, codeTIF, "invalid timeInForce: must be GTC, IOC or FOK")
	vQtyMissing  = ve("INVALID_QUANTITY", 400, codeParamMissing, "parameter quantity is required")
	vQtySyntax   = ve("INVALID_QUANTITY", 400, codeParam, "quantity must be a plain positive decimal string")
	vQtyPrec     = ve("INVALID_QUANTITY", 400, codePrecision, "quantity is not a multiple of stepSize")
	vQtyRange    = ve("INVALID_QUANTITY", 400, codeParam, "quantity out of range")
	vQtyZero     = ve("INVALID_QUANTITY", 400, codeParam, "quantity must be positive")
	vPxMissing   = ve("INVALID_PRICE", 400, codeParamMissing, "parameter price is required for LIMIT orders")
	vPxSyntax    = ve("INVALID_PRICE", 400, codeParam, "price must be a plain positive decimal string")
	vPxPrec      = ve("INVALID_PRICE", 400, codePrecision, "price is not a multiple of tickSize")
	vPxRange     = ve("INVALID_PRICE", 400, codeParam, "price out of range")
	vPxZero      = ve("INVALID_PRICE", 400, codeParam, "price must be positive")
	vCID         = ve("INVALID_CLIENT_ORDER_ID", 400, codeClientID, "newClientOrderId must be 1 to 36 characters of [A-Za-z0-9._:/-]")
	vBusy        = ve("SYSTEM_BUSY", 503, codeBusy, "system busy, the order was not placed")
	vTimeout     = ve("TIMEOUT", 500, codeUnknown, "timed out waiting for the journal: the order may still be placed")
	vUnavailable = ve("SERVICE_UNAVAILABLE", 503, codeBusy, errUnavailable.msg)
)

// rejectErrs are the top-level answers of engine rejects, built once.
var rejectErrs = func() []*apiError {
	v := make([]*apiError, 256)
	for i := range v {
		v[i] = rejectErr(engine.Reject(i))
	}
	return v
}()

// orderIn holds one order's raw fields (aliasing the request body).
type orderIn struct {
	symbol, side, typ, tif, qty, price, cid                       []byte
	hasSymbol, hasSide, hasType, hasTIF, hasQty, hasPrice, hasCID bool
	bad                                                           *verr // unknown field or wrong type
}

// decodeOrder reads an order object; withSymbol accepts "symbol" too.
func decodeOrder(d *scanner, in *orderIn, withSymbol bool) {
	*in = orderIn{}
	if !d.objectStart() {
		return
	}
	for d.nextKey() {
		var dst *[]byte
		var has *bool
		switch string(d.key) {
		case "side":
			dst, has = &in.side, &in.hasSide
		case "type":
			dst, has = &in.typ, &in.hasType
		case "timeInForce":
			dst, has = &in.tif, &in.hasTIF
		case "quantity":
			dst, has = &in.qty, &in.hasQty
		case "price":
			dst, has = &in.price, &in.hasPrice
		case "newClientOrderId":
			dst, has = &in.cid, &in.hasCID
		case "symbol":
			if withSymbol {
				dst, has = &in.symbol, &in.hasSymbol
			}
		}
		if dst == nil {
			if in.bad == nil {
				in.bad = ve("INVALID_PARAMETER", 400, codeParam, fmt.Sprintf("unknown parameter %q", d.key))
			}
			d.skip()
			continue
		}
		switch d.kind() {
		case 'z':
			d.literal() // null: absent
		case 's':
			*dst, _ = d.str()
			*has = true
		default:
			if in.bad == nil {
				in.bad = ve("INVALID_PARAMETER", 400, codeParam, fmt.Sprintf("parameter %s must be a string", d.key))
			}
			d.skip()
		}
	}
}

func validCID(b []byte) bool {
	if len(b) == 0 || len(b) > 36 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '.', c == '_', c == ':', c == '/', c == '-':
		default:
			return false
		}
	}
	return true
}

// buildPlace validates in against m's rules and fills cmd. batch requires
// timeInForce for LIMIT orders; the single endpoint defaults it to GTC.
func buildPlace(m *market, in *orderIn, batch bool, c *cred, cmd *engine.Cmd) *verr {
	if in.bad != nil {
		return in.bad
	}
	*cmd = engine.Cmd{Kind: engine.CmdPlace, Market: m.spec.ID, User: c.user, UID: c.uid}
	switch {
	case !in.hasSide:
		return vSideMissing
	case string(in.side) == "BUY":
		cmd.Side = engine.Buy
	case string(in.side) == "SELL":
		cmd.Side = engine.Sell
	default:
		return vSide
	}
	switch {
	case !in.hasType:
		return vTypeMissing
	case string(in.typ) == "LIMIT":
		cmd.Type = engine.Limit
	case string(in.typ) == "MARKET":
		cmd.Type = engine.Market
	default:
		return vType
	}
	if cmd.Type == engine.Limit {
		switch {
		case !in.hasTIF && batch:
			return vTIFMissing
		case !in.hasTIF, string(in.tif) == "GTC":
			cmd.TIF = engine.GTC
		case string(in.tif) == "IOC":
			cmd.TIF = engine.IOC
		case string(in.tif) == "FOK":
			cmd.TIF = engine.FOK
		default:
			return vTIF
		}
	} else {
		cmd.TIF = engine.IOC // timeInForce and price are ignored on MARKET orders
	}
	if !in.hasQty {
		return vQtyMissing
	}
	q, err := m.spec.ParseQty(in.qty)
	if e := decErr(err, vQtySyntax, vQtyPrec, vQtyRange); e != nil {
		return e
	}
	if q <= 0 {
		return vQtyZero
	}
	cmd.Qty = q
	if cmd.Type == engine.Limit {
		if !in.hasPrice {
			return vPxMissing
		}
		p, err := m.spec.ParsePrice(in.price)
		if e := decErr(err, vPxSyntax, vPxPrec, vPxRange); e != nil {
			return e
		}
		if p <= 0 {
			return vPxZero
		}
		cmd.Price = p
	}
	if in.hasCID {
		if !validCID(in.cid) {
			return vCID
		}
		cmd.Text.Set(in.cid)
	}
	return nil
}

func decErr(err error, syntax, prec, rng *verr) *verr {
	if err == nil {
		return nil
	}
	switch err {
	case engine.ErrDecimalPrecision:
		return prec
	case engine.ErrDecimalRange:
		return rng
	}
	return syntax
}

// batchElem is one element of a batch being processed.
type batchElem struct {
	in  orderIn
	err *verr
	rej engine.Reject
	req *core.Request
}

// handleBatch: POST /api/v3/order/batch. Every valid element is submitted
// before any is waited on, so they share fsyncs.
func handleBatch(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	d := &st.sc
	d.reset(ctx.Request.Body())
	var sym []byte
	hasSym, hasList, n, tooMany := false, false, 0, false
	var badKey *apiError
	if d.objectStart() {
		for d.nextKey() {
			switch string(d.key) {
			case "symbol":
				if d.kind() != 's' {
					if badKey == nil {
						badKey = newErr(400, codeParam, "parameter symbol must be a string")
					}
					d.skip()
					continue
				}
				sym, _ = d.str()
				hasSym = true
			case "orderList":
				if d.kind() != '[' {
					if badKey == nil {
						badKey = newErr(400, codeParam, "parameter orderList must be an array of orders")
					}
					d.skip()
					continue
				}
				hasList = true
				d.arrayStart()
				for d.nextElem() {
					if n == maxBatch {
						tooMany = true
						d.skip()
						continue
					}
					if d.kind() != '{' {
						if badKey == nil {
							badKey = newErr(400, codeParam, "each orderList element must be an order object")
						}
						d.skip()
						continue
					}
					decodeOrder(d, &st.elems[n].in, false)
					n++
				}
			default:
				if badKey == nil {
					badKey = newErr(400, codeParam, fmt.Sprintf("unknown parameter %q", d.key))
				}
				d.skip()
			}
		}
	}
	if !d.end() {
		return errJSON
	}
	if badKey != nil {
		return badKey
	}
	if !hasSym {
		return errSymbolMissing
	}
	m := s.bySymbol[string(sym)]
	if m == nil {
		return errSymbolInvalid
	}
	if !hasList {
		return newErr(400, codeParamMissing, "parameter orderList is required")
	}
	if n == 0 || tooMany {
		return newErr(400, codeParam, "orderList must hold 1 to 10 orders")
	}
	for i := 0; i < n; i++ {
		el := &st.elems[i]
		el.req, el.rej = nil, engine.OK
		r := core.AcquireRequest()
		if el.err = buildPlace(m, &el.in, true, c, &r.Cmd); el.err != nil {
			core.ReleaseRequest(r)
			continue
		}
		if e := s.submit(r); e != nil {
			core.ReleaseRequest(r)
			el.err = vBusy
			if e == errUnavailable {
				el.err = vUnavailable
			}
			continue
		}
		el.req = r
	}
	for i := 0; i < n; i++ {
		el := &st.elems[i]
		if el.req == nil {
			continue
		}
		if e := s.wait(el.req); e != nil {
			el.req = nil // abandoned or released by wait
			switch e {
			case errTimeout:
				el.err = vTimeout
			case errUnavailable:
				el.err = vUnavailable
			default:
				el.err = vBusy
			}
		}
	}
	b := append(st.buf, `{"orderList":[`...)
	for i := 0; i < n; i++ {
		el := &st.elems[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"symbol":`...)
		b = appendStr(b, m.spec.Symbol)
		r := el.req
		if r != nil && r.Out.Reject == engine.OK && r.HasOrder {
			b = append(b, `,"orderId":`...)
			b = appendInt(b, r.Order.OrderID)
			b = append(b, `,"clientOrderId":`...)
			b = appendClientOrderID(b, &r.Order)
			b = append(b, `,"transactTime":`...)
			b = appendInt(b, r.TimeMs)
			b = append(b, '}')
		} else {
			b = append(b, `,"clientOrderId":`...)
			b = appendString(b, el.in.cid)
			b = append(b, `,"errorCode":"`...)
			var msg string
			if r != nil {
				b = append(b, r.Out.Reject.String()...)
				msg = rejectOf(r.Out.Reject).msg
			} else {
				b = append(b, el.err.name...)
				msg = el.err.e.msg
			}
			b = append(b, `","errorMsg":`...)
			b = appendStr(b, msg)
			b = append(b, '}')
		}
		if r != nil {
			core.ReleaseRequest(r)
			el.req = nil
		}
	}
	st.buf = append(b, "]}"...)
	return nil
}

// handlePlace: POST /api/v3/order.
func handlePlace(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	d := &st.sc
	d.reset(ctx.Request.Body())
	in := &st.elems[0].in
	if d.kind() != '{' {
		return errJSON
	}
	decodeOrder(d, in, true)
	if !d.end() {
		return errJSON
	}
	if in.bad != nil {
		return in.bad.e
	}
	if !in.hasSymbol {
		return errSymbolMissing
	}
	m := s.bySymbol[string(in.symbol)]
	if m == nil {
		return errSymbolInvalid
	}
	r := core.AcquireRequest()
	if v := buildPlace(m, in, false, c, &r.Cmd); v != nil {
		core.ReleaseRequest(r)
		return v.e
	}
	if e := s.run(r); e != nil {
		return e
	}
	defer core.ReleaseRequest(r)
	if r.Out.Reject != engine.OK || !r.HasOrder {
		return rejectErrs[r.Out.Reject]
	}
	st.buf = appendPlaced(st.buf, m, &r.Order, r.TimeMs)
	return nil
}

// orderRef reads symbol / orderId / origClientOrderId (GET and DELETE
// /api/v3/order). m is nil when neither symbol nor orderId names a market.
func (s *Server) orderRef(ctx *fasthttp.RequestCtx) (m *market, id int64, cid []byte, e *apiError) {
	if e = checkArgs(ctx, "symbol", "orderId", "origClientOrderId", "clientOrderId"); e != nil {
		return
	}
	if m, e = s.argSymbol(ctx, false); e != nil {
		return
	}
	args := ctx.QueryArgs()
	if args.Has("orderId") {
		var ok bool
		if id, ok = parseInt(args.Peek("orderId")); !ok || id <= 0 {
			return nil, 0, nil, newErr(400, codeParam, "orderId must be a positive integer")
		}
		mid := int(id & (engine.MaxMarkets - 1))
		if mid >= len(s.markets) || m != nil && m != s.markets[mid] {
			return nil, 0, nil, errOrderNotFound
		}
		m = s.markets[mid]
		return
	}
	for _, k := range [...]string{"origClientOrderId", "clientOrderId"} {
		if args.Has(k) {
			cid = args.Peek(k)
			if len(cid) == 0 || len(cid) > engine.ClientIDMax {
				return nil, 0, nil, errOrderNotFound
			}
			return
		}
	}
	return nil, 0, nil, newErr(400, codeParamMissing, "either orderId or origClientOrderId must be sent")
}

// lookupOrder finds c's order (working or finished).
func (s *Server) lookupOrder(c *cred, m *market, id int64, cid []byte) (*market, engine.OrderView, *apiError) {
	ms := s.markets
	if m != nil {
		ms = []*market{m}
	}
	for _, mk := range ms {
		v, ok, err := s.node.Order(c.user, c.uid, mk.spec.ID, id, cid, s.deadline())
		if err != nil {
			return nil, v, s.queryErr(err)
		}
		if ok {
			return mk, v, nil
		}
	}
	return nil, engine.OrderView{}, errOrderNotFound
}

// queryErr answers a failed read or command: busy, timed out, closing,
// unavailable (the journal cannot be written), or else an internal error,
// logged (damaged storage, journal.ErrCorrupt, ends here).
func (s *Server) queryErr(err error) *apiError {
	switch {
	case errors.Is(err, core.ErrBusy):
		return errBusy
	case errors.Is(err, core.ErrTimeout):
		return errTimeout
	case errors.Is(err, core.ErrClosed):
		return errClosing
	case errors.Is(err, core.ErrUnavailable):
		return errUnavailable
	case errors.Is(err, core.ErrNotLeader):
		return errNotLeader
	}
	s.log.Error("edge: read failed", "err", err.Error())
	return errInternal
}

// handleGetOrder: GET /api/v3/order.
func handleGetOrder(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	m, id, cid, e := s.orderRef(ctx)
	if e != nil {
		return e
	}
	m, v, e := s.lookupOrder(c, m, id, cid)
	if e != nil {
		return e
	}
	st.buf = appendOrder(st.buf, m, &v)
	return nil
}

// handleCancel: DELETE /api/v3/order.
func handleCancel(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	m, id, cid, e := s.orderRef(ctx)
	if e != nil {
		return e
	}
	if m == nil { // by client id in any market: the market of its working order
		for _, mk := range s.markets {
			v, ok, err := s.node.Order(c.user, c.uid, mk.spec.ID, 0, cid, s.deadline())
			if err != nil {
				return s.queryErr(err)
			}
			if ok && v.Status.Working() {
				m = mk
				break
			}
		}
		if m == nil {
			return errOrderNotFound
		}
	}
	r := core.AcquireRequest()
	r.Cmd = engine.Cmd{Kind: engine.CmdCancel, Market: m.spec.ID, User: c.user, UID: c.uid, OrderID: id}
	if id == 0 {
		r.Cmd.Text.Set(cid)
	}
	if e := s.run(r); e != nil {
		return e
	}
	defer core.ReleaseRequest(r)
	if r.Out.Reject != engine.OK || !r.HasOrder {
		return rejectErrs[r.Out.Reject]
	}
	st.buf = appendOrder(st.buf, m, &r.Order)
	return nil
}

// handleCancelAll: DELETE /api/v3/openOrders?symbol=: cancels each working
// order and answers the cancelled orders.
func handleCancelAll(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return e
	}
	m, e := s.argSymbol(ctx, true)
	if e != nil {
		return e
	}
	orders, err := s.node.OpenOrders(c.user, c.uid, m.spec.ID, s.deadline(), st.orders[:0])
	st.orders = orders
	if err != nil {
		return s.queryErr(err)
	}
	b := append(st.buf, '[')
	first := true
	for i := 0; i < len(orders); i += maxBatch {
		j := min(i+maxBatch, len(orders))
		for k := i; k < j; k++ {
			r := core.AcquireRequest()
			r.Cmd = engine.Cmd{Kind: engine.CmdCancel, Market: m.spec.ID, User: c.user, UID: c.uid, OrderID: orders[k].OrderID}
			if e := s.submit(r); e != nil {
				core.ReleaseRequest(r)
				r = nil
			}
			st.reqs[k-i] = r
		}
		for k := i; k < j; k++ {
			r := st.reqs[k-i]
			if r == nil || s.wait(r) != nil {
				continue
			}
			if r.Out.Reject == engine.OK && r.HasOrder {
				if !first {
					b = append(b, ',')
				}
				first = false
				b = appendOrder(b, m, &r.Order)
			}
			core.ReleaseRequest(r)
		}
	}
	st.buf = append(b, ']')
	return nil
}

// handleCancelBatch: DELETE /api/v3/order/batch {"symbol"?, "orderIds":[..]
// | "origClientOrderIds":[..]} (ccxt cancelOrders; at most 10). Answers
// {"orderList":[...]}: the cancelled order records, or {"orderId" |
// "origClientOrderId", "errorCode", "errorMsg"} for ids that failed.
func handleCancelBatch(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	return s.cancelBatch(ctx, st, c, &s.spotCancel)
}
