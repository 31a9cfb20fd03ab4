package edge

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// cancelFamily is what differs between the spot batch cancel (DELETE
// /api/v3/order/batch) and the contract one (DELETE /capi/v3/batchOrders):
// the body's keys, how a symbol and an order id name a market, the markets
// a client id is looked for in when no symbol narrows it, and how a
// cancelled order is written. One is made per family in New.
type cancelFamily struct {
	ids, cids string // the body's keys of the order id and client id lists
	symbol    func(sym []byte) (engine.MarketID, *apiError)
	ofID      func(id int64) (engine.MarketID, bool) // the market an order id names, if of this family
	markets   []engine.MarketID
	encode    func(b []byte, m engine.MarketID, v *engine.OrderView) []byte
}

// cancelBatch answers a batch cancel {"symbol"?, ids: [..] | cids: [..]}
// (at most maxBatch): {"orderList":[...]}, the cancelled order records, or
// {"orderId" | "origClientOrderId", "errorCode", "errorMsg"} for ids that
// failed. The cancels are submitted together, then waited for.
func (s *Server) cancelBatch(ctx *fasthttp.RequestCtx, st *reqState, c *cred, f *cancelFamily) *apiError {
	d := &st.sc
	d.reset(ctx.Request.Body())
	var sym []byte
	var ids [maxBatch]int64
	var cids [maxBatch][]byte
	nIDs, nCIDs, hasSym := 0, 0, false
	var bad *apiError
	setBad := func(e *apiError) {
		if bad == nil {
			bad = e
		}
	}
	if d.objectStart() {
		for d.nextKey() {
			switch key := string(d.key); {
			case key == "symbol":
				if d.kind() == 'z' {
					d.literal()
					continue
				}
				if d.kind() != 's' {
					setBad(newErr(400, codeParam, "parameter symbol must be a string"))
					d.skip()
					continue
				}
				sym, _ = d.str()
				hasSym = true
			case key == f.ids || key == f.cids:
				isID := key == f.ids
				if d.kind() != '[' {
					setBad(newErr(400, codeParam, f.ids+" and "+f.cids+" must be arrays"))
					d.skip()
					continue
				}
				d.arrayStart()
				for d.nextElem() {
					if nIDs+nCIDs == maxBatch {
						setBad(newErr(400, codeParam, "at most 10 orders per request"))
						d.skip()
						continue
					}
					switch k := d.kind(); {
					case isID && (k == 'n' || k == 's'):
						var raw []byte
						if k == 'n' {
							raw, _ = d.number()
						} else {
							raw, _ = d.str()
						}
						id, ok := parseInt(raw)
						if !ok || id <= 0 {
							setBad(newErr(400, codeParam, f.ids+" must hold positive integers"))
						}
						ids[nIDs] = id
						nIDs++
					case !isID && k == 's':
						cids[nCIDs], _ = d.str()
						nCIDs++
					default:
						setBad(newErr(400, codeParam, "bad element in "+key))
						d.skip()
					}
				}
			default:
				setBad(newErr(400, codeParam, fmt.Sprintf("unknown parameter %q", d.key)))
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
	var only engine.MarketID // the symbol's market, when hasSym
	if hasSym {
		var e *apiError
		if only, e = f.symbol(sym); e != nil {
			return e
		}
	}
	n := nIDs + nCIDs
	if n == 0 {
		return newErr(400, codeParamMissing, f.ids+" or "+f.cids+" is required")
	}
	var mk [maxBatch]engine.MarketID
	for i := 0; i < n; i++ {
		st.reqs[i] = nil
		r := core.AcquireRequest()
		r.Cmd = engine.Cmd{Kind: engine.CmdCancel, User: c.user, UID: c.uid}
		found := false
		if i < nIDs {
			r.Cmd.OrderID = ids[i]
			mk[i], found = f.ofID(ids[i])
			found = found && (!hasSym || mk[i] == only)
		} else if cid := cids[i-nIDs]; len(cid) > 0 && r.Cmd.Text.Set(cid) {
			mk[i], found = only, hasSym
			for _, m := range f.markets {
				if found {
					break
				}
				if v, ok, _ := s.node.Order(c.user, c.uid, m, 0, cid, s.deadline()); ok && v.Status.Working() {
					mk[i], found = m, true
				}
			}
		}
		if !found {
			core.ReleaseRequest(r)
			continue
		}
		r.Cmd.Market = mk[i]
		if s.submit(r) != nil {
			core.ReleaseRequest(r)
			continue
		}
		st.reqs[i] = r
	}
	b := append(st.buf, `{"orderList":[`...)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		r := st.reqs[i]
		if r != nil && s.wait(r) != nil {
			r = nil
		}
		if r != nil && r.Out.Reject == engine.OK && r.HasOrder {
			b = f.encode(b, mk[i], &r.Order)
		} else {
			if i < nIDs {
				b = append(b, `{"orderId":`...)
				b = appendInt(b, ids[i])
			} else {
				b = append(b, `{"origClientOrderId":`...)
				b = appendString(b, cids[i-nIDs])
			}
			b = append(b, `,"errorCode":"ORDER_NOT_FOUND","errorMsg":"order does not exist or is not working"}`...)
		}
		if r != nil {
			core.ReleaseRequest(r)
		}
		st.reqs[i] = nil
	}
	st.buf = append(b, "]}"...)
	return nil
}

// cancelFamilies makes the spot and the contract batch cancels' tables.
func (s *Server) cancelFamilies() {
	s.spotCancel = cancelFamily{ids: "orderIds", cids: "origClientOrderIds",
		symbol: func(sym []byte) (engine.MarketID, *apiError) {
			if m := s.bySymbol[string(sym)]; m != nil {
				return m.spec.ID, nil
			}
			return 0, errSymbolInvalid
		},
		ofID: func(id int64) (engine.MarketID, bool) {
			m := engine.MarketID(id & (engine.MaxMarkets - 1))
			return m, int(m) < len(s.markets)
		},
		encode: func(b []byte, m engine.MarketID, v *engine.OrderView) []byte { return appendOrder(b, s.markets[m], v) },
	}
	for _, m := range s.markets {
		s.spotCancel.markets = append(s.spotCancel.markets, m.spec.ID)
	}
	s.ctCancel = cancelFamily{ids: "orderIdList", cids: "origClientOrderIdList",
		symbol: func(sym []byte) (engine.MarketID, *apiError) {
			if k := s.contractV3(sym); k != nil {
				return k.spec.ID, nil
			}
			return 0, vcSymV3.e
		},
		ofID: func(id int64) (engine.MarketID, bool) {
			if k := s.ctOfOrder(id); k != nil {
				return k.spec.ID, true
			}
			return 0, false
		},
		encode: func(b []byte, m engine.MarketID, v *engine.OrderView) []byte {
			return appendCtOrder(b, s.contractOf(m), v)
		},
	}
	for _, k := range s.contracts {
		s.ctCancel.markets = append(s.ctCancel.markets, k.spec.ID)
	}
}
