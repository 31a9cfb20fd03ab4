package edge

import (
	"bytes"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// handler serves one endpoint. It appends a success body to st.buf and
// returns nil, or returns the error to answer. c is nil on public endpoints.
type handler func(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError

// endpoint is one route (method and path) with what serving it needs.
// The router's 404 and 405 answers are endpoints too, with fail set: they
// take the same path through the IP limit as the routes do.
type endpoint struct {
	method    string
	path      string // the route; "other" for the 404 of unknown paths
	ipWeight  int64
	uidWeight int64
	signed    bool
	h         handler
	fail      *apiError // answered instead of h (404, 405)
	obs       observers // REST answer times by status

	// admin endpoints
	noToken     bool   // served without the admin token (health probes)
	beforeStart bool   // served before Start has the node
	contentType string // of a success; "": application/json
}

// restEndpoints is the REST surface with each endpoint's weights
// (docs/API.md, "Rate limits": the seed interface's where it lists them,
// ours elsewhere).
func restEndpoints() []*endpoint {
	pub := func(path string, ip int64, h handler) *endpoint {
		return &endpoint{method: "GET", path: path, ipWeight: ip, h: h}
	}
	sig := func(method, path string, ip, uid int64, h handler) *endpoint {
		return &endpoint{method: method, path: path, ipWeight: ip, uidWeight: uid, signed: true, h: h}
	}
	eps := []*endpoint{
		pub("/api/v3/time", 1, handleTime),
		pub("/api/v3/ping", 1, handlePing),
		pub("/api/v3/exchangeInfo", 20, handleExchangeInfo),
		pub("/api/v3/coins", 5, handleCoins),
		pub("/api/v3/market/depth", 5, handleDepth),
		pub("/api/v3/market/trades", 5, handleMarketTrades),
		pub("/api/v3/market/ticker/price", 2, handleTickerPrice),
		pub("/api/v3/market/ticker/bookTicker", 2, handleBookTicker),
		pub("/api/v3/market/ticker/24hr", 5, handleTicker24h),
		pub("/api/v3/market/klines", 10, handleKlines),
		sig("POST", "/api/v3/order/batch", 10, 50, handleBatch),
		sig("DELETE", "/api/v3/order/batch", 5, 10, handleCancelBatch),
		sig("POST", "/api/v3/order", 2, 5, handlePlace),
		sig("GET", "/api/v3/order", 2, 2, handleGetOrder),
		sig("DELETE", "/api/v3/order", 2, 2, handleCancel),
		sig("GET", "/api/v3/openOrders", 3, 3, handleOpenOrders),
		sig("DELETE", "/api/v3/openOrders", 3, 5, handleCancelAll),
		sig("GET", "/api/v3/allOrders", 10, 10, handleAllOrders),
		sig("GET", "/api/v3/myTrades", 5, 5, handleMyTrades),
		// ccxt's fetchBalance asks with the trailing slash: both are served
		sig("GET", "/api/v3/account", 5, 5, handleAccount),
		sig("GET", "/api/v3/account/", 5, 5, handleAccount),
		sig("POST", "/api/v3/tax/income", 5, 50, handleIncome),
		sig("POST", "/api/v3/account/bills", 5, 5, handleBills),
		sig("POST", "/api/v3/account/fundingBills", 5, 5, handleFundingBills),
		sig("GET", "/api/v3/apiReferral/rebate/recentRecord", 5, 5, handleRebateRecords),
	}
	eps = append(eps, contractTradeEndpoints(pub, sig)...)
	eps = append(eps, contractAccountEndpoints(pub, sig)...)
	return eps
}

// methodLabels bound the method label of the answers to requests no route
// takes: any other method is "other".
var methodLabels = [...]string{"GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS", "other"}

// failSet is the 404 or 405 answer of one path, as an endpoint per method
// label (the metrics tell them apart).
type failSet [len(methodLabels)]*endpoint

func newFailSet(path string, e *apiError, h *prometheus.HistogramVec) *failSet {
	var fs failSet
	for i, m := range methodLabels {
		fs[i] = &endpoint{method: m, path: path, ipWeight: 1, fail: e, obs: observers{h: h}}
	}
	return &fs
}

func (fs *failSet) of(method []byte) *endpoint {
	for i, m := range methodLabels[:len(methodLabels)-1] {
		if string(method) == m {
			return fs[i]
		}
	}
	return fs[len(methodLabels)-1]
}

// newRouter routes each endpoint by its method and path, and answers what
// no route matches from one place, the router's NotFound (404 -1000) and
// MethodNotAllowed (405 -1150), through serve, so that such requests are
// weighed, limited and observed like any other. Paths match exactly as
// sent, which is what clients sign: no redirects to a fixed case or
// slash, and no HEAD or OPTIONS answers the API does not define. h (nil:
// none) observes the answer times.
//
// The router's tree keeps a path's trailing-slash twin for its redirects
// and cannot hold both ("/api/v3/account" and ccxt's "/api/v3/account/"),
// so twins go to a second router, which the first falls through to.
func newRouter(eps []*endpoint, serve func(*fasthttp.RequestCtx, *endpoint), h *prometheus.HistogramVec) *router.Router {
	notFound := newFailSet("other", errNotFound, h)
	wrongMethod := map[string]*failSet{"": newFailSet("other", errMethod, h)}
	for _, e := range eps {
		e.obs.h = h
		if wrongMethod[e.path] == nil {
			wrongMethod[e.path] = newFailSet(e.path, errMethod, h)
		}
	}
	newR := func() *router.Router {
		r := router.New()
		r.RedirectTrailingSlash = false
		r.RedirectFixedPath = false
		r.HandleOPTIONS = false
		r.HandleMethodNotAllowed = true
		r.MethodNotAllowed = func(ctx *fasthttp.RequestCtx) {
			// The router lists OPTIONS in Allow, which is not served.
			var allow []byte
			for _, m := range bytes.Split(ctx.Response.Header.Peek("Allow"), []byte(", ")) {
				if string(m) != fasthttp.MethodOptions {
					if len(allow) > 0 {
						allow = append(allow, ", "...)
					}
					allow = append(allow, m...)
				}
			}
			ctx.Response.Header.SetBytesV("Allow", allow)
			fs := wrongMethod[string(ctx.Request.URI().PathOriginal())] // the router's path
			if fs == nil {
				fs = wrongMethod[""]
			}
			serve(ctx, fs.of(ctx.Method()))
		}
		return r
	}
	first, twins := newR(), newR()
	paths := map[string]bool{}
	for _, e := range eps {
		paths[e.path] = true
	}
	for _, e := range eps {
		r := first
		if p, ok := strings.CutSuffix(e.path, "/"); ok && paths[p] {
			r = twins
		}
		r.Handle(e.method, e.path, func(ctx *fasthttp.RequestCtx) { serve(ctx, e) })
	}
	first.NotFound = twins.Handler
	twins.NotFound = func(ctx *fasthttp.RequestCtx) { serve(ctx, notFound.of(ctx.Method())) }
	return first
}

// reqState is the per-request scratch, pooled: decoding, results and the
// response body reuse its buffers.
type reqState struct {
	buf    []byte
	hdr    []byte
	sc     scanner
	orders []engine.OrderView
	bids   []engine.Level
	asks   []engine.Level
	bals   []core.Balance
	bills  []engine.Bill
	trades []engine.Trade
	elems  [maxBatch]batchElem
	reqs   [maxBatch]*core.Request
	nowMs  int64
}

var statePool = sync.Pool{New: func() any {
	return &reqState{buf: make([]byte, 0, 4096), hdr: make([]byte, 0, 64)}
}}

// Scratch grown past these is dropped rather than pooled. Only an
// unbounded answer grows past them (openOrders of a user with thousands of
// working orders: 4,096 of them are 0.5 MB of views and 1.2 MB of JSON),
// and the pool would keep it until a GC clears the pool, which a server
// that hardly allocates seldom runs: every pooled state could end up
// holding the largest answer it ever made.
const (
	keepBufBytes = 1 << 20
	keepOrders   = 4096 // above allOrders' page (1,000)
)

// end finishes a request served with st (REST or admin): a panic in its
// handler is logged and answered 500, and st goes back to the pool. It is
// deferred itself: recover works only in the deferred call.
func (s *Server) end(ctx *fasthttp.RequestCtx, st *reqState) {
	if p := recover(); p != nil {
		s.log.Error("edge: panic serving a request", "method", string(ctx.Method()), "path", string(ctx.Path()),
			"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		ctx.Response.Reset()
		writeError(ctx, st.buf, errInternal)
	}
	st.buf = st.buf[:0]
	st.trim()
	statePool.Put(st)
}

// trim drops scratch grown past what a bounded answer needs.
func (st *reqState) trim() {
	if cap(st.buf) > keepBufBytes {
		st.buf = make([]byte, 0, 4096)
	}
	if cap(st.orders) > keepOrders {
		st.orders = nil
	}
}

// serveREST serves one REST request: the router calls serveEndpoint.
func (s *Server) serveREST(ctx *fasthttp.RequestCtx) {
	if e := ambiguous(&ctx.Request.Header); e != nil {
		refuse(ctx, e)
		return
	}
	s.restRouter.Handler(ctx)
}

func (s *Server) serveEndpoint(ctx *fasthttp.RequestCtx, ep *endpoint) {
	st := statePool.Get().(*reqState)
	start := time.Now()
	st.nowMs = start.UnixMilli()
	defer s.observe(ctx, ep, start) // after end: a panic's 500 is observed
	defer s.end(ctx, st)
	if e := s.dispatch(ctx, st, ep); e != nil {
		if e == errNotLeader {
			s.leaderHeader(ctx)
		}
		st.buf = writeError(ctx, st.buf, e)
		return
	}
	ctx.Response.Header.SetContentType("application/json")
	ctx.SetBody(st.buf)
}

func (s *Server) dispatch(ctx *fasthttp.RequestCtx, st *reqState, ep *endpoint) *apiError {
	ctx.Response.Header.DisableNormalizing() // X-USED-WEIGHT-IP-10S as written
	// Weights are counted (and reported) even when limits are disabled.
	rl := &s.cfg.RateLimits
	ipBudget, uidBudget := int64(math.MaxInt64), int64(math.MaxInt64)
	if rl.Enabled {
		ipBudget, uidBudget = rl.IPWeight, rl.UIDWeight
	}
	used, ok, retry := s.ipLim.take(ipKey(ctx.RemoteIP()), ep.ipWeight, ipBudget, st.nowMs)
	st.hdr = appendInt(st.hdr[:0], used)
	ctx.Response.Header.SetBytesV("X-USED-WEIGHT-IP-10S", st.hdr)
	if !ok {
		st.hdr = appendInt(st.hdr[:0], retry)
		ctx.Response.Header.SetBytesV("Retry-After", st.hdr)
		return errRateLimited
	}
	if len(ctx.Request.Body()) > MaxBodyBytes {
		ctx.SetConnectionClose()
		return errBodyTooLarge
	}
	if ep.fail != nil {
		return ep.fail
	}
	var c *cred
	if ep.signed && s.repl != nil {
		if e := s.replGate(ctx); e != nil {
			return e
		}
	}
	if ep.signed {
		var e *apiError
		if c, e = s.authenticate(ctx, st.nowMs); e != nil {
			return e
		}
		if rl.Enabled && c.uidBudget > 0 {
			uidBudget = c.uidBudget
		}
		used, ok, retry := s.uidLim.take(uint64(c.uid), ep.uidWeight, uidBudget, st.nowMs)
		st.hdr = appendInt(st.hdr[:0], used)
		ctx.Response.Header.SetBytesV("X-USED-WEIGHT-UID-10S", st.hdr)
		if !ok {
			st.hdr = appendInt(st.hdr[:0], retry)
			ctx.Response.Header.SetBytesV("Retry-After", st.hdr)
			return errRateLimited
		}
	}
	if ctx.IsPost() {
		if !isJSON(ctx.Request.Header.ContentType()) {
			return errContentType
		}
		if ctx.QueryArgs().Len() > 0 {
			return errPostQuery(ctx)
		}
	}
	st.buf = st.buf[:0]
	return ep.h(s, ctx, st, c)
}

// isJSON accepts "application/json" with optional parameters.
func isJSON(ct []byte) bool {
	const want = "application/json"
	if len(ct) < len(want) || !bytes.EqualFold(ct[:len(want)], []byte(want)) {
		return false
	}
	rest := ct[len(want):]
	return len(rest) == 0 || rest[0] == ';' || rest[0] == ' '
}

// query helpers ---------------------------------------------------------

// checkArgs refuses query parameters other than allowed ones (and repeats).
func checkArgs(ctx *fasthttp.RequestCtx, allowed ...string) *apiError {
	args := ctx.QueryArgs()
	n := 0
	for _, a := range allowed {
		if args.Has(a) {
			n++
		}
	}
	if args.Len() == n {
		return nil
	}
	var bad string
	for k := range args.All() {
		known := false
		for _, a := range allowed {
			if string(k) == a {
				known = true
			}
		}
		if !known {
			bad = string(k)
			break
		}
	}
	if bad == "" {
		return newErr(400, codeParam, "a query parameter is repeated")
	}
	return newErr(400, codeParam, fmt.Sprintf("unknown parameter %q", bad))
}

// argInt reads an optional non-negative integer query parameter.
func argInt(ctx *fasthttp.RequestCtx, name string, def int64) (int64, *apiError) {
	args := ctx.QueryArgs()
	if !args.Has(name) {
		return def, nil
	}
	v, ok := parseInt(args.Peek(name))
	if !ok {
		return 0, newErr(400, codeParam, "parameter "+name+" must be a non-negative integer")
	}
	return v, nil
}

// argIntIn is argInt for a parameter that must lie in [lo, hi].
func argIntIn(ctx *fasthttp.RequestCtx, name string, def, lo, hi int64) (int64, *apiError) {
	v, e := argInt(ctx, name, def)
	if e == nil && (v < lo || v > hi) {
		e = limitErr(name, lo, hi)
	}
	return v, e
}

// argSymbol resolves the symbol parameter; required or optional.
func (s *Server) argSymbol(ctx *fasthttp.RequestCtx, required bool) (*market, *apiError) {
	args := ctx.QueryArgs()
	if !args.Has("symbol") {
		if required {
			return nil, errSymbolMissing
		}
		return nil, nil
	}
	m := s.bySymbol[string(args.Peek("symbol"))]
	if m == nil {
		return nil, errSymbolInvalid
	}
	return m, nil
}

func limitErr(name string, lo, hi int64) *apiError {
	return newErr(400, codeParam, fmt.Sprintf("%s must be between %d and %d", name, lo, hi))
}
