package edge

import (
	"bytes"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// handler serves one endpoint. It appends a success body to st.buf and
// returns nil, or returns the error to answer. c is nil on public endpoints.
type handler func(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError

type endpoint struct {
	ipWeight  int64
	uidWeight int64
	signed    bool
	h         handler
}

type route struct{ get, post, del *endpoint }

// restRoutes is the REST surface with each endpoint's weights (seed §8 where
// listed; our choices, documented in docs/API.md, elsewhere).
func (s *Server) restRoutes() map[string]*route {
	pub := func(ip int64, h handler) *endpoint { return &endpoint{ipWeight: ip, h: h} }
	sig := func(ip, uid int64, h handler) *endpoint {
		return &endpoint{ipWeight: ip, uidWeight: uid, signed: true, h: h}
	}
	r := map[string]*route{
		"/api/v3/time":                     {get: pub(1, handleTime)},
		"/api/v3/ping":                     {get: pub(1, handlePing)},
		"/api/v3/exchangeInfo":             {get: pub(20, handleExchangeInfo)},
		"/api/v3/coins":                    {get: pub(5, handleCoins)},
		"/api/v3/market/depth":             {get: pub(5, handleDepth)},
		"/api/v3/market/trades":            {get: pub(5, handleMarketTrades)},
		"/api/v3/market/ticker/price":      {get: pub(2, handleTickerPrice)},
		"/api/v3/market/ticker/bookTicker": {get: pub(2, handleBookTicker)},
		"/api/v3/market/ticker/24hr":       {get: pub(5, handleTicker24h)},
		"/capi/v3/market/exchangeInfo":     {get: pub(5, handleContractInfo)},
		"/api/v3/order/batch":              {post: sig(10, 50, handleBatch), del: sig(5, 10, handleCancelBatch)},
		"/api/v3/order":                    {post: sig(2, 5, handlePlace), get: sig(2, 2, handleGetOrder), del: sig(2, 2, handleCancel)},
		"/api/v3/openOrders":               {get: sig(3, 3, handleOpenOrders), del: sig(3, 5, handleCancelAll)},
		"/api/v3/allOrders":                {get: sig(10, 10, handleAllOrders)},
		"/api/v3/myTrades":                 {get: sig(5, 5, handleMyTrades)},
		"/api/v3/account":                  {get: sig(5, 5, handleAccount)},
		"/api/v3/tax/income":               {post: sig(5, 50, handleIncome)},
	}
	r["/api/v3/account/"] = r["/api/v3/account"]
	return r
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
		s.logf("edge: panic serving %s %s: %v", ctx.Method(), ctx.Path(), p)
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

func (s *Server) serveREST(ctx *fasthttp.RequestCtx) {
	st := statePool.Get().(*reqState)
	start := time.Now()
	st.nowMs = start.UnixMilli()
	defer func() { s.latency.record(time.Since(start)) }()
	defer s.end(ctx, st)
	if e := s.dispatch(ctx, st); e != nil {
		st.buf = writeError(ctx, st.buf, e)
		return
	}
	ctx.Response.Header.SetContentType("application/json")
	ctx.SetBody(st.buf)
}

func (s *Server) dispatch(ctx *fasthttp.RequestCtx, st *reqState) *apiError {
	rt := s.routes[string(ctx.Path())]
	var ep *endpoint
	if rt != nil {
		switch string(ctx.Method()) {
		case "GET":
			ep = rt.get
		case "POST":
			ep = rt.post
		case "DELETE":
			ep = rt.del
		}
	}
	ctx.Response.Header.DisableNormalizing() // X-USED-WEIGHT-IP-10S as written
	w := int64(1)
	if ep != nil {
		w = ep.ipWeight
	}
	// Weights are counted (and reported) even when limits are disabled.
	rl := &s.cfg.RateLimits
	ipBudget, uidBudget := int64(math.MaxInt64), int64(math.MaxInt64)
	if rl.Enabled {
		ipBudget, uidBudget = rl.IPWeight, rl.UIDWeight
	}
	used, ok, retry := s.ipLim.take(ipKey(ctx.RemoteIP()), w, ipBudget, st.nowMs)
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
	if rt == nil {
		return errNotFound
	}
	if ep == nil {
		return errMethod
	}
	var c *cred
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
	if ctx.IsPost() && !isJSON(ctx.Request.Header.ContentType()) {
		return errContentType
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
