package load

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// fakeExchange checks every request the way docs/API.md ("Authentication")
// says the server does, with its own HMAC code, and keeps just enough order
// state to check that cancels name orders the same user placed.
type fakeExchange struct {
	mu        sync.Mutex
	creds     map[string]Cred
	markets   map[string]Market
	contracts map[string]Market // by V3 name, on /capi/v3/order
	owner     map[int64]string  // orderId -> apiKey + " " + path
	placed    map[string]int    // accepted placements by path
	nextID    int64
	bad       []string
}

func (f *fakeExchange) fail(ctx *fasthttp.RequestCtx, status int, format string, a ...any) {
	f.bad = append(f.bad, fmt.Sprintf(format, a...))
	ctx.SetStatusCode(status)
	ctx.SetBodyString(`{"code":-1000,"msg":"fake: rejected"}`)
}

func (f *fakeExchange) handle(ctx *fasthttp.RequestCtx) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := &ctx.Request.Header
	key := string(h.Peek("ACCESS-KEY"))
	c, ok := f.creds[key]
	if !ok {
		f.fail(ctx, 401, "unknown key %q", key)
		return
	}
	if string(h.Peek("ACCESS-PASSPHRASE")) != c.Passphrase {
		f.fail(ctx, 401, "bad passphrase")
		return
	}
	ts := string(h.Peek("ACCESS-TIMESTAMP"))
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.UnixMilli(ms)).Abs() > 30*time.Second {
		f.fail(ctx, 401, "bad timestamp %q", ts)
		return
	}
	msg := ts + string(ctx.Method()) + string(ctx.Path())
	if q := ctx.URI().QueryString(); len(q) > 0 {
		msg += "?" + string(q)
	}
	msg += string(ctx.PostBody())
	mac := hmac.New(sha256.New, []byte(c.SecretKey))
	mac.Write([]byte(msg))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if got := string(h.Peek("ACCESS-SIGN")); !hmac.Equal([]byte(got), []byte(want)) {
		f.fail(ctx, 401, "bad signature for %q: got %s, want %s", msg, got, want)
		return
	}
	path := string(ctx.Path())
	markets := f.markets
	switch path {
	case "/api/v3/order":
	case "/capi/v3/order":
		markets = f.contracts
	default:
		f.fail(ctx, 404, "path %s", ctx.Path())
		return
	}
	switch string(ctx.Method()) {
	case "POST":
		if string(h.ContentType()) != "application/json" {
			f.fail(ctx, 400, "content type %q", h.ContentType())
			return
		}
		var o struct{ Symbol, Side, PositionSide, Type, TimeInForce, Quantity, Price string }
		dec := json.NewDecoder(strings.NewReader(string(ctx.PostBody())))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			f.fail(ctx, 400, "body %s: %v", ctx.PostBody(), err)
			return
		}
		m, ok := markets[o.Symbol]
		// contracts: opens only, BUY LONG or SELL SHORT; spot: no positionSide
		wantPos := map[string]string{"BUY": "LONG", "SELL": "SHORT"}[o.Side]
		if !m.Contract {
			wantPos = ""
		}
		if !ok || (o.Side != "BUY" && o.Side != "SELL") || o.PositionSide != wantPos || o.Type != "LIMIT" || (o.TimeInForce != "GTC" && o.TimeInForce != "IOC") ||
			decimals(o.Price) != m.TickDecimals || decimals(o.Quantity) != m.StepDecimals {
			f.fail(ctx, 400, "bad order on %s: %s", path, ctx.PostBody())
			return
		}
		f.nextID++
		f.placed[path]++
		if o.TimeInForce == "GTC" {
			f.owner[f.nextID] = key + " " + path
		}
		fmt.Fprintf(ctx, `{"symbol":%q,"orderId":%d,"status":"NEW"}`, o.Symbol, f.nextID)
	case "DELETE":
		args := ctx.QueryArgs()
		id, err := strconv.ParseInt(string(args.Peek("orderId")), 10, 64)
		if _, ok := markets[string(args.Peek("symbol"))]; !ok || err != nil || f.owner[id] != key+" "+path {
			f.fail(ctx, 400, "cancel of %s by %s: not its order", ctx.QueryArgs(), key)
			return
		}
		delete(f.owner, id)
		fmt.Fprintf(ctx, `{"orderId":"%d","status":"CANCELED"}`, id)
	default:
		f.fail(ctx, 405, "method %s", ctx.Method())
	}
}

func decimals(s string) int {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}

func TestGeneratorAgainstSigningFake(t *testing.T) {
	t.Run("spot", func(t *testing.T) { testAgainstSigningFake(t, 0) })
	t.Run("contracts", func(t *testing.T) { testAgainstSigningFake(t, 0.3) })
}

// testAgainstSigningFake runs the generator with share of its placements
// on contracts against the fake.
func testAgainstSigningFake(t *testing.T, share float64) {
	markets, _ := SelectMarkets(DefaultMarkets(), "BTCUSDT,DOGEUSDT,XRPUSDT")
	f := &fakeExchange{creds: map[string]Cred{}, markets: map[string]Market{}, contracts: map[string]Market{},
		owner: map[int64]string{}, placed: map[string]int{}}
	var contracts []Market
	if share > 0 {
		contracts = DefaultContracts()
	}
	for _, m := range contracts {
		f.contracts[m.Symbol] = m
	}
	var users []Cred
	for i := 0; i < 5; i++ {
		c := Cred{UID: int64(i + 1), APIKey: fmt.Sprintf("key%d", i), SecretKey: fmt.Sprintf("secret-%d", i), Passphrase: fmt.Sprintf("pass%d", i)}
		users = append(users, c)
		f.creds[c.APIKey] = c
	}
	for _, m := range markets {
		f.markets[m.Symbol] = m
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: f.handle}
	go srv.Serve(ln)
	defer srv.Shutdown()

	g, err := New(Target{Addr: ln.Addr().String(), Users: users, Markets: markets, Contracts: contracts, Conns: 4}, Mix{Place: 0.5, Take: 0.2, Contracts: share, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if failed, first := g.Populate(10); failed != 0 {
		t.Fatalf("Populate: %d failed, first %s", failed, first)
	}
	f.mu.Lock()
	if got, want := f.placed["/capi/v3/order"], 10*len(contracts); got != want {
		t.Errorf("Populate placed %d contract orders, want %d", got, want)
	}
	f.mu.Unlock()
	r := g.Run(Step{Rate: 2000, Duration: 300 * time.Millisecond})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bad) > 0 {
		t.Fatalf("fake rejected %d requests, first: %s", len(f.bad), f.bad[0])
	}
	if r.Sent != r.Scheduled || r.OK != r.Sent || r.Failed+r.Rejected+r.Unsent != 0 {
		t.Errorf("step: scheduled %d sent %d ok %d rejected %d failed %d unsent %d, want all ok; errors %v",
			r.Scheduled, r.Sent, r.OK, r.Rejected, r.Failed, r.Unsent, r.Errors)
	}
	if r.Ops[OpCancel] == 0 || r.Ops[OpPlace] == 0 || r.Ops[OpTake] == 0 {
		t.Errorf("ops = %v, want every kind", r.Ops)
	}
	ct := r.Ops[OpCtPlace] + r.Ops[OpCtTake] + r.Ops[OpCtCancel]
	if share == 0 && ct != 0 {
		t.Errorf("ops = %v: contract orders from a spot-only mix", r.Ops)
	}
	if share > 0 {
		if r.Ops[OpCtCancel] == 0 || r.Ops[OpCtPlace] == 0 || r.Ops[OpCtTake] == 0 {
			t.Errorf("ops = %v, want every contract kind", r.Ops)
		}
		// 600 requests: a share of 0.3 is 180 +- 3 sigma (~34)
		if got := float64(ct) / float64(r.Sent); got < share-0.1 || got > share+0.1 {
			t.Errorf("contract share of requests %.2f, want about %.2f (ops %v)", got, share, r.Ops)
		}
	}
	if r.Hist.TotalCount() != r.Sent {
		t.Errorf("histogram has %d samples, want %d", r.Hist.TotalCount(), r.Sent)
	}
	if a := r.Achieved(); a < 1500 {
		t.Errorf("achieved %.0f/s at 2000/s offered against an idle fake", a)
	}
}

// TestStallIsCharged checks coordinated omission is avoided: when the
// server stalls, every request due during the stall is charged the wait,
// not only the one that was in flight.
func TestStallIsCharged(t *testing.T) {
	// One connection: a closed-loop tester would send nothing during the
	// stall and record a single slow request.
	g, _ := stallingTarget(t, 200*time.Millisecond, 1)
	r := g.Run(Step{Rate: 1000, Duration: 400 * time.Millisecond})
	// About 200 of the 400 requests were due during the stall; their waits
	// range down from 200 ms, so p75 is about 100 ms. A closed-loop tester
	// would report one slow request: p75 of a normal answer.
	if p := r.Percentile(75); p < 50*time.Millisecond {
		t.Errorf("p75 = %v after a 200 ms stall at 1000/s, want the stall charged to the requests it delayed", p)
	}
	if m := r.Max(); m < 190*time.Millisecond {
		t.Errorf("max = %v, want >= 190ms", m)
	}
	// The delayed requests are answered together when the stall ends: the
	// timeline's slow answers (over 2 ms) are about 200, nearly all in the
	// one or two 100 ms windows the stall ended in, which miss a 2 ms p99.
	slow, inWorst, met, windows := r.SlowSpread(2)
	if slow < 150 || slow > r.Hist.TotalCount() {
		t.Errorf("%d slow answers of %d, want about 200", slow, r.Hist.TotalCount())
	}
	if inWorst*10 < slow*9 {
		t.Errorf("the 2 windows with the most slow answers hold %d of %d, want nearly all", inWorst, slow)
	}
	if met >= windows {
		t.Errorf("2 ms p99 met in %d of %d windows with answers, want the stall's to miss it", met, windows)
	}
}

// TestLeadIsNotRecorded: a step's lead-in is sent at the step's rate but
// neither counted nor timed; a stall in it is not charged to the step, and
// Recording is called once, when the recorded part starts.
func TestLeadIsNotRecorded(t *testing.T) {
	g, served := stallingTarget(t, 150*time.Millisecond, 2)
	var calls int
	var at time.Time
	t0 := time.Now()
	r := g.Run(Step{Rate: 1000, Duration: 300 * time.Millisecond, Lead: 400 * time.Millisecond, Recording: func() {
		calls++
		at = time.Now()
	}})
	if n := served(); n != 700 {
		t.Errorf("the target served %d requests, want 400 of lead-in and 300 recorded", n)
	}
	if r.Scheduled != 300 || r.Sent != 300 || r.OK != 300 || r.Hist.TotalCount() != 300 || r.Pacer.TotalCount() > 300 {
		t.Errorf("scheduled %d sent %d ok %d timed %d paced %d, want the 300 recorded requests only",
			r.Scheduled, r.Sent, r.OK, r.Hist.TotalCount(), r.Pacer.TotalCount())
	}
	if m := r.Max(); m >= 100*time.Millisecond {
		t.Errorf("max = %v: the lead-in's 150 ms stall was charged to the step", m)
	}
	if calls != 1 || at.Sub(t0) < 390*time.Millisecond || r.Start.Sub(t0) < 400*time.Millisecond || at.Before(r.Start) {
		t.Errorf("Recording called %d times, %v after the start, recorded schedule from %v: want once, at the lead-in's end (400 ms)",
			calls, at.Sub(t0), r.Start.Sub(t0))
	}
}

// stallingTarget serves orders on loopback, holding the first request for
// stall, and returns a generator with conns connections to it (closed with
// the test) and a count of the requests served.
func stallingTarget(t *testing.T, stall time.Duration, conns int) (*Generator, func() int) {
	t.Helper()
	var mu sync.Mutex
	served := 0
	h := func(ctx *fasthttp.RequestCtx) {
		mu.Lock()
		served++
		first := served == 1
		mu.Unlock()
		if first {
			time.Sleep(stall)
		}
		ctx.SetBodyString(`{"orderId":1}`)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	markets, _ := SelectMarkets(DefaultMarkets(), "BTCUSDT")
	g, err := New(Target{Addr: ln.Addr().String(), Users: []Cred{{APIKey: "k", SecretKey: "s"}}, Markets: markets, Conns: conns}, Mix{Place: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g, func() int {
		mu.Lock()
		defer mu.Unlock()
		return served
	}
}
