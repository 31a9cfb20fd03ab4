package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Contract orders end to end (docs/API.md, "Perpetual contracts",
// "Orders"): the seed's V2 placeOrder and V3 batchOrders and ccxt's swap
// order surface, against the real binary.

// contractConfig writes the embedded default config (BTCUSDT and ETHUSDT
// perpetuals) with the test's admin token, users A and B (spot and
// futures money), C (100 USDT of futures), no rate limits, and a BTC
// perpetual whose minOrderSize is 10 steps (so a size can be a multiple
// of stepSize and still below the minimum).
func contractConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../config/default.json")
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	c["admin_token"] = "test-admin"
	c["rate_limits"] = map[string]any{"ip_weight_per_10s": 1000000, "uid_weight_per_10s": 1000000, "enabled": false}
	cts := c["contracts"].([]any)
	cts[0].(map[string]any)["minOrderSize"] = "0.001"
	money := map[string]any{"USDT": "1000000", "BTC": "100", "ETH": "1000"}
	c["users"] = []any{
		map[string]any{"uid": 10001, "apiKey": "key-a", "secretKey": "secret-a", "passphrase": "pass-a", "deposits": money, "futuresDeposits": map[string]any{"USDT": "1000000"}},
		map[string]any{"uid": 10002, "apiKey": "key-b", "secretKey": "secret-b", "passphrase": "pass-b", "deposits": money, "futuresDeposits": map[string]any{"USDT": "1000000"}},
		map[string]any{"uid": 10003, "apiKey": "key-c", "secretKey": "secret-c", "passphrase": "pass-c", "futuresDeposits": map[string]any{"USDT": "100"}},
	}
	out, _ := json.Marshal(c)
	p := filepath.Join(t.TempDir(), "contracts.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ctOrder is the contract order record.
type ctOrder struct {
	Symbol        string `json:"symbol"`
	OrderID       int64  `json:"orderId"`
	ClientOrderID string `json:"clientOrderId"`
	Side          string `json:"side"`
	PositionSide  string `json:"positionSide"`
	Type          string `json:"type"`
	TimeInForce   string `json:"timeInForce"`
	Price         string `json:"price"`
	OrigQty       string `json:"origQty"`
	ExecutedQty   string `json:"executedQty"`
	AvgPrice      string `json:"avgPrice"`
	CumQuote      string `json:"cumQuote"`
	Status        string `json:"status"`
	ReduceOnly    bool   `json:"reduceOnly"`
	Time          int64  `json:"time"`
	UpdateTime    int64  `json:"updateTime"`
	TransactTime  int64  `json:"transactTime"`
}

type ctTrade struct {
	ID              int64  `json:"id"`
	OrderID         int64  `json:"orderId"`
	Symbol          string `json:"symbol"`
	Side            string `json:"side"`
	PositionSide    string `json:"positionSide"`
	Buyer           bool   `json:"buyer"`
	Maker           bool   `json:"maker"`
	Price           string `json:"price"`
	Qty             string `json:"qty"`
	QuoteQty        string `json:"quoteQty"`
	Commission      string `json:"commission"`
	CommissionAsset string `json:"commissionAsset"`
	RealizedPnl     string `json:"realizedPnl"`
	Time            int64  `json:"time"`
}

type ctBatchElem struct {
	OrderID       *string `json:"orderId"`
	ClientOrderID *string `json:"clientOrderId"`
	Success       *bool   `json:"success"`
	ErrorCode     *string `json:"errorCode"`
	ErrorMessage  *string `json:"errorMessage"`
}

type ctClose struct {
	PositionID     int64  `json:"positionId"`
	SuccessOrderID int64  `json:"successOrderId"`
	ErrorMessage   string `json:"errorMessage"`
	Success        bool   `json:"success"`
	Symbol         string `json:"symbol"`
	PositionSide   string `json:"positionSide"`
	Status         string `json:"status"`
	ExecutedQty    string `json:"executedQty"`
}

// v2Body is a V2 placeOrder body: the valid open long below with fields
// replaced (a nil value drops the field).
func v2Body(over map[string]any) string {
	m := map[string]any{"symbol": "cmt_btcusdt", "client_oid": "v2-1", "size": "0.01", "type": "1",
		"order_type": "0", "match_price": "0", "price": "49000"}
	return jsonWith(m, over)
}

// v3Body is a V3 order: a valid BUY LONG LIMIT with fields replaced.
func v3Body(over map[string]any) string {
	m := map[string]any{"symbol": "BTCUSDT", "side": "BUY", "positionSide": "LONG", "type": "LIMIT",
		"timeInForce": "GTC", "quantity": "0.01", "price": "49000"}
	return jsonWith(m, over)
}

func jsonWith(m, over map[string]any) string {
	for k, v := range over {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

type kv = map[string]any

func (s *server) v3Place(u *user, over kv) ctOrder {
	s.t.Helper()
	var o ctOrder
	s.post(u, "/capi/v3/order", v3Body(over), &o)
	return o
}

func (s *server) ctGet(u *user, q string) ctOrder {
	s.t.Helper()
	var o ctOrder
	s.get(u, "/capi/v3/order?"+q, &o)
	return o
}

func (s *server) wantErr(r req, status, code int) {
	s.t.Helper()
	res := s.do(r)
	var e apiErr
	if res.status != status || json.Unmarshal(res.body, &e) != nil || e.Code != code || e.Msg == "" {
		s.t.Errorf("%s %s %s: got %d %s, want %d %d", r.method, r.path, r.body, res.status, res.body, status, code)
	}
}

func id(v int64) string { return strconv.FormatInt(v, 10) }

// TestContractOrders drives every contract order endpoint with valid
// input (two users trading, positions opened, partly and wholly closed),
// keeps the users apart, refuses 90-odd bad inputs with their codes and
// no state change, and keeps open orders and positions over a restart.
func TestContractOrders(t *testing.T) {
	cfg := contractConfig(t)
	dir := t.TempDir()
	s := startServerConfig(t, cfg, dir)
	a, b, c := &userA, &userB, &userC

	// V2: B opens a short (rests); the answer is the seed's 2.4.
	res := s.post(b, "/capi/v2/order/placeOrder", v2Body(kv{"client_oid": "b-short-1", "type": "2", "size": "0.5", "price": "50000"}), nil)
	var placed map[string]any
	json.Unmarshal(res, &placed)
	bShort, _ := strconv.ParseInt(fmt.Sprint(placed["order_id"]), 10, 64)
	if len(placed) != 2 || placed["client_oid"] != "b-short-1" || bShort <= 0 || bShort >= 1<<53 {
		t.Fatalf("V2 placeOrder: got %s", res)
	}
	if _, ok := placed["order_id"].(string); !ok {
		t.Errorf("V2 order_id is not a string: %s", res)
	}

	// V3: A opens a long against it.
	o := s.v3Place(a, kv{"quantity": "0.2", "price": "50000", "newClientOrderId": "a-open-1"})
	if o.Status != "FILLED" || o.ExecutedQty != "0.2000" || o.AvgPrice != "50000.0" || o.CumQuote != "10000.00000000" ||
		o.ReduceOnly || o.PositionSide != "LONG" || o.Side != "BUY" || o.Type != "LIMIT" || o.TimeInForce != "GTC" ||
		o.Symbol != "BTCUSDT" || o.ClientOrderID != "a-open-1" || o.TransactTime == 0 || o.OrderID >= 1<<53 {
		t.Errorf("V3 open: got %+v", o)
	}
	aOpen := o.OrderID
	if g := s.ctGet(a, "orderId="+id(aOpen)); g.Status != "FILLED" || g.ClientOrderID != "a-open-1" {
		t.Errorf("GET filled order: %+v", g)
	}
	aBid := s.v3Place(a, kv{"quantity": "0.1", "price": "49000", "newClientOrderId": "a-bid-1"})
	if aBid.Status != "NEW" || aBid.ExecutedQty != "0.0000" || aBid.AvgPrice != "0.0" {
		t.Errorf("resting open: %+v", aBid)
	}
	aClose := s.v3Place(a, kv{"side": "SELL", "quantity": "0.05", "price": "51000", "newClientOrderId": "a-close-1", "reduceOnly": true})
	if aClose.Status != "NEW" || !aClose.ReduceOnly || aClose.Side != "SELL" || aClose.PositionSide != "LONG" {
		t.Errorf("resting close: %+v", aClose)
	}

	// B cancels the rest of its short, then closes 0.1 of its 0.2 short,
	// IOC at 51000 through V2: 0.05 trades with A's close, the rest expires.
	var cx ctOrder
	s.del(b, "/capi/v3/order?orderId="+id(bShort), &cx)
	if cx.Status != "CANCELED" || cx.ExecutedQty != "0.2000" || cx.OrigQty != "0.5000" || cx.PositionSide != "SHORT" {
		t.Errorf("cancel: %+v", cx)
	}
	s.post(b, "/capi/v2/order/placeOrder", v2Body(kv{"client_oid": "b-close-1", "type": "4", "size": "0.1", "price": "51000", "order_type": "3"}), &placed)
	bClose, _ := strconv.ParseInt(placed["order_id"].(string), 10, 64)
	if g := s.ctGet(b, "orderId="+id(bClose)); g.Status != "EXPIRED" || g.ExecutedQty != "0.0500" || !g.ReduceOnly ||
		g.Side != "BUY" || g.PositionSide != "SHORT" || g.TimeInForce != "IOC" || g.AvgPrice != "51000.0" || g.CumQuote != "2550.00000000" {
		t.Errorf("V2 close short: %+v", g)
	}
	if g := s.ctGet(a, "origClientOrderId=a-close-1"); g.Status != "FILLED" || g.UpdateTime < g.Time {
		t.Errorf("filled close: %+v", g)
	}

	// userTrades: A's open (taker) and close (maker, +50 USDT).
	var tr []ctTrade
	s.get(a, "/capi/v3/userTrades?symbol=BTCUSDT", &tr)
	if len(tr) != 2 {
		t.Fatalf("userTrades: %+v", tr)
	}
	want0 := ctTrade{ID: tr[0].ID, OrderID: aOpen, Symbol: "BTCUSDT", Side: "BUY", PositionSide: "LONG", Buyer: true, Price: "50000.0",
		Qty: "0.2000", QuoteQty: "10000.00000000", Commission: "6.00000000", CommissionAsset: "USDT", RealizedPnl: "0.00000000", Time: tr[0].Time}
	want1 := ctTrade{ID: tr[1].ID, OrderID: aClose.OrderID, Symbol: "BTCUSDT", Side: "SELL", PositionSide: "LONG", Maker: true, Price: "51000.0",
		Qty: "0.0500", QuoteQty: "2550.00000000", Commission: "0.51000000", CommissionAsset: "USDT", RealizedPnl: "50.00000000", Time: tr[1].Time}
	if tr[0] != want0 || tr[1] != want1 || tr[0].ID == tr[1].ID {
		t.Errorf("userTrades:\n got %+v\nwant %+v", tr, []ctTrade{want0, want1})
	}
	var tr2 []ctTrade
	s.get(a, "/capi/v3/userTrades", &tr2)
	if len(tr2) != 2 || tr2[0] != tr[0] || tr2[1] != tr[1] {
		t.Errorf("userTrades without symbol: %+v", tr2)
	}
	s.get(a, "/capi/v3/userTrades?orderId="+id(aClose.OrderID)+"&limit=5", &tr2)
	if len(tr2) != 1 || tr2[0] != tr[1] {
		t.Errorf("userTrades by order: %+v", tr2)
	}
	s.get(b, "/capi/v3/userTrades?symbol=BTCUSDT&orderId="+id(bClose), &tr2)
	if len(tr2) != 1 || tr2[0].RealizedPnl != "-50.00000000" || tr2[0].Maker || tr2[0].Side != "BUY" || tr2[0].PositionSide != "SHORT" || tr2[0].Commission != "1.53000000" {
		t.Errorf("B's userTrades: %+v", tr2)
	}
	s.get(a, "/capi/v3/userTrades?symbol=ETHUSDT", &tr2)
	if len(tr2) != 0 {
		t.Errorf("ETH userTrades: %+v", tr2)
	}

	// order/history: finished orders only, oldest first.
	var hist []ctOrder
	s.get(a, "/capi/v3/order/history?symbol=BTCUSDT", &hist)
	if len(hist) != 2 || hist[0].OrderID != aOpen || hist[1].OrderID != aClose.OrderID || hist[1].Status != "FILLED" {
		t.Errorf("A's history: %+v", hist)
	}
	s.get(b, "/capi/v3/order/history?limit=1", &hist)
	if len(hist) != 1 || hist[0].OrderID != bShort || hist[0].Status != "CANCELED" {
		t.Errorf("B's history, limit 1: %+v", hist)
	}
	s.get(b, "/capi/v3/order/history", &hist)
	if len(hist) != 2 || hist[1].OrderID != bClose || hist[1].Status != "EXPIRED" {
		t.Errorf("B's history: %+v", hist)
	}

	// openOrders.
	var open []ctOrder
	s.get(a, "/capi/v3/openOrders", &open)
	if len(open) != 1 || open[0].OrderID != aBid.OrderID || open[0].Status != "NEW" {
		t.Errorf("openOrders: %+v", open)
	}
	s.get(a, "/capi/v3/openOrders?symbol=ETHUSDT", &open)
	if len(open) != 0 {
		t.Errorf("ETH openOrders: %+v", open)
	}

	// A's orders are A's: B sees none of them, cancels none.
	s.wantErr(req{method: "GET", path: "/capi/v3/order?orderId=" + id(aBid.OrderID), u: b}, 400, -3200)
	s.wantErr(req{method: "GET", path: "/capi/v3/order?orderId=" + id(aOpen), u: b}, 400, -3200)
	s.wantErr(req{method: "GET", path: "/capi/v3/order?origClientOrderId=a-bid-1", u: b}, 400, -3200)
	s.wantErr(req{method: "DELETE", path: "/capi/v3/order?orderId=" + id(aBid.OrderID), u: b}, 400, -3200)
	s.wantErr(req{method: "DELETE", path: "/capi/v3/order?symbol=BTCUSDT&origClientOrderId=a-bid-1", u: b}, 400, -3200)
	var cl struct{ OrderList []map[string]any }
	s.ok(req{method: "DELETE", path: "/capi/v3/batchOrders", body: `{"orderIdList":["` + id(aBid.OrderID) + `"],"origClientOrderIdList":["a-bid-1"]}`, u: b}, &cl)
	if len(cl.OrderList) != 2 || cl.OrderList[0]["errorCode"] != "ORDER_NOT_FOUND" || cl.OrderList[1]["errorCode"] != "ORDER_NOT_FOUND" {
		t.Errorf("B's batch cancel of A's order: %+v", cl)
	}
	s.get(b, "/capi/v3/openOrders", &open)
	if len(open) != 0 {
		t.Errorf("B sees %+v", open)
	}
	var bTr []ctTrade
	s.get(b, "/capi/v3/userTrades?orderId="+id(aOpen), &bTr)
	if len(bTr) != 0 {
		t.Errorf("B sees A's fills: %+v", bTr)
	}
	var closes []ctClose
	s.post(b, "/capi/v3/closePositions", `{"symbol":"ETHUSDT"}`, &closes)
	if len(closes) != 0 {
		t.Errorf("B closes what it does not hold: %+v", closes)
	}
	if g := s.ctGet(a, "orderId="+id(aBid.OrderID)); g.Status != "NEW" {
		t.Errorf("A's order after B's attempts: %+v", g)
	}

	// batchOrders: each element alone (the seed's 2.3).
	var els []ctBatchElem
	s.post(a, "/capi/v3/batchOrders", `{"batchOrders":[`+
		v3Body(kv{"symbol": "ETHUSDT", "quantity": "1", "price": "3000", "newClientOrderId": "a-eth-1"})+","+
		v3Body(kv{"quantity": "0.00005", "newClientOrderId": "bad-step"})+","+
		v3Body(kv{"positionSide": "SHORT"})+","+
		v3Body(kv{"symbol": "cmt_btcusdt"})+"]}", &els)
	wantCodes := []string{"", "INVALID_QUANTITY", "NO_POSITION", "INVALID_SYMBOL"}
	if len(els) != 4 {
		t.Fatalf("batch: %+v", els)
	}
	var aEth int64
	for i, e := range els {
		if e.OrderID == nil || e.ClientOrderID == nil || e.Success == nil || e.ErrorCode == nil || e.ErrorMessage == nil {
			t.Errorf("batch element %d lacks a field: %+v", i, e)
			continue
		}
		if *e.ErrorCode != wantCodes[i] || *e.Success != (i == 0) || (*e.ErrorMessage == "") != (i == 0) {
			t.Errorf("batch element %d: got %+v, want errorCode %q", i, e, wantCodes[i])
		}
		if i == 0 {
			aEth, _ = strconv.ParseInt(*e.OrderID, 10, 64)
			if aEth <= 0 || *e.ClientOrderID != "a-eth-1" {
				t.Errorf("batch success: %+v", e)
			}
		} else if *e.OrderID != "0" {
			t.Errorf("batch failure %d has orderId %s", i, *e.OrderID)
		}
	}
	if *els[1].ClientOrderID != "bad-step" {
		t.Errorf("failed element's clientOrderId: %q", *els[1].ClientOrderID)
	}
	if g := s.ctGet(a, "orderId="+id(aEth)); g.Symbol != "ETHUSDT" || g.Status != "NEW" || g.Price != "3000.00" || g.OrigQty != "1.000" {
		t.Errorf("batch-placed order: %+v", g)
	}

	// closePositions: B bids, A holds a working close of 0.05 of its
	// 0.15 long; the market close takes the other 0.1.
	s.v3Place(b, kv{"quantity": "0.3", "price": "49500", "newClientOrderId": "b-bid-1"})
	aClose2 := s.v3Place(a, kv{"side": "SELL", "quantity": "0.05", "price": "52000", "newClientOrderId": "a-close-2"})
	s.post(a, "/capi/v3/closePositions", `{"symbol":"BTCUSDT"}`, &closes)
	if len(closes) != 1 || !closes[0].Success || closes[0].SuccessOrderID == 0 || closes[0].ErrorMessage != "" ||
		closes[0].ExecutedQty != "0.1000" || closes[0].Status != "FILLED" || closes[0].PositionSide != "LONG" || closes[0].Symbol != "BTCUSDT" {
		t.Errorf("closePositions: %+v", closes)
	}
	if g := s.ctGet(a, "orderId="+id(closes[0].SuccessOrderID)); g.Type != "MARKET" || !g.ReduceOnly || g.AvgPrice != "49500.0" || g.Side != "SELL" || g.Price != "0.0" {
		t.Errorf("close order: %+v", g)
	}
	s.post(a, "/capi/v3/closePositions", `{}`, &closes)
	if len(closes) != 1 || closes[0].Success || closes[0].ErrorMessage == "" || closes[0].SuccessOrderID != 0 {
		t.Errorf("closePositions with the position covered by a working close: %+v", closes)
	}

	// more ways to place: V2 market and post-only, V3 FOK that cannot fill.
	s.v3Place(b, kv{"side": "SELL", "positionSide": "SHORT", "quantity": "0.2", "price": "50500", "newClientOrderId": "b-ask-2"})
	s.post(a, "/capi/v2/order/placeOrder", v2Body(kv{"client_oid": "a-mkt", "match_price": "1", "price": nil}), &placed)
	if g := s.ctGet(a, "origClientOrderId=a-mkt"); g.Type != "MARKET" || g.Status != "FILLED" || g.AvgPrice != "50500.0" || g.TimeInForce != "IOC" {
		t.Errorf("V2 market: %+v", g)
	}
	s.post(a, "/capi/v2/order/placeOrder", v2Body(kv{"client_oid": "a-post", "order_type": "1", "price": "48000", "marginMode": 1}), &placed)
	if g := s.ctGet(a, "origClientOrderId=a-post"); g.TimeInForce != "POST_ONLY" || g.Status != "NEW" {
		t.Errorf("V2 post-only: %+v", g)
	}
	if o := s.v3Place(a, kv{"timeInForce": "FOK", "quantity": "10", "price": "50500"}); o.Status != "EXPIRED" || o.ExecutedQty != "0.0000" {
		t.Errorf("FOK: %+v", o)
	}
	if o := s.v3Place(a, kv{"timeInForce": "POST_ONLY", "price": "48500", "tpTriggerPrice": "60000", "slTriggerPrice": "40000",
		"TpWorkingType": "MARK_PRICE", "newClientOrderId": "a-post-2"}); o.Status != "NEW" || o.TimeInForce != "POST_ONLY" {
		t.Errorf("V3 post-only with presets: %+v", o)
	}

	// DELETE /capi/v3/batchOrders: two of A's ETH orders and an unknown id.
	e2 := s.v3Place(a, kv{"symbol": "ETHUSDT", "quantity": "1", "price": "2900", "newClientOrderId": "a-eth-2"})
	s.v3Place(a, kv{"symbol": "ETHUSDT", "quantity": "1", "price": "2800", "newClientOrderId": "a-eth-3"})
	var bc struct{ OrderList []map[string]any }
	s.ok(req{method: "DELETE", path: "/capi/v3/batchOrders", body: `{"orderIdList":["` + id(e2.OrderID) + `",999999999],"origClientOrderIdList":["a-eth-3"]}`, u: a}, &bc)
	if len(bc.OrderList) != 3 || bc.OrderList[0]["status"] != "CANCELED" || bc.OrderList[0]["clientOrderId"] != "a-eth-2" ||
		bc.OrderList[1]["errorCode"] != "ORDER_NOT_FOUND" || bc.OrderList[2]["status"] != "CANCELED" || bc.OrderList[2]["clientOrderId"] != "a-eth-3" {
		t.Errorf("batch cancel: %+v", bc)
	}
	if g := s.ctGet(a, "origClientOrderId=a-eth-2"); g.Status != "CANCELED" {
		t.Errorf("cancelled order from history: %+v", g)
	}

	// bad input: each refused with its code, nothing changed.
	before := s.stateHash()
	cases := ctBadCases(aOpen, aBid.OrderID, bClose)
	if len(cases) < 60 {
		t.Fatalf("only %d contract bad inputs", len(cases))
	}
	t.Logf("%d contract bad inputs", len(cases))
	for _, bc := range cases {
		res := s.do(bc.r)
		if res.status != bc.status {
			t.Errorf("%s: got status %d %s, want %d", bc.name, res.status, res.body, bc.status)
		} else if bc.status == 200 && bc.elem == "" {
			// an answer, not an error: only the state is checked
		} else if bc.elem != "" {
			var els []ctBatchElem
			if err := json.Unmarshal(res.body, &els); err != nil || len(els) != 1 || els[0].ErrorCode == nil || *els[0].ErrorCode != bc.elem ||
				*els[0].Success || *els[0].ErrorMessage == "" {
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
	_ = c

	// a restart keeps open orders and positions.
	snap := func(s *server) map[string]string {
		m := map[string]string{"hash": s.stateHash()}
		for _, u := range []*user{a, b} {
			m[u.key+"open"] = string(s.get(u, "/capi/v3/openOrders", nil))
			m[u.key+"hist"] = string(s.get(u, "/capi/v3/order/history", nil))
			m[u.key+"trades"] = string(s.get(u, "/capi/v3/userTrades", nil))
		}
		return m
	}
	pre := snap(s)
	s.stop()
	s = startServerConfig(t, cfg, dir)
	post := snap(s)
	for k, v := range pre {
		if post[k] != v {
			t.Errorf("%s after restart:\n got %s\nwant %s", k, post[k], v)
		}
	}
	// the positions are there: A's long (0.05, a working close on it, and
	// the 0.01 market open) and B's short still close.
	if g := s.ctGet(a, "origClientOrderId=a-close-2"); g.Status != "NEW" {
		t.Errorf("working close after restart: %+v", g)
	}
	s.post(a, "/capi/v3/closePositions", `{"symbol":"BTCUSDT"}`, &closes)
	if len(closes) != 1 || !closes[0].Success || closes[0].ExecutedQty != "0.0100" {
		t.Errorf("closePositions after restart: %+v", closes)
	}

	// DELETE allOpenOrders: ETH only, then every contract.
	var gone []ctOrder
	s.del(a, "/capi/v3/allOpenOrders?symbol=ETHUSDT", &gone)
	if len(gone) != 1 || gone[0].OrderID != aEth || gone[0].Status != "CANCELED" {
		t.Errorf("allOpenOrders ETH: %+v", gone)
	}
	s.del(a, "/capi/v3/allOpenOrders", &gone)
	ids := []int64{}
	for _, o := range gone {
		ids = append(ids, o.OrderID)
		if o.Status != "CANCELED" {
			t.Errorf("allOpenOrders: %+v", o)
		}
	}
	if len(gone) != 4 || !sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i] < ids[j] }) || ids[0] != aBid.OrderID || ids[1] != aClose2.OrderID {
		t.Errorf("allOpenOrders: %+v", gone)
	}
	s.get(a, "/capi/v3/openOrders", &open)
	if len(open) != 0 {
		t.Errorf("open after allOpenOrders: %+v", open)
	}
	s.del(a, "/capi/v3/allOpenOrders", &gone)
	if len(gone) != 0 {
		t.Errorf("second allOpenOrders: %+v", gone)
	}
	if g := s.ctGet(b, "origClientOrderId=b-ask-2"); g.Status != "PARTIALLY_FILLED" {
		t.Errorf("B's order after A's cancel-all: %+v", g)
	}

	// closePositions splits a position above maxOrderSize (ETH: 1000)
	// into equal market orders: A shorts 1500 ETH against B's bids, B
	// offers 1500 back, A closes all.
	eth := func(u *user, side, pos, qty string) ctOrder {
		return s.v3Place(u, kv{"symbol": "ETHUSDT", "side": side, "positionSide": pos, "quantity": qty, "price": "3000"})
	}
	eth(b, "BUY", "LONG", "1000")
	eth(b, "BUY", "LONG", "500")
	eth(a, "SELL", "SHORT", "1000")
	if o := eth(a, "SELL", "SHORT", "500"); o.Status != "FILLED" {
		t.Fatalf("ETH short: %+v", o)
	}
	eth(b, "SELL", "LONG", "1000")
	eth(b, "SELL", "LONG", "500")
	s.post(a, "/capi/v3/closePositions", `{"symbol":"ETHUSDT"}`, &closes)
	if len(closes) != 2 {
		t.Fatalf("split close: %+v", closes)
	}
	for _, cl := range closes {
		if !cl.Success || cl.ExecutedQty != "750.000" || cl.Status != "FILLED" || cl.PositionSide != "SHORT" || cl.Symbol != "ETHUSDT" ||
			cl.PositionID != closes[0].PositionID {
			t.Errorf("split close: %+v", cl)
		}
	}
	s.post(a, "/capi/v3/closePositions", `{"symbol":"ETHUSDT"}`, &closes)
	if len(closes) != 0 {
		t.Errorf("close of a closed position: %+v", closes)
	}
}

// ctBadCases are invalid contract order requests. aFilled is a filled
// order of A, aWorking a working one, bOrder one of B.
func ctBadCases(aFilled, aWorking, bOrder int64) []badCase {
	a, c := &userA, &userC
	ct := func(s string) *string { return &s }
	v2 := func(over kv) req {
		return req{method: "POST", path: "/capi/v2/order/placeOrder", body: v2Body(over), u: a}
	}
	v3 := func(over kv) req { return req{method: "POST", path: "/capi/v3/order", body: v3Body(over), u: a} }
	raw := func(path, body string) req { return req{method: "POST", path: path, body: body, u: a} }
	get := func(path string) req { return req{method: "GET", path: path, u: a} }
	del := func(path, body string) req { return req{method: "DELETE", path: path, body: body, u: a} }
	batch := func(elems ...string) req {
		return raw("/capi/v3/batchOrders", `{"batchOrders":[`+strings.Join(elems, ",")+`]}`)
	}
	cs := []badCase{
		// V2 placeOrder: direction, execution, market
		{name: "V2 type 0", r: v2(kv{"type": "0"}), status: 400, code: -1116},
		{name: "V2 type abc", r: v2(kv{"type": "abc"}), status: 400, code: -1116},
		{name: "V2 type -1", r: v2(kv{"type": "-1"}), status: 400, code: -1116},
		{name: "V2 type as object", r: v2(kv{"type": kv{}}), status: 400, code: -1140},
		{name: "V2 type missing", r: v2(kv{"type": nil}), status: 400, code: -1141},
		{name: "V2 order_type 4", r: v2(kv{"order_type": "4"}), status: 400, code: -1115},
		{name: "V2 order_type -1", r: v2(kv{"order_type": "-1"}), status: 400, code: -1115},
		{name: "V2 order_type GTC", r: v2(kv{"order_type": "GTC"}), status: 400, code: -1115},
		{name: "V2 order_type missing", r: v2(kv{"order_type": nil}), status: 400, code: -1141},
		{name: "V2 match_price 2", r: v2(kv{"match_price": "2"}), status: 400, code: -1116},
		{name: "V2 match_price missing", r: v2(kv{"match_price": nil}), status: 400, code: -1141},
		{name: "V2 market post-only", r: v2(kv{"match_price": "1", "order_type": "1"}), status: 400, code: -1128},
		{name: "V2 market FOK", r: v2(kv{"match_price": "1", "order_type": "2"}), status: 400, code: -1128},
		// V2 symbol and client_oid
		{name: "V3 name on V2", r: v2(kv{"symbol": "BTCUSDT"}), status: 400, code: -1121},
		{name: "V2 unknown contract", r: v2(kv{"symbol": "cmt_dogeusdt"}), status: 400, code: -1121},
		{name: "V2 upper-case name", r: v2(kv{"symbol": "CMT_BTCUSDT"}), status: 400, code: -1121},
		{name: "V2 symbol missing", r: v2(kv{"symbol": nil}), status: 400, code: -1141},
		{name: "V2 symbol number", r: v2(kv{"symbol": 5}), status: 400, code: -1140},
		{name: "V2 client_oid 41 chars", r: v2(kv{"client_oid": strings.Repeat("c", 41)}), status: 400, code: -1180},
		{name: "V2 client_oid with a space", r: v2(kv{"client_oid": "a b"}), status: 400, code: -1180},
		{name: "V2 client_oid empty", r: v2(kv{"client_oid": ""}), status: 400, code: -1180},
		{name: "V2 client_oid missing", r: v2(kv{"client_oid": nil}), status: 400, code: -1141},
		{name: "V2 client_oid number", r: v2(kv{"client_oid": 7}), status: 400, code: -1140},
		{name: "V2 duplicate client_oid", r: v2(kv{"client_oid": "a-bid-1"}), status: 400, code: -2010},
		// V2 size and price
		{name: "V2 size off step", r: v2(kv{"size": "0.01005"}), status: 400, code: -1160},
		{name: "V2 size below minOrderSize", r: v2(kv{"size": "0.0005"}), status: 400, code: -2010},
		{name: "V2 size above maxOrderSize", r: v2(kv{"size": "101"}), status: 400, code: -2010},
		{name: "V2 size zero", r: v2(kv{"size": "0"}), status: 400, code: -1140},
		{name: "V2 size negative", r: v2(kv{"size": "-1"}), status: 400, code: -1140},
		{name: "V2 size exponent", r: v2(kv{"size": "1e-2"}), status: 400, code: -1140},
		{name: "V2 size number", r: v2(kv{"size": 0.01}), status: 400, code: -1140},
		{name: "V2 size missing", r: v2(kv{"size": nil}), status: 400, code: -1141},
		{name: "V2 price off tick", r: v2(kv{"price": "49000.05"}), status: 400, code: -1160},
		{name: "V2 price above the band", r: v2(kv{"price": "60000"}), status: 400, code: -2010},
		{name: "V2 short below the band", r: v2(kv{"type": "2", "price": "40000"}), status: 400, code: -2010},
		{name: "V2 price missing on limit", r: v2(kv{"price": nil}), status: 400, code: -1141},
		{name: "V2 price zero", r: v2(kv{"price": "0"}), status: 400, code: -1140},
		{name: "V2 price NaN", r: v2(kv{"price": "NaN"}), status: 400, code: -1140},
		{name: "V2 preset TP off tick", r: v2(kv{"presetTakeProfitPrice": "55000.05"}), status: 400, code: -1160},
		{name: "V2 preset SL negative", r: v2(kv{"presetStopLossPrice": "-1"}), status: 400, code: -1140},
		{name: "V2 preset SL as object", r: v2(kv{"presetStopLossPrice": kv{"p": 1}}), status: 400, code: -1140},
		{name: "V2 marginMode 2", r: v2(kv{"marginMode": 2}), status: 400, code: -1140},
		{name: "V2 marginMode isolated on cross", r: v2(kv{"marginMode": 3}), status: 400, code: -2010},
		{name: "V2 post-only that would take", r: v2(kv{"order_type": "1", "price": "50500"}), status: 400, code: -2010},
		{name: "V2 close short without a position", r: v2(kv{"type": "4"}), status: 400, code: -2010},
		{name: "V2 over-close", r: v2(kv{"type": "3", "size": "1", "price": "50000"}), status: 400, code: -2010},
		{name: "V2 insufficient margin", r: req{method: "POST", path: "/capi/v2/order/placeOrder", body: v2Body(kv{"size": "1"}), u: c}, status: 400, code: -2010},
		{name: "V2 unknown field", r: v2(kv{"leverage": "10"}), status: 400, code: -1140},
		{name: "V2 bad JSON", r: raw("/capi/v2/order/placeOrder", `{"symbol":"cmt_btcusdt",`), status: 400, code: -1135},
		{name: "V2 empty body", r: raw("/capi/v2/order/placeOrder", ``), status: 400, code: -1135},
		{name: "V2 array body", r: raw("/capi/v2/order/placeOrder", `[]`), status: 400, code: -1135},
		{name: "V2 repeated key", r: raw("/capi/v2/order/placeOrder", `{"symbol":"cmt_btcusdt","symbol":"cmt_ethusdt"}`), status: 400, code: -1135},
		{name: "V2 text/plain", r: req{method: "POST", path: "/capi/v2/order/placeOrder", body: v2Body(nil), u: a, contentType: ct("text/plain")}, status: 400, code: -1045},
		{name: "V2 query on POST", r: raw("/capi/v2/order/placeOrder?symbol=cmt_btcusdt", v2Body(nil)), status: 400, code: -1140},
		{name: "V2 GET", r: get("/capi/v2/order/placeOrder"), status: 405, code: -1150},
		{name: "V2 unsigned", r: req{method: "POST", path: "/capi/v2/order/placeOrder", body: v2Body(nil)}, status: 401, code: -1040},

		// V3 POST /capi/v3/order
		{name: "V2 name on V3", r: v3(kv{"symbol": "cmt_btcusdt"}), status: 400, code: -1121},
		{name: "V3 symbol missing", r: v3(kv{"symbol": nil}), status: 400, code: -1141},
		{name: "V3 positionSide missing", r: v3(kv{"positionSide": nil}), status: 400, code: -1141},
		{name: "V3 positionSide BOTH", r: v3(kv{"positionSide": "BOTH"}), status: 400, code: -1140},
		{name: "V3 positionSide lower case", r: v3(kv{"positionSide": "long"}), status: 400, code: -1140},
		{name: "V3 side lower case", r: v3(kv{"side": "buy"}), status: 400, code: -1117},
		{name: "V3 side missing", r: v3(kv{"side": nil}), status: 400, code: -1141},
		{name: "V3 type STOP", r: v3(kv{"type": "STOP"}), status: 400, code: -1116},
		{name: "V3 type missing", r: v3(kv{"type": nil}), status: 400, code: -1141},
		{name: "V3 timeInForce GTD", r: v3(kv{"timeInForce": "GTD"}), status: 400, code: -1115},
		{name: "V3 side as number", r: v3(kv{"side": 1}), status: 400, code: -1140},
		{name: "V3 client id 41 chars", r: v3(kv{"newClientOrderId": strings.Repeat("x", 41)}), status: 400, code: -1180},
		{name: "V3 client id with a quote", r: v3(kv{"newClientOrderId": `a"b`}), status: 400, code: -1180},
		{name: "V3 quantity off step", r: v3(kv{"quantity": "0.01001"}), status: 400, code: -1160},
		{name: "V3 quantity below min", r: v3(kv{"quantity": "0.0009"}), status: 400, code: -2010},
		{name: "V3 quantity above max", r: v3(kv{"quantity": "100.1"}), status: 400, code: -2010},
		{name: "V3 quantity number", r: v3(kv{"quantity": 1}), status: 400, code: -1140},
		{name: "V3 quantity missing", r: v3(kv{"quantity": nil}), status: 400, code: -1141},
		{name: "V3 price off tick", r: v3(kv{"price": "49000.01"}), status: 400, code: -1160},
		{name: "V3 price missing", r: v3(kv{"price": nil}), status: 400, code: -1141},
		{name: "V3 price above the band", r: v3(kv{"price": "99000"}), status: 400, code: -2010},
		{name: "V3 reduceOnly on an open", r: v3(kv{"reduceOnly": true}), status: 400, code: -1128},
		{name: "V3 reduceOnly false on a close", r: v3(kv{"side": "SELL", "reduceOnly": false, "price": "52000"}), status: 400, code: -1128},
		{name: "V3 reduceOnly yes", r: v3(kv{"reduceOnly": "yes"}), status: 400, code: -1140},
		{name: "V3 tpTriggerPrice off tick", r: v3(kv{"tpTriggerPrice": "60000.05"}), status: 400, code: -1160},
		{name: "V3 slTriggerPrice zero", r: v3(kv{"slTriggerPrice": "0"}), status: 400, code: -1140},
		{name: "V3 TpWorkingType", r: v3(kv{"TpWorkingType": "LAST"}), status: 400, code: -1140},
		{name: "V3 close short without a position", r: v3(kv{"positionSide": "SHORT"}), status: 400, code: -2010},
		{name: "V3 over-close", r: v3(kv{"side": "SELL", "quantity": "0.5", "price": "52000"}), status: 400, code: -2010},
		{name: "V3 post-only that would take", r: v3(kv{"timeInForce": "POST_ONLY", "price": "50500"}), status: 400, code: -2010},
		{name: "V3 duplicate client id", r: v3(kv{"newClientOrderId": "a-close-2"}), status: 400, code: -2010},
		{name: "V3 unknown field", r: v3(kv{"stopPrice": "1"}), status: 400, code: -1140},
		{name: "V3 bad JSON", r: raw("/capi/v3/order", `{"symbol":"BTCUSDT"`), status: 400, code: -1135},
		{name: "V3 trailing data", r: raw("/capi/v3/order", v3Body(nil)+"x"), status: 400, code: -1135},

		// V3 batchOrders: request level
		{name: "batch of 6", r: batch(v3Body(nil), v3Body(nil), v3Body(nil), v3Body(nil), v3Body(nil), v3Body(nil)), status: 400, code: -1140},
		{name: "empty batch", r: batch(), status: 400, code: -1140},
		{name: "batch missing", r: raw("/capi/v3/batchOrders", `{}`), status: 400, code: -1141},
		{name: "batch not an array", r: raw("/capi/v3/batchOrders", `{"batchOrders":{}}`), status: 400, code: -1140},
		{name: "batch element not an object", r: batch(`"x"`), status: 400, code: -1140},
		{name: "batch unknown key", r: raw("/capi/v3/batchOrders", `{"symbol":"BTCUSDT","batchOrders":[`+v3Body(nil)+`]}`), status: 400, code: -1140},
		{name: "batch bad JSON", r: raw("/capi/v3/batchOrders", `{"batchOrders":[`), status: 400, code: -1135},
		{name: "batch trailing comma", r: raw("/capi/v3/batchOrders", `{"batchOrders":[`+v3Body(nil)+`,]}`), status: 400, code: -1135},
		// V3 batchOrders: element level (200, the element fails alone)
		{name: "batch V2 name", r: batch(v3Body(kv{"symbol": "cmt_btcusdt"})), status: 200, elem: "INVALID_SYMBOL"},
		{name: "batch no positionSide", r: batch(v3Body(kv{"positionSide": nil})), status: 200, elem: "INVALID_POSITION_SIDE"},
		{name: "batch no position", r: batch(v3Body(kv{"positionSide": "SHORT"})), status: 200, elem: "NO_POSITION"},
		{name: "batch quantity off step", r: batch(v3Body(kv{"quantity": "0.00001"})), status: 200, elem: "INVALID_QUANTITY"},
		{name: "batch quantity below min", r: batch(v3Body(kv{"quantity": "0.0001"})), status: 200, elem: "QUANTITY_TOO_SMALL"},
		{name: "batch price band", r: batch(v3Body(kv{"price": "70000"})), status: 200, elem: "PRICE_OUT_OF_RANGE"},
		{name: "batch bad timeInForce", r: batch(v3Body(kv{"timeInForce": "DAY"})), status: 200, elem: "INVALID_TIME_IN_FORCE"},
		{name: "batch unknown field", r: batch(v3Body(kv{"foo": "1"})), status: 200, elem: "INVALID_PARAMETER"},
		{name: "batch duplicate client id", r: batch(v3Body(kv{"newClientOrderId": "a-bid-1"})), status: 200, elem: "DUPLICATE_CLIENT_ORDER_ID"},
		{name: "batch over-close", r: batch(v3Body(kv{"side": "SELL", "quantity": "1", "price": "52000"})), status: 200, elem: "REDUCE_ONLY_EXCEEDS_POSITION"},

		// GET / DELETE /capi/v3/order
		{name: "GET order without id", r: get("/capi/v3/order"), status: 400, code: -1141},
		{name: "GET order id abc", r: get("/capi/v3/order?orderId=abc"), status: 400, code: -1140},
		{name: "GET order of B", r: get("/capi/v3/order?orderId=" + id(bOrder)), status: 400, code: -3200},
		{name: "GET spot order id", r: get("/capi/v3/order?orderId=1024"), status: 400, code: -3200},
		{name: "GET unknown contract order", r: get("/capi/v3/order?orderId=" + id(aFilled+(1000<<10))), status: 400, code: -3200},
		{name: "GET order in the other contract", r: get("/capi/v3/order?symbol=ETHUSDT&orderId=" + id(aWorking)), status: 400, code: -3200},
		{name: "GET order with V2 name", r: get("/capi/v3/order?symbol=cmt_btcusdt&orderId=" + id(aWorking)), status: 400, code: -1121},
		{name: "GET order unknown parameter", r: get("/capi/v3/order?orderId=" + id(aWorking) + "&x=1"), status: 400, code: -1140},
		{name: "DELETE filled order", r: del("/capi/v3/order?orderId="+id(aFilled), ""), status: 400, code: -3200},
		{name: "DELETE unknown client id", r: del("/capi/v3/order?origClientOrderId=nope", ""), status: 400, code: -3200},
		{name: "DELETE order of B", r: del("/capi/v3/order?orderId="+id(bOrder), ""), status: 400, code: -3200},
		{name: "DELETE order without id", r: del("/capi/v3/order?symbol=BTCUSDT", ""), status: 400, code: -1141},
		{name: "DELETE batch empty", r: del("/capi/v3/batchOrders", `{}`), status: 400, code: -1141},
		{name: "DELETE batch bad JSON", r: del("/capi/v3/batchOrders", `{"orderIdList":[1`), status: 400, code: -1135},
		{name: "DELETE batch 11 ids", r: del("/capi/v3/batchOrders", `{"orderIdList":[1,2,3,4,5,6,7,8,9,10,11]}`), status: 400, code: -1140},
		{name: "DELETE batch bad id", r: del("/capi/v3/batchOrders", `{"orderIdList":["x"]}`), status: 400, code: -1140},
		{name: "DELETE batch bad symbol", r: del("/capi/v3/batchOrders", `{"symbol":"cmt_btcusdt","orderIdList":[1]}`), status: 400, code: -1121},
		{name: "DELETE allOpenOrders bad symbol", r: del("/capi/v3/allOpenOrders?symbol=BTC", ""), status: 400, code: -1121},
		{name: "DELETE allOpenOrders unknown parameter", r: del("/capi/v3/allOpenOrders?side=BUY", ""), status: 400, code: -1140},

		// queries
		{name: "openOrders limit 101", r: get("/capi/v3/openOrders?limit=101"), status: 400, code: -1140},
		{name: "openOrders bad symbol", r: get("/capi/v3/openOrders?symbol=cmt_btcusdt"), status: 400, code: -1121},
		{name: "history start after end", r: get("/capi/v3/order/history?startTime=10&endTime=5"), status: 400, code: -1171},
		{name: "history limit 1001", r: get("/capi/v3/order/history?limit=1001"), status: 400, code: -1140},
		{name: "userTrades limit 0", r: get("/capi/v3/userTrades?limit=0"), status: 400, code: -1140},
		{name: "userTrades orderId abc", r: get("/capi/v3/userTrades?orderId=abc"), status: 400, code: -1140},

		// closePositions
		{name: "closePositions bad symbol", r: raw("/capi/v3/closePositions", `{"symbol":"cmt_btcusdt"}`), status: 400, code: -1121},
		{name: "closePositions unknown field", r: raw("/capi/v3/closePositions", `{"positionSide":"LONG"}`), status: 400, code: -1140},
		{name: "closePositions bad JSON", r: raw("/capi/v3/closePositions", `{"symbol"`), status: 400, code: -1135},
		{name: "closePositions with nothing", r: req{method: "POST", path: "/capi/v3/closePositions", body: `{}`, u: c}, status: 200, code: 0},
	}
	// V2 type codes 5 to 10 exist in query results only.
	for t := 5; t <= 10; t++ {
		cs = append(cs, badCase{name: fmt.Sprintf("V2 type %d", t), r: v2(kv{"type": strconv.Itoa(t)}), status: 400, code: -1116})
	}
	return cs
}
