package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// badCase is one invalid request and the answer it must get. For batch
// element failures, elem is the element's expected errorCode (status 200).
type badCase struct {
	name   string
	r      req
	status int
	code   int
	elem   string
}

func order1(fields string) string { return `{"symbol":"BTCUSDT"` + fields + `}` }

const okOrder = `,"side":"BUY","type":"LIMIT","quantity":"0.01","price":"100"`

func batch1(elem string) string { return `{"symbol":"BTCUSDT","orderList":[` + elem + `]}` }

func badCases() []badCase {
	a := &userA
	now := time.Now().UnixMilli()
	ct := func(s string) *string { return &s }
	post := func(path, body string) req { return req{method: "POST", path: path, body: body, u: a} }
	get := func(path string) req { return req{method: "GET", path: path, u: a} }
	place := func(body string) req { return post("/api/v3/order", body) }
	elems := func(n int) string {
		e := make([]string, n)
		for i := range e {
			e[i] = `{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"100"}`
		}
		return `{"symbol":"BTCUSDT","orderList":[` + strings.Join(e, ",") + `]}`
	}
	big := `{"symbol":"BTCUSDT","pad":"` + strings.Repeat("x", 70<<10) + `"}`
	c := []badCase{
		// authentication (docs/API.md, "Authentication")
		{"no ACCESS-KEY", req{method: "GET", path: "/api/v3/openOrders", u: a, headers: map[string]string{"ACCESS-KEY": ""}}, 401, -1040, ""},
		{"no ACCESS-SIGN", req{method: "GET", path: "/api/v3/openOrders", u: a, headers: map[string]string{"ACCESS-SIGN": ""}}, 401, -1041, ""},
		{"no ACCESS-TIMESTAMP", req{method: "GET", path: "/api/v3/openOrders", u: a, headers: map[string]string{"ACCESS-TIMESTAMP": ""}}, 401, -1042, ""},
		{"no ACCESS-PASSPHRASE", req{method: "GET", path: "/api/v3/openOrders", u: a, headers: map[string]string{"ACCESS-PASSPHRASE": ""}}, 401, -1049, ""},
		{"no headers at all", req{method: "GET", path: "/api/v3/openOrders"}, 401, -1040, ""},
		{"non-numeric timestamp", req{method: "GET", path: "/api/v3/openOrders", u: a, headers: map[string]string{"ACCESS-TIMESTAMP": "yesterday"}}, 401, -1043, ""},
		{"decimal timestamp", req{method: "GET", path: "/api/v3/openOrders", u: a, headers: map[string]string{"ACCESS-TIMESTAMP": "1700000000000.5"}}, 401, -1043, ""},
		{"negative timestamp", req{method: "GET", path: "/api/v3/openOrders", u: a, headers: map[string]string{"ACCESS-TIMESTAMP": "-5"}}, 401, -1043, ""},
		{"timestamp in seconds", req{method: "GET", path: "/api/v3/openOrders", u: a, ts: i64p(now / 1000)}, 401, -1046, ""},
		{"stale timestamp", req{method: "GET", path: "/api/v3/openOrders", u: a, ts: i64p(now - 60_000)}, 401, -1046, ""},
		{"future timestamp", req{method: "GET", path: "/api/v3/openOrders", u: a, ts: i64p(now + 60_000)}, 401, -1046, ""},
		{"unknown key", req{method: "GET", path: "/api/v3/openOrders", u: &user{1, "nobody", "x", "pass-a"}}, 401, -1044, ""},
		{"wrong passphrase", req{method: "GET", path: "/api/v3/openOrders", u: &user{userA.uid, "key-a", "secret-a", "wrong"}}, 401, -1049, ""},
		{"other user's passphrase", req{method: "GET", path: "/api/v3/openOrders", u: &user{userA.uid, "key-a", "secret-a", "pass-b"}}, 401, -1049, ""},
		{"wrong secret", req{method: "GET", path: "/api/v3/openOrders", u: a, signSecret: "secret-b"}, 401, -1047, ""},
		{"signature not base64", req{method: "GET", path: "/api/v3/openOrders", u: a, headers: map[string]string{"ACCESS-SIGN": "!!!not-base64!!!"}}, 401, -1047, ""},
		{"signature too long", req{method: "GET", path: "/api/v3/openOrders", u: a, headers: map[string]string{"ACCESS-SIGN": strings.Repeat("QUFB", 40)}}, 401, -1047, ""},
		{"signature without query", req{method: "GET", path: "/api/v3/openOrders?symbol=BTCUSDT", u: a, signPayload: strp("GET/api/v3/openOrders")}, 401, -1047, ""},
		{"signature over reordered query", req{method: "GET", path: "/api/v3/allOrders?symbol=BTCUSDT&limit=5", u: a, signPayload: strp("GET/api/v3/allOrders?limit=5&symbol=BTCUSDT")}, 401, -1047, ""},
		{"signature with lower-case method", req{method: "GET", path: "/api/v3/openOrders", u: a, signPayload: strp("get/api/v3/openOrders")}, 401, -1047, ""},
		{"signature over another body", req{method: "POST", path: "/api/v3/order", body: order1(okOrder), u: a, signPayload: strp("POST/api/v3/order" + order1(`,"side":"SELL","type":"LIMIT","quantity":"0.01","price":"100"`))}, 401, -1047, ""},
		{"signature over another path", req{method: "GET", path: "/api/v3/openOrders", u: a, signPayload: strp("GET/api/v3/allOrders")}, 401, -1047, ""},

		// transport
		{"text/plain POST", req{method: "POST", path: "/api/v3/order", body: order1(okOrder), u: a, contentType: ct("text/plain")}, 400, -1045, ""},
		{"no Content-Type POST", req{method: "POST", path: "/api/v3/order", body: order1(okOrder), u: a, contentType: ct("")}, 400, -1045, ""},
		{"form POST batch", req{method: "POST", path: "/api/v3/order/batch", body: batch1(`{}`), u: a, contentType: ct("application/x-www-form-urlencoded")}, 400, -1045, ""},
		{"json-ish content type", req{method: "POST", path: "/api/v3/tax/income", body: `{}`, u: a, contentType: ct("application/jsonx")}, 400, -1045, ""},
		{"oversized body", place(big), 413, -1140, ""},
		{"oversized headers", req{method: "GET", path: "/api/v3/time", headers: map[string]string{"X-Big": strings.Repeat("a", 10000)}}, 431, -1140, ""},
		{"unknown path", get("/api/v3/nothing"), 404, -1000, ""},
		{"unknown public path", req{method: "GET", path: "/api/v9/time"}, 404, -1000, ""},
		{"PUT order", req{method: "PUT", path: "/api/v3/order", body: order1(okOrder), u: a}, 405, -1150, ""},
		{"GET batch", get("/api/v3/order/batch"), 405, -1150, ""},
		{"POST time", req{method: "POST", path: "/api/v3/time", body: "{}"}, 405, -1150, ""},

		// POST /api/v3/order: JSON
		{"malformed JSON", place(`{`), 400, -1135, ""},
		{"truncated JSON", place(`{"symbol":"BTCUSDT","side":"BUY"`), 400, -1135, ""},
		{"truncated string", place(`{"symbol":"BTCUS`), 400, -1135, ""},
		{"array body", place(`[]`), 400, -1135, ""},
		{"empty body", place(``), 400, -1135, ""},
		{"null body", place(`null`), 400, -1135, ""},
		{"trailing garbage", place(order1(okOrder) + `x`), 400, -1135, ""},
		{"two documents", place(order1(okOrder) + order1(okOrder)), 400, -1135, ""},
		{"single quotes", place(`{'symbol':'BTCUSDT'}`), 400, -1135, ""},
		{"trailing comma", place(`{"symbol":"BTCUSDT",}`), 400, -1135, ""},
		{"missing colon", place(`{"symbol" "BTCUSDT"}`), 400, -1135, ""},
		{"bare word value", place(`{"symbol":BTCUSDT}`), 400, -1135, ""},
		{"invalid UTF-8", place("{\"symbol\":\"BTC\xff\"}"), 400, -1135, ""},
		{"control character", place("{\"symbol\":\"BTC\x01\"}"), 400, -1135, ""},
		{"bad escape", place(`{"symbol":"BTC\q"}`), 400, -1135, ""},
		{"deep nesting", place(`{"x":` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + `}`), 400, -1135, ""},
		{"bad number", place(`{"symbol":"BTCUSDT","quantity":01.}`), 400, -1135, ""},

		// POST /api/v3/order: fields
		{"unknown field", place(order1(okOrder + `,"stopPrice":"1"`)), 400, -1140, ""},
		{"side as number", place(order1(`,"side":1,"type":"LIMIT","quantity":"0.01","price":"100"`)), 400, -1140, ""},
		{"quantity as number", place(order1(`,"side":"BUY","type":"LIMIT","quantity":0.01,"price":"100"`)), 400, -1140, ""},
		{"price as bool", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.01","price":true`)), 400, -1140, ""},
		{"symbol as array", place(`{"symbol":["BTCUSDT"]` + okOrder + `}`), 400, -1140, ""},
		{"missing symbol", place(`{"side":"BUY","type":"LIMIT","quantity":"0.01","price":"100"}`), 400, -1141, ""},
		{"unknown symbol", place(`{"symbol":"DOGEUSDT"` + okOrder + `}`), 400, -1121, ""},
		{"lower-case symbol", place(`{"symbol":"btcusdt"` + okOrder + `}`), 400, -1121, ""},
		{"ccxt-style symbol", place(`{"symbol":"BTC/USDT"` + okOrder + `}`), 400, -1121, ""},
		{"missing side", place(order1(`,"type":"LIMIT","quantity":"0.01","price":"100"`)), 400, -1141, ""},
		{"lower-case side", place(order1(`,"side":"buy","type":"LIMIT","quantity":"0.01","price":"100"`)), 400, -1117, ""},
		{"bad side", place(order1(`,"side":"HOLD","type":"LIMIT","quantity":"0.01","price":"100"`)), 400, -1117, ""},
		{"missing type", place(order1(`,"side":"BUY","quantity":"0.01","price":"100"`)), 400, -1141, ""},
		{"bad type", place(order1(`,"side":"BUY","type":"STOP","quantity":"0.01","price":"100"`)), 400, -1116, ""},
		{"bad timeInForce", place(order1(okOrder + `,"timeInForce":"GTD"`)), 400, -1115, ""},
		{"POST_ONLY on spot", place(order1(okOrder + `,"timeInForce":"POST_ONLY"`)), 400, -1115, ""},
		{"missing quantity", place(order1(`,"side":"BUY","type":"LIMIT","price":"100"`)), 400, -1141, ""},
		{"zero quantity", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0","price":"100"`)), 400, -1140, ""},
		{"zero quantity with decimals", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.000000","price":"100"`)), 400, -1140, ""},
		{"negative quantity", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"-1","price":"100"`)), 400, -1140, ""},
		{"plus-signed quantity", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"+1","price":"100"`)), 400, -1140, ""},
		{"exponent quantity", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"1e-2","price":"100"`)), 400, -1140, ""},
		{"word quantity", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"abc","price":"100"`)), 400, -1140, ""},
		{"empty quantity", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"","price":"100"`)), 400, -1140, ""},
		{"leading-dot quantity", place(order1(`,"side":"BUY","type":"LIMIT","quantity":".5","price":"100"`)), 400, -1140, ""},
		{"trailing-dot quantity", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"5.","price":"100"`)), 400, -1140, ""},
		{"too precise quantity", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.0000001","price":"100"`)), 400, -1160, ""},
		{"overflowing quantity", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"99999999999999999999999","price":"100"`)), 400, -1140, ""},
		{"quantity below minimum", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.000001","price":"100"`)), 400, -2010, ""},
		{"quantity above maximum", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"1000.000001","price":"100"`)), 400, -2010, ""},
		{"market above its limit", place(order1(`,"side":"SELL","type":"MARKET","quantity":"101"`)), 400, -2010, ""},
		{"missing price", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.01"`)), 400, -1141, ""},
		{"zero price", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.01","price":"0"`)), 400, -1140, ""},
		{"negative price", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.01","price":"-100"`)), 400, -1140, ""},
		{"too precise price", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.01","price":"100.001"`)), 400, -1160, ""},
		{"NaN price", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.01","price":"NaN"`)), 400, -1140, ""},
		{"Infinity price", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.01","price":"Infinity"`)), 400, -1140, ""},
		{"spaced price", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.01","price":" 100"`)), 400, -1140, ""},
		{"comma price", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.01","price":"1,000"`)), 400, -1140, ""},
		{"overflowing price", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"0.01","price":"123456789012345678901234567890"`)), 400, -1140, ""},
		{"notional overflow", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"1000","price":"90000000000000"`)), 400, -2010, ""},
		{"client id too long", place(order1(okOrder + `,"newClientOrderId":"` + strings.Repeat("a", 37) + `"`)), 400, -1180, ""},
		{"client id with space", place(order1(okOrder + `,"newClientOrderId":"a b"`)), 400, -1180, ""},
		{"client id with unicode", place(order1(okOrder + `,"newClientOrderId":"ordé"`)), 400, -1180, ""},
		{"empty client id", place(order1(okOrder + `,"newClientOrderId":""`)), 400, -1180, ""},
		{"insufficient balance", place(order1(`,"side":"BUY","type":"LIMIT","quantity":"1000","price":"5000"`)), 400, -2010, ""},
		{"insufficient base", place(order1(`,"side":"SELL","type":"LIMIT","quantity":"500","price":"5000"`)), 400, -2010, ""},

		// POST /api/v3/order/batch: request level
		{"batch of 11", post("/api/v3/order/batch", elems(11)), 400, -1140, ""},
		{"batch of 0", post("/api/v3/order/batch", elems(0)), 400, -1140, ""},
		{"batch without orderList", post("/api/v3/order/batch", `{"symbol":"BTCUSDT"}`), 400, -1141, ""},
		{"batch orderList object", post("/api/v3/order/batch", `{"symbol":"BTCUSDT","orderList":{}}`), 400, -1140, ""},
		{"batch element not object", post("/api/v3/order/batch", `{"symbol":"BTCUSDT","orderList":["x"]}`), 400, -1140, ""},
		{"batch without symbol", post("/api/v3/order/batch", `{"orderList":[{"side":"BUY"}]}`), 400, -1141, ""},
		{"batch unknown symbol", post("/api/v3/order/batch", `{"symbol":"XUSDT","orderList":[{"side":"BUY"}]}`), 400, -1121, ""},
		{"batch malformed", post("/api/v3/order/batch", `{"symbol":"BTCUSDT","orderList":[{"side":"BUY"}`), 400, -1135, ""},
		{"batch truncated element", post("/api/v3/order/batch", `{"symbol":"BTCUSDT","orderList":[{"side":"BU`), 400, -1135, ""},
		{"batch unknown key", post("/api/v3/order/batch", `{"symbol":"BTCUSDT","orders":[]}`), 400, -1140, ""},
		{"batch trailing comma", post("/api/v3/order/batch", `{"symbol":"BTCUSDT","orderList":[{"side":"BUY"},]}`), 400, -1135, ""},

		// POST /api/v3/order/batch: element level
		{"element without timeInForce", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"LIMIT","quantity":"0.01","price":"100"}`)), 200, 0, "INVALID_TIME_IN_FORCE"},
		{"element bad timeInForce", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"LIMIT","timeInForce":"gtc","quantity":"0.01","price":"100"}`)), 200, 0, "INVALID_TIME_IN_FORCE"},
		{"element too precise price", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"100.005"}`)), 200, 0, "INVALID_PRICE"},
		{"element missing price", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.01"}`)), 200, 0, "INVALID_PRICE"},
		{"element bad quantity", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"-1","price":"100"}`)), 200, 0, "INVALID_QUANTITY"},
		{"element too precise quantity", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"MARKET","quantity":"0.0000015"}`)), 200, 0, "INVALID_QUANTITY"},
		{"element small quantity", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.000001","price":"100"}`)), 200, 0, "QUANTITY_TOO_SMALL"},
		{"element insufficient balance", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"999","price":"50000"}`)), 200, 0, "INSUFFICIENT_BALANCE"},
		{"element bad side", post("/api/v3/order/batch", batch1(`{"side":"LONG","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"100"}`)), 200, 0, "INVALID_SIDE"},
		{"element bad type", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"STOP","timeInForce":"GTC","quantity":"0.01","price":"100"}`)), 200, 0, "INVALID_TYPE"},
		{"element unknown field", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"100","symbol":"BTCUSDT"}`)), 200, 0, "INVALID_PARAMETER"},
		{"element bad client id", post("/api/v3/order/batch", batch1(`{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"100","newClientOrderId":"a*b"}`)), 200, 0, "INVALID_CLIENT_ORDER_ID"},

		// DELETE /api/v3/order/batch
		{"cancel batch malformed", req{method: "DELETE", path: "/api/v3/order/batch", body: `{"orderIds":[1,}`, u: a}, 400, -1135, ""},
		{"cancel batch empty", req{method: "DELETE", path: "/api/v3/order/batch", body: `{"orderIds":[]}`, u: a}, 400, -1141, ""},
		{"cancel batch of 11", req{method: "DELETE", path: "/api/v3/order/batch", body: `{"orderIds":[1,2,3,4,5,6,7,8,9,10,11]}`, u: a}, 400, -1140, ""},
		{"cancel batch bad id", req{method: "DELETE", path: "/api/v3/order/batch", body: `{"orderIds":["x"]}`, u: a}, 400, -1140, ""},
		{"cancel batch unknown key", req{method: "DELETE", path: "/api/v3/order/batch", body: `{"ids":[1]}`, u: a}, 400, -1140, ""},
		{"cancel batch unknown symbol", req{method: "DELETE", path: "/api/v3/order/batch", body: `{"symbol":"NOPE","orderIds":[1]}`, u: a}, 400, -1121, ""},

		// queries
		{"allOrders without symbol", get("/api/v3/allOrders"), 400, -1141, ""},
		{"allOrders unknown symbol", get("/api/v3/allOrders?symbol=NOPE"), 400, -1121, ""},
		{"allOrders endTime < startTime", get("/api/v3/allOrders?symbol=BTCUSDT&startTime=2000&endTime=1000"), 400, -1171, ""},
		{"allOrders bad startTime", get("/api/v3/allOrders?symbol=BTCUSDT&startTime=abc"), 400, -1140, ""},
		{"allOrders negative endTime", get("/api/v3/allOrders?symbol=BTCUSDT&endTime=-1"), 400, -1140, ""},
		{"allOrders limit 0", get("/api/v3/allOrders?symbol=BTCUSDT&limit=0"), 400, -1140, ""},
		{"allOrders limit 1001", get("/api/v3/allOrders?symbol=BTCUSDT&limit=1001"), 400, -1140, ""},
		{"allOrders page 0", get("/api/v3/allOrders?symbol=BTCUSDT&page=0"), 400, -1140, ""},
		{"allOrders unknown parameter", get("/api/v3/allOrders?symbol=BTCUSDT&foo=1"), 400, -1140, ""},
		{"openOrders unknown symbol", get("/api/v3/openOrders?symbol=XYZ"), 400, -1121, ""},
		{"openOrders unknown parameter", get("/api/v3/openOrders?type=spot"), 400, -1140, ""},
		{"order without ids", get("/api/v3/order?symbol=BTCUSDT"), 400, -1141, ""},
		{"order with bad id", get("/api/v3/order?orderId=12x"), 400, -1140, ""},
		{"order with zero id", get("/api/v3/order?orderId=0"), 400, -1140, ""},
		{"order unknown id", get("/api/v3/order?orderId=999999999"), 400, -2200, ""},
		{"order unknown client id", get("/api/v3/order?origClientOrderId=nope"), 400, -2200, ""},
		{"cancel unknown id", req{method: "DELETE", path: "/api/v3/order?symbol=BTCUSDT&orderId=1024000", u: a}, 400, -2200, ""},
		{"cancel without ids", req{method: "DELETE", path: "/api/v3/order?symbol=BTCUSDT", u: a}, 400, -1141, ""},
		{"cancel all without symbol", req{method: "DELETE", path: "/api/v3/openOrders", u: a}, 400, -1141, ""},
		{"myTrades without symbol", get("/api/v3/myTrades"), 400, -1141, ""},
		{"myTrades endTime < startTime", get("/api/v3/myTrades?symbol=BTCUSDT&startTime=5&endTime=4"), 400, -1171, ""},
		{"account with parameter", get("/api/v3/account/?coin=BTC"), 400, -1140, ""},
		{"income bad month", post("/api/v3/tax/income", `{"month":"2026-13"}`), 400, -1140, ""},
		{"income month format", post("/api/v3/tax/income", `{"month":"11/2026"}`), 400, -1140, ""},
		{"income month number", post("/api/v3/tax/income", `{"month":202611}`), 400, -1140, ""},
		{"income limit 201", post("/api/v3/tax/income", `{"limit":201}`), 400, -1140, ""},
		{"income limit 0", post("/api/v3/tax/income", `{"limit":0}`), 400, -1140, ""},
		{"income limit word", post("/api/v3/tax/income", `{"limit":"ten"}`), 400, -1140, ""},
		{"income page 0", post("/api/v3/tax/income", `{"page":0}`), 400, -1140, ""},
		{"income unknown coin", post("/api/v3/tax/income", `{"coin":"DOGE"}`), 400, -1140, ""},
		{"income unknown bizType", post("/api/v3/tax/income", `{"bizType":"gift"}`), 400, -1140, ""},
		{"bills limit 101", post("/api/v3/account/bills", `{"limit":101}`), 400, -1140, ""},
		{"bills limit 0", post("/api/v3/account/bills", `{"limit":0}`), 400, -1140, ""},
		{"bills unknown coinId", post("/api/v3/account/bills", `{"coinId":99}`), 400, -1140, ""},
		{"bills coin name", post("/api/v3/account/bills", `{"coinId":"USDT"}`), 400, -1140, ""},
		{"bills unknown bizType", post("/api/v3/account/bills", `{"bizType":"gift"}`), 400, -1140, ""},
		{"bills after past before", post("/api/v3/account/bills", `{"after":10,"before":9}`), 400, -1171, ""},
		{"bills negative after", post("/api/v3/account/bills", `{"after":-1}`), 400, -1140, ""},
		{"bills unknown field", post("/api/v3/account/bills", `{"month":"2026-11"}`), 400, -1140, ""},
		{"funding trade bizType", post("/api/v3/account/fundingBills", `{"bizType":"trade_in"}`), 400, -1140, ""},
		{"funding pageSize 101", post("/api/v3/account/fundingBills", `{"pageSize":101}`), 400, -1140, ""},
		{"funding pageIndex 0", post("/api/v3/account/fundingBills", `{"pageIndex":0}`), 400, -1140, ""},
		{"funding 91 days", post("/api/v3/account/fundingBills", `{"startTime":0,"endTime":7862400001}`), 400, -1170, ""},
		{"funding start after end", post("/api/v3/account/fundingBills", `{"startTime":5,"endTime":4}`), 400, -1171, ""},
		{"funding from 1970", post("/api/v3/account/fundingBills", `{"startTime":0}`), 400, -1170, ""},
		{"income unknown field", post("/api/v3/tax/income", `{"year":2026}`), 400, -1140, ""},
		{"income malformed", post("/api/v3/tax/income", `{"coin":`), 400, -1135, ""},

		// public endpoints
		{"exchangeInfo symbol and symbols", req{method: "GET", path: "/api/v3/exchangeInfo?symbol=BTCUSDT&symbols=ETHUSDT"}, 400, -1128, ""},
		{"exchangeInfo unknown symbol", req{method: "GET", path: "/api/v3/exchangeInfo?symbol=FOO"}, 400, -1121, ""},
		{"exchangeInfo unknown in symbols", req{method: "GET", path: "/api/v3/exchangeInfo?symbols=BTCUSDT,FOO"}, 400, -1121, ""},
		{"exchangeInfo broken symbols array", req{method: "GET", path: `/api/v3/exchangeInfo?symbols=%5B%22BTCUSDT%22`}, 400, -1140, ""},
		{"exchangeInfo bad symbolStatus", req{method: "GET", path: "/api/v3/exchangeInfo?symbolStatus=HALT"}, 400, -1140, ""},
		{"exchangeInfo unknown parameter", req{method: "GET", path: "/api/v3/exchangeInfo?type=spot"}, 400, -1140, ""},
		{"depth without symbol", req{method: "GET", path: "/api/v3/market/depth"}, 400, -1141, ""},
		{"depth limit too large", req{method: "GET", path: "/api/v3/market/depth?symbol=BTCUSDT&limit=201"}, 400, -1140, ""},
		{"depth limit word", req{method: "GET", path: "/api/v3/market/depth?symbol=BTCUSDT&limit=all"}, 400, -1140, ""},
		{"trades limit 0", req{method: "GET", path: "/api/v3/market/trades?symbol=BTCUSDT&limit=0"}, 400, -1140, ""},
		{"klines without symbol", req{method: "GET", path: "/api/v3/market/klines?interval=1m"}, 400, -1141, ""},
		{"klines without interval", req{method: "GET", path: "/api/v3/market/klines?symbol=BTCUSDT"}, 400, -1141, ""},
		{"klines interval 2m", req{method: "GET", path: "/api/v3/market/klines?symbol=BTCUSDT&interval=2m"}, 400, -1140, ""},
		{"klines interval 1D", req{method: "GET", path: "/api/v3/market/klines?symbol=BTCUSDT&interval=1D"}, 400, -1140, ""},
		{"klines limit 1001", req{method: "GET", path: "/api/v3/market/klines?symbol=BTCUSDT&interval=1m&limit=1001"}, 400, -1140, ""},
		{"klines start after end", req{method: "GET", path: "/api/v3/market/klines?symbol=BTCUSDT&interval=1h&startTime=5&endTime=4"}, 400, -1171, ""},
		{"klines unknown symbol", req{method: "GET", path: "/api/v3/market/klines?symbol=BTCEUR&interval=1h"}, 400, -1121, ""},
		{"ticker unknown symbol", req{method: "GET", path: "/api/v3/market/ticker/24hr?symbol=NOPE"}, 400, -1121, ""},
		{"price ticker unknown symbol", req{method: "GET", path: "/api/v3/market/ticker/price?symbol=NOPE"}, 400, -1121, ""},

		// admin API
		{"admin without token", req{method: "GET", path: "/admin/v1/state", admin: true, noToken: true}, 401, -1044, ""},
		{"admin wrong token", req{method: "GET", path: "/admin/v1/state", admin: true, noToken: true, headers: map[string]string{"X-Admin-Token": "guess"}}, 401, -1044, ""},
		{"admin negative deposit", req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":10001,"coin":"USDT","amount":"-5"}`, admin: true}, 400, -1140, ""},
		{"admin zero deposit", req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":10001,"coin":"USDT","amount":"0"}`, admin: true}, 400, -1140, ""},
		{"admin deposit unknown coin", req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":10001,"coin":"XRP","amount":"5"}`, admin: true}, 400, -1140, ""},
		{"admin deposit unknown uid", req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":424242,"coin":"USDT","amount":"5"}`, admin: true}, 400, -1140, ""},
		{"admin deposit unknown field", req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":10001,"coin":"USDT","amount":"5","memo":"x"}`, admin: true}, 400, -1135, ""},
		{"admin overdraw", req{method: "POST", path: "/admin/v1/withdraw", body: `{"uid":10001,"coin":"USDT","amount":"99999999"}`, admin: true}, 400, -2010, ""},
		{"admin duplicate uid", req{method: "POST", path: "/admin/v1/users", body: `{"uid":10001}`, admin: true}, 400, -1140, ""},
		{"admin balances bad uid", req{method: "GET", path: "/admin/v1/balances?uid=x", admin: true}, 400, -1141, ""},

		// ambiguous requests (docs/API.md, "Strict parameters")
		{"quantity given twice", place(order1(okOrder + `,"quantity":"5"`)), 400, -1135, ""},
		{"symbol given twice", place(order1(okOrder + `,"symbol":"ETHUSDT"`)), 400, -1135, ""},
		{"batch element key twice", post("/api/v3/order/batch", batch1(`{"side":"BUY","side":"SELL","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"100"}`)), 400, -1135, ""},
		{"two orderList arrays", post("/api/v3/order/batch", `{"symbol":"BTCUSDT","orderList":[],"orderList":[{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"100"}]}`), 400, -1135, ""},
		{"income key twice", post("/api/v3/tax/income", `{"coin":"USDT","coin":"BTC"}`), 400, -1135, ""},
		{"query on a POST", post("/api/v3/order?quantity=5", order1(okOrder)), 400, -1140, ""},
		{"admin amount twice", req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":10001,"coin":"USDT","amount":"1","amount":"1000000"}`, admin: true}, 400, -1135, ""},
		{"admin key twice in another case", req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":10001,"coin":"USDT","amount":"1","Amount":"1000000"}`, admin: true}, 400, -1135, ""},
		{"double slash path", req{method: "GET", path: "//api/v3/time"}, 404, -1000, ""},
		{"dot segment path", req{method: "GET", path: "/api/v3/market/../time"}, 404, -1000, ""},
		{"encoded slash path", req{method: "GET", path: "/api/v3%2Ftime"}, 404, -1000, ""},
	}
	return c
}

// TestBadInputs sends every bad request and checks status, code and that
// the engine state did not change.
func TestBadInputs(t *testing.T) {
	s := startServer(t, "")
	// some state to protect: a resting order of A and a last price.
	s.post(&userB, "/api/v3/order", placeBody("BTCUSDT", "SELL", "LIMIT", "1", "50000", ""), nil)
	s.post(&userA, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.5", "50000", ""), nil)
	s.post(&userA, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.5", "49000", `,"newClientOrderId":"resting"`), nil)
	before := s.stateHash()
	cases := badCases()
	if len(cases) < 100 {
		t.Fatalf("only %d bad inputs", len(cases))
	}
	for _, c := range cases {
		res := s.do(c.r)
		if !c.r.admin && res.status != 431 && res.hdr.Get("X-USED-WEIGHT-IP-10S") == "" {
			t.Errorf("%s: no X-USED-WEIGHT-IP-10S header", c.name)
		}
		if res.status != c.status {
			t.Errorf("%s: got status %d %s, want %d", c.name, res.status, res.body, c.status)
			continue
		}
		if c.elem != "" {
			var b struct {
				OrderList []struct {
					OrderID   int64
					ErrorCode string
					ErrorMsg  string
				}
			}
			if err := json.Unmarshal(res.body, &b); err != nil || len(b.OrderList) != 1 {
				t.Errorf("%s: got %s", c.name, res.body)
				continue
			}
			if e := b.OrderList[0]; e.ErrorCode != c.elem || e.ErrorMsg == "" || e.OrderID != 0 {
				t.Errorf("%s: got element %+v, want errorCode %s", c.name, e, c.elem)
			}
			continue
		}
		var e apiErr
		if err := json.Unmarshal(res.body, &e); err != nil || e.Msg == "" {
			t.Errorf("%s: body %q is not an error object", c.name, res.body)
			continue
		}
		if c.code != 0 && e.Code != c.code {
			t.Errorf("%s: got code %d (%s), want %d", c.name, e.Code, e.Msg, c.code)
		}
	}
	// every proper prefix of valid bodies is malformed JSON.
	truncated := 0
	for _, v := range []struct{ path, body string }{
		{"/api/v3/order", order1(okOrder + `,"newClientOrderId":"trunc"`)},
		{"/api/v3/order/batch", `{"symbol":"BTCUSDT","orderList":[{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"100"}]}`},
		{"/api/v3/tax/income", `{"coin":"USDT","limit":5}`},
	} {
		for n := 0; n < len(v.body); n++ {
			if strings.TrimSpace(v.body[:n]) == "" && v.path == "/api/v3/tax/income" {
				continue // an empty body means {} there
			}
			res := s.do(req{method: "POST", path: v.path, body: v.body[:n], u: &userA})
			var e apiErr
			json.Unmarshal(res.body, &e)
			if res.status != 400 || e.Code != -1135 {
				t.Errorf("%s truncated to %q: got %d %s, want 400 -1135", v.path, v.body[:n], res.status, res.body)
			}
			truncated++
		}
	}
	t.Logf("%d truncated bodies checked", truncated)
	if after := s.stateHash(); after != before {
		t.Errorf("state hash changed by bad inputs: %s -> %s", before, after)
	}
	// the server is still healthy
	var open []order
	s.get(&userA, "/api/v3/openOrders", &open)
	if len(open) != 1 || open[0].ClientOrderID != "resting" {
		t.Errorf("open orders after bad inputs: %+v", open)
	}
	t.Logf("%d bad inputs checked", len(cases))
	_ = fmt.Sprint
}
