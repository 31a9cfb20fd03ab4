package edge

import (
	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// Take-profit and stop-loss plans (docs/API.md, "Perpetual contracts",
// "Plans (TP/SL)"): the seed's V2 placeTpSlOrder and currentPlan, and
// ccxt's algo-order surface (POST/DELETE /capi/v3/algoOrder, GET
// /capi/v3/openAlgoOrders, DELETE /capi/v3/algoOpenOrders) restricted to
// the algo types that are a plan on an existing position. Both families
// place engine.CmdPlan and read the same plans (core.Node.Plans), so a
// plan placed through one is listed and cancelled through the other.
//
// The engine keeps no client id with a plan: clientOrderId and
// clientAlgoId are checked and echoed in the placement answer only.

// V2 placeTpSlOrder fields (the seed's 4.11; camelCase as it shows them).
const (
	p2Symbol = iota
	p2CID
	p2PlanType
	p2Trigger
	p2Exec
	p2Size
	p2PosSide
	p2Margin
	p2TrigType
)

var p2Fields = []string{p2Symbol: "symbol", p2CID: "clientOrderId", p2PlanType: "planType", p2Trigger: "triggerPrice",
	p2Exec: "executePrice", p2Size: "size", p2PosSide: "positionSide", p2Margin: "marginMode", p2TrigType: "triggerPriceType"}

// V3 algoOrder fields: what ccxt's createOrder sends with stopLossPrice
// or takeProfitPrice (weex.js createContractOrderRequest), plus
// closePosition (the whole position) and the entry-trigger fields we
// recognise to refuse.
const (
	a3Symbol = iota
	a3Side
	a3PosSide
	a3Type
	a3Qty
	a3Price
	a3CID
	a3Trigger
	a3TPType
	a3SLType
	a3Reduce
	a3Close
	a3PresetTP
	a3PresetSL
)

var a3Fields = []string{a3Symbol: "symbol", a3Side: "side", a3PosSide: "positionSide", a3Type: "type", a3Qty: "quantity",
	a3Price: "price", a3CID: "clientAlgoId", a3Trigger: "triggerPrice", a3TPType: "TpWorkingType", a3SLType: "SlWorkingType",
	a3Reduce: "reduceOnly", a3Close: "closePosition", a3PresetTP: "presetTakeProfitPrice", a3PresetSL: "presetStopLossPrice"}

var (
	dTrigger = newDecErrs("INVALID_PRICE", "triggerPrice", "tickSize")
	dExec    = newDecErrs("INVALID_PRICE", "executePrice", "tickSize")

	vpCID          = ve("INVALID_CLIENT_ORDER_ID", 400, codeClientID, "clientOrderId must be 1 to 40 characters of [A-Za-z0-9._:/-]")
	vpCIDKind      = ve("INVALID_CLIENT_ORDER_ID", 400, codeParam, "clientOrderId must be a string")
	vpPlanMissing  = ve("INVALID_PARAMETER", 400, codeParamMissing, "parameter planType is required")
	vpPlan         = ve("INVALID_PARAMETER", 400, codeParam, "invalid planType: must be profit_plan (take-profit) or loss_plan (stop-loss)")
	vpPosMissing   = ve("INVALID_POSITION_SIDE", 400, codeParamMissing, "parameter positionSide is required")
	vpPos          = ve("INVALID_POSITION_SIDE", 400, codeParam, "invalid positionSide: must be long or short")
	vpTrigType     = ve("INVALID_PARAMETER", 400, codeParam, "invalid triggerPriceType: must be fill_price (the last trade) or mark_price")
	vpSizeSmall    = ve("QUANTITY_TOO_SMALL", 400, codeOrderRejected, "plan rejected: size below the contract's minOrderSize")
	vpSizeLarge    = ve("QUANTITY_TOO_LARGE", 400, codeOrderRejected, "plan rejected: size above the contract's maxOrderSize")
	vpExecNegative = ve("INVALID_PRICE", 400, codeParam, "executePrice must not be negative")

	vaType     = ve("INVALID_TYPE", 400, codeType, "invalid type: algoOrder takes STOP, STOP_MARKET (stop-loss) or TAKE_PROFIT, TAKE_PROFIT_MARKET (take-profit); plain orders: POST /capi/v3/order")
	vaEntry    = ve("INVALID_PARAMETER", 400, codeParamCombination, "trigger entry orders are not supported: algoOrder places take-profit and stop-loss plans that close an existing position (SELL LONG or BUY SHORT, reduceOnly true, no presets)")
	vaCID      = ve("INVALID_CLIENT_ORDER_ID", 400, codeClientID, "clientAlgoId must be 1 to 40 characters of [A-Za-z0-9._:/-]")
	vaBoolKind = ve("INVALID_PARAMETER", 400, codeParam, "reduceOnly and closePosition must be true or false")
	vaStrKind  = ve("INVALID_PARAMETER", 400, codeParam, "side, positionSide, type, clientAlgoId and the working types must be strings")
	vaQtyClose = ve("INVALID_PARAMETER", 400, codeParamCombination, "send quantity or closePosition true, not both")

	errPlanByCID = newErr(400, codeParam, "plans are addressed by orderId (algoId) only: the exchange keeps no client id with a plan")
	errPlanID    = newErr(400, codeParamMissing, "parameter orderId (the algoId) is required")
)

// planIn is a validated plan request.
type planIn struct {
	k    *contract
	pos  engine.PosSide
	kind uint8
	trig engine.Price
	exec engine.Price // 0: market
	qty  engine.Qty   // 0: the whole position
	mark bool
	cid  []byte // echoed, not kept
	mode engine.MarginMode
}

func (p *planIn) cmd(c *cred) engine.Cmd {
	cmd := engine.Cmd{Kind: engine.CmdPlan, Market: p.k.spec.ID, User: c.user, UID: c.uid, Pos: p.pos,
		PlanKind: p.kind, Price: p.trig, Exec: p.exec, Qty: p.qty}
	if p.mark {
		cmd.TrigMark = 1
	}
	return cmd
}

// planSize checks an explicit plan size against the contract's order
// bounds: the close it places is an order.
func planSize(sp *engine.MarketSpec, q engine.Qty) *verr {
	switch {
	case q < sp.MinQty:
		return vpSizeSmall
	case q > sp.MaxQty:
		return vpSizeLarge
	}
	return nil
}

// buildTpSl validates a V2 placeTpSlOrder body (symbol already resolved).
func buildTpSl(k *contract, b *ctBody) (planIn, *verr) {
	p := planIn{k: k}
	sp := k.spec
	if cid, has, bad := strField(&b.f[p2CID]); has {
		if bad {
			return p, vpCIDKind
		}
		if !validCtCID(cid) {
			return p, vpCID
		}
		p.cid = cid
	}
	pt, has, bad := strField(&b.f[p2PlanType])
	switch {
	case !has:
		return p, vpPlanMissing
	case bad:
		return p, vpPlan
	case string(pt) == "profit_plan":
		p.kind = engine.PlanTakeProfit
	case string(pt) == "loss_plan":
		p.kind = engine.PlanStopLoss
	default:
		return p, vpPlan
	}
	ps, has, bad := strField(&b.f[p2PosSide])
	switch {
	case !has:
		return p, vpPosMissing
	case bad:
		return p, vpPos
	case string(ps) == "long" || string(ps) == "LONG":
		p.pos = engine.Long
	case string(ps) == "short" || string(ps) == "SHORT":
		p.pos = engine.Short
	default:
		return p, vpPos
	}
	var e *verr
	if p.trig, e = ctPrice(sp, &b.f[p2Trigger], dTrigger, false); e != nil {
		return p, e
	}
	if f := &b.f[p2Exec]; f.has {
		if f.kind != 's' {
			return p, dExec.kind
		}
		v, err := sp.ParsePrice(f.raw)
		if e := decErr(err, dExec.syntax, dExec.prec, dExec.rng); e != nil {
			return p, e
		}
		if v < 0 {
			return p, vpExecNegative
		}
		p.exec = v // 0: market
	}
	if b.f[p2Size].has {
		if p.qty, e = ctQty(sp, &b.f[p2Size], dSize); e != nil {
			return p, e
		}
		if e = planSize(sp, p.qty); e != nil {
			return p, e
		}
	}
	if f := &b.f[p2Margin]; f.has {
		switch v, ok := ctCode(f); {
		case ok && v == 1:
			p.mode = engine.Cross
		case ok && v == 3:
			p.mode = engine.Isolated
		default:
			return p, vc2Margin
		}
	}
	tt, has, bad := strField(&b.f[p2TrigType])
	switch {
	case !has || string(tt) == "fill_price":
	case bad:
		return p, vpTrigType
	case string(tt) == "mark_price":
		p.mark = true
	default:
		return p, vpTrigType
	}
	return p, nil
}

// handlePlaceTpSl: POST /capi/v2/order/placeTpSlOrder (the seed's 4.11).
// A malformed or invalid request is a top-level error; a plan the engine
// refuses (NO_POSITION, INVALID_TP_SL, TOO_MANY_PLANS) answers the seed's
// failure, [{"success":false,"orderId":0,...}], with the reject's name
// and words.
func handlePlaceTpSl(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var b ctBody
	if e := b.decodeRequest(&st.sc, ctx.Request.Body(), p2Fields); e != nil {
		return e
	}
	k, v := ctSymbol(&b.f[p2Symbol], s.contractV2, vcSymV2)
	if v != nil {
		return v.e
	}
	p, v := buildTpSl(k, &b)
	if v != nil {
		return v.e
	}
	if p.mode != 0 {
		if e := s.checkMarginMode(c, k, p.mode); e != nil {
			return e
		}
	}
	r := core.AcquireRequest()
	r.Cmd = p.cmd(c)
	if e := s.run(r); e != nil {
		return e
	}
	defer core.ReleaseRequest(r)
	b2 := st.buf
	if r.Out.Reject != engine.OK || len(r.Plans) == 0 {
		b2 = append(b2, `[{"success":false,"orderId":0,"errorCode":"`...)
		b2 = append(b2, r.Out.Reject.String()...)
		b2 = append(b2, `","errorMessage":`...)
		b2 = appendStr(b2, ctRejectErr(r.Out.Reject).msg)
		st.buf = append(b2, "}]"...)
		return nil
	}
	b2 = append(b2, `[{"success":true,"orderId":`...)
	b2 = appendInt(b2, r.Plans[0].ID)
	st.buf = append(b2, `,"errorCode":"","errorMessage":""}]`...)
	return nil
}

// handleCurrentPlan: GET /capi/v2/order/currentPlan[?symbol=&orderId=
// &startTime=&endTime=&limit=&page=] (the seed's 4.3): the user's
// untriggered plans, oldest first, created within the range; an orderId
// that is not a positive integer filters nothing (the seed: an illegal
// value makes the filter ineffective). limit 1..100 (default 100), page
// from 0.
func handleCurrentPlan(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "orderId", "startTime", "endTime", "limit", "page"); e != nil {
		return e
	}
	args := ctx.QueryArgs()
	var k *contract
	if args.Has("symbol") {
		if k = s.contractV2(args.Peek("symbol")); k == nil {
			return vcSymV2.e
		}
	}
	var only int64
	if v, ok := parseInt(args.Peek("orderId")); ok && v > 0 {
		only = v
	}
	start, end, e := timeRange(ctx)
	if e != nil {
		return e
	}
	limit, e := argIntIn(ctx, "limit", 100, 1, 100)
	if e != nil {
		return e
	}
	page, e := argIntIn(ctx, "page", 0, 0, 1<<40)
	if e != nil {
		return e
	}
	plans, e := s.userPlans(c, k)
	if e != nil {
		return e
	}
	skip := page * limit
	b := append(st.buf, '[')
	n := int64(0)
	for i := range plans {
		pv := &plans[i]
		kk := s.contractOf(pv.Market)
		if kk == nil || only != 0 && pv.ID != only || pv.TimeMs < start || pv.TimeMs > end {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if n == limit {
			break
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendPlanV2(b, kk, pv)
	}
	st.buf = append(b, ']')
	return nil
}

// userPlans returns c's plans in k (every contract when k is nil), by id.
func (s *Server) userPlans(c *cred, k *contract) ([]engine.PlanView, *apiError) {
	id := engine.AllContracts
	if k != nil {
		id = k.spec.ID
	}
	plans, err := s.node.Plans(c.user, c.uid, id, s.deadline(), nil)
	if err != nil {
		return nil, s.queryErr(err)
	}
	return plans, nil
}

// appendPlanV2 appends the seed's 2.6 record of an untriggered plan (all
// values strings; the presets null). type is the close it will place (3
// close long, 4 close short), order_type 0 for a limit close at the
// execute price and 3 (IOC) for a market one; planType and the trigger
// price type say what the plan is.
func appendPlanV2(b []byte, k *contract, p *engine.PlanView) []byte {
	sp := k.spec
	b = append(b, `{"symbol":`...)
	b = appendStr(b, sp.Symbol) // the V2 name
	b = append(b, `,"size":"`...)
	b = sp.AppendQty(b, p.Qty)
	b = append(b, `","client_oid":"","createTime":"`...)
	b = appendInt(b, p.TimeMs)
	b = append(b, `","filled_qty":"0","fee":"0","order_id":"`...)
	b = appendInt(b, p.ID)
	b = append(b, `","price":"`...)
	b = sp.AppendPrice(b, p.Exec)
	b = append(b, `","price_avg":"0","status":"0","type":"`...)
	if p.Pos == engine.Long {
		b = append(b, '3')
	} else {
		b = append(b, '4')
	}
	b = append(b, `","order_type":"`...)
	if p.Exec > 0 {
		b = append(b, '0')
	} else {
		b = append(b, '3')
	}
	b = append(b, `","totalProfits":"0","triggerPrice":"`...)
	b = sp.AppendPrice(b, p.Trigger)
	b = append(b, `","triggerPriceType":"`...)
	if p.Mark {
		b = append(b, "mark_price"...)
	} else {
		b = append(b, "fill_price"...)
	}
	b = append(b, `","triggerTime":"0","presetTakeProfitPrice":null,"presetStopLossPrice":null,"planType":"`...)
	if p.Kind == engine.PlanTakeProfit {
		b = append(b, "profit_plan"...)
	} else {
		b = append(b, "loss_plan"...)
	}
	return append(b, `"}`...)
}
