package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Contract market data, account and admin endpoints (docs/API.md,
// "Perpetual contracts", "Market data, account and admin"), end to end
// with exact numbers: testdata/contract_account.json gives users A and B
// 10000 USDT in their futures wallets, C none.

const ctConfig = "testdata/contract_account.json"

// ctBalance is a /capi/v3/account/balance row.
type ctBalance struct {
	Asset            string `json:"asset"`
	Balance          string `json:"balance"`
	AvailableBalance string `json:"availableBalance"`
	Frozen           string `json:"frozen"`
	UnrealizePnl     string `json:"unrealizePnl"`
}

type adminBal struct {
	Wallet    string `json:"wallet"`
	Coin      string `json:"coin"`
	Available string `json:"available"`
	Frozen    string `json:"frozen"`
}

type symConfig struct {
	Symbol                string `json:"symbol"`
	MarginType            string `json:"marginType"`
	SeparatedType         string `json:"separatedType"`
	CrossLeverage         string `json:"crossLeverage"`
	IsolatedLongLeverage  string `json:"isolatedLongLeverage"`
	IsolatedShortLeverage string `json:"isolatedShortLeverage"`
}

type ctPosition struct {
	ID             int64  `json:"id"`
	Asset          string `json:"asset"`
	Symbol         string `json:"symbol"`
	Side           string `json:"side"`
	MarginType     string `json:"marginType"`
	SeparatedMode  string `json:"separatedMode"`
	Leverage       string `json:"leverage"`
	Size           string `json:"size"`
	OpenValue      string `json:"openValue"`
	EntryPrice     string `json:"entryPrice"`
	MarginSize     string `json:"marginSize"`
	IsolatedMargin string `json:"isolatedMargin"`
	CumOpenSize    string `json:"cumOpenSize"`
	CumOpenValue   string `json:"cumOpenValue"`
	CumCloseSize   string `json:"cumCloseSize"`
	CumFee         string `json:"cumFee"`
	RealizePnl     string `json:"realizePnl"`
	MarkPrice      string `json:"markPrice"`
	UnrealizePnl   string `json:"unrealizePnl"`
	LiquidatePrice string `json:"liquidatePrice"`
	CreatedTime    int64  `json:"createdTime"`
	UpdatedTime    int64  `json:"updatedTime"`
}

type incomeItem struct {
	BillID     string  `json:"billId"`
	Asset      string  `json:"asset"`
	Symbol     *string `json:"symbol"`
	Income     string  `json:"income"`
	IncomeType string  `json:"incomeType"`
	Balance    string  `json:"balance"`
	FillFee    string  `json:"fillFee"`
	Time       int64   `json:"time"`
}

type incomePage struct {
	HasNextPage bool         `json:"hasNextPage"`
	NextKey     *string      `json:"nextKey"`
	Items       []incomeItem `json:"items"`
}

type transferRec struct {
	CoinName  string `json:"coinName"`
	Status    string `json:"status"`
	FromType  string `json:"fromType"`
	ToType    string `json:"toType"`
	Amount    string `json:"amount"`
	TradeTime string `json:"tradeTime"`
}

// refused requires r to answer status and code and to change nothing.
func (s *server) refused(r req, status, code int) {
	s.t.Helper()
	before := s.stateHash()
	res := s.do(r)
	var e apiErr
	json.Unmarshal(res.body, &e)
	if res.status != status || e.Code != code || e.Msg == "" {
		s.t.Errorf("%s %s %s: got %d %s, want %d code %d", r.method, r.path, r.body, res.status, res.body, status, code)
	}
	if after := s.stateHash(); after != before {
		s.t.Errorf("%s %s %s: refused, but the state changed", r.method, r.path, r.body)
	}
}

func (s *server) adminPost(path, body string, v any) {
	s.t.Helper()
	s.ok(req{method: "POST", path: path, body: body, admin: true}, v)
}

func (s *server) futuresUSDT(uid int64) adminBal {
	s.t.Helper()
	var rows []adminBal
	s.ok(req{method: "GET", path: fmt.Sprintf("/admin/v1/balances?uid=%d", uid), admin: true}, &rows)
	for _, r := range rows {
		if r.Wallet == "futures" && r.Coin == "USDT" {
			return r
		}
	}
	s.t.Fatalf("uid %d: no futures USDT row in %+v", uid, rows)
	return adminBal{}
}

func want[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestContractAccount(t *testing.T) {
	dir := t.TempDir()
	s := startServerConfig(t, ctConfig, dir)
	a, b, c := &userA, &userB, &userC

	// Public market data before any trade.
	var tm struct {
		ServerTime int64 `json:"serverTime"`
	}
	now := time.Now().UnixMilli()
	s.get(nil, "/capi/v3/market/time", &tm)
	if tm.ServerTime < now-5000 || tm.ServerTime > now+5000 {
		t.Errorf("market/time %d, now %d", tm.ServerTime, now)
	}
	var price struct{ Symbol, Price string }
	s.get(nil, "/capi/v3/market/symbolPrice?symbol=BTCUSDT&priceType=MARK", &price)
	want(t, "mark before trades", price, struct{ Symbol, Price string }{"BTCUSDT", "0.0"})
	var oi struct{ Symbol, OpenInterest string }
	s.get(nil, "/capi/v3/market/openInterest?symbol=ETHUSDT", &oi)
	want(t, "open interest before trades", oi, struct{ Symbol, OpenInterest string }{"ETHUSDT", "0.000"})
	var rates map[string]string
	s.get(a, "/capi/v3/account/commissionRate?symbol=BTCUSDT", &rates)
	want(t, "commissionRate", rates, map[string]string{"symbol": "BTCUSDT", "makerCommissionRate": "0.0002", "takerCommissionRate": "0.0006"})

	// Admin: wallet rows, transfers, futures deposit and withdrawal.
	var rows []adminBal
	s.ok(req{method: "GET", path: "/admin/v1/balances?uid=10001", admin: true}, &rows)
	want(t, "admin balances", rows, []adminBal{{"spot", "BTC", "100.00000000", "0.00000000"}, {"spot", "USDT", "1000000.00000000", "0.00000000"},
		{"spot", "ETH", "1000.00000000", "0.00000000"}, {"futures", "BTC", "0.00000000", "0.00000000"},
		{"futures", "USDT", "10000.00000000", "0.00000000"}, {"futures", "ETH", "0.00000000", "0.00000000"}})
	var bill struct {
		BillID string `json:"billId"`
	}
	s.adminPost("/admin/v1/transfer", `{"uid":10001,"coin":"USDT","amount":"500","from":"spot","to":"futures"}`, &bill)
	if bill.BillID == "" {
		t.Error("transfer: no billId")
	}
	s.adminPost("/admin/v1/transfer", `{"uid":10001,"coin":"USDT","amount":"200","from":"futures","to":"spot"}`, nil)
	s.adminPost("/admin/v1/deposit", `{"uid":10001,"coin":"USDT","amount":"50","wallet":"futures"}`, nil)
	s.adminPost("/admin/v1/withdraw", `{"uid":10001,"coin":"USDT","amount":"25","wallet":"futures"}`, nil)
	s.adminPost("/admin/v1/deposit", `{"uid":10003,"coin":"USDT","amount":"1","wallet":"spot"}`, nil)
	want(t, "A futures USDT", s.futuresUSDT(10001), adminBal{"futures", "USDT", "10325.00000000", "0.00000000"})
	s.ok(req{method: "GET", path: "/admin/v1/balances?uid=10001", admin: true}, &rows)
	want(t, "A spot USDT", rows[1], adminBal{"spot", "USDT", "999700.00000000", "0.00000000"})

	for _, r := range []struct {
		body         string
		status, code int
	}{
		{`{"uid":10001,"coin":"USDT","amount":"20000","from":"futures","to":"spot"}`, 400, -2010}, // beyond available
		{`{"uid":10003,"coin":"USDT","amount":"1000001.5","from":"spot","to":"futures"}`, 400, -2010},
		{`{"uid":10001,"coin":"USDT","amount":"1","from":"spot","to":"spot"}`, 400, -1140},
		{`{"uid":10001,"coin":"USDT","amount":"1","to":"spot"}`, 400, -1141},
		{`{"uid":10001,"coin":"USDT","amount":"1","from":"spot"}`, 400, -1141},
		{`{"uid":10001,"coin":"USDT","amount":"1","from":"spot","to":"margin"}`, 400, -1140},
		{`{"uid":10001,"coin":"USDT","amount":"1","from":"spot","to":"futures","wallet":"spot"}`, 400, -1140},
		{`{"uid":10001,"coin":"USDT","amount":"-1","from":"spot","to":"futures"}`, 400, -1140},
		{`{"uid":10001,"coin":"USDT","amount":"0.000000001","from":"spot","to":"futures"}`, 400, -1140},
		{`{"uid":10001,"coin":"DOGE","amount":"1","from":"spot","to":"futures"}`, 400, -1140},
		{`{"uid":99999,"coin":"USDT","amount":"1","from":"spot","to":"futures"}`, 400, -1140},
		{`{"uid":10001,"coin":"USDT","amount":1,"from":"spot","to":"futures"}`, 400, -1135},
		{`{"uid":10001,"coin":"USDT","amount":"1","from":"spot","to":"futures","memo":"x"}`, 400, -1135},
	} {
		s.refused(req{method: "POST", path: "/admin/v1/transfer", body: r.body, admin: true}, r.status, r.code)
	}
	s.refused(req{method: "POST", path: "/admin/v1/withdraw", body: `{"uid":10001,"coin":"USDT","amount":"10326","wallet":"futures"}`, admin: true}, 400, -2010)
	s.refused(req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":10001,"coin":"USDT","amount":"1","wallet":"swap"}`, admin: true}, 400, -1140)
	s.refused(req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":10001,"coin":"USDT","amount":"1","from":"spot"}`, admin: true}, 400, -1140)
	s.refused(req{method: "GET", path: "/admin/v1/positions", admin: true}, 400, -1141)
	s.refused(req{method: "GET", path: "/admin/v1/positions?uid=77", admin: true}, 400, -1140)

	// transferRecords (spot, ccxt fetchTransfers): A's two transfers, newest first.
	var trs []transferRec
	s.get(a, "/api/v3/account/transferRecords", &trs)
	if len(trs) != 2 {
		t.Fatalf("transferRecords: %+v", trs)
	}
	trs[0].TradeTime, trs[1].TradeTime = "", ""
	want(t, "transferRecords", trs, []transferRec{{"USDT", "Successful", "contract", "spot", "200.00000000", ""},
		{"USDT", "Successful", "spot", "contract", "500.00000000", ""}})
	s.get(a, "/api/v3/account/transferRecords?limit=1&after=0", &trs)
	want(t, "transferRecords limit 1", len(trs), 1)
	s.get(b, "/api/v3/account/transferRecords", &trs)
	want(t, "B's transferRecords", len(trs), 0)

	// income: A's futures bills, newest first.
	var inc incomePage
	s.post(a, "/capi/v3/account/income", `{}`, &inc)
	type row struct{ Type, Income, Balance string }
	var got []row
	for _, it := range inc.Items {
		if it.Asset != "USDT" || it.Symbol != nil || it.BillID == "" || it.Time == 0 {
			t.Errorf("income item %+v", it)
		}
		got = append(got, row{it.IncomeType, it.Income, it.Balance})
	}
	want(t, "income", got, []row{{"withdraw", "-25.00000000", "10325.00000000"}, {"deposit", "50.00000000", "10350.00000000"},
		{"transfer_out", "-200.00000000", "10300.00000000"}, {"transfer_in", "500.00000000", "10500.00000000"},
		{"deposit", "10000.00000000", "10000.00000000"}})
	want(t, "income hasNextPage", inc.HasNextPage, false)
	s.post(a, "/capi/v3/account/income", `{"limit":2}`, &inc)
	want(t, "income limit 2", []any{len(inc.Items), inc.HasNextPage}, []any{2, true})
	s.post(a, "/capi/v3/account/income", `{"incomeType":"transfer_in","currency":"USDT"}`, &inc)
	want(t, "income transfer_in", len(inc.Items), 1)

	var bals []ctBalance
	s.get(a, "/capi/v3/account/balance", &bals)
	want(t, "A balance", bals, []ctBalance{{"USDT", "10325.00000000", "10325.00000000", "0.00000000", "0.00000000"}})
	s.get(c, "/capi/v3/account/balance", &bals)
	want(t, "C balance", bals, []ctBalance{{"USDT", "0.00000000", "0.00000000", "0.00000000", "0.00000000"}})

	// Settings.
	var cfgs []symConfig
	s.get(a, "/capi/v3/account/symbolConfig", &cfgs)
	want(t, "default symbolConfig", cfgs, []symConfig{{"BTCUSDT", "CROSSED", "COMBINED", "20", "20", "20"},
		{"ETHUSDT", "CROSSED", "COMBINED", "20", "20", "20"}})
	var one symConfig
	s.post(a, "/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":10}`, &one)
	want(t, "leverage answer", one, symConfig{"BTCUSDT", "CROSSED", "COMBINED", "10", "10", "10"})
	s.post(a, "/capi/v3/account/marginType", `{"symbol":"ETHUSDT","marginType":"ISOLATED"}`, &one)
	want(t, "marginType answer", one, symConfig{"ETHUSDT", "ISOLATED", "COMBINED", "20", "20", "20"})
	s.post(a, "/capi/v3/account/marginType", `{"symbol":"ETHUSDT","marginType":"ISOLATED","separatedType":"COMBINED"}`, &one)
	s.post(a, "/capi/v3/account/leverage", `{"symbol":"ETHUSDT","marginType":"ISOLATED","isolatedLongLeverage":"5","isolatedShortLeverage":7}`, &one)
	want(t, "isolated leverage", one, symConfig{"ETHUSDT", "ISOLATED", "COMBINED", "5", "5", "7"})
	s.get(a, "/capi/v3/account/symbolConfig?symbol=ETHUSDT", &cfgs)
	want(t, "symbolConfig ETHUSDT", cfgs, []symConfig{{"ETHUSDT", "ISOLATED", "COMBINED", "5", "5", "7"}})
	s.get(b, "/capi/v3/account/symbolConfig", &cfgs)
	want(t, "B's symbolConfig is B's own", cfgs[1], symConfig{"ETHUSDT", "CROSSED", "COMBINED", "20", "20", "20"})

	post := func(path, body string) req { return req{method: "POST", path: path, body: body, u: a} }
	get := func(path string) req { return req{method: "GET", path: path, u: a} }
	for _, r := range []struct {
		r            req
		status, code int
	}{
		{post("/capi/v3/account/leverage", `{"symbol":"ETHUSDT","crossLeverage":10}`), 400, -1140},        // isolated mode
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","isolatedLongLeverage":10}`), 400, -1140}, // cross mode
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":0}`), 400, -1140},         // below min
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":101}`), 400, -1140},       // above max
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":"10.5"}`), 400, -1140},    // not an integer
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":-3}`), 400, -1140},        // negative
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":true}`), 400, -1140},      // wrong type
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":5,"isolatedLongLeverage":5}`), 400, -1128},
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT"}`), 400, -1141},
		{post("/capi/v3/account/leverage", `{"crossLeverage":5}`), 400, -1141},
		{post("/capi/v3/account/leverage", `{"symbol":"cmt_btcusdt","crossLeverage":5}`), 400, -1121}, // V2 name on V3
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","marginType":"ISOLATED","crossLeverage":5}`), 400, -1140},
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":5,"leverage":5}`), 400, -1140},
		{post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":5`), 400, -1135},
		{post("/capi/v3/account/marginType", `{"symbol":"BTCUSDT","marginType":"BOTH"}`), 400, -1140},
		{post("/capi/v3/account/marginType", `{"symbol":"BTCUSDT"}`), 400, -1141},
		{post("/capi/v3/account/marginType", `{"symbol":"BTCUSDT","marginType":"ISOLATED","separatedType":"SEPARATED"}`), 400, -1140},
		{post("/capi/v3/account/marginType", `{"symbol":"XRPUSDT","marginType":"ISOLATED"}`), 400, -1121},
		{post("/capi/v3/account/positionMargin", `{"isolatedPositionId":1,"amount":"10","type":1}`), 400, -1140},
		{post("/capi/v3/account/positionMargin", `{"isolatedPositionId":40965120,"amount":"10","type":3}`), 400, -1140},
		{post("/capi/v3/account/positionMargin", `{"isolatedPositionId":40965120,"type":1}`), 400, -1141},
		{post("/capi/v3/account/positionMargin", `{"isolatedPositionId":40965120,"amount":"-1","type":1}`), 400, -1140},
		{post("/capi/v3/account/positionMargin", `{"isolatedPositionId":40965120,"amount":"1","type":1}`), 400, -1140}, // no position yet
		{post("/capi/v3/account/income", `{"limit":101}`), 400, -1140},
		{post("/capi/v3/account/income", `{"limit":0}`), 400, -1140},
		{post("/capi/v3/account/income", `{"startTime":5,"endTime":4}`), 400, -1171},
		{post("/capi/v3/account/income", `{"incomeType":"trade"}`), 400, -1140},
		{post("/capi/v3/account/income", `{"currency":"DOGE"}`), 400, -1140},
		{post("/capi/v3/account/income", `{"symbol":"cmt_ethusdt"}`), 400, -1121},
		{get("/capi/v3/account/position/singlePosition"), 400, -1141},
		{get("/capi/v3/account/position/singlePosition?symbol=cmt_btcusdt"), 400, -1121},
		{get("/capi/v3/account/position/allPosition?symbol=BTCUSDT"), 400, -1140},
		{get("/capi/v3/account/balance?coin=USDT"), 400, -1140},
		{get("/capi/v3/account/commissionRate"), 400, -1141},
		{get("/capi/v3/account/symbolConfig?symbol=ethusdt"), 400, -1121},
		{get("/api/v3/account/transferRecords?limit=101"), 400, -1140},
		{get("/api/v3/account/transferRecords?after=5&before=4"), 400, -1171},
		{get("/api/v3/account/transferRecords?coin=USDT"), 400, -1140},
		{req{method: "GET", path: "/capi/v3/market/symbolPrice?symbol=BTCUSDT&priceType=FAIR"}, 400, -1140},
		{req{method: "GET", path: "/capi/v3/market/symbolPrice?symbol=BTCUSDT&priceType=last"}, 400, -1140},
		{req{method: "GET", path: "/capi/v3/market/symbolPrice"}, 400, -1141},
		{req{method: "GET", path: "/capi/v3/market/openInterest?symbol=cmt_btcusdt"}, 400, -1121},
		{req{method: "GET", path: "/capi/v3/market/depth?symbol=BTCUSDT&limit=201"}, 400, -1140},
		{req{method: "GET", path: "/capi/v3/market/trades?symbol=BTCUSDT&limit=0"}, 400, -1140},
		{req{method: "GET", path: "/capi/v3/market/klines?symbol=BTCUSDT&interval=3m"}, 400, -1140},
		{req{method: "GET", path: "/capi/v3/market/klines?symbol=BTCUSDT"}, 400, -1141},
		{req{method: "GET", path: "/capi/v3/market/ticker/24hr?symbol=BTC-USDT"}, 400, -1121},
		{req{method: "GET", path: "/capi/v3/market/ticker/bookTicker?symbol=BTCUSDT&x=1"}, 400, -1140},
		{req{method: "GET", path: "/capi/v3/account/balance"}, 401, -1040}, // unsigned
	} {
		s.refused(r.r, r.status, r.code)
	}

	// Positions: placed through /capi/v3/order (edge/ctrade.go).
	order := func(u *user, body string) {
		t.Helper()
		s.post(u, "/capi/v3/order", body, nil)
	}
	// B opens a SHORT of 0.2 at 60000 (cross, leverage 20); A's LONG takes
	// it (cross, leverage 10): A pays the taker fee 12000*0.0006 = 7.2 and
	// keeps 12000/10 = 1200 as margin; B the maker fee 2.4, margin 600.
	order(b, `{"symbol":"BTCUSDT","side":"SELL","positionSide":"SHORT","type":"LIMIT","quantity":"0.2","price":"60000"}`)
	order(a, `{"symbol":"BTCUSDT","side":"BUY","positionSide":"LONG","type":"LIMIT","quantity":"0.2","price":"60000"}`)
	// A bids 0.1 at 59000 (holds ceil(5900/10) + 3.54 = 593.54), B asks
	// 0.1 at 59500 (holds 297.5 + 3.57 = 301.07): mark = median(59000,
	// 59500, 60000) = 59500.
	order(a, `{"symbol":"BTCUSDT","side":"BUY","positionSide":"LONG","type":"LIMIT","quantity":"0.1","price":"59000"}`)
	order(b, `{"symbol":"BTCUSDT","side":"SELL","positionSide":"SHORT","type":"LIMIT","quantity":"0.1","price":"59500"}`)

	s.get(nil, "/capi/v3/market/symbolPrice?symbol=BTCUSDT", &price)
	want(t, "mark", price, struct{ Symbol, Price string }{"BTCUSDT", "59500.0"})
	s.get(nil, "/capi/v3/market/symbolPrice?symbol=BTCUSDT&priceType=LAST", &price)
	want(t, "last", price, struct{ Symbol, Price string }{"BTCUSDT", "60000.0"})
	// the index: the spot BTCUSDT mid, the mark while spot has no price
	s.get(nil, "/capi/v3/market/symbolPrice?symbol=BTCUSDT&priceType=INDEX", &price)
	want(t, "index without spot", price, struct{ Symbol, Price string }{"BTCUSDT", "59500.0"})
	s.post(a, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.01", "59800.01", ""), nil)
	s.post(b, "/api/v3/order", placeBody("BTCUSDT", "SELL", "LIMIT", "0.01", "60200", ""), nil)
	s.get(nil, "/capi/v3/market/symbolPrice?symbol=BTCUSDT&priceType=INDEX", &price)
	want(t, "index", price, struct{ Symbol, Price string }{"BTCUSDT", "60000.0"}) // (59800.01+60200)/2 rounded down to 0.1
	s.get(nil, "/capi/v3/market/openInterest?symbol=BTCUSDT", &oi)
	want(t, "open interest", oi, struct{ Symbol, OpenInterest string }{"BTCUSDT", "0.2000"})
	var depth struct {
		Asks, Bids   [][]string
		LastUpdateID int64
	}
	s.get(nil, "/capi/v3/market/depth?symbol=BTCUSDT&limit=5", &depth)
	want(t, "depth", [][][]string{depth.Bids, depth.Asks}, [][][]string{{{"59000.0", "0.1000"}}, {{"59500.0", "0.1000"}}})
	if depth.LastUpdateID <= 0 {
		t.Errorf("depth lastUpdateId %d", depth.LastUpdateID)
	}
	var trades []map[string]any
	s.get(nil, "/capi/v3/market/trades?symbol=BTCUSDT", &trades)
	if len(trades) != 1 || trades[0]["price"] != "60000.0" || trades[0]["qty"] != "0.2000" ||
		trades[0]["quoteQty"] != "12000.00000000" || trades[0]["isBuyerMaker"] != false {
		t.Errorf("trades %v", trades)
	}
	var tk map[string]any
	s.get(nil, "/capi/v3/market/ticker/24hr?symbol=BTCUSDT", &tk)
	for k, v := range map[string]any{"symbol": "BTCUSDT", "lastPrice": "60000.0", "markPrice": "59500.0", "volume": "0.2000",
		"quoteVolume": "12000.00000000", "count": 1.0, "bidPrice": "59000.0", "askPrice": "59500.0", "openPrice": "60000.0"} {
		if tk[k] != v {
			t.Errorf("ticker/24hr %s = %v, want %v", k, tk[k], v)
		}
	}
	var tks []map[string]any
	s.get(nil, "/capi/v3/market/ticker/bookTicker", &tks)
	if len(tks) != 2 || tks[0]["bidQty"] != "0.1000" || tks[0]["askPrice"] != "59500.0" || tks[1]["symbol"] != "ETHUSDT" {
		t.Errorf("bookTicker %v", tks)
	}
	var kl [][]any
	s.get(nil, "/capi/v3/market/klines?symbol=BTCUSDT&interval=1m", &kl)
	if len(kl) != 1 || fmt.Sprint(kl[0][1:6]) != "[60000.0 60000.0 60000.0 60000.0 0.2000]" || kl[0][7] != "12000.00000000" || kl[0][8] != 1.0 {
		t.Errorf("klines %v", kl)
	}

	// ETHUSDT: A's isolated LONG of 1 at 2000 (leverage 5: margin 400, fee
	// 1.2) against B's cross SHORT (margin 100, fee 0.4).
	order(b, `{"symbol":"ETHUSDT","side":"SELL","positionSide":"SHORT","type":"LIMIT","quantity":"1","price":"2000"}`)
	order(a, `{"symbol":"ETHUSDT","side":"BUY","positionSide":"LONG","type":"LIMIT","quantity":"1","price":"2000"}`)

	var pos []ctPosition
	s.get(a, "/capi/v3/account/position/allPosition", &pos)
	if len(pos) != 2 {
		t.Fatalf("A's positions: %+v", pos)
	}
	for i := range pos {
		if pos[i].CreatedTime == 0 || pos[i].UpdatedTime < pos[i].CreatedTime {
			t.Errorf("position times %+v", pos[i])
		}
		pos[i].CreatedTime, pos[i].UpdatedTime = 0, 0
	}
	want(t, "A's positions", pos, []ctPosition{
		{10001<<12 | 512<<1, "USDT", "BTCUSDT", "LONG", "CROSSED", "COMBINED", "10", "0.2000", "12000.00000000", "60000.00000000",
			"1200.00000000", "0.00000000", "0.2000", "12000.00000000", "0.0000", "7.20000000", "0.00000000", "59500.0",
			// cross: D = 10316.6 of wallet - 400 isolated; underwater when
			// 9916.6 + N - 12000 <= 0.005 N: p <= 10469.3
			"-100.00000000", "10469.3", 0, 0},
		{10001<<12 | 513<<1, "USDT", "ETHUSDT", "LONG", "ISOLATED", "COMBINED", "5", "1.000", "2000.00000000", "2000.00000000",
			"400.00000000", "400.00000000", "1.000", "2000.00000000", "0.000", "1.20000000", "0.00000000", "2000.00",
			// isolated: 400 + N - 2000 <= 0.005 N: p <= 1608.04
			"0.00000000", "1608.04", 0, 0}})
	var bpos []ctPosition
	s.get(b, "/capi/v3/account/position/singlePosition?symbol=BTCUSDT", &bpos)
	if len(bpos) != 1 || bpos[0].Side != "SHORT" || bpos[0].UnrealizePnl != "100.00000000" || bpos[0].MarginSize != "600.00000000" ||
		bpos[0].Leverage != "20" || bpos[0].ID != 10002<<12|512<<1|1 || bpos[0].CumFee != "2.40000000" {
		t.Errorf("B's BTCUSDT position: %+v", bpos)
	}
	s.get(a, "/capi/v3/account/position/singlePosition?symbol=ETHUSDT", &pos)
	if len(pos) != 1 || pos[0].Symbol != "ETHUSDT" {
		t.Errorf("A's ETHUSDT position: %+v", pos)
	}
	s.get(c, "/capi/v3/account/position/allPosition", &pos)
	want(t, "C's positions", len(pos), 0)
	var adminPos json.RawMessage
	s.ok(req{method: "GET", path: "/admin/v1/positions?uid=10001", admin: true}, &adminPos)
	aPos := s.get(a, "/capi/v3/account/position/allPosition", nil)
	want(t, "admin positions", string(adminPos), string(aPos))

	// Isolated margin: add 50 (450), take 60 back: refused below
	// openValue/leverage = 400; take 50 back.
	ethLong := 10001<<12 | 513<<1
	s.post(a, "/capi/v3/account/positionMargin", fmt.Sprintf(`{"isolatedPositionId":"%d","amount":"50","type":1}`, ethLong), nil)
	s.get(a, "/capi/v3/account/position/singlePosition?symbol=ETHUSDT", &pos)
	want(t, "isolated margin after add", pos[0].IsolatedMargin, "450.00000000")
	s.refused(post("/capi/v3/account/positionMargin", fmt.Sprintf(`{"isolatedPositionId":%d,"amount":"60","type":2}`, ethLong)), 400, -2010)
	s.post(a, "/capi/v3/account/positionMargin", fmt.Sprintf(`{"isolatedPositionId":%d,"amount":"50","type":2}`, ethLong), nil)
	s.refused(post("/capi/v3/account/positionMargin", fmt.Sprintf(`{"isolatedPositionId":%d,"amount":"0.00000001","type":2}`, ethLong)), 400, -2010)
	s.refused(post("/capi/v3/account/positionMargin", fmt.Sprintf(`{"isolatedPositionId":%d,"amount":"9000","type":1}`, ethLong)), 400, -2010)
	s.refused(post("/capi/v3/account/positionMargin", fmt.Sprintf(`{"isolatedPositionId":%d,"amount":"1","type":1}`, 10001<<12|512<<1)), 400, -1140)   // cross
	s.refused(post("/capi/v3/account/positionMargin", fmt.Sprintf(`{"isolatedPositionId":%d,"amount":"1","type":1}`, 10002<<12|513<<1|1)), 400, -1140) // B's
	// Settings are fixed while positions are open.
	s.refused(post("/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":3}`), 400, -2010)
	s.refused(post("/capi/v3/account/marginType", `{"symbol":"BTCUSDT","marginType":"ISOLATED"}`), 400, -2010)
	s.refused(post("/capi/v3/account/leverage", `{"symbol":"ETHUSDT","isolatedLongLeverage":3,"isolatedShortLeverage":3}`), 400, -2010)
	s.post(a, "/capi/v3/account/leverage", `{"symbol":"ETHUSDT","isolatedShortLeverage":3}`, &one) // the SHORT side has no position
	want(t, "isolated short leverage", one, symConfig{"ETHUSDT", "ISOLATED", "COMBINED", "5", "5", "3"})

	// Balances: A = 10325 - 7.2 - 1.2 = 10316.6, frozen = margins 1200 +
	// 400 + the bid's 593.54; availableBalance takes the cross loss of 100.
	s.get(a, "/capi/v3/account/balance", &bals)
	want(t, "A balance with positions", bals, []ctBalance{{"USDT", "10316.60000000", "8023.06000000", "2193.54000000", "-100.00000000"}})
	s.get(b, "/capi/v3/account/balance", &bals)
	want(t, "B balance with positions", bals, []ctBalance{{"USDT", "9997.20000000", "8996.13000000", "1001.07000000", "100.00000000"}})
	want(t, "admin futures row", s.futuresUSDT(10001), adminBal{"futures", "USDT", "8123.06000000", "2193.54000000"})
	want(t, "fee account", s.futuresUSDT(1), adminBal{"futures", "USDT", "11.20000000", "0.00000000"})

	s.post(a, "/capi/v3/account/income", `{"symbol":"BTCUSDT"}`, &inc)
	if len(inc.Items) != 1 || inc.Items[0].IncomeType != "position_open_long" || inc.Items[0].Income != "-7.20000000" ||
		inc.Items[0].FillFee != "7.20000000" || inc.Items[0].Symbol == nil || *inc.Items[0].Symbol != "BTCUSDT" ||
		inc.Items[0].Balance != "10317.80000000" {
		t.Errorf("A's BTCUSDT income: %+v", inc)
	}
	s.post(b, "/capi/v3/account/income", `{"incomeType":"position_open_short"}`, &inc)
	want(t, "B's open_short bills", len(inc.Items), 2)

	// A restart keeps wallets, positions and settings: same state hash,
	// same answers.
	hash := s.stateHash()
	before := map[string]string{}
	paths := []string{"/capi/v3/account/position/allPosition", "/capi/v3/account/balance", "/capi/v3/account/symbolConfig"}
	for _, p := range paths {
		before[p] = string(s.get(a, p, nil))
	}
	s.stop()
	s = startServerConfig(t, ctConfig, dir)
	want(t, "state hash after restart", s.stateHash(), hash)
	for _, p := range paths {
		if got := string(s.get(a, p, nil)); got != before[p] {
			t.Errorf("%s after restart:\n got %s\nwant %s", p, got, before[p])
		}
	}
	if got := string(s.get(nil, "/capi/v3/market/openInterest?symbol=BTCUSDT", nil)); !strings.Contains(got, `"openInterest":"0.2000"`) {
		t.Errorf("open interest after restart: %s", got)
	}
}
