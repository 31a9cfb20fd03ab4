package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// Take-profit and stop-loss plans end to end (docs/API.md, "Plans
// (TP/SL)"): the seed's V2 placeTpSlOrder and currentPlan, ccxt's algo
// orders, plans that fire through real trades, and a restart.

// planV2 is the seed's 2.6 record (all strings), with planType.
type planV2 struct {
	Symbol           string  `json:"symbol"`
	Size             string  `json:"size"`
	ClientOID        string  `json:"client_oid"`
	CreateTime       string  `json:"createTime"`
	FilledQty        string  `json:"filled_qty"`
	Fee              string  `json:"fee"`
	OrderID          string  `json:"order_id"`
	Price            string  `json:"price"`
	PriceAvg         string  `json:"price_avg"`
	Status           string  `json:"status"`
	Type             string  `json:"type"`
	OrderType        string  `json:"order_type"`
	TotalProfits     string  `json:"totalProfits"`
	TriggerPrice     string  `json:"triggerPrice"`
	TriggerPriceType string  `json:"triggerPriceType"`
	TriggerTime      string  `json:"triggerTime"`
	PresetTP         *string `json:"presetTakeProfitPrice"`
	PresetSL         *string `json:"presetStopLossPrice"`
	PlanType         string  `json:"planType"`
}

// algoRec is the algo record (ccxt's openAlgoOrders sample).
type algoRec struct {
	AlgoID        int64   `json:"algoId"`
	ClientAlgoID  *string `json:"clientAlgoId"`
	AlgoType      string  `json:"algoType"`
	OrderType     string  `json:"orderType"`
	Symbol        string  `json:"symbol"`
	Side          string  `json:"side"`
	PositionSide  string  `json:"positionSide"`
	TimeInForce   string  `json:"timeInForce"`
	Quantity      string  `json:"quantity"`
	AlgoStatus    string  `json:"algoStatus"`
	ActualOrderID int64   `json:"actualOrderId"`
	TriggerPrice  string  `json:"triggerPrice"`
	Price         string  `json:"price"`
	WorkingType   string  `json:"workingType"`
	ClosePosition bool    `json:"closePosition"`
	ReduceOnly    bool    `json:"reduceOnly"`
	CreateTime    int64   `json:"createTime"`
	UpdateTime    int64   `json:"updateTime"`
	TriggerTime   int64   `json:"triggerTime"`
}

// tpslElem is the seed's 2.5 element, with the reject's name and words.
type tpslElem struct {
	Success      *bool   `json:"success"`
	OrderID      *int64  `json:"orderId"`
	ErrorCode    *string `json:"errorCode"`
	ErrorMessage *string `json:"errorMessage"`
}

// tpslBody is a V2 placeTpSlOrder body: a LONG take-profit at 55000 of
// 0.1 with fields replaced.
func tpslBody(over kv) string {
	m := kv{"symbol": "cmt_btcusdt", "planType": "profit_plan", "triggerPrice": "55000", "size": "0.1", "positionSide": "long"}
	return jsonWith(m, over)
}

// algoBody is a POST /capi/v3/algoOrder body as ccxt sends a standalone
// stop-loss on a LONG: STOP_MARKET SELL LONG, with fields replaced.
func algoBody(over kv) string {
	m := kv{"symbol": "BTCUSDT", "side": "SELL", "positionSide": "LONG", "type": "STOP_MARKET", "quantity": "0.2",
		"triggerPrice": "46000", "clientAlgoId": "a-sl-1", "SlWorkingType": "CONTRACT_PRICE"}
	return jsonWith(m, over)
}

// placeTpSl places a V2 plan and returns its 2.5 element.
func (s *server) placeTpSl(u *user, over kv) tpslElem {
	s.t.Helper()
	var els []tpslElem
	s.post(u, "/capi/v2/order/placeTpSlOrder", tpslBody(over), &els)
	if len(els) != 1 || els[0].Success == nil || els[0].OrderID == nil || els[0].ErrorCode == nil || els[0].ErrorMessage == nil {
		s.t.Fatalf("placeTpSlOrder %v: %+v", over, els)
	}
	return els[0]
}

func (s *server) placeAlgo(u *user, over kv) algoRec {
	s.t.Helper()
	var a algoRec
	s.post(u, "/capi/v3/algoOrder", algoBody(over), &a)
	return a
}

func (s *server) currentPlan(u *user, q string) []planV2 {
	s.t.Helper()
	var ps []planV2
	s.get(u, "/capi/v2/order/currentPlan"+q, &ps)
	return ps
}

func (s *server) openAlgo(u *user, q string) []algoRec {
	s.t.Helper()
	var as []algoRec
	s.get(u, "/capi/v3/openAlgoOrders"+q, &as)
	return as
}

func (s *server) position(u *user, side string) ctPosition {
	s.t.Helper()
	var ps []ctPosition
	s.get(u, "/capi/v3/account/position/singlePosition?symbol=BTCUSDT", &ps)
	for _, p := range ps {
		if p.Side == side {
			return p
		}
	}
	return ctPosition{}
}

// TestContractPlans places plans through every plan endpoint, lists and
// cancels them, keeps the users apart, refuses bad inputs with no state
// change, fires a take-profit and a stop-loss through real trades, and
// keeps untriggered plans over a restart.
func TestContractPlans(t *testing.T) {
	cfg := contractConfig(t)
	dir := t.TempDir()
	s := startServerConfig(t, cfg, dir)
	a, b, c := &userA, &userB, &userC

	// A plan needs a position: none yet.
	if e := s.placeTpSl(a, nil); *e.Success || *e.OrderID != 0 || *e.ErrorCode != "NO_POSITION" || *e.ErrorMessage == "" {
		t.Errorf("plan without a position: %+v", e)
	}
	s.wantErr(req{method: "POST", path: "/capi/v3/algoOrder", body: algoBody(nil), u: a}, 400, -2010)

	// A goes long 0.5 at 50000 against B's short.
	s.v3Place(b, kv{"side": "SELL", "positionSide": "SHORT", "quantity": "0.5", "price": "50000"})
	if o := s.v3Place(a, kv{"quantity": "0.5", "price": "50000"}); o.Status != "FILLED" {
		t.Fatalf("open: %+v", o)
	}

	// Four plans of A: two through V2, two through algoOrder.
	tp1 := s.placeTpSl(a, nil)
	if !*tp1.Success || *tp1.OrderID <= 0 || *tp1.OrderID >= 1<<53 || *tp1.ErrorCode != "" || *tp1.ErrorMessage != "" {
		t.Fatalf("V2 take-profit: %+v", tp1)
	}
	sl1 := s.placeTpSl(a, kv{"planType": "loss_plan", "triggerPrice": "45000", "executePrice": "44900", "size": nil,
		"triggerPriceType": "mark_price", "clientOrderId": "a-sl-v2", "marginMode": 1})
	if !*sl1.Success || *sl1.OrderID <= *tp1.OrderID {
		t.Fatalf("V2 stop-loss: %+v", sl1)
	}
	sl2 := s.placeAlgo(a, nil)
	if sl2.AlgoID <= *sl1.OrderID || sl2.AlgoStatus != "UNTRIGGERED" || sl2.ClientAlgoID == nil || *sl2.ClientAlgoID != "a-sl-1" ||
		sl2.OrderType != "STOP_MARKET" || sl2.Side != "SELL" || sl2.PositionSide != "LONG" || sl2.Quantity != "0.2000" ||
		sl2.TriggerPrice != "46000.0" || sl2.Price != "0.0" || !sl2.ReduceOnly || sl2.ClosePosition || sl2.WorkingType != "CONTRACT_PRICE" ||
		sl2.AlgoType != "CONDITIONAL" || sl2.Symbol != "BTCUSDT" || sl2.CreateTime == 0 || sl2.TimeInForce != "IOC" {
		t.Errorf("algo stop-loss: %+v", sl2)
	}
	tp2 := s.placeAlgo(a, kv{"type": "TAKE_PROFIT", "price": "56000", "triggerPrice": "56000", "quantity": "0.1",
		"clientAlgoId": nil, "SlWorkingType": nil, "TpWorkingType": "MARK_PRICE", "reduceOnly": true})
	if tp2.OrderType != "TAKE_PROFIT" || tp2.Price != "56000.0" || tp2.WorkingType != "MARK_PRICE" || tp2.ClientAlgoID != nil ||
		tp2.TimeInForce != "GTC" || tp2.AlgoStatus != "UNTRIGGERED" {
		t.Errorf("algo take-profit: %+v", tp2)
	}
	// B's plan on its short.
	bTP := s.placeTpSl(b, kv{"positionSide": "short", "triggerPrice": "45500", "size": "0.5"})
	if !*bTP.Success {
		t.Fatalf("B's plan: %+v", bTP)
	}

	// currentPlan: A's four, oldest first, the seed's record.
	ps := s.currentPlan(a, "")
	if len(ps) != 4 {
		t.Fatalf("currentPlan: %+v", ps)
	}
	want0 := planV2{Symbol: "cmt_btcusdt", Size: "0.1000", CreateTime: ps[0].CreateTime, FilledQty: "0", Fee: "0", OrderID: id(*tp1.OrderID),
		Price: "0.0", PriceAvg: "0", Status: "0", Type: "3", OrderType: "3", TotalProfits: "0", TriggerPrice: "55000.0",
		TriggerPriceType: "fill_price", TriggerTime: "0", PlanType: "profit_plan"}
	if ps[0] != want0 || ps[0].CreateTime == "" || ps[0].CreateTime == "0" {
		t.Errorf("currentPlan[0]:\n got %+v\nwant %+v", ps[0], want0)
	}
	if p := ps[1]; p.OrderID != id(*sl1.OrderID) || p.Size != "0.0000" || p.Price != "44900.0" || p.OrderType != "0" ||
		p.TriggerPriceType != "mark_price" || p.PlanType != "loss_plan" || p.TriggerPrice != "45000.0" {
		t.Errorf("currentPlan[1]: %+v", p)
	}
	if ps[2].OrderID != id(sl2.AlgoID) || ps[3].OrderID != id(tp2.AlgoID) || ps[3].PlanType != "profit_plan" {
		t.Errorf("currentPlan order: %+v", ps)
	}
	raw := string(s.get(a, "/capi/v2/order/currentPlan?symbol=cmt_btcusdt", nil))
	if !strings.Contains(raw, `"presetTakeProfitPrice":null`) || strings.Contains(raw, `":0,`) {
		t.Errorf("currentPlan is not all strings: %s", raw)
	}
	if g := s.currentPlan(a, "?symbol=cmt_btcusdt&limit=2&page=1"); len(g) != 2 || g[0] != ps[2] || g[1] != ps[3] {
		t.Errorf("page 1 of 2: %+v", g)
	}
	if g := s.currentPlan(a, "?limit=3&page=1"); len(g) != 1 || g[0] != ps[3] {
		t.Errorf("page 1 of 3: %+v", g)
	}
	if g := s.currentPlan(a, "?page=1"); len(g) != 0 {
		t.Errorf("page 1 of 100: %+v", g)
	}
	if g := s.currentPlan(a, "?orderId="+id(sl2.AlgoID)); len(g) != 1 || g[0] != ps[2] {
		t.Errorf("by orderId: %+v", g)
	}
	if g := s.currentPlan(a, "?orderId=abc"); len(g) != 4 {
		t.Errorf("an illegal orderId filters nothing: %+v", g)
	}
	if g := s.currentPlan(a, "?symbol=cmt_ethusdt"); len(g) != 0 {
		t.Errorf("ETH plans: %+v", g)
	}
	if g := s.currentPlan(a, "?startTime=1&endTime=2"); len(g) != 0 {
		t.Errorf("plans created in 1970: %+v", g)
	}

	// openAlgoOrders: the same four as algo records.
	as := s.openAlgo(a, "")
	if len(as) != 4 || as[0].AlgoID != *tp1.OrderID || as[0].OrderType != "TAKE_PROFIT_MARKET" || as[1].OrderType != "STOP" ||
		!as[1].ClosePosition || as[1].WorkingType != "MARK_PRICE" || as[1].Quantity != "0.0000" || as[2].AlgoID != sl2.AlgoID ||
		as[3].AlgoID != tp2.AlgoID || as[0].ClientAlgoID != nil {
		t.Errorf("openAlgoOrders: %+v", as)
	}
	for _, x := range as {
		if x.AlgoStatus != "UNTRIGGERED" || x.Side != "SELL" || x.PositionSide != "LONG" || !x.ReduceOnly || x.TriggerTime != 0 {
			t.Errorf("openAlgoOrders: %+v", x)
		}
	}
	if g := s.openAlgo(a, "?symbol=BTCUSDT&limit=1"); len(g) != 1 || g[0].AlgoID != as[0].AlgoID {
		t.Errorf("openAlgoOrders limit 1: %+v", g)
	}

	// B sees and cancels only its own.
	if g := s.currentPlan(b, ""); len(g) != 1 || g[0].OrderID != id(*bTP.OrderID) || g[0].Type != "4" {
		t.Errorf("B's currentPlan: %+v", g)
	}
	if g := s.openAlgo(b, ""); len(g) != 1 || g[0].Side != "BUY" || g[0].PositionSide != "SHORT" || g[0].OrderType != "TAKE_PROFIT_MARKET" {
		t.Errorf("B's openAlgoOrders: %+v", g)
	}
	if g := s.currentPlan(b, "?orderId="+id(*tp1.OrderID)); len(g) != 0 {
		t.Errorf("B sees A's plan: %+v", g)
	}
	s.wantErr(req{method: "DELETE", path: "/capi/v3/algoOrder?orderId=" + id(*tp1.OrderID), u: b}, 400, -3200)
	s.wantErr(req{method: "DELETE", path: "/capi/v3/algoOrder?symbol=BTCUSDT&orderId=" + id(sl2.AlgoID), u: b}, 400, -3200)
	var gone []algoRec
	s.del(b, "/capi/v3/algoOpenOrders?symbol=ETHUSDT", &gone)
	if len(gone) != 0 {
		t.Errorf("B's ETH cancel-all: %+v", gone)
	}
	s.del(c, "/capi/v3/algoOpenOrders", &gone)
	if len(gone) != 0 {
		t.Errorf("C's cancel-all: %+v", gone)
	}
	if g := s.currentPlan(a, ""); len(g) != 4 {
		t.Errorf("A's plans after B's and C's attempts: %+v", g)
	}

	// A cancels one by id: the record, CANCELED; then it is gone.
	var cx algoRec
	s.del(a, "/capi/v3/algoOrder?orderId="+id(tp2.AlgoID), &cx)
	if cx.AlgoID != tp2.AlgoID || cx.AlgoStatus != "CANCELED" || cx.OrderType != "TAKE_PROFIT" || cx.UpdateTime < cx.CreateTime {
		t.Errorf("cancel: %+v", cx)
	}
	s.wantErr(req{method: "DELETE", path: "/capi/v3/algoOrder?orderId=" + id(tp2.AlgoID), u: a}, 400, -3200)
	if g := s.currentPlan(a, ""); len(g) != 3 {
		t.Errorf("after the cancel: %+v", g)
	}

	// bad input: each refused with its code, nothing changed.
	before := s.stateHash()
	cases := planBadCases(*tp1.OrderID)
	if len(cases) < 20 {
		t.Fatalf("only %d plan bad inputs", len(cases))
	}
	t.Logf("%d plan bad inputs", len(cases))
	for _, bc := range cases {
		res := s.do(bc.r)
		if res.status != bc.status {
			t.Errorf("%s: got status %d %s, want %d", bc.name, res.status, res.body, bc.status)
		} else if bc.elem != "" {
			var els []tpslElem
			if err := json.Unmarshal(res.body, &els); err != nil || len(els) != 1 || els[0].ErrorCode == nil || *els[0].ErrorCode != bc.elem ||
				*els[0].Success || *els[0].OrderID != 0 || *els[0].ErrorMessage == "" {
				t.Errorf("%s: got %s, want element errorCode %s", bc.name, res.body, bc.elem)
			}
		} else {
			var e apiErr
			if err := json.Unmarshal(res.body, &e); err != nil || e.Msg == "" || e.Code != bc.code {
				t.Errorf("%s: got %s, want code %d", bc.name, res.body, bc.code)
			}
		}
		if h := s.stateHash(); h != before {
			t.Fatalf("%s changed the state", bc.name)
		}
	}

	// cancel-all: A's remaining three, as CANCELED records.
	s.del(a, "/capi/v3/algoOpenOrders?symbol=BTCUSDT", &gone)
	if len(gone) != 3 || gone[0].AlgoID != *tp1.OrderID || gone[2].AlgoID != sl2.AlgoID {
		t.Errorf("cancel-all: %+v", gone)
	}
	for _, g := range gone {
		if g.AlgoStatus != "CANCELED" {
			t.Errorf("cancel-all: %+v", g)
		}
	}
	if g := s.currentPlan(a, ""); len(g) != 0 {
		t.Errorf("after cancel-all: %+v", g)
	}
	if g := s.currentPlan(b, ""); len(g) != 1 {
		t.Errorf("B's plan after A's cancel-all: %+v", g)
	}

	// A take-profit fires through a trade: A's TP (last >= 51000, 0.1 at
	// market) and SL (last <= 49000, 0.2 at market). B bids 0.1 at 50900;
	// C offers 0.01 at 51000 and B lifts it: the trade at 51000 fires the
	// take-profit inside B's order, and A's close sells into B's bid.
	tp := s.placeTpSl(a, kv{"triggerPrice": "51000", "clientOrderId": "a-tp"})
	sl := s.placeAlgo(a, kv{"triggerPrice": "49000"})
	if !*tp.Success || sl.AlgoStatus != "UNTRIGGERED" {
		t.Fatalf("plans to fire: %+v %+v", tp, sl)
	}
	s.v3Place(b, kv{"quantity": "0.1", "price": "50900"})
	s.v3Place(c, kv{"side": "SELL", "positionSide": "SHORT", "quantity": "0.01", "price": "51000"})
	if o := s.v3Place(b, kv{"quantity": "0.01", "price": "51000"}); o.Status != "FILLED" {
		t.Fatalf("the trade at 51000: %+v", o)
	}
	if p := s.position(a, "LONG"); p.Size != "0.4000" || p.CumCloseSize != "0.1000" {
		t.Errorf("A's long after the take-profit: %+v", p)
	}
	closeOf := func(qty, avg string) {
		t.Helper()
		var hist []ctOrder
		s.get(a, "/capi/v3/order/history?symbol=BTCUSDT", &hist)
		for _, o := range hist {
			if o.Side == "SELL" && o.PositionSide == "LONG" && o.Type == "MARKET" && o.ReduceOnly && o.Status == "FILLED" &&
				o.ExecutedQty == qty && o.AvgPrice == avg {
				return
			}
		}
		t.Errorf("no filled market close of %s at %s in A's history: %+v", qty, avg, hist)
	}
	closeOf("0.1000", "50900.0")
	if g := s.currentPlan(a, ""); len(g) != 1 || g[0].OrderID != id(sl.AlgoID) {
		t.Errorf("plans after the take-profit: %+v", g)
	}

	// The stop-loss: B bids 0.2 at 48800, C bids 0.01 at 49000 and B
	// sells it that: the trade at 49000 fires it, A sells into B's bid.
	s.v3Place(b, kv{"quantity": "0.2", "price": "48800"})
	s.v3Place(c, kv{"quantity": "0.01", "price": "49000"})
	if o := s.v3Place(b, kv{"side": "SELL", "positionSide": "SHORT", "quantity": "0.01", "price": "49000"}); o.Status != "FILLED" {
		t.Fatalf("the trade at 49000: %+v", o)
	}
	if p := s.position(a, "LONG"); p.Size != "0.2000" || p.CumCloseSize != "0.3000" {
		t.Errorf("A's long after the stop-loss: %+v", p)
	}
	closeOf("0.2000", "48800.0")
	if g := s.currentPlan(a, ""); len(g) != 0 {
		t.Errorf("plans after the stop-loss: %+v", g)
	}
	// A take-profit the price has already reached fires at once; with no
	// bid left its market close expires and the position stays.
	now := s.placeAlgo(a, kv{"type": "TAKE_PROFIT_MARKET", "triggerPrice": "48000", "quantity": "0.05"})
	if now.AlgoStatus != "TRIGGERED" {
		t.Errorf("a reached take-profit: %+v", now)
	}
	if p := s.position(a, "LONG"); p.Size != "0.2000" {
		t.Errorf("A's long after an unfilled close: %+v", p)
	}
	if g := s.currentPlan(a, ""); len(g) != 0 {
		t.Errorf("a fired plan is listed: %+v", g)
	}

	// A restart keeps untriggered plans.
	s.placeTpSl(a, kv{"planType": "loss_plan", "triggerPrice": "40000", "executePrice": "39900", "triggerPriceType": "mark_price"})
	s.placeAlgo(a, kv{"type": "TAKE_PROFIT_MARKET", "triggerPrice": "60000", "quantity": "0.1", "SlWorkingType": nil, "TpWorkingType": "MARK_PRICE"})
	snap := func(s *server) map[string]string {
		m := map[string]string{"hash": s.stateHash()}
		for _, u := range []*user{a, b} {
			m[u.key+"v2"] = string(s.get(u, "/capi/v2/order/currentPlan", nil))
			m[u.key+"v3"] = string(s.get(u, "/capi/v3/openAlgoOrders", nil))
		}
		return m
	}
	pre := snap(s)
	if !strings.Contains(pre["key-av2"], "39900.0") || !strings.Contains(pre["key-bv2"], "45500.0") {
		t.Errorf("plans before the restart: %v", pre)
	}
	s.stop()
	s = startServerConfig(t, cfg, dir)
	post := snap(s)
	for k, v := range pre {
		if post[k] != v {
			t.Errorf("%s after restart:\n got %s\nwant %s", k, post[k], v)
		}
	}
	s.del(a, "/capi/v3/algoOpenOrders", &gone)
	if len(gone) != 2 {
		t.Errorf("cancel-all after restart: %+v", gone)
	}
}

// planBadCases are invalid plan requests of A (A holds a LONG of 0.5 and
// plan aPlan; no SHORT).
func planBadCases(aPlan int64) []badCase {
	a := &userA
	v2 := func(over kv) req {
		return req{method: "POST", path: "/capi/v2/order/placeTpSlOrder", body: tpslBody(over), u: a}
	}
	v3 := func(over kv) req { return req{method: "POST", path: "/capi/v3/algoOrder", body: algoBody(over), u: a} }
	get := func(path string) req { return req{method: "GET", path: path, u: a} }
	del := func(path string) req { return req{method: "DELETE", path: path, u: a} }
	return []badCase{
		// V2 placeTpSlOrder
		{name: "V2 planType missing", r: v2(kv{"planType": nil}), status: 400, code: -1141},
		{name: "V2 planType normal_plan", r: v2(kv{"planType": "normal_plan"}), status: 400, code: -1140},
		{name: "V2 triggerPrice missing", r: v2(kv{"triggerPrice": nil}), status: 400, code: -1141},
		{name: "V2 triggerPrice off tick", r: v2(kv{"triggerPrice": "55000.05"}), status: 400, code: -1160},
		{name: "V2 triggerPrice zero", r: v2(kv{"triggerPrice": "0"}), status: 400, code: -1140},
		{name: "V2 triggerPrice number", r: v2(kv{"triggerPrice": 55000}), status: 400, code: -1140},
		{name: "V2 executePrice negative", r: v2(kv{"executePrice": "-1"}), status: 400, code: -1140},
		{name: "V2 executePrice off tick", r: v2(kv{"executePrice": "54000.01"}), status: 400, code: -1160},
		{name: "V2 size off step", r: v2(kv{"size": "0.10001"}), status: 400, code: -1160},
		{name: "V2 size zero", r: v2(kv{"size": "0"}), status: 400, code: -1140},
		{name: "V2 size below minOrderSize", r: v2(kv{"size": "0.0005"}), status: 400, code: -2010},
		{name: "V2 size above maxOrderSize", r: v2(kv{"size": "101"}), status: 400, code: -2010},
		{name: "V2 positionSide missing", r: v2(kv{"positionSide": nil}), status: 400, code: -1141},
		{name: "V2 positionSide both", r: v2(kv{"positionSide": "both"}), status: 400, code: -1140},
		{name: "V2 triggerPriceType index", r: v2(kv{"triggerPriceType": "index_price"}), status: 400, code: -1140},
		{name: "V2 marginMode 2", r: v2(kv{"marginMode": 2}), status: 400, code: -1140},
		{name: "V2 marginMode isolated on cross", r: v2(kv{"marginMode": 3}), status: 400, code: -2010},
		{name: "V2 clientOrderId 41 chars", r: v2(kv{"clientOrderId": strings.Repeat("c", 41)}), status: 400, code: -1180},
		{name: "V2 V3 symbol", r: v2(kv{"symbol": "BTCUSDT"}), status: 400, code: -1121},
		{name: "V2 symbol missing", r: v2(kv{"symbol": nil}), status: 400, code: -1141},
		{name: "V2 unknown field", r: v2(kv{"rangeRate": "0.1"}), status: 400, code: -1140},
		{name: "V2 bad JSON", r: req{method: "POST", path: "/capi/v2/order/placeTpSlOrder", body: `{"symbol":`, u: a}, status: 400, code: -1135},
		{name: "V2 unsigned", r: req{method: "POST", path: "/capi/v2/order/placeTpSlOrder", body: tpslBody(nil)}, status: 401, code: -1040},
		{name: "V2 plan on a SHORT that is not there", r: v2(kv{"positionSide": "short"}), status: 200, elem: "NO_POSITION"},
		// V3 algoOrder
		{name: "V3 type LIMIT", r: v3(kv{"type": "LIMIT"}), status: 400, code: -1116},
		{name: "V3 type TRAILING_STOP_MARKET", r: v3(kv{"type": "TRAILING_STOP_MARKET"}), status: 400, code: -1116},
		{name: "V3 type missing", r: v3(kv{"type": nil}), status: 400, code: -1141},
		{name: "V3 entry trigger BUY LONG", r: v3(kv{"side": "BUY"}), status: 400, code: -1128},
		{name: "V3 entry trigger SELL SHORT", r: v3(kv{"positionSide": "SHORT"}), status: 400, code: -1128},
		{name: "V3 entry trigger reduceOnly false", r: v3(kv{"reduceOnly": false}), status: 400, code: -1128},
		{name: "V3 entry trigger with presets", r: v3(kv{"presetStopLossPrice": "40000"}), status: 400, code: -1128},
		{name: "V3 triggerPrice missing", r: v3(kv{"triggerPrice": nil}), status: 400, code: -1141},
		{name: "V3 STOP without price", r: v3(kv{"type": "STOP"}), status: 400, code: -1141},
		{name: "V3 quantity missing", r: v3(kv{"quantity": nil}), status: 400, code: -1141},
		{name: "V3 quantity and closePosition", r: v3(kv{"closePosition": true}), status: 400, code: -1128},
		{name: "V3 SlWorkingType INDEX", r: v3(kv{"SlWorkingType": "INDEX_PRICE"}), status: 400, code: -1140},
		{name: "V3 timeInForce", r: v3(kv{"timeInForce": "GTC"}), status: 400, code: -1140},
		{name: "V3 clientAlgoId with a space", r: v3(kv{"clientAlgoId": "a b"}), status: 400, code: -1180},
		{name: "V3 V2 symbol", r: v3(kv{"symbol": "cmt_btcusdt"}), status: 400, code: -1121},
		{name: "V3 SL on a SHORT that is not there", r: v3(kv{"side": "BUY", "positionSide": "SHORT"}), status: 400, code: -2010},
		// queries and cancels
		{name: "currentPlan limit 101", r: get("/capi/v2/order/currentPlan?limit=101"), status: 400, code: -1140},
		{name: "currentPlan limit 0", r: get("/capi/v2/order/currentPlan?limit=0"), status: 400, code: -1140},
		{name: "currentPlan page -1", r: get("/capi/v2/order/currentPlan?page=-1"), status: 400, code: -1140},
		{name: "currentPlan V3 symbol", r: get("/capi/v2/order/currentPlan?symbol=BTCUSDT"), status: 400, code: -1121},
		{name: "currentPlan start after end", r: get("/capi/v2/order/currentPlan?startTime=5&endTime=4"), status: 400, code: -1171},
		{name: "currentPlan unknown parameter", r: get("/capi/v2/order/currentPlan?planType=profit_plan"), status: 400, code: -1140},
		{name: "openAlgoOrders limit 101", r: get("/capi/v3/openAlgoOrders?limit=101"), status: 400, code: -1140},
		{name: "openAlgoOrders V2 symbol", r: get("/capi/v3/openAlgoOrders?symbol=cmt_btcusdt"), status: 400, code: -1121},
		{name: "cancel without an id", r: del("/capi/v3/algoOrder"), status: 400, code: -1141},
		{name: "cancel by client id", r: del("/capi/v3/algoOrder?origClientOrderId=a-sl-1"), status: 400, code: -1140},
		{name: "cancel id abc", r: del("/capi/v3/algoOrder?orderId=abc"), status: 400, code: -1140},
		{name: "cancel unknown plan", r: del("/capi/v3/algoOrder?orderId=" + id(aPlan+1<<20)), status: 400, code: -3200},
		{name: "cancel a plan in the wrong symbol", r: del("/capi/v3/algoOrder?symbol=ETHUSDT&orderId=" + id(aPlan)), status: 400, code: -3200},
		{name: "cancel a spot-market id", r: del("/capi/v3/algoOrder?orderId=1025"), status: 400, code: -3200},
		{name: "cancel-all V2 symbol", r: del("/capi/v3/algoOpenOrders?symbol=cmt_btcusdt"), status: 400, code: -1121},
		{name: "algoOrder GET", r: get("/capi/v3/algoOrder"), status: 405, code: -1150},
	}
}
