package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func placeBody(symbol, side, typ, qty, price, extra string) string {
	b := fmt.Sprintf(`{"symbol":%q,"side":%q,"type":%q,"quantity":%q`, symbol, side, typ, qty)
	if price != "" {
		b += fmt.Sprintf(`,"price":%q`, price)
	}
	return b + extra + "}"
}

// TestEndpoints drives every endpoint once with valid input and checks the
// answers' shapes and values.
func TestEndpoints(t *testing.T) {
	s := startServer(t, "")

	var tm struct{ ServerTime int64 }
	s.get(nil, "/api/v3/time", &tm)
	if d := time.Now().UnixMilli() - tm.ServerTime; d > 5000 || d < -5000 {
		t.Errorf("serverTime off by %d ms", d)
	}
	if b := s.get(nil, "/api/v3/ping", nil); string(b) != "{}" {
		t.Errorf("ping: got %s, want {}", b)
	}

	var info struct {
		Timezone   string
		ServerTime int64
		Symbols    []map[string]any
	}
	s.get(nil, "/api/v3/exchangeInfo", &info)
	if info.Timezone != "UTC" || len(info.Symbols) != 2 || info.Symbols[0]["symbol"] != "BTCUSDT" || info.Symbols[0]["tickSize"] != "0.01" {
		t.Errorf("exchangeInfo: got %+v", info)
	}
	for _, q := range []string{"?symbol=ETHUSDT", "?symbols=ETHUSDT", "?symbols=" + url.QueryEscape(`["ETHUSDT"]`), "?symbols=ETHUSDT,BTCUSDT&symbolStatus=TRADING"} {
		s.get(nil, "/api/v3/exchangeInfo"+q, &info)
		want := 1
		if strings.Contains(q, "BTCUSDT") {
			want = 2
		}
		if len(info.Symbols) != want {
			t.Errorf("exchangeInfo%s: got %d symbols, want %d", q, len(info.Symbols), want)
		}
	}
	for _, k := range []string{"symbol", "status", "baseAsset", "baseAssetPrecision", "quoteAsset", "quoteAssetPrecision",
		"tickSize", "stepSize", "minTradeAmount", "maxTradeAmount", "takerFeeRate", "makerFeeRate", "buyLimitPriceRatio",
		"sellLimitPriceRatio", "marketBuyLimitSize", "marketSellLimitSize", "marketFallbackPriceRatio", "enableTrade",
		"enableDisplay", "displayDigitMerge", "displayNew", "displayHot"} {
		if _, ok := info.Symbols[0][k]; !ok {
			t.Errorf("exchangeInfo record lacks %s", k)
		}
	}
	var capi struct{ Symbols []map[string]any }
	s.get(nil, "/capi/v3/market/exchangeInfo", &capi)
	if len(capi.Symbols) != 2 || capi.Symbols[0]["symbol"] != "BTCUSDT" || capi.Symbols[1]["symbol"] != "ETHUSDT" {
		t.Errorf("capi exchangeInfo: got %+v", capi)
	}
	for _, k := range []string{"symbol", "contractId", "baseAsset", "quoteAsset", "marginAsset", "contractVal", "minLeverage",
		"maxLeverage", "minOrderSize", "maxOrderSize", "takerFeeRate", "makerFeeRate", "pricePrecision", "quantityPrecision",
		"tickSize", "stepSize"} {
		if len(capi.Symbols) > 0 && capi.Symbols[0][k] == nil {
			t.Errorf("capi exchangeInfo record lacks %s", k)
		}
	}

	var coins []struct {
		Coin        string
		NetworkList []map[string]any
	}
	s.get(nil, "/api/v3/coins", &coins)
	if len(coins) != 3 || coins[1].Coin != "USDT" || coins[1].NetworkList[0]["network"] != "TRC20" || coins[1].NetworkList[0]["coin"] != "USDT" {
		t.Errorf("coins: got %+v", coins)
	}

	// A sells 1 BTC at 50000; B buys 0.4 (limit) and 0.1 (market) in a batch.
	var placed order
	s.post(&userA, "/api/v3/order", placeBody("BTCUSDT", "SELL", "LIMIT", "1", "50000", `,"newClientOrderId":"ask-1"`), &placed)
	if placed.OrderID <= 0 || placed.ClientOrderID != "ask-1" || placed.Status != "NEW" || placed.TransactTime == 0 || placed.TimeInForce != "GTC" {
		t.Fatalf("place: got %+v", placed)
	}
	var batch struct {
		OrderList []struct {
			Symbol, ClientOrderID, ErrorCode, ErrorMsg string
			OrderID, TransactTime                      int64
		}
	}
	s.post(&userB, "/api/v3/order/batch", `{"symbol":"BTCUSDT","orderList":[
		{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.4","price":"50000","newClientOrderId":"b-1"},
		{"side":"BUY","type":"MARKET","quantity":"0.1"},
		{"side":"BUY","type":"LIMIT","timeInForce":"IOC","quantity":"1000","price":"50000"}]}`, &batch)
	if len(batch.OrderList) != 3 {
		t.Fatalf("batch: got %+v", batch)
	}
	if e := batch.OrderList[0]; e.OrderID <= 0 || e.ClientOrderID != "b-1" || e.ErrorCode != "" || e.Symbol != "BTCUSDT" {
		t.Errorf("batch[0]: got %+v", e)
	}
	if e := batch.OrderList[1]; e.OrderID <= 0 || e.ClientOrderID != fmt.Sprintf("x-%d", e.OrderID) {
		t.Errorf("batch[1]: got %+v (want generated client id x-<orderId>)", e)
	}
	if e := batch.OrderList[2]; e.OrderID != 0 || e.ErrorCode != "INSUFFICIENT_BALANCE" || e.ErrorMsg == "" {
		t.Errorf("batch[2]: got %+v", e)
	}

	var o order
	s.get(&userA, fmt.Sprintf("/api/v3/order?orderId=%d", placed.OrderID), &o)
	if o.Status != "PARTIALLY_FILLED" || o.ExecutedQty != "0.500000" || o.CummulativeQuoteQty != "25000.00000000" || o.Price != "50000.00" || !o.IsWorking {
		t.Errorf("GET order: got %+v", o)
	}
	s.get(&userA, "/api/v3/order?symbol=BTCUSDT&origClientOrderId=ask-1", &o)
	if o.OrderID != placed.OrderID {
		t.Errorf("GET order by client id: got %+v", o)
	}
	var open []order
	s.get(&userA, "/api/v3/openOrders", &open)
	if len(open) != 1 || open[0].OrderID != placed.OrderID {
		t.Errorf("openOrders: got %+v", open)
	}
	s.get(&userA, "/api/v3/openOrders?symbol=ETHUSDT", &open)
	if len(open) != 0 {
		t.Errorf("openOrders ETHUSDT: got %+v", open)
	}
	var all []order
	s.get(&userB, "/api/v3/allOrders?symbol=BTCUSDT", &all)
	if len(all) != 2 || all[0].Status != "FILLED" || all[1].Type != "MARKET" || all[1].Status != "FILLED" || all[1].ExecutedQty != "0.100000" {
		t.Errorf("allOrders: got %+v", all)
	}
	s.get(&userB, fmt.Sprintf("/api/v3/allOrders?symbol=BTCUSDT&startTime=0&endTime=%d&limit=1&page=2", time.Now().UnixMilli()+1000), &all)
	if len(all) != 1 || all[0].Type != "MARKET" {
		t.Errorf("allOrders page 2: got %+v", all)
	}

	var trades []map[string]any
	s.get(&userB, "/api/v3/myTrades?symbol=BTCUSDT", &trades)
	if len(trades) != 2 || trades[0]["isBuyer"] != true || trades[0]["price"] != "50000.00" || trades[0]["qty"] != "0.400000" || trades[0]["commission"] != "0.00040000" {
		t.Errorf("myTrades: got %+v", trades)
	}
	s.get(nil, "/api/v3/market/trades?symbol=BTCUSDT&limit=10", &trades)
	if len(trades) != 2 || trades[0]["isBuyerMaker"] != false {
		t.Errorf("market trades: got %+v", trades)
	}
	var depth struct{ Bids, Asks [][]string }
	s.get(nil, "/api/v3/market/depth?symbol=BTCUSDT&limit=5", &depth)
	if len(depth.Asks) != 1 || depth.Asks[0][0] != "50000.00" || depth.Asks[0][1] != "0.500000" || len(depth.Bids) != 0 {
		t.Errorf("depth: got %+v", depth)
	}
	var px map[string]string
	s.get(nil, "/api/v3/market/ticker/price?symbol=BTCUSDT", &px)
	if px["price"] != "50000.00" {
		t.Errorf("ticker/price: got %+v", px)
	}
	var pxs []map[string]string
	s.get(nil, "/api/v3/market/ticker/price", &pxs)
	if len(pxs) != 2 {
		t.Errorf("ticker/price all: got %+v", pxs)
	}
	var book map[string]any
	s.get(nil, "/api/v3/market/ticker/bookTicker?symbol=BTCUSDT", &book)
	if book["askPrice"] != "50000.00" || book["askQty"] != "0.500000" {
		t.Errorf("bookTicker: got %+v", book)
	}
	var t24 map[string]any
	s.get(nil, "/api/v3/market/ticker/24hr?symbol=BTCUSDT", &t24)
	if t24["lastPrice"] != "50000.00" || t24["volume"] != "0.500000" || t24["count"] != float64(2) {
		t.Errorf("24hr: got %+v", t24)
	}

	var acct struct {
		Balances []struct{ Asset, Free, Locked string }
		UID      int64
	}
	s.get(&userA, "/api/v3/account/", &acct)
	want := map[string][2]string{"BTC": {"99.00000000", "0.50000000"}, "USDT": {"1024980.00000000", "0.00000000"}}
	for _, b := range acct.Balances {
		if w, ok := want[b.Asset]; ok && (b.Free != w[0] || b.Locked != w[1]) {
			t.Errorf("account %s: got free %s locked %s, want %v", b.Asset, b.Free, b.Locked, w)
		}
	}
	if acct.UID != userA.uid {
		t.Errorf("account uid: got %d", acct.UID)
	}

	var bills []map[string]any
	s.post(&userA, "/api/v3/tax/income", `{"coin":"USDT","bizType":"trade_in"}`, &bills)
	if len(bills) != 2 || bills[0]["deltaAmount"] != "4996.00000000" || bills[0]["fees"] != "4.00000000" || bills[0]["coinName"] != "USDT" {
		t.Errorf("tax/income: got %+v", bills)
	}
	s.post(&userA, "/api/v3/tax/income", fmt.Sprintf(`{"month":%q,"limit":200,"page":1}`, time.Now().UTC().Format("2006-01")), &bills)
	if len(bills) < 6 {
		t.Errorf("tax/income all: got %d records", len(bills))
	}

	// cancel by id, cancel all.
	var c order
	s.del(&userA, fmt.Sprintf("/api/v3/order?symbol=BTCUSDT&orderId=%d", placed.OrderID), &c)
	if c.Status != "CANCELED" || c.IsWorking {
		t.Errorf("cancel: got %+v", c)
	}
	for i := 0; i < 3; i++ {
		s.post(&userA, "/api/v3/order", placeBody("ETHUSDT", "BUY", "LIMIT", "1", fmt.Sprint(1000+i), ""), nil)
	}
	var cancelled []order
	s.del(&userA, "/api/v3/openOrders?symbol=ETHUSDT", &cancelled)
	if len(cancelled) != 3 || cancelled[0].Status != "CANCELED" {
		t.Errorf("cancel all: got %+v", cancelled)
	}
	s.get(&userA, "/api/v3/openOrders", &open)
	if len(open) != 0 {
		t.Errorf("open after cancel all: got %+v", open)
	}
	var p1, p2 order
	s.post(&userA, "/api/v3/order", placeBody("ETHUSDT", "BUY", "LIMIT", "1", "900", `,"newClientOrderId":"e-1"`), &p1)
	s.post(&userA, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.01", "900", ""), &p2)
	var cb struct{ OrderList []map[string]any }
	body := fmt.Sprintf(`{"orderIds":[%d,"999999999"],"origClientOrderIds":["e-1"]}`, p2.OrderID)
	s.ok(req{method: "DELETE", path: "/api/v3/order/batch", body: body, u: &userA}, &cb)
	if len(cb.OrderList) != 3 || cb.OrderList[0]["status"] != "CANCELED" || cb.OrderList[1]["errorCode"] != "ORDER_NOT_FOUND" ||
		cb.OrderList[2]["status"] != "CANCELED" || cb.OrderList[2]["symbol"] != "ETHUSDT" {
		t.Errorf("DELETE order/batch: got %+v", cb)
	}

	// admin API
	var nu struct {
		UID                           int64
		APIKey, SecretKey, Passphrase string
	}
	s.ok(req{method: "POST", path: "/admin/v1/users", body: `{}`, admin: true}, &nu)
	if nu.UID <= userCCXT.uid || nu.APIKey == "" {
		t.Fatalf("admin user: got %+v", nu)
	}
	var bill struct{ BillID string }
	s.ok(req{method: "POST", path: "/admin/v1/deposit", body: fmt.Sprintf(`{"uid":%d,"coin":"USDT","amount":"500.5"}`, nu.UID), admin: true}, &bill)
	if bill.BillID == "" {
		t.Errorf("deposit: no billId")
	}
	s.ok(req{method: "POST", path: "/admin/v1/withdraw", body: fmt.Sprintf(`{"uid":%d,"coin":"USDT","amount":"0.5"}`, nu.UID), admin: true}, &bill)
	var bals []struct{ Wallet, Coin, Available, Frozen string }
	s.ok(req{method: "GET", path: fmt.Sprintf("/admin/v1/balances?uid=%d", nu.UID), admin: true}, &bals)
	if len(bals) != 6 || bals[1].Coin != "USDT" || bals[1].Available != "500.00000000" || bals[1].Wallet != "spot" ||
		bals[4].Wallet != "futures" || bals[4].Available != "0.00000000" {
		t.Errorf("admin balances: got %+v", bals)
	}
	newUser := user{nu.UID, nu.APIKey, nu.SecretKey, nu.Passphrase}
	s.get(&newUser, "/api/v3/account/", &acct)
	if acct.UID != nu.UID {
		t.Errorf("new user account: got %+v", acct)
	}
	res := s.do(req{method: "GET", path: "/api/v3/account/", u: &newUser})
	if res.hdr.Get("X-USED-WEIGHT-IP-10S") == "" || res.hdr.Get("X-USED-WEIGHT-UID-10S") == "" {
		t.Errorf("weight headers missing: %v", res.hdr)
	}
	if strings.Contains(string(res.body), `"msg"`) {
		t.Errorf("success body carries msg: %s", res.body)
	}
}

// TestIsolation: a user never sees or cancels another user's orders.
func TestIsolation(t *testing.T) {
	s := startServer(t, "")
	var b order
	s.post(&userB, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "1", "100", `,"newClientOrderId":"secret-order"`), &b)
	hash := s.stateHash()
	for _, r := range []req{
		{method: "GET", path: fmt.Sprintf("/api/v3/order?orderId=%d", b.OrderID), u: &userA},
		{method: "GET", path: fmt.Sprintf("/api/v3/order?symbol=BTCUSDT&orderId=%d", b.OrderID), u: &userA},
		{method: "GET", path: "/api/v3/order?origClientOrderId=secret-order", u: &userA},
		{method: "DELETE", path: fmt.Sprintf("/api/v3/order?orderId=%d", b.OrderID), u: &userA},
		{method: "DELETE", path: "/api/v3/order?symbol=BTCUSDT&origClientOrderId=secret-order", u: &userA},
	} {
		res := s.do(r)
		var e apiErr
		json.Unmarshal(res.body, &e)
		if res.status != 400 || e.Code != -2200 {
			t.Errorf("%s %s as A: got %d %s, want 400 -2200", r.method, r.path, res.status, res.body)
		}
	}
	var list []order
	s.get(&userA, "/api/v3/openOrders", &list)
	s.get(&userA, "/api/v3/openOrders?symbol=BTCUSDT", &list)
	if len(list) != 0 {
		t.Errorf("A sees B's open orders: %+v", list)
	}
	s.get(&userA, "/api/v3/allOrders?symbol=BTCUSDT", &list)
	if len(list) != 0 {
		t.Errorf("A sees B's orders: %+v", list)
	}
	s.del(&userA, "/api/v3/openOrders?symbol=BTCUSDT", &list)
	if len(list) != 0 {
		t.Errorf("A cancelled B's orders: %+v", list)
	}
	// A may use the same client id: ids are per user.
	s.get(&userB, "/api/v3/openOrders", &list)
	if len(list) != 1 || list[0].Status != "NEW" {
		t.Errorf("B's order after A's attempts: %+v", list)
	}
	if h := s.stateHash(); h != hash {
		t.Errorf("state changed by A's attempts")
	}
}

// TestRateLimit: a burst over the UID budget gets 429 + Retry-After, is not
// executed, and other users are still served.
func TestRateLimit(t *testing.T) {
	s := startServer(t, "")
	// user C's budget is 120 per 10 s; a batch weighs 50.
	body := `{"symbol":"BTCUSDT","orderList":[{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.001","price":"100"}]}`
	var got429 resp
	accepted := 0
	for i := 0; i < 6; i++ {
		res := s.do(req{method: "POST", path: "/api/v3/order/batch", body: body, u: &userC})
		if res.status == 200 {
			accepted++
			continue
		}
		if res.status == 429 {
			got429 = res
			break
		}
		t.Fatalf("burst: got %d %s", res.status, res.body)
	}
	if got429.status != 429 {
		t.Fatalf("no 429 after the burst")
	}
	var e apiErr
	json.Unmarshal(got429.body, &e)
	if e.Code != -1003 || got429.hdr.Get("Retry-After") == "" {
		t.Errorf("429: got %s, Retry-After %q", got429.body, got429.hdr.Get("Retry-After"))
	}
	if got429.hdr.Get("X-USED-WEIGHT-UID-10S") == "" {
		t.Errorf("429 without X-USED-WEIGHT-UID-10S")
	}
	// other users are served meanwhile.
	var open []order
	s.get(&userB, "/api/v3/openOrders", &open)
	s.post(&userB, "/api/v3/order/batch", body, nil)
	// the refused request was not executed (if the window rolled over, C is served again).
	if res := s.do(req{method: "GET", path: "/api/v3/openOrders", u: &userC}); res.status == 200 {
		json.Unmarshal(res.body, &open)
		if len(open) != accepted {
			t.Errorf("C has %d open orders, want %d (the refused batch must not run)", len(open), accepted)
		}
	}
}

// TestRestart: orders, balances and finance records survive a restart, and
// the state hash is the same.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	s.post(&userA, "/api/v3/order", placeBody("BTCUSDT", "SELL", "LIMIT", "2", "30000", ""), nil)
	s.post(&userB, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.5", "30000", ""), nil)
	s.post(&userB, "/api/v3/order", placeBody("ETHUSDT", "BUY", "LIMIT", "3", "2000.5", `,"newClientOrderId":"keep-me"`), nil)
	s.ok(req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":10002,"coin":"ETH","amount":"1.25"}`, admin: true}, nil)
	var nu struct {
		UID                           int64
		APIKey, SecretKey, Passphrase string
	}
	s.ok(req{method: "POST", path: "/admin/v1/users", body: `{"uid":777}`, admin: true}, &nu)
	admUser := user{nu.UID, nu.APIKey, nu.SecretKey, nu.Passphrase}
	s.ok(req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":777,"coin":"USDT","amount":"10"}`, admin: true}, nil)
	s.post(&admUser, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.0001", "1000", ""), nil)

	snapshot := func(s *server) map[string]string {
		m := map[string]string{"hash": s.stateHash()}
		for _, u := range []*user{&userA, &userB} {
			m[u.key+"open"] = string(s.get(u, "/api/v3/openOrders", nil))
			m[u.key+"all"] = string(s.get(u, "/api/v3/allOrders?symbol=BTCUSDT", nil))
			m[u.key+"alleth"] = string(s.get(u, "/api/v3/allOrders?symbol=ETHUSDT", nil))
			m[u.key+"bills"] = string(s.post(u, "/api/v3/tax/income", `{"limit":200}`, nil))
			m[u.key+"ledger"] = string(s.post(u, "/api/v3/account/bills", `{"limit":100}`, nil))
			m[u.key+"funding"] = string(s.post(u, "/api/v3/account/fundingBills", `{"pageSize":100}`, nil))
			acct := map[string]any{}
			s.get(u, "/api/v3/account/", &acct)
			bal, _ := json.Marshal(acct["balances"])
			m[u.key+"bal"] = string(bal)
		}
		m["depth"] = string(s.get(nil, "/api/v3/market/depth?symbol=BTCUSDT", nil))
		m["depth"] = m["depth"][:strings.Index(m["depth"], `"time"`)]
		m["klines"] = string(s.get(nil, "/api/v3/market/klines?symbol=BTCUSDT&interval=1m", nil))
		return m
	}
	before := snapshot(s)
	s.stop()
	s2 := startServer(t, dir)
	after := snapshot(s2)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s after restart:\n got %s\nwant %s", k, after[k], v)
		}
	}
	// new uids continue after the highest registered one.
	s2.ok(req{method: "POST", path: "/admin/v1/users", body: `{}`, admin: true}, &nu)
	if nu.UID != 10005 {
		t.Errorf("uid after restart: got %d, want 10005", nu.UID)
	}
	// the admin-created user keeps its credentials and orders.
	var open []order
	s2.get(&admUser, "/api/v3/openOrders", &open)
	if len(open) != 1 {
		t.Errorf("admin-created user's orders after restart: %+v", open)
	}
	var o order
	s2.get(&userB, "/api/v3/order?symbol=ETHUSDT&origClientOrderId=keep-me", &o)
	if o.Price != "2000.50" || o.Status != "NEW" {
		t.Errorf("order after restart: %+v", o)
	}
	s2.stop()
}

// TestConcurrentBatches: parallel clients all get answers and money is
// accounted (a smoke test of the hot path under contention).
func TestConcurrentBatches(t *testing.T) {
	s := startServer(t, "")
	var wg sync.WaitGroup
	for _, u := range []*user{&userA, &userB} {
		wg.Add(1)
		go func(u *user) {
			defer wg.Done()
			side := "BUY"
			if u == &userA {
				side = "SELL"
			}
			for i := 0; i < 20; i++ {
				s.post(u, "/api/v3/order/batch", fmt.Sprintf(`{"symbol":"BTCUSDT","orderList":[
					{"side":%q,"type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"40000"},
					{"side":%q,"type":"LIMIT","timeInForce":"IOC","quantity":"0.01","price":"40000"}]}`, side, side), nil)
			}
		}(u)
	}
	wg.Wait()
	// GET /metrics counted (at least) these 40 answers, the journal's
	// writes, and the WAL syncs every acknowledged batch waited for
	m := s.metrics()
	if n := durationCount(m, "/api/v3/order/batch", "POST", "200"); n < 40 {
		t.Errorf("metrics: %d batch answers counted, want >= 40", n)
	}
	keys, bytes := metricValue(m, "exchanged_journal_written_keys_total"), metricValue(m, "exchanged_journal_written_bytes_total")
	if keys <= 0 || bytes <= keys {
		t.Errorf("metrics: journal %v keys %v bytes", keys, bytes)
	}
	if histCount(m, "exchanged_wal_fsync_seconds") == 0 {
		t.Errorf("metrics: no WAL fsyncs counted")
	}
	var bals []struct{ Coin, Available, Frozen string }
	s.ok(req{method: "GET", path: "/admin/v1/balances?uid=1", admin: true}, &bals)
	if bals[0].Available == "0.00000000" && bals[1].Available == "0.00000000" {
		t.Errorf("no fees collected: %+v", bals)
	}
	s.checkConserved()
}

// checkConserved: per coin, the sum of every account's available and
// frozen balance, both wallets, equals the config's deposits
// (testdata/e2e.json), while no contract position is open.
func (s *server) checkConserved() {
	s.t.Helper()
	units := func(v string) int64 {
		n, err := strconv.ParseInt(strings.Replace(v, ".", "", 1), 10, 64)
		if err != nil {
			s.t.Fatalf("amount %q: %v", v, err)
		}
		return n
	}
	var bals []struct{ Coin, Available, Frozen string }
	sum := map[string]int64{}
	for _, uid := range []int64{1, 2, 10001, 10002, 10003, 10004} {
		s.ok(req{method: "GET", path: fmt.Sprintf("/admin/v1/balances?uid=%d", uid), admin: true}, &bals)
		for _, b := range bals {
			sum[b.Coin] += units(b.Available) + units(b.Frozen)
		}
	}
	want := map[string]int64{"BTC": 300 * 1e8, "USDT": 4_300_000 * 1e8, "ETH": 2000 * 1e8}
	for coin, w := range want {
		if sum[coin] != w {
			s.t.Errorf("%s: sum of balances %d, want %d", coin, sum[coin], w)
		}
	}
}

// TestConcurrentRegistrations: admin registrations sent in parallel each
// get their own uid; none is refused for having raced with another (the
// load generator registers its users eight at a time).
func TestConcurrentRegistrations(t *testing.T) {
	s := startServer(t, "")
	const workers, each = 16, 8
	var wg sync.WaitGroup
	got := make(chan resp, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				got <- s.do(req{method: "POST", path: "/admin/v1/users", body: `{}`, admin: true})
			}
		}()
	}
	wg.Wait()
	close(got)
	uids := map[int64]bool{}
	for r := range got {
		var nu struct{ UID int64 }
		if r.status != 200 || json.Unmarshal(r.body, &nu) != nil || nu.UID <= 0 {
			t.Errorf("registration: got %d %s, want 200 and a uid", r.status, r.body)
			continue
		}
		if uids[nu.UID] {
			t.Errorf("uid %d given twice", nu.UID)
		}
		uids[nu.UID] = true
	}
	if len(uids) != workers*each {
		t.Errorf("%d distinct uids, want %d", len(uids), workers*each)
	}
}

// TestIPRateLimit: the IP budget applies to public endpoints too, with
// Retry-After, and the admin token overrides from the command line work.
func TestIPRateLimit(t *testing.T) {
	cfg, err := os.ReadFile("testdata/e2e.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cfg.json")
	os.WriteFile(path, []byte(strings.Replace(string(cfg), `"ip_weight_per_10s": 1000000`, `"ip_weight_per_10s": 50`, 1)), 0o644)
	s := startServerConfig(t, path, "", "-admin-token", "test-admin")
	var codes []int
	var last resp
	for attempt := 0; attempt < 3; attempt++ {
		// wait for a fresh 10 s window so the burst does not straddle two
		time.Sleep(time.Duration(10_000-time.Now().UnixMilli()%10_000+20) * time.Millisecond)
		win := time.Now().UnixMilli() / 10_000
		codes = codes[:0]
		for i := 0; i < 4; i++ { // exchangeInfo weighs 20
			last = s.do(req{method: "GET", path: "/api/v3/exchangeInfo"})
			codes = append(codes, last.status)
		}
		if time.Now().UnixMilli()/10_000 == win {
			break
		}
	}
	if fmt.Sprint(codes) != "[200 200 429 429]" {
		t.Fatalf("statuses: got %v, want [200 200 429 429]", codes)
	}
	var e apiErr
	json.Unmarshal(last.body, &e)
	ra, _ := strconv.Atoi(last.hdr.Get("Retry-After"))
	if e.Code != -1003 || ra < 1 || ra > 10 || last.hdr.Get("X-USED-WEIGHT-IP-10S") != "40" {
		t.Errorf("429: got %s Retry-After %q used %q", last.body, last.hdr.Get("Retry-After"), last.hdr.Get("X-USED-WEIGHT-IP-10S"))
	}
	// signed requests from the same IP are refused as well, before authentication.
	if res := s.do(req{method: "GET", path: "/api/v3/openOrders?symbol=BTCUSDT&limit=x", u: &userA}); res.status != 429 && res.status != 400 {
		t.Errorf("signed request over the IP budget: got %d %s", res.status, res.body)
	}
	// the admin API is not rate limited.
	s.stateHash()
}
