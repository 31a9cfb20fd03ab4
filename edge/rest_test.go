package edge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weexcore/exchange/engine"
)

func TestReqStateTrim(t *testing.T) {
	st := &reqState{buf: make([]byte, 10, keepBufBytes+1), orders: make([]engine.OrderView, 0, keepOrders+1)}
	st.trim()
	if cap(st.buf) > keepBufBytes || len(st.buf) != 0 || cap(st.orders) > keepOrders {
		t.Errorf("after trim: buf len %d cap %d, orders cap %d", len(st.buf), cap(st.buf), cap(st.orders))
	}
	small := &reqState{buf: make([]byte, 0, keepBufBytes), orders: make([]engine.OrderView, 0, keepOrders)}
	small.trim()
	if cap(small.buf) != keepBufBytes || cap(small.orders) != keepOrders {
		t.Errorf("trim dropped scratch within bounds: buf cap %d, orders cap %d", cap(small.buf), cap(small.orders))
	}
}

// TestOpenOrdersLarge: openOrders answers every working order, however
// many (5,000 here: an answer of 1.46 MB, past what the request scratch
// keeps), and the server goes on answering.
func TestOpenOrdersLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("places 5,000 orders")
	}
	s := openTestServer(t)
	const n = 5000
	elem := `{"side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"100"}`
	body := `{"symbol":"BTCUSDT","orderList":[` + strings.TrimSuffix(strings.Repeat(elem+",", maxBatch), ",") + `]}`
	for i := 0; i < n/maxBatch; i++ {
		ctx := signedCtx("POST", "/api/v3/order/batch", body)
		s.serveREST(ctx)
		if c := ctx.Response.StatusCode(); c != 200 || strings.Contains(string(ctx.Response.Body()), "errorCode") {
			t.Fatalf("batch %d: %d %.300s", i, c, ctx.Response.Body())
		}
	}
	for round := 0; round < 2; round++ {
		ctx := signedCtx("GET", "/api/v3/openOrders?symbol=BTCUSDT", "")
		s.serveREST(ctx)
		var got []struct {
			OrderID int64 `json:"orderId"`
		}
		if err := json.Unmarshal(ctx.Response.Body(), &got); err != nil || ctx.Response.StatusCode() != 200 {
			t.Fatalf("round %d: %d %v", round, ctx.Response.StatusCode(), err)
		}
		if len(got) != n || len(ctx.Response.Body()) <= keepBufBytes {
			t.Fatalf("round %d: %d orders in %d bytes, want %d in more than %d", round, len(got), len(ctx.Response.Body()), n, keepBufBytes)
		}
		seen := map[int64]bool{}
		for _, o := range got {
			seen[o.OrderID] = true
		}
		if len(seen) != n {
			t.Fatalf("round %d: %d distinct order ids of %d", round, len(seen), n)
		}
	}
	ctx := signedCtx("GET", "/api/v3/account", "")
	s.serveREST(ctx)
	if c := ctx.Response.StatusCode(); c != 200 {
		t.Fatalf("account after the large answers: %d %s", c, ctx.Response.Body())
	}
}

// TestEndRecovers: a handler's panic is answered 500 with the JSON error
// body, and the server goes on serving (end is deferred by serveREST and
// serveAdmin).
func TestEndRecovers(t *testing.T) {
	s := openTestServer(t)
	ctx := signedCtx("GET", "/api/v3/time", "")
	func() {
		st := statePool.Get().(*reqState)
		defer s.end(ctx, st)
		panic("handler bug")
	}()
	var got struct{ Code int }
	if err := json.Unmarshal(ctx.Response.Body(), &got); err != nil || ctx.Response.StatusCode() != 500 || got.Code != codeUnknown {
		t.Fatalf("got %d %s (%v), want 500 and code %d", ctx.Response.StatusCode(), ctx.Response.Body(), err, codeUnknown)
	}
	ctx = signedCtx("GET", "/api/v3/time", "")
	s.serveREST(ctx)
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("after the panic: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}
