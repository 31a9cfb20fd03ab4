package edge

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// fuzzRoutes is every REST and admin endpoint (TestFuzzRoutesCover keeps
// the list whole), in a fixed order: a corpus entry names its endpoint by
// index.
var fuzzRoutes = []struct {
	method, path string
	admin        bool
	text         bool // answers Prometheus text, not JSON
}{
	{"GET", "/api/v3/time", false, false},
	{"GET", "/api/v3/ping", false, false},
	{"GET", "/api/v3/exchangeInfo", false, false},
	{"GET", "/api/v3/coins", false, false},
	{"GET", "/api/v3/market/depth", false, false},
	{"GET", "/api/v3/market/trades", false, false},
	{"GET", "/api/v3/market/ticker/price", false, false},
	{"GET", "/api/v3/market/ticker/bookTicker", false, false},
	{"GET", "/api/v3/market/ticker/24hr", false, false},
	{"GET", "/capi/v3/market/exchangeInfo", false, false},
	{"POST", "/api/v3/order/batch", false, false},
	{"DELETE", "/api/v3/order/batch", false, false},
	{"POST", "/api/v3/order", false, false},
	{"GET", "/api/v3/order", false, false},
	{"DELETE", "/api/v3/order", false, false},
	{"GET", "/api/v3/openOrders", false, false},
	{"DELETE", "/api/v3/openOrders", false, false},
	{"GET", "/api/v3/allOrders", false, false},
	{"GET", "/api/v3/myTrades", false, false},
	{"GET", "/api/v3/account", false, false},
	{"GET", "/api/v3/account/", false, false},
	{"POST", "/api/v3/tax/income", false, false},
	{"POST", "/admin/v1/users", true, false},
	{"POST", "/admin/v1/deposit", true, false},
	{"POST", "/admin/v1/withdraw", true, false},
	{"GET", "/admin/v1/balances", true, false},
	{"GET", "/admin/v1/state", true, false},
	{"GET", "/metrics", true, true},
	{"GET", "/healthz", true, false},
	{"GET", "/readyz", true, false},
	{"GET", "/api/v3/apiReferral/rebate/recentRecord", false, false},
	{"POST", "/admin/v1/rebate/settle", true, false},
	{"POST", "/admin/v1/clock", true, false},
	{"GET", "/api/v3/market/klines", false, false},
	{"POST", "/api/v3/account/bills", false, false},
	{"POST", "/api/v3/account/fundingBills", false, false},
	// contract market data and account (caccount.go), transfers
	{"GET", "/capi/v3/market/time", false, false},
	{"GET", "/capi/v3/market/depth", false, false},
	{"GET", "/capi/v3/market/trades", false, false},
	{"GET", "/capi/v3/market/ticker/24hr", false, false},
	{"GET", "/capi/v3/market/ticker/bookTicker", false, false},
	{"GET", "/capi/v3/market/klines", false, false},
	{"GET", "/capi/v3/market/symbolPrice", false, false},
	{"GET", "/capi/v3/market/openInterest", false, false},
	{"GET", "/capi/v3/account/balance", false, false},
	{"GET", "/capi/v3/account/commissionRate", false, false},
	{"GET", "/capi/v3/account/symbolConfig", false, false},
	{"GET", "/capi/v3/account/position/allPosition", false, false},
	{"GET", "/capi/v3/account/position/singlePosition", false, false},
	{"POST", "/capi/v3/account/leverage", false, false},
	{"POST", "/capi/v3/account/marginType", false, false},
	{"POST", "/capi/v3/account/positionMargin", false, false},
	{"POST", "/capi/v3/account/income", false, false},
	{"GET", "/api/v3/account/transferRecords", false, false},
	{"POST", "/admin/v1/transfer", true, false},
	{"GET", "/admin/v1/positions", true, false},
}

func TestFuzzRoutesCover(t *testing.T) {
	listed := map[string]bool{}
	for _, r := range fuzzRoutes {
		listed[r.method+" "+r.path] = true
	}
	for _, eps := range [][]*endpoint{restEndpoints(), adminEndpoints(true)} {
		for _, e := range eps {
			if !listed[e.method+" "+e.path] {
				t.Errorf("%s %s is not in fuzzRoutes", e.method, e.path)
			}
		}
	}
}

// FuzzREST drives the whole REST surface, and the admin API, in memory
// with what the fuzzer makes of an endpoint, a query and a body, signed as
// the demo user by signedCtx (or with the admin token):
// routing, argument and body decoding, the engine through the real journal
// (fsyncs included), and encoding. Every answer must be JSON with a status
// below 500 (a panic in a handler answers 500; one in a shard kills the
// process), and an error answer must have changed nothing: the state hash,
// taken at a barrier through every shard, is the one from before the
// request. make test runs the seeds; make soak fuzzes.
func FuzzREST(f *testing.F) {
	seeds := []struct {
		route       int
		query, body string
	}{
		{0, "", ""},
		{4, "symbol=BTCUSDT&limit=5", ""},
		{5, "symbol=ETHUSDT&limit=2", ""},
		{6, "symbol=BTCUSDT", ""},
		{7, "", ""},
		{8, "symbol=BTCUSDT", ""},
		{10, "", `{"symbol":"BTCUSDT","orderList":[{"side":"BUY","type":"LIMIT","timeInForce":"IOC","quantity":"0.01","price":"100","newClientOrderId":"f-1"},{"side":"SELL","type":"MARKET","quantity":"0.01"}]}`},
		{11, "", `{"symbol":"BTCUSDT","orderIds":[1025,"2049"],"origClientOrderIds":["f-2"]}`},
		{12, "", `{"symbol":"BTCUSDT","side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"100","newClientOrderId":"f-2"}`},
		{12, "", `{"symbol":"ETHUSDT","side":"SELL","type":"LIMIT","quantity":"0.5","price":"100000"}`},
		{12, "", `{"symbol":"BTCUSDT","side":"BUY","type":"MARKET","quantity":"0.001"}`},
		{13, "symbol=BTCUSDT&origClientOrderId=f-2", ""},
		{14, "symbol=BTCUSDT&origClientOrderId=f-2", ""},
		{15, "symbol=BTCUSDT", ""},
		{16, "symbol=ETHUSDT", ""},
		{17, "symbol=BTCUSDT&startTime=0&endTime=99999999999999&limit=3&page=2", ""},
		{18, "symbol=BTCUSDT&limit=10&orderId=1025", ""},
		{19, "", ""},
		{21, "", `{"coin":"USDT","bizType":"trade_in","month":"2026-11","limit":5,"page":1}`},
		{22, "", `{"uid":20001,"broker":true}`},
		{22, "", `{"referrerUid":10001}`},
		{23, "", `{"uid":10001,"coin":"USDT","amount":"250.5"}`},
		{24, "", `{"uid":10002,"coin":"BTC","amount":"0.5"}`},
		{25, "uid=10001", ""},
		{26, "", ""},
		{27, "", ""},
		{28, "", ""},
		{29, "", ""},
		{30, "startTime=2026-01-01&endTime=2026-02-01&page=2&pageSize=1", ""},
		{31, "", `{"date":"2026-01-01"}`},
		{32, "", `{"nowMs":1}`},
		{33, "symbol=BTCUSDT&interval=1w&startTime=0&limit=3", ""},
		{34, "", `{"coinId":2,"bizType":"deposit","after":0,"before":"99999999999999","limit":5}`},
		{35, "", `{"coinId":2,"startTime":0,"pageIndex":2,"pageSize":1}`},
	}
	for _, s := range seeds {
		f.Add(uint8(s.route), s.query, []byte(s.body))
	}
	// contract market data, account and admin (caccount.go), by path
	for _, s := range []struct{ method, path, query, body string }{
		{"GET", "/capi/v3/market/time", "", ""},
		{"GET", "/capi/v3/market/depth", "symbol=BTCUSDT&limit=5", ""},
		{"GET", "/capi/v3/market/trades", "symbol=ETHUSDT&limit=2", ""},
		{"GET", "/capi/v3/market/ticker/24hr", "", ""},
		{"GET", "/capi/v3/market/ticker/bookTicker", "symbol=BTCUSDT", ""},
		{"GET", "/capi/v3/market/klines", "symbol=BTCUSDT&interval=1h&limit=3", ""},
		{"GET", "/capi/v3/market/symbolPrice", "symbol=BTCUSDT&priceType=MARK", ""},
		{"GET", "/capi/v3/market/openInterest", "symbol=ETHUSDT", ""},
		{"GET", "/capi/v3/account/balance", "", ""},
		{"GET", "/capi/v3/account/commissionRate", "symbol=BTCUSDT", ""},
		{"GET", "/capi/v3/account/symbolConfig", "", ""},
		{"GET", "/capi/v3/account/position/allPosition", "", ""},
		{"GET", "/capi/v3/account/position/singlePosition", "symbol=BTCUSDT", ""},
		{"POST", "/capi/v3/account/leverage", "", `{"symbol":"BTCUSDT","crossLeverage":10}`},
		{"POST", "/capi/v3/account/leverage", "", `{"symbol":"ETHUSDT","marginType":"ISOLATED","isolatedLongLeverage":"5","isolatedShortLeverage":7}`},
		{"POST", "/capi/v3/account/marginType", "", `{"symbol":"ETHUSDT","marginType":"ISOLATED","separatedType":"COMBINED"}`},
		{"POST", "/capi/v3/account/positionMargin", "", `{"isolatedPositionId":"40962049025","amount":"10","type":1}`},
		{"POST", "/capi/v3/account/income", "", `{"symbol":"BTCUSDT","currency":"USDT","incomeType":"transfer_in","startTime":0,"limit":5}`},
		{"GET", "/api/v3/account/transferRecords", "after=0&before=99999999999999&limit=5", ""},
		{"POST", "/admin/v1/transfer", "", `{"uid":10001,"coin":"USDT","amount":"25","from":"spot","to":"futures"}`},
		{"POST", "/admin/v1/deposit", "", `{"uid":10002,"coin":"USDT","amount":"5","wallet":"futures"}`},
		{"GET", "/admin/v1/positions", "uid=10001", ""},
		// contract orders (ctrade.go), funding (cfunding.go), plans (cplan.go)
		{"POST", "/capi/v2/order/placeOrder", "", `{"symbol":"cmt_btcusdt","client_oid":"f-3","size":"0.01","type":"1","order_type":"0","match_price":"0","price":"30000","presetTakeProfitPrice":"31000"}`},
		{"POST", "/capi/v3/batchOrders", "", `{"batchOrders":[{"symbol":"BTCUSDT","side":"SELL","positionSide":"SHORT","type":"LIMIT","quantity":"0.01","price":"30000"}]}`},
		{"POST", "/capi/v3/order", "", `{"symbol":"BTCUSDT","side":"BUY","positionSide":"LONG","type":"MARKET","quantity":"0.01"}`},
		{"POST", "/capi/v3/order", "", `{"symbol":"ETHUSDT","side":"SELL","positionSide":"LONG","type":"LIMIT","quantity":"0.01","price":"2000","reduceOnly":true}`},
		{"GET", "/capi/v3/openOrders", "symbol=BTCUSDT", ""},
		{"DELETE", "/capi/v3/allOpenOrders", "", ""},
		{"POST", "/capi/v3/closePositions", "", `{"symbol":"BTCUSDT"}`},
		{"GET", "/capi/v3/market/premiumIndex", "symbol=BTCUSDT", ""},
		{"GET", "/capi/v3/market/fundingRate", "symbol=BTCUSDT&limit=3", ""},
		{"POST", "/capi/v2/order/placeTpSlOrder", "", `{"symbol":"cmt_btcusdt","clientOrderId":"f-4","planType":"loss_plan","triggerPrice":"29000","executePrice":"0","size":"0.01","positionSide":"long","marginMode":1}`},
		{"GET", "/capi/v2/order/currentPlan", "symbol=cmt_btcusdt&page=0&limit=5", ""},
		{"POST", "/capi/v3/algoOrder", "", `{"symbol":"BTCUSDT","side":"SELL","positionSide":"LONG","type":"STOP_MARKET","quantity":"0.01","triggerPrice":"29000","reduceOnly":true}`},
		{"GET", "/capi/v3/openAlgoOrders", "symbol=BTCUSDT", ""},
	} {
		for i, r := range fuzzRoutes {
			if r.method == s.method && r.path == s.path {
				f.Add(uint8(i), s.query, []byte(s.body))
			}
		}
	}
	s := openTestServer(f)
	state := func(t *testing.T) [32]byte {
		h, _, err := s.node.State(time.Now().Add(10 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		uri := r.path
		if query != "" {
			uri += "?" + query
		}
		var ctx *fasthttp.RequestCtx
		before := state(t)
		if r.admin {
			ctx = requestCtx(r.method, uri, string(body))
			ctx.Request.Header.SetBytesV("X-Admin-Token", s.adminToken)
			s.serveAdmin(ctx)
		} else {
			ctx = signedCtx(r.method, uri, string(body))
			s.serveREST(ctx)
		}
		status, out := ctx.Response.StatusCode(), ctx.Response.Body()
		if status >= 500 || !r.text && !json.Valid(out) {
			t.Fatalf("%s %q body %q: %d %s", r.method, uri, body, status, out)
		}
		if status != 200 {
			if after := state(t); after != before {
				t.Fatalf("%s %q body %q: error %d %s, and the state changed", r.method, uri, body, status, out)
			}
		}
	})
}
