package edge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/config"
)

// openTestServer opens a server on the embedded demo config in a temp dir
// (real journal, no listeners), rate limits on with budgets never reached.
func openTestServer(tb testing.TB) *Server {
	tb.Helper()
	cfg, err := config.ParseConfig(config.Default)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.RateLimits = config.RateLimits{IPWeight: 1 << 60, UIDWeight: 1 << 60, Enabled: true}
	s, close := openServer(tb, cfg, tb.TempDir())
	tb.Cleanup(close)
	return s
}

// signedCtx builds a request signed as the demo user over exactly what
// the server reads (rawURI), so that whatever the query holds, the request
// gets past authentication to the endpoint.
func signedCtx(method, uri, body string) *fasthttp.RequestCtx {
	ctx := requestCtx(method, uri, body)
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	m := hmac.New(sha256.New, []byte("demo-secret"))
	m.Write([]byte(ts + method))
	m.Write(rawURI(ctx))
	m.Write(ctx.Request.Body())
	h := &ctx.Request.Header
	h.Set("ACCESS-KEY", "weex_demo_key")
	h.Set("ACCESS-SIGN", base64.StdEncoding.EncodeToString(m.Sum(nil)))
	h.Set("ACCESS-PASSPHRASE", "demo-pass")
	h.Set("ACCESS-TIMESTAMP", ts)
	return ctx
}

// requestCtx builds an unsigned JSON request from 127.0.0.1.
func requestCtx(method, uri, body string) *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(uri)
	req.Header.SetContentType("application/json")
	req.SetBodyString(body)
	ctx := &fasthttp.RequestCtx{}
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}, nil)
	return ctx
}

// batchBody: two IOC orders with no counterparty; each is journaled and
// expires, so the book does not grow during the benchmark.
const batchBody = `{"symbol":"BTCUSDT","orderList":[` +
	`{"side":"BUY","type":"LIMIT","timeInForce":"IOC","quantity":"0.01","price":"100","newClientOrderId":"bench-1"},` +
	`{"side":"SELL","type":"LIMIT","timeInForce":"IOC","quantity":"0.01","price":"200000"}]}`

// BenchmarkBatchOrder drives POST /api/v3/order/batch through the handler
// in memory (no sockets): auth, decode, two submits to the real journal
// with fsync, wait, encode. allocs/op counts every goroutine's allocations
// (the journal's too).
func BenchmarkBatchOrder(b *testing.B) {
	s := openTestServer(b)
	ctx := signedCtx("POST", "/api/v3/order/batch", batchBody)
	for i := 0; i < 50; i++ { // warm the pools
		s.serveREST(ctx)
	}
	if ctx.Response.StatusCode() != 200 {
		b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.serveREST(ctx)
	}
}

// TestBatchAllocs is the allocation gate: at most 2 allocations per batch
// request in steady state (DESIGN.md), measured as BenchmarkBatchOrder does.
func TestBatchAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("journal fsyncs; the race detector allocates")
	}
	s := openTestServer(t)
	ctx := signedCtx("POST", "/api/v3/order/batch", batchBody)
	for i := 0; i < 50; i++ {
		s.serveREST(ctx)
	}
	body := string(ctx.Response.Body())
	if ctx.Response.StatusCode() != 200 || len(body) < 20 || body[:14] != `{"orderList":[` {
		t.Fatalf("got %d %s", ctx.Response.StatusCode(), body)
	}
	allocs := testing.AllocsPerRun(100, func() { s.serveREST(ctx) })
	t.Logf("allocations per batch request: %.2f", allocs)
	if allocs > 2 {
		t.Errorf("got %.2f allocations per batch request, want <= 2", allocs)
	}
}

// BenchmarkAuthOpenOrders: a signed query (auth + in-shard read + encode).
func BenchmarkAuthOpenOrders(b *testing.B) {
	s := openTestServer(b)
	ctx := signedCtx("GET", "/api/v3/openOrders?symbol=BTCUSDT", "")
	for i := 0; i < 50; i++ {
		s.serveREST(ctx)
	}
	if ctx.Response.StatusCode() != 200 {
		b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.serveREST(ctx)
	}
}

// TestConcurrentHandlers runs every kind of handler from several goroutines
// at once (run with -race).
func TestConcurrentHandlers(t *testing.T) {
	s := openTestServer(t)
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			ctxs := []*fasthttp.RequestCtx{
				signedCtx("POST", "/api/v3/order/batch", batchBody),
				signedCtx("POST", "/api/v3/order", `{"symbol":"ETHUSDT","side":"BUY","type":"LIMIT","quantity":"0.01","price":"10"}`),
				signedCtx("GET", "/api/v3/openOrders", ""),
				signedCtx("GET", "/api/v3/account/", ""),
				signedCtx("DELETE", "/api/v3/openOrders?symbol=ETHUSDT", ""),
				signedCtx("POST", "/api/v3/tax/income", `{}`),
				signedCtx("GET", "/api/v3/allOrders?symbol=BTCUSDT", ""),
				signedCtx("GET", "/api/v3/market/ticker/24hr", ""),
				signedCtx("POST", "/api/v3/order", `{`),
			}
			for i := 0; i < 20; i++ {
				for _, ctx := range ctxs {
					s.serveREST(ctx)
					if c := ctx.Response.StatusCode(); c >= 500 {
						t.Errorf("%s %s: %d %s", ctx.Method(), ctx.RequestURI(), c, ctx.Response.Body())
					}
				}
			}
			var admin fasthttp.RequestCtx
			admin.Request.Header.SetMethod("POST")
			admin.Request.SetRequestURI("/admin/v1/users")
			admin.Request.Header.SetContentType("application/json")
			admin.Request.Header.Set("X-Admin-Token", "change-me")
			admin.Request.SetBodyString("{}")
			s.serveAdmin(&admin)
			if admin.Response.StatusCode() != 200 {
				t.Errorf("admin user: %d %s", admin.Response.StatusCode(), admin.Response.Body())
			}
		}(g)
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}

// BenchmarkPublicTime: the cheapest request, GET /api/v3/time, so that
// the edge's own cost (routing, IP limit, headers, encoding) is not hidden
// behind a shard's or the journal's.
func BenchmarkPublicTime(b *testing.B) {
	s := openTestServer(b)
	ctx := requestCtx("GET", "/api/v3/time", "")
	s.serveREST(ctx)
	if ctx.Response.StatusCode() != 200 {
		b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.serveREST(ctx)
	}
}

// TestPublicAllocs: a request that touches no shard is routed, limited,
// answered and observed (its histogram series resolved once) without
// allocating.
func TestPublicAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s := openTestServer(t)
	for _, uri := range []string{"/api/v3/time", "/api/v3/nothing"} {
		ctx := requestCtx("GET", uri, "")
		s.serveREST(ctx)
		if allocs := testing.AllocsPerRun(1000, func() { s.serveREST(ctx) }); allocs != 0 {
			t.Errorf("GET %s: %.2f allocations per request, want 0", uri, allocs)
		}
	}
}
