package load

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/valyala/fasthttp"
)

// Target is the server under load and who trades on it.
type Target struct {
	Addr    string // host:port of the REST listener
	Users   []Cred
	Markets []Market // spot markets
	// Contracts are perpetual contracts (Market.Contract) the mix may send
	// orders to (Mix.Contracts); none: a spot-only generator.
	Contracts []Market
	Conns     int           // keep-alive connections = workers
	Timeout   time.Duration // per request; 0: 5 s
}

// Mix is the request mix.
type Mix struct {
	Place float64 // fraction of requests that place an order; the rest cancel one
	Take  float64 // fraction of placements that are IOC orders crossing the spread
	// Contracts is the fraction of placements sent to a perpetual
	// contract (POST /capi/v3/order, opens: BUY LONG and SELL SHORT) instead
	// of a spot market; cancels follow, since they cancel the worker's
	// oldest resting order of either kind (DELETE /capi/v3/order for a
	// contract's). 0: spot only, and the random stream is the spot-only
	// generator's.
	Contracts float64
	Seed      uint64 // seeds every worker's generator (worker i uses Seed+i)
}

// Step is one fixed-rate run.
type Step struct {
	Rate     float64       // requests per second (arrival rate)
	Duration time.Duration // length of the arrival schedule
	// Grace bounds how long after the schedule's end requests may still be
	// sent; requests not started by then are counted as Unsent (and the
	// step is over-saturated). 0: 5 s.
	Grace time.Duration
	// Lead is sent at the same rate before the recorded schedule, as one
	// schedule, so that the recorded part starts under load rather than
	// after the pause between steps (after an idle spell this machine's
	// disk answers its first fdatasyncs 2-5 times slower).
	// Its answers are not recorded. 0: none.
	Lead time.Duration
	// Recording, if set, is called when the recorded part starts (at the
	// intended time of its first request), e.g. to read counters that
	// should cover only it.
	Recording func()
	Progress  func(p Progress) // called about once a second; may be nil
}

// Progress is a running step's state.
type Progress struct {
	Elapsed           time.Duration
	Due, Sent, Done   int64 // scheduled so far, started, finished
	Failed            int64
	MaxLatency        time.Duration
	Rate              float64
	ScheduledRequests int64
}

// Histogram bounds: latencies in microseconds, 1 µs to 2 min, 3 digits.
const (
	histMin    = 1
	histMax    = 120_000_000
	histDigits = 3
)

// NewHistogram returns an empty latency histogram (microseconds).
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, histDigits)
}

// Op kinds.
const (
	OpPlace  = "place"  // resting GTC limit order
	OpTake   = "take"   // IOC limit order crossing the spread
	OpCancel = "cancel" // cancel of an order this generator placed
	// The same on a perpetual contract (opens: BUY LONG, SELL SHORT).
	OpCtPlace  = "ct-place"
	OpCtTake   = "ct-take"
	OpCtCancel = "ct-cancel"
)

// OpKinds are the op kinds in report order.
var OpKinds = []string{OpPlace, OpTake, OpCancel, OpCtPlace, OpCtTake, OpCtCancel}

// Generator drives one target. Its workers keep their connections and the
// orders they placed (to cancel them later) across steps.
type Generator struct {
	t       Target
	mix     Mix
	markets []Market // t.Markets, then t.Contracts: resting.market indexes it
	nSpot   int
	client  *fasthttp.HostClient
	workers []*worker

	// Progress counters of the running step (atomics).
	next, sent, done, failed, maxLat atomic.Int64
}

// New returns a generator for t with mix m.
func New(t Target, m Mix) (*Generator, error) {
	if len(t.Users) == 0 || len(t.Markets) == 0 {
		return nil, errors.New("load: need at least one user and one market")
	}
	if m.Contracts < 0 || m.Contracts > 1 || m.Contracts > 0 && len(t.Contracts) == 0 {
		return nil, errors.New("load: Mix.Contracts must be in [0, 1], and above 0 only with contracts")
	}
	for _, c := range t.Contracts {
		if !c.Contract {
			return nil, fmt.Errorf("load: %s in Target.Contracts is not a contract", c.Symbol)
		}
	}
	if t.Conns <= 0 {
		t.Conns = 64
	}
	if t.Timeout <= 0 {
		t.Timeout = 5 * time.Second
	}
	g := &Generator{t: t, mix: m, nSpot: len(t.Markets)}
	g.markets = append(append(g.markets, t.Markets...), t.Contracts...)
	g.client = &fasthttp.HostClient{
		Addr:                          t.Addr,
		MaxConns:                      t.Conns,
		MaxConnWaitTimeout:            t.Timeout,
		ReadTimeout:                   t.Timeout,
		WriteTimeout:                  t.Timeout,
		MaxIdleConnDuration:           time.Minute,
		NoDefaultUserAgentHeader:      true,
		DisableHeaderNamesNormalizing: true,
	}
	for i := 0; i < t.Conns; i++ {
		g.workers = append(g.workers, newWorker(g, i))
	}
	return g, nil
}

// Close closes idle connections.
func (g *Generator) Close() { g.client.CloseIdleConnections() }

// Run runs one step and returns its result. Steps must not overlap.
func (g *Generator) Run(s Step) *Result {
	if s.Grace <= 0 {
		s.Grace = 5 * time.Second
	}
	recorded := int64(s.Rate * s.Duration.Seconds())
	if recorded < 1 {
		recorded = 1
	}
	lead := int64(s.Rate * s.Lead.Seconds())
	total := lead + recorded
	g.next.Store(0)
	g.sent.Store(0)
	g.done.Store(0)
	g.failed.Store(0)
	g.maxLat.Store(0)
	// Every worker is reset before the schedule starts: clearing their
	// histograms (~220 KB each, two per worker plus one per op) took tens
	// of milliseconds with 128 workers, and the requests due meanwhile were
	// charged that wait as if the server had stalled.
	for _, w := range g.workers {
		w.reset()
	}
	sch := Schedule{Start: time.Now().Add(2 * time.Millisecond), Rate: s.Rate, Total: total, Lead: lead}
	hardEnd := sch.End().Add(s.Grace)
	recStart := sch.Intended(lead)
	var rwg sync.WaitGroup
	if s.Recording != nil {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			time.Sleep(time.Until(recStart))
			s.Recording()
		}()
	}

	stop := make(chan struct{})
	var pwg sync.WaitGroup
	if s.Progress != nil {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			tk := time.NewTicker(time.Second)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-tk.C:
					s.Progress(Progress{
						Elapsed: now.Sub(sch.Start), Due: min(sch.Due(now), total),
						Sent: g.sent.Load(), Done: g.done.Load(), Failed: g.failed.Load(),
						MaxLatency: time.Duration(g.maxLat.Load()) * time.Microsecond,
						Rate:       s.Rate, ScheduledRequests: total,
					})
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for _, w := range g.workers {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			w.run(&sch, hardEnd)
		}(w)
	}
	wg.Wait()
	close(stop)
	pwg.Wait()
	rwg.Wait()

	r := &Result{Rate: s.Rate, Duration: s.Duration, Scheduled: recorded, Hist: NewHistogram(), Pacer: NewHistogram(), ByOp: map[string]*hdrhistogram.Histogram{},
		Ops: map[string]int64{}, Errors: map[string]*ErrorKind{}}
	var last time.Time
	for _, w := range g.workers {
		r.add(&w.res)
		if w.last.After(last) {
			last = w.last
		}
	}
	r.Start = recStart
	r.Elapsed = last.Sub(recStart)
	if r.Elapsed < s.Duration {
		r.Elapsed = s.Duration
	}
	return r
}

// Populate places perMarket resting orders in every market and contract,
// half bids and half asks spread over the makers' price range (contracts:
// BUY LONG and SELL SHORT opens), closed-loop over all connections. The
// generator does not cancel them: they are the books' standing depth. It
// returns how many failed and the first failure.
func (g *Generator) Populate(perMarket int) (failed int64, first string) {
	n := int64(len(g.markets))
	total := int64(perMarket) * n
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range g.workers {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			for {
				j := next.Add(1) - 1
				if j >= total {
					return
				}
				mi := int(j % n)
				m := &g.markets[mi]
				k := j / n
				buy := k%2 == 0
				off := 1 + (k/2)%m.Spread
				qty := m.MinQty + (k*7919)%(m.MaxQty-m.MinQty+1)
				u := int(j % int64(len(g.t.Users)))
				w.buildPlace(u, mi, buy, off, qty, false)
				o := w.send(time.Now().Add(g.t.Timeout))
				if o.kind != outcomeOK {
					mu.Lock()
					failed++
					if first == "" {
						first = o.key + ": " + o.msg
					}
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	return failed, first
}

// Schedule is a fixed-rate arrival schedule: request i is due at
// Start + i/Rate.
type Schedule struct {
	Start time.Time
	Rate  float64
	Total int64
	Lead  int64 // the first Lead requests are sent but not recorded
}

// Intended returns request i's intended send time.
func (s *Schedule) Intended(i int64) time.Time {
	return s.Start.Add(time.Duration(float64(i) * 1e9 / s.Rate))
}

// End returns the intended time of the last request.
func (s *Schedule) End() time.Time { return s.Intended(s.Total - 1) }

// Due returns how many requests are due by t.
func (s *Schedule) Due(t time.Time) int64 {
	d := t.Sub(s.Start)
	if d < 0 {
		return 0
	}
	return int64(d.Seconds()*s.Rate) + 1
}

type outcomeKind uint8

const (
	outcomeOK       outcomeKind = iota
	outcomeRejected             // business reject (-2xxx): expected under this mix
	outcomeFailed               // any other error response or transport error
)

type outcome struct {
	kind outcomeKind
	key  string // error kind, for non-OK
	msg  string
	id   int64 // orderId of an accepted order
}

type resting struct {
	user   int32
	market int32
	id     int64
}

// worker owns one connection's worth of requests: its random stream, its
// signers, its request buffers and the orders it placed.
type worker struct {
	g       *Generator
	rng     *rand.Rand
	signers []*Signer // by user index, created on first use
	req     *fasthttp.Request
	resp    *fasthttp.Response
	op      string
	user    int
	market  int
	wantID  bool
	body    []byte
	uri     []byte
	query   []byte
	sig     []byte
	ts      []byte

	// orders placed and not yet cancelled, oldest first (ring buffer).
	fifo       []resting
	head, size int

	res  Result // this step's share
	last time.Time
}

const fifoCap = 1 << 14

// maxWindows bounds a step's timeline (10 minutes).
const maxWindows = 6000

func newWorker(g *Generator, i int) *worker {
	return &worker{
		g:       g,
		rng:     rand.New(rand.NewPCG(g.mix.Seed+uint64(i), 0x9e3779b97f4a7c15)),
		signers: make([]*Signer, len(g.t.Users)),
		req:     fasthttp.AcquireRequest(),
		resp:    fasthttp.AcquireResponse(),
		fifo:    make([]resting, fifoCap),
	}
}

func (w *worker) reset() {
	// Histograms are reused (about 220 KB each): Run merges them into the
	// step's result before the next reset.
	hist, pacer, byOp := w.res.Hist, w.res.Pacer, w.res.ByOp
	if hist == nil {
		hist, pacer, byOp = NewHistogram(), NewHistogram(), map[string]*hdrhistogram.Histogram{}
	}
	hist.Reset()
	pacer.Reset()
	for _, h := range byOp {
		h.Reset()
	}
	w.res = Result{Hist: hist, Pacer: pacer, ByOp: byOp, Windows: w.res.Windows[:0], Ops: map[string]int64{}, Errors: map[string]*ErrorKind{}}
	w.last = time.Time{}
}

func (w *worker) push(r resting) {
	if w.size == len(w.fifo) { // full: forget the oldest (it stays on the book)
		w.head = (w.head + 1) % len(w.fifo)
		w.size--
	}
	w.fifo[(w.head+w.size)%len(w.fifo)] = r
	w.size++
}

func (w *worker) pop() (resting, bool) {
	if w.size == 0 {
		return resting{}, false
	}
	r := w.fifo[w.head]
	w.head = (w.head + 1) % len(w.fifo)
	w.size--
	return r, true
}

func (w *worker) run(sch *Schedule, hardEnd time.Time) {
	g := w.g
	recStart := sch.Intended(sch.Lead)
	for {
		i := g.next.Add(1) - 1
		if i >= sch.Total {
			return
		}
		intended := sch.Intended(i)
		// The latency clock starts at the intended send time. A worker that
		// picked the request up early sleeps until then, and Go's timers
		// wake it up late (about 0.8 ms on Linux): that lateness is the
		// generator's, not the server's, so for an idle worker the clock
		// starts when it woke, and the lateness is kept apart (Pacer). A
		// worker that picks a request up after its intended time (every
		// worker was busy: the server is behind) counts from the intended
		// time, which is what keeps stalls visible.
		start := intended
		lead := i < sch.Lead
		if d := time.Until(intended); d > 0 {
			time.Sleep(d)
			start = time.Now()
			if !lead {
				w.res.Pacer.RecordValue(clampLat(start.Sub(intended).Microseconds()))
			}
		}
		if time.Now().After(hardEnd) {
			// The server is so far behind that this request would start
			// after the step's end plus grace: count it, do not send it.
			if !lead {
				w.res.Unsent++
			}
			continue
		}
		w.next()
		g.sent.Add(1)
		o := w.send(time.Now().Add(g.t.Timeout))
		now := time.Now()
		if o.kind == outcomeOK && w.wantID && o.id > 0 {
			w.push(resting{user: int32(w.user), market: int32(w.market), id: o.id})
		}
		if lead {
			g.done.Add(1)
			continue
		}
		lat := clampLat(now.Sub(start).Microseconds())
		w.res.Hist.RecordValue(lat)
		oh := w.res.ByOp[w.op]
		if oh == nil {
			oh = NewHistogram()
			w.res.ByOp[w.op] = oh
		}
		oh.RecordValue(lat)
		if wi := int(now.Sub(recStart) / WindowLen); wi >= 0 && wi < maxWindows {
			if wi >= len(w.res.Windows) {
				for len(w.res.Windows) <= wi {
					w.res.Windows = append(w.res.Windows, Window{})
				}
			}
			w.res.Windows[wi].Count++
			w.res.Windows[wi].Max = max(w.res.Windows[wi].Max, lat)
			if lat > SlowUs {
				w.res.Windows[wi].Slow++
			}
		}
		w.last = now
		for {
			m := g.maxLat.Load()
			if lat <= m || g.maxLat.CompareAndSwap(m, lat) {
				break
			}
		}
		w.res.Ops[w.op]++
		w.res.Sent++
		switch o.kind {
		case outcomeOK:
			w.res.OK++
		case outcomeRejected:
			w.res.Rejected++
			w.res.addError(w.op+" "+o.key, o.msg)
		default:
			w.res.Failed++
			g.failed.Add(1)
			w.res.addError(w.op+" "+o.key, o.msg)
		}
		g.done.Add(1)
	}
}

// next builds the next request of the mix into w.req.
func (w *worker) next() {
	g := w.g
	mix := g.mix
	if w.rng.Float64() >= mix.Place {
		if r, ok := w.pop(); ok {
			w.buildCancel(int(r.user), int(r.market), r.id)
			return
		}
	}
	u := w.rng.IntN(len(g.t.Users))
	var mi int
	if mix.Contracts > 0 && w.rng.Float64() < mix.Contracts {
		mi = g.nSpot + w.rng.IntN(len(g.markets)-g.nSpot)
	} else {
		mi = w.rng.IntN(g.nSpot)
	}
	m := &g.markets[mi]
	buy := w.rng.IntN(2) == 0
	qty := m.MinQty + w.rng.Int64N(m.MaxQty-m.MinQty+1)
	if w.rng.Float64() < mix.Take {
		// Cross to the far end of the makers' range: fills against the
		// best levels, the rest expires.
		w.buildPlace(u, mi, buy, -m.Spread, qty/4+m.MinQty, true)
		return
	}
	w.buildPlace(u, mi, buy, 1+w.rng.Int64N(m.Spread), qty, false)
}

var (
	pathOrder   = "/api/v3/order"
	pathCtOrder = "/capi/v3/order"
	jsonCT      = "application/json"
)

// buildPlace builds a limit order for user u at m.Mid -/+ off ticks (BUY
// below, SELL above; negative off crosses). ioc makes it an IOC taker. On
// a contract it opens: BUY LONG or SELL SHORT.
func (w *worker) buildPlace(u, mi int, buy bool, off, qty int64, ioc bool) {
	m := &w.g.markets[mi]
	price := m.Mid - off
	side := `","side":"BUY`
	if m.Contract {
		side = `","side":"BUY","positionSide":"LONG`
	}
	if !buy {
		price = m.Mid + off
		side = `","side":"SELL`
		if m.Contract {
			side = `","side":"SELL","positionSide":"SHORT`
		}
	}
	b := append(w.body[:0], `{"symbol":"`...)
	b = append(b, m.Symbol...)
	b = append(b, side...)
	b = append(b, `","type":"LIMIT","timeInForce":"`...)
	if ioc {
		b = append(b, "IOC"...)
		w.op = OpTake
		w.wantID = false
	} else {
		b = append(b, "GTC"...)
		w.op = OpPlace
		w.wantID = true
	}
	path := pathOrder
	if m.Contract {
		path = pathCtOrder
		w.op = OpCtPlace
		if ioc {
			w.op = OpCtTake
		}
	}
	b = append(b, `","quantity":"`...)
	b = AppendFixed(b, qty, m.StepDecimals)
	b = append(b, `","price":"`...)
	b = AppendFixed(b, price, m.TickDecimals)
	b = append(b, `"}`...)
	w.body = b
	w.user = u
	w.market = mi
	w.query = w.query[:0]
	w.uri = append(w.uri[:0], path...)
	w.sign(u, fasthttp.MethodPost, path)
}

func (w *worker) buildCancel(u, mi int, id int64) {
	m := &w.g.markets[mi]
	path, op := pathOrder, OpCancel
	if m.Contract {
		path, op = pathCtOrder, OpCtCancel
	}
	q := append(w.query[:0], "symbol="...)
	q = append(q, m.Symbol...)
	q = append(q, "&orderId="...)
	q = strconv.AppendInt(q, id, 10)
	w.query = q
	w.uri = append(append(append(w.uri[:0], path...), '?'), q...)
	w.body = w.body[:0]
	w.op = op
	w.wantID = false
	w.user = u
	w.market = mi
	w.sign(u, fasthttp.MethodDelete, path)
}

func (w *worker) sign(u int, method, path string) {
	c := &w.g.t.Users[u]
	s := w.signers[u]
	if s == nil {
		s = NewSigner(c.SecretKey)
		w.signers[u] = s
	}
	ts := time.Now().UnixMilli()
	w.sig = s.AppendSign(w.sig[:0], ts, method, path, w.query, w.body)
	w.ts = strconv.AppendInt(w.ts[:0], ts, 10)
	req := w.req
	req.Reset()
	req.Header.DisableNormalizing()
	req.Header.SetMethod(method)
	req.SetRequestURIBytes(w.uri)
	req.Header.SetHost(w.g.t.Addr)
	req.Header.Set("ACCESS-KEY", c.APIKey)
	req.Header.SetBytesV("ACCESS-SIGN", w.sig)
	req.Header.Set("ACCESS-PASSPHRASE", c.Passphrase)
	req.Header.SetBytesV("ACCESS-TIMESTAMP", w.ts)
	if len(w.body) > 0 {
		req.Header.SetContentType(jsonCT)
		req.SetBodyRaw(w.body)
	}
}

// send sends w.req and classifies the answer.
func (w *worker) send(deadline time.Time) outcome {
	w.resp.Reset()
	err := w.g.client.DoDeadline(w.req, w.resp, deadline)
	if err != nil {
		if errors.Is(err, fasthttp.ErrTimeout) {
			return outcome{kind: outcomeFailed, key: "timeout", msg: err.Error()}
		}
		return outcome{kind: outcomeFailed, key: "transport", msg: err.Error()}
	}
	return classify(w.resp.StatusCode(), w.resp.Body())
}

// classify turns a response into an outcome: 200 with an "orderId" is OK;
// an error body's code names the kind; -2xxx (order rejected, order not
// found) and -3200 (a contract order not found) are business rejects that
// this mix produces legitimately (a cancel can race with a fill).
func classify(status int, body []byte) outcome {
	code, hasCode := jsonInt(body, `"code":`)
	if status == fasthttp.StatusOK && !hasCode || status == fasthttp.StatusOK && code == 0 {
		id, ok := jsonInt(body, `"orderId":`)
		if ok {
			return outcome{kind: outcomeOK, id: id}
		}
		if bytes.Contains(body, []byte(`"orderId"`)) || len(body) == 0 {
			return outcome{kind: outcomeOK}
		}
		return outcome{kind: outcomeFailed, key: "HTTP 200 without orderId", msg: sample(body)}
	}
	key := fmt.Sprintf("HTTP %d", status)
	if hasCode {
		key += " code " + strconv.FormatInt(code, 10)
	}
	k := outcomeFailed
	if hasCode && (code <= -2000 && code > -3000 || code == codeCtNotFound) {
		k = outcomeRejected
	}
	return outcome{kind: k, key: key, msg: sample(body)}
}

// codeCtNotFound is the contract family's "order not found" (docs/API.md,
// "Perpetual contracts"): a contract cancel that lost the race with a fill.
const codeCtNotFound = -3200

func sample(b []byte) string {
	if len(b) > 160 {
		b = b[:160]
	}
	return string(b)
}

// jsonInt finds key (with its colon) in a flat JSON body and parses the
// integer after it, quoted or not. It is enough for the server's replies and
// allocates nothing.
func jsonInt(body []byte, key string) (int64, bool) {
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return 0, false
	}
	b := body[i+len(key):]
	for len(b) > 0 && (b[0] == ' ' || b[0] == '"') {
		b = b[1:]
	}
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	var v int64
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		v = v*10 + int64(b[n]-'0')
		n++
	}
	if n == 0 {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

func clampLat(us int64) int64 {
	return max(histMin, min(us, histMax))
}
