package edge

import (
	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// contractTradeEndpoints are the contract order endpoints (docs/API.md,
// "Perpetual contracts", "Orders"): the seed's V2 placeOrder and V3
// batchOrders, and ccxt's swap order surface. Weights: the seed's where it
// lists them, else ccxt's cost (weex.js) for IP and UID alike.
func contractTradeEndpoints(pub func(string, int64, handler) *endpoint, sig func(string, string, int64, int64, handler) *endpoint) []*endpoint {
	return []*endpoint{
		sig("POST", "/capi/v2/order/placeOrder", 2, 5, handleV2Place),
		sig("POST", "/capi/v3/batchOrders", 5, 10, handleV3Batch),
		sig("DELETE", "/capi/v3/batchOrders", 10, 10, handleCtCancelBatch),
		sig("POST", "/capi/v3/order", 5, 5, handleV3Place),
		sig("GET", "/capi/v3/order", 3, 3, handleCtGetOrder),
		sig("DELETE", "/capi/v3/order", 3, 3, handleCtCancel),
		sig("DELETE", "/capi/v3/allOpenOrders", 10, 10, handleCtCancelAll),
		sig("GET", "/capi/v3/openOrders", 5, 5, handleCtOpenOrders),
		sig("GET", "/capi/v3/order/history", 10, 10, handleCtHistory),
		sig("GET", "/capi/v3/userTrades", 5, 5, handleCtUserTrades),
		sig("POST", "/capi/v3/closePositions", 50, 50, handleCtClosePositions),
		sig("POST", "/capi/v2/order/placeTpSlOrder", 2, 5, handlePlaceTpSl),
		sig("GET", "/capi/v2/order/currentPlan", 3, 3, handleCurrentPlan),
		sig("POST", "/capi/v3/algoOrder", 5, 5, handleAlgoPlace),
		sig("DELETE", "/capi/v3/algoOrder", 3, 3, handleAlgoCancel),
		sig("GET", "/capi/v3/openAlgoOrders", 3, 3, handleAlgoOpen),
		sig("DELETE", "/capi/v3/algoOpenOrders", 10, 10, handleAlgoCancelAll),
	}
}

// maxCtBatch bounds POST /capi/v3/batchOrders (the seed: at most 5).
const maxCtBatch = 5

// errCtNotFound answers a contract order that is not the user's, not
// known, or (cancels) not working.
var errCtNotFound = newErr(400, codeContractNotFound, "order does not exist")

// ctRejectErr is the top-level answer of an engine reject of a contract
// command: spot's table, but -3200 for an unknown order and the
// contract's words for its size bounds.
func ctRejectErr(r engine.Reject) *apiError {
	switch r {
	case engine.RejectUnknownOrder:
		return errCtNotFound
	case engine.RejectQuantityTooSmall:
		return errCtTooSmall
	case engine.RejectQuantityTooLarge:
		return errCtTooLarge
	}
	return rejectErrs[r]
}

var (
	errCtTooSmall = newErr(400, codeOrderRejected, "order rejected: quantity below the contract's minOrderSize")
	errCtTooLarge = newErr(400, codeOrderRejected, "order rejected: quantity above the contract's maxOrderSize (market orders too)")
)

// ctSymbol resolves a body's symbol field with lookup (V2 or V3 names).
func ctSymbol(f *ctField, lookup func([]byte) *contract, unknown *verr) (*contract, *verr) {
	switch {
	case !f.has:
		return nil, vcSymMissing
	case f.kind != 's':
		return nil, vcSymKind
	}
	k := lookup(f.raw)
	if k == nil {
		return nil, unknown
	}
	return k, nil
}

// handleV2Place: POST /capi/v2/order/placeOrder (the seed's 4.8). Answers
// {"client_oid","order_id"} (2.4) once the order is placed (it may have
// filled or, IOC/FOK/market, expired: GET /capi/v3/order tells).
func handleV2Place(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var b ctBody
	if e := b.decodeRequest(&st.sc, ctx.Request.Body(), v2Fields); e != nil {
		return e
	}
	k, v := ctSymbol(&b.f[v2Symbol], s.contractV2, vcSymV2)
	if v != nil {
		return v.e
	}
	r := core.AcquireRequest()
	mode, v := buildV2(k, &b, c, &r.Cmd)
	if v != nil {
		core.ReleaseRequest(r)
		return v.e
	}
	if mode != 0 {
		if e := s.checkMarginMode(c, k, mode); e != nil {
			core.ReleaseRequest(r)
			return e
		}
	}
	if e := s.run(r); e != nil {
		return e
	}
	defer core.ReleaseRequest(r)
	if r.Out.Reject != engine.OK || !r.HasOrder {
		return ctRejectErr(r.Out.Reject)
	}
	b2 := append(st.buf, `{"client_oid":`...)
	b2 = appendClientOrderID(b2, &r.Order)
	b2 = append(b2, `,"order_id":"`...)
	b2 = appendInt(b2, r.Order.OrderID)
	st.buf = append(b2, `"}`...)
	return nil
}

var marginModeNames = [...]string{"", "cross (1)", "isolated (3)"}

// checkMarginMode refuses a V2 order whose marginMode is not the user's
// margin mode in k: an order does not change the setting (POST
// /capi/v3/account/marginType does).
func (s *Server) checkMarginMode(c *cred, k *contract, want engine.MarginMode) *apiError {
	_, mode, _, err := s.node.Positions(c.user, c.uid, k.spec.ID, s.deadline(), nil)
	if err != nil {
		return s.queryErr(err)
	}
	if mode == 0 {
		mode = engine.Cross
	}
	if mode != want {
		return newErr(400, codeOrderRejected, "order rejected: marginMode "+marginModeNames[want]+" differs from your margin mode in "+
			k.spec.Symbol+", "+marginModeNames[mode]+": change it first with POST /capi/v3/account/marginType")
	}
	return nil
}

// handleV3Place: POST /capi/v3/order (ccxt createOrder on swap). Answers
// the order record after matching, with transactTime.
func handleV3Place(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var b ctBody
	if e := b.decodeRequest(&st.sc, ctx.Request.Body(), v3Fields); e != nil {
		return e
	}
	k, v := ctSymbol(&b.f[v3Symbol], s.contractV3, vcSymV3)
	if v != nil {
		return v.e
	}
	r := core.AcquireRequest()
	if v := buildV3(k, &b, c, &r.Cmd); v != nil {
		core.ReleaseRequest(r)
		return v.e
	}
	if e := s.run(r); e != nil {
		return e
	}
	defer core.ReleaseRequest(r)
	if r.Out.Reject != engine.OK || !r.HasOrder {
		return ctRejectErr(r.Out.Reject)
	}
	st.buf = appendCtPlaced(st.buf, k, &r.Order, r.TimeMs)
	return nil
}

// ctElem is one element of a contract batch.
type ctElem struct {
	b   ctBody
	err *verr
	req *core.Request
}

// handleV3Batch: POST /capi/v3/batchOrders {"batchOrders":[order, ...]}
// (the seed's 4.2): 1 to 5 V3 orders, each with its own symbol and judged
// alone. Answers an array of 2.3 elements, one per order in order. As on
// spot, every valid element is submitted before any is waited on.
func handleV3Batch(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	d := &st.sc
	d.reset(ctx.Request.Body())
	var els [maxCtBatch]ctElem
	hasList, n, tooMany := false, 0, false
	var bad *apiError
	if d.objectStart() {
		for d.nextKey() {
			switch string(d.key) {
			case "batchOrders":
				if d.kind() != '[' {
					if bad == nil {
						bad = newErr(400, codeParam, "parameter batchOrders must be an array of orders")
					}
					d.skip()
					continue
				}
				hasList = true
				d.arrayStart()
				for d.nextElem() {
					if n == maxCtBatch {
						tooMany = true
						d.skip()
						continue
					}
					if d.kind() != '{' {
						if bad == nil {
							bad = newErr(400, codeParam, "each batchOrders element must be an order object")
						}
						d.skip()
						continue
					}
					els[n].b.decode(d, v3Fields)
					n++
				}
			default:
				if bad == nil {
					bad = newErr(400, codeParam, "unknown parameter \""+string(d.key)+"\": the body is {\"batchOrders\":[...]}")
				}
				d.skip()
			}
		}
	}
	if !d.end() {
		return errJSON
	}
	if bad != nil {
		return bad
	}
	if !hasList {
		return newErr(400, codeParamMissing, "parameter batchOrders is required")
	}
	if n == 0 || tooMany {
		return newErr(400, codeParam, "batchOrders must hold 1 to 5 orders")
	}
	for i := 0; i < n; i++ {
		el := &els[i]
		if el.b.bad != nil {
			el.err = el.b.bad
			continue
		}
		k, v := ctSymbol(&el.b.f[v3Symbol], s.contractV3, vcSymV3)
		if v != nil {
			el.err = v
			continue
		}
		r := core.AcquireRequest()
		if el.err = buildV3(k, &el.b, c, &r.Cmd); el.err != nil {
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
		el := &els[i]
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
	b := append(st.buf, '[')
	for i := 0; i < n; i++ {
		el := &els[i]
		if i > 0 {
			b = append(b, ',')
		}
		r := el.req
		if r != nil && r.Out.Reject == engine.OK && r.HasOrder {
			b = append(b, `{"orderId":"`...)
			b = appendInt(b, r.Order.OrderID)
			b = append(b, `","clientOrderId":`...)
			b = appendClientOrderID(b, &r.Order)
			b = append(b, `,"success":true,"errorCode":"","errorMessage":""}`...)
		} else {
			b = append(b, `{"orderId":"0","clientOrderId":`...)
			if f := &el.b.f[v3CID]; f.has && f.kind == 's' {
				b = appendString(b, f.raw)
			} else {
				b = append(b, `""`...)
			}
			b = append(b, `,"success":false,"errorCode":"`...)
			var msg string
			if r != nil {
				b = append(b, r.Out.Reject.String()...)
				msg = ctRejectErr(r.Out.Reject).msg
			} else {
				b = append(b, el.err.name...)
				msg = el.err.e.msg
			}
			b = append(b, `","errorMessage":`...)
			b = appendStr(b, msg)
			b = append(b, '}')
		}
		if r != nil {
			core.ReleaseRequest(r)
			el.req = nil
		}
	}
	st.buf = append(b, ']')
	return nil
}
