package edge

import (
	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// ccxt's algo-order surface on plans (docs/API.md, "Plans (TP/SL)").

// algoStatus names for the algo record.
const (
	algoUntriggered = "UNTRIGGERED"
	algoTriggered   = "TRIGGERED"
	algoCanceled    = "CANCELED"
)

// buildAlgo validates a POST /capi/v3/algoOrder body (symbol resolved):
// a STOP/STOP_MARKET (stop-loss) or TAKE_PROFIT/TAKE_PROFIT_MARKET
// (take-profit) that closes (SELL LONG, BUY SHORT). An open direction,
// reduceOnly false or a preset make it an entry trigger: refused.
func buildAlgo(k *contract, b *ctBody) (planIn, *verr) {
	p := planIn{k: k}
	sp := k.spec
	for _, i := range [...]int{a3Side, a3PosSide, a3Type, a3CID, a3TPType, a3SLType} {
		if b.f[i].has && b.f[i].kind != 's' {
			return p, vaStrKind
		}
	}
	var side engine.Side
	switch f := b.f[a3Side]; {
	case !f.has:
		return p, vcSideMissing
	case string(f.raw) == "BUY":
		side = engine.Buy
	case string(f.raw) == "SELL":
		side = engine.Sell
	default:
		return p, vcSide
	}
	switch f := b.f[a3PosSide]; {
	case !f.has:
		return p, vcPosMissing
	case string(f.raw) == "LONG":
		p.pos = engine.Long
	case string(f.raw) == "SHORT":
		p.pos = engine.Short
	default:
		return p, vcPos
	}
	limit := false
	switch f := b.f[a3Type]; {
	case !f.has:
		return p, vcTypeMissing
	case string(f.raw) == "STOP_MARKET":
		p.kind = engine.PlanStopLoss
	case string(f.raw) == "STOP":
		p.kind, limit = engine.PlanStopLoss, true
	case string(f.raw) == "TAKE_PROFIT_MARKET":
		p.kind = engine.PlanTakeProfit
	case string(f.raw) == "TAKE_PROFIT":
		p.kind, limit = engine.PlanTakeProfit, true
	default:
		return p, vaType
	}
	closes := (side == engine.Buy) != (p.pos == engine.Long)
	if !closes || b.f[a3PresetTP].has || b.f[a3PresetSL].has {
		return p, vaEntry
	}
	closeAll := false
	for _, i := range [...]int{a3Reduce, a3Close} {
		f := b.f[i]
		if !f.has {
			continue
		}
		if !(f.kind == 'b' || f.kind == 's' && (string(f.raw) == "true" || string(f.raw) == "false")) {
			return p, vaBoolKind
		}
		v := string(f.raw) == "true"
		switch {
		case i == a3Reduce && !v:
			return p, vaEntry
		case i == a3Close:
			closeAll = v
		}
	}
	var e *verr
	if p.trig, e = ctPrice(sp, &b.f[a3Trigger], dTrigger, false); e != nil {
		return p, e
	}
	if limit {
		if p.exec, e = ctPrice(sp, &b.f[a3Price], dPrice, false); e != nil {
			return p, e
		}
	}
	switch {
	case closeAll && b.f[a3Qty].has:
		return p, vaQtyClose
	case !closeAll:
		if p.qty, e = ctQty(sp, &b.f[a3Qty], dQuantity); e != nil {
			return p, e
		}
		if e = planSize(sp, p.qty); e != nil {
			return p, e
		}
	}
	if f := b.f[a3CID]; f.has {
		if !validCtCID(f.raw) {
			return p, vaCID
		}
		p.cid = f.raw
	}
	// the plan's own working type decides; the other one is only checked
	own, other := a3SLType, a3TPType
	if p.kind == engine.PlanTakeProfit {
		own, other = other, own
	}
	for _, i := range [...]int{own, other} {
		f := b.f[i]
		switch {
		case !f.has || string(f.raw) == "CONTRACT_PRICE":
		case string(f.raw) == "MARK_PRICE":
			p.mark = p.mark || i == own
		default:
			return p, vcWorking
		}
	}
	return p, nil
}

// handleAlgoPlace: POST /capi/v3/algoOrder (ccxt createOrder with
// stopLossPrice or takeProfitPrice on swap). Answers the algo record of
// the plan (algoStatus TRIGGERED when the price had already reached it
// and it fired at once); an engine refusal is a top-level error
// (NO_POSITION -2010, INVALID_TP_SL -1140, TOO_MANY_PLANS -2010).
func handleAlgoPlace(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var b ctBody
	if e := b.decodeRequest(&st.sc, ctx.Request.Body(), a3Fields); e != nil {
		return e
	}
	k, v := ctSymbol(&b.f[a3Symbol], s.contractV3, vcSymV3)
	if v != nil {
		return v.e
	}
	p, v := buildAlgo(k, &b)
	if v != nil {
		return v.e
	}
	r := core.AcquireRequest()
	r.Cmd = p.cmd(c)
	if e := s.run(r); e != nil {
		return e
	}
	defer core.ReleaseRequest(r)
	if r.Out.Reject != engine.OK || len(r.Plans) == 0 {
		return ctRejectErr(r.Out.Reject)
	}
	pv := r.Plans[0]
	status := algoUntriggered
	for _, q := range r.Plans[1:] {
		if q.ID == pv.ID && q.Fired {
			status = algoTriggered
		}
	}
	st.buf = appendAlgo(st.buf, k, &pv, p.cid, status, pv.TimeMs)
	return nil
}

// handleAlgoCancel: DELETE /capi/v3/algoOrder?orderId=[&symbol=] (ccxt
// cancelOrder with trigger true). Answers the cancelled plan's algo
// record; an unknown plan, another user's or one already fired or
// cancelled is -3200.
func handleAlgoCancel(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "orderId", "algoId", "origClientOrderId", "clientAlgoId"); e != nil {
		return e
	}
	k, e := s.ctArgSymbol(ctx)
	if e != nil {
		return e
	}
	args := ctx.QueryArgs()
	var raw []byte
	switch {
	case args.Has("orderId"):
		raw = args.Peek("orderId")
	case args.Has("algoId"):
		raw = args.Peek("algoId")
	case args.Has("origClientOrderId"), args.Has("clientAlgoId"):
		return errPlanByCID
	default:
		return errPlanID
	}
	id, ok := parseInt(raw)
	if !ok || id <= 0 {
		return newErr(400, codeParam, "orderId must be a positive integer")
	}
	ko := s.ctOfOrder(id)
	if ko == nil || k != nil && k != ko {
		return errCtNotFound
	}
	r := core.AcquireRequest()
	r.Cmd = engine.Cmd{Kind: engine.CmdPlanCancel, Market: ko.spec.ID, User: c.user, UID: c.uid, OrderID: id}
	if e := s.run(r); e != nil {
		return e
	}
	defer core.ReleaseRequest(r)
	if r.Out.Reject != engine.OK || len(r.Plans) == 0 {
		return ctRejectErr(r.Out.Reject)
	}
	st.buf = appendAlgo(st.buf, ko, &r.Plans[0], nil, algoCanceled, r.TimeMs)
	return nil
}

// handleAlgoOpen: GET /capi/v3/openAlgoOrders[?symbol=&startTime=&endTime=
// &limit=] (ccxt fetchOpenOrders with trigger true): the user's
// untriggered plans created within the range, oldest first, at most
// limit (1..100, default 100).
func handleAlgoOpen(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "startTime", "endTime", "limit"); e != nil {
		return e
	}
	k, start, end, limit, e := s.ctListArgs(ctx, 100, 100)
	if e != nil {
		return e
	}
	plans, e := s.userPlans(c, k)
	if e != nil {
		return e
	}
	b := append(st.buf, '[')
	n := int64(0)
	for i := range plans {
		pv := &plans[i]
		kk := s.contractOf(pv.Market)
		if kk == nil || pv.TimeMs < start || pv.TimeMs > end {
			continue
		}
		if n == limit {
			break
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendAlgo(b, kk, pv, nil, algoUntriggered, pv.TimeMs)
	}
	st.buf = append(b, ']')
	return nil
}

// handleAlgoCancelAll: DELETE /capi/v3/algoOpenOrders[?symbol=] (ccxt
// cancelAllOrders with trigger true): one CmdPlanCancel per contract
// (every contract without symbol), all submitted before any is waited
// on. Answers the algo records of the plans cancelled, by contract and id.
func handleAlgoCancelAll(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return e
	}
	k, e := s.ctArgSymbol(ctx)
	if e != nil {
		return e
	}
	ks := s.ctContracts(k)
	reqs := make([]*core.Request, 0, len(ks))
	var failed *apiError
	for _, kk := range ks {
		r := core.AcquireRequest()
		r.Cmd = engine.Cmd{Kind: engine.CmdPlanCancel, Market: kk.spec.ID, User: c.user, UID: c.uid}
		if e := s.submit(r); e != nil {
			core.ReleaseRequest(r)
			failed = e
			break
		}
		reqs = append(reqs, r)
	}
	b := append(st.buf, '[')
	first := true
	for i, r := range reqs {
		if e := s.wait(r); e != nil {
			if failed == nil {
				failed = e
			}
			continue
		}
		if r.Out.Reject != engine.OK && failed == nil {
			failed = ctRejectErr(r.Out.Reject)
		}
		for j := range r.Plans {
			if !r.Plans[j].Canceled {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendAlgo(b, ks[i], &r.Plans[j], nil, algoCanceled, r.TimeMs)
		}
		core.ReleaseRequest(r)
	}
	if failed != nil {
		return failed
	}
	st.buf = append(b, ']')
	return nil
}

// appendAlgo appends the algo record of plan p (the shape of ccxt's
// openAlgoOrders sample; every field its parseOrder reads): orderType
// STOP/STOP_MARKET for a stop-loss and TAKE_PROFIT/TAKE_PROFIT_MARKET for
// a take-profit (the _MARKET ones close at market), side the close's,
// quantity the plan's size ("0" with closePosition true: the whole
// position), price the execute price. cid is echoed when given (the
// engine keeps none: null elsewhere).
func appendAlgo(b []byte, k *contract, p *engine.PlanView, cid []byte, status string, updated int64) []byte {
	sp := k.spec
	b = append(b, `{"algoId":`...)
	b = appendInt(b, p.ID)
	b = append(b, `,"clientAlgoId":`...)
	if cid != nil {
		b = appendString(b, cid)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"algoType":"CONDITIONAL","orderType":"`...)
	if p.Kind == engine.PlanTakeProfit {
		b = append(b, "TAKE_PROFIT"...)
	} else {
		b = append(b, "STOP"...)
	}
	if p.Exec == 0 {
		b = append(b, "_MARKET"...)
	}
	b = append(b, `","symbol":`...)
	b = appendStr(b, sp.V3Symbol)
	b = append(b, `,"side":"`...)
	if p.Pos == engine.Long {
		b = append(b, "SELL"...)
	} else {
		b = append(b, "BUY"...)
	}
	b = append(b, `","positionSide":"`...)
	b = append(b, name(posSideNames[:], int(p.Pos))...)
	b = append(b, `","timeInForce":"`...)
	if p.Exec == 0 {
		b = append(b, "IOC"...)
	} else {
		b = append(b, "GTC"...)
	}
	b = append(b, `","quantity":"`...)
	b = sp.AppendQty(b, p.Qty)
	b = append(b, `","algoStatus":"`...)
	b = append(b, status...)
	b = append(b, `","actualOrderId":0,"actualPrice":"0","triggerPrice":"`...)
	b = sp.AppendPrice(b, p.Trigger)
	b = append(b, `","price":"`...)
	b = sp.AppendPrice(b, p.Exec)
	b = append(b, `","tpTriggerPrice":null,"tpPrice":null,"slTriggerPrice":null,"slPrice":null,"tpOrderType":null,"workingType":"`...)
	if p.Mark {
		b = append(b, "MARK_PRICE"...)
	} else {
		b = append(b, "CONTRACT_PRICE"...)
	}
	b = append(b, `","closePosition":`...)
	b = appendBool(b, p.Qty == 0)
	b = append(b, `,"reduceOnly":true,"createTime":`...)
	b = appendInt(b, p.TimeMs)
	b = append(b, `,"updateTime":`...)
	b = appendInt(b, updated)
	b = append(b, `,"triggerTime":0}`...)
	return b
}
