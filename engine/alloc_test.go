package engine_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

// bench is a one-shard engine over the standard world with funded users,
// applying commands and flushing after each, as the shard loop does.
type bench struct {
	cl    *enginetest.Cluster
	e     *engine.Engine
	out   engine.Out
	ctOut engine.Out // the ledger's, in the contract world (each shard has its own Out)
	seq   uint64
	users int
	// rec, when set, gets a copy of every command applied to e, as it was
	// before Apply (BenchmarkMixed replays them on another engine)
	rec *[]engine.Cmd
}

func newBench(tb testing.TB, users int) *bench {
	bn := &bench{cl: enginetest.NewCluster(1), users: users}
	bn.e = bn.cl.Engines[0]
	for i := 0; i < users; i++ {
		uid := int64(enginetest.FeeUID + i)
		bn.apply(bn.cl.Ledger, engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
		for c := engine.CoinID(0); c < 3; c++ {
			bn.apply(bn.cl.Ledger, engine.Cmd{Kind: engine.CmdDeposit, UID: uid, User: engine.UserIdx(i), Coin: c, Amount: 1 << 52})
		}
	}
	return bn
}

func (bn *bench) apply(e *engine.Engine, c engine.Cmd) {
	if bn.rec != nil && (e == bn.e || c.Market >= engine.ContractBase && c.Kind <= engine.CmdCancelAll) {
		*bn.rec = append(*bn.rec, c)
	}
	bn.seq++
	out := &bn.out
	if e == bn.cl.Ledger && c.Market >= engine.ContractBase {
		out = &bn.ctOut
	}
	e.Apply(&c, bn.seq, int64(bn.seq), out)
	e.Flush()
}

// newCtBench is newBench over the contract world (NewContractCluster):
// the users' futures USDT and BTC wallets are funded too (2^51 spot and
// 2^50 futures each: a coin's supply is capped at 2^62 for 1024 users of
// 2^52).
func newCtBench(tb testing.TB, users int) *bench {
	bn := &bench{cl: enginetest.NewContractCluster(1), users: users}
	bn.e = bn.cl.Engines[0]
	for i := 0; i < users; i++ {
		uid := int64(enginetest.FeeUID + i)
		bn.apply(bn.cl.Ledger, engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
		for c := engine.CoinID(0); c < 3; c++ {
			bn.apply(bn.cl.Ledger, engine.Cmd{Kind: engine.CmdDeposit, UID: uid, User: engine.UserIdx(i), Coin: c, Amount: 1 << 51})
		}
		for c := engine.CoinID(0); c < 2; c++ {
			bn.apply(bn.cl.Ledger, engine.Cmd{Kind: engine.CmdDeposit, UID: uid, User: engine.UserIdx(i), Coin: c | engine.Futures, Amount: 1 << 50})
			if bn.out.Reject != engine.OK {
				tb.Fatalf("futures deposit: %v", bn.out.Reject)
			}
		}
	}
	return bn
}

func (bn *bench) user(i int) (engine.UserIdx, int64) {
	i %= bn.users
	return engine.UserIdx(i), int64(enginetest.FeeUID + i)
}

func (bn *bench) limit(u int, side engine.Side, tif engine.TIF, p engine.Price, q engine.Qty) engine.Cmd {
	ui, uid := bn.user(u)
	return engine.Cmd{Kind: engine.CmdPlace, User: ui, UID: uid, Market: 0, Side: side, Type: engine.Limit, TIF: tif, Price: p, Qty: q}
}

// TestAllocsHotPath: in steady state, placing a resting order, cancelling
// it, placing an order that trades (maker filled and removed, or taker
// resting its remainder), a market order, and self-trade prevention
// allocate nothing (docs/DESIGN.md, "Time budget": no allocation on the
// hot path).
func TestAllocsHotPath(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	bn := newBench(t, 64)
	const mid = 3_000_000
	// a book of a few hundred orders on both sides
	for i := 0; i < 400; i++ {
		bn.apply(bn.e, bn.limit(i, engine.Buy, engine.GTC, mid-1-engine.Price(i%50), 10+engine.Qty(i%7)))
		bn.apply(bn.e, bn.limit(i+1, engine.Sell, engine.GTC, mid+1+engine.Price(i%50), 10+engine.Qty(i%7)))
	}
	k := 0
	cycle := func() {
		k++
		// resting, then cancelled by id
		bn.apply(bn.e, bn.limit(k, engine.Buy, engine.GTC, mid-3, 10))
		id := bn.out.Order().OrderID
		ui, uid := bn.user(k)
		bn.apply(bn.e, engine.Cmd{Kind: engine.CmdCancel, User: ui, UID: uid, Market: 0, OrderID: id})
		if bn.out.Reject != engine.OK {
			t.Fatalf("cancel %d: got %v, want OK", id, bn.out.Reject)
		}
		// a new level at the touch, taken entirely by a crossing IOC
		bn.apply(bn.e, bn.limit(k, engine.Buy, engine.GTC, mid, 20))
		bn.apply(bn.e, bn.limit(k+1, engine.Sell, engine.IOC, mid, 20))
		if len(bn.out.Trades) != 1 {
			t.Fatalf("crossing IOC: got %d trades, want 1", len(bn.out.Trades))
		}
		// a crossing order that trades and rests its remainder, then is cancelled
		bn.apply(bn.e, bn.limit(k+2, engine.Buy, engine.GTC, mid, 10))
		bn.apply(bn.e, bn.limit(k+3, engine.Sell, engine.GTC, mid, 15))
		id = bn.out.Order().OrderID
		ui, uid = bn.user(k + 3)
		bn.apply(bn.e, engine.Cmd{Kind: engine.CmdCancel, User: ui, UID: uid, Market: 0, OrderID: id})
		if bn.out.Reject != engine.OK {
			t.Fatalf("cancel %d: got %v, want OK", id, bn.out.Reject)
		}
		// a market buy taking a new ask at the touch
		bn.apply(bn.e, bn.limit(k+4, engine.Sell, engine.GTC, mid, 10))
		ui, uid = bn.user(k + 5)
		bn.apply(bn.e, engine.Cmd{Kind: engine.CmdPlace, User: ui, UID: uid, Market: 0, Side: engine.Buy, Type: engine.Market, Qty: 10})
		if len(bn.out.Trades) != 1 {
			t.Fatalf("market buy: got %d trades, want 1", len(bn.out.Trades))
		}
		// self-trade prevention: an IOC meets its own user's resting bid
		bn.apply(bn.e, bn.limit(k+6, engine.Buy, engine.GTC, mid, 10))
		bn.apply(bn.e, bn.limit(k+6, engine.Sell, engine.IOC, mid, 10))
		if len(bn.out.Updates) != 2 || bn.out.Updates[0].Status != engine.StatusExpired {
			t.Fatalf("self-trade: got updates %+v, want the resting bid expired", bn.out.Updates)
		}
	}
	for i := 0; i < 2000; i++ { // warm-up: every buffer reaches its size
		cycle()
	}
	if n := testing.AllocsPerRun(2000, cycle); n != 0 {
		t.Errorf("hot path (11 commands: place resting, cancel, place, IOC taking it, place, crossing place resting, cancel, place, market taking it, place, IOC expiring it by self-trade prevention): got %v allocs per cycle, want 0", n)
	}
}

// TestAllocsContractHotPath: in steady state, contract commands on the
// ledger allocate nothing either: an open resting and cancelled, an open
// taken by an opening IOC (both sides open), closes of both positions (a
// resting close taken by a closing market order), and self-trade
// prevention between a user's open and its own close.
func TestAllocsContractHotPath(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	bn := newCtBench(t, 64)
	led := bn.cl.Ledger
	const mid, ct = 60_000, engine.ContractBase // 30000 at tick 0.5
	place := func(u int, sd engine.Side, p engine.PosSide, tif engine.TIF, price engine.Price, q engine.Qty) {
		ui, uid := bn.user(u)
		c := engine.Cmd{Kind: engine.CmdPlace, User: ui, UID: uid, Market: ct, Side: sd, Pos: p, Type: engine.Limit, TIF: tif, Price: price, Qty: q}
		if price == 0 {
			c.Type = engine.Market
		}
		bn.apply(led, c)
		if bn.ctOut.Reject != engine.OK {
			t.Fatalf("%+v: %v", c, bn.ctOut.Reject)
		}
	}
	// a book of a few hundred opens on both sides
	for i := 0; i < 400; i++ {
		place(i, engine.Buy, engine.Long, engine.GTC, mid-10-engine.Price(i%50), 10+engine.Qty(i%7))
		place(i+1, engine.Sell, engine.Short, engine.GTC, mid+10+engine.Price(i%50), 10+engine.Qty(i%7))
	}
	k := 0
	cycle := func() {
		k++
		a, b := 2*k, 2*k+1
		// an open resting, then cancelled by id
		place(a, engine.Buy, engine.Long, engine.GTC, mid-3, 10)
		id := bn.ctOut.Order().OrderID
		ui, uid := bn.user(a)
		bn.apply(led, engine.Cmd{Kind: engine.CmdCancel, User: ui, UID: uid, Market: ct, OrderID: id})
		if bn.ctOut.Reject != engine.OK {
			t.Fatalf("cancel %d: %v", id, bn.ctOut.Reject)
		}
		// b opens SHORT resting, a opens LONG taking it
		place(b, engine.Sell, engine.Short, engine.GTC, mid, 20)
		place(a, engine.Buy, engine.Long, engine.IOC, mid, 20)
		if len(bn.ctOut.Trades) != 1 {
			t.Fatalf("opening IOC: %d trades", len(bn.ctOut.Trades))
		}
		// a closes its LONG resting, b closes its SHORT by a market buy
		place(a, engine.Sell, engine.Long, engine.GTC, mid, 20)
		place(b, engine.Buy, engine.Short, engine.GTC, 0, 20)
		if len(bn.ctOut.Trades) != 1 || bn.ctOut.Trades[0].TakerPos != engine.Short {
			t.Fatalf("closing market order: %+v", bn.ctOut.Trades)
		}
		// self-trade prevention: a's open bid expired by a's own SHORT open IOC
		place(a, engine.Buy, engine.Long, engine.GTC, mid-1, 10)
		place(a, engine.Sell, engine.Short, engine.IOC, mid-1, 10)
		if len(bn.ctOut.Updates) != 2 || bn.ctOut.Updates[0].Status != engine.StatusExpired {
			t.Fatalf("self-trade: %+v", bn.ctOut.Updates)
		}
	}
	for i := 0; i < 2000; i++ { // warm-up: every user has its account, every buffer its size
		cycle()
	}
	if n := testing.AllocsPerRun(2000, cycle); n != 0 {
		t.Errorf("contract hot path (8 commands: open resting, cancel, open resting, opening IOC taking it, close resting, closing market order taking it, open resting, IOC expiring it by self-trade prevention): got %v allocs per cycle, want 0", n)
	}
	if err := engine.CheckInvariants(bn.cl.Acc, bn.cl.All); err != nil {
		t.Fatal(err)
	}
}

// xorshift is a tiny PRNG that does not allocate or lock.
type xorshift uint64

func (x *xorshift) next() uint64 {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return uint64(*x)
}

// mixed drives a realistic stream over a book of about `target` resting
// orders: 60% limit orders near the touch (passive while the book is at or
// below the target, crossing above it: that holds the book's size), 10%
// crossing IOC or market orders, 30% cancels of tracked resting orders.
type mixed struct {
	bn      *bench
	rnd     xorshift
	target  int
	ids     []int64 // resting order ids (some may have been filled since)
	own     []int
	hits    int // cancels that found their order
	cancels int
	// alive[n] tells whether order n<<10 is working, learnt from the
	// updates (cheaper than asking the engine, so the benchmark measures
	// the engine, not its driver)
	alive []bool
}

const benchMid = 3_000_000

func newMixed(tb testing.TB, target int) *mixed { return mixedOn(newBench(tb, 1000), target) }

// mixedOn fills bn's book to target orders and returns the driver.
func mixedOn(bn *bench, target int) *mixed {
	mx := &mixed{bn: bn, rnd: 88172645463325252, target: target,
		ids: make([]int64, 0, 4*target), own: make([]int, 0, 4*target), alive: make([]bool, 1, 1<<24)}
	for mx.bn.e.WorkingOrders() < target {
		mx.limit(mx.rnd.next(), false)
		mx.track()
	}
	return mx
}

func (mx *mixed) limit(r uint64, cross bool) {
	bn := mx.bn
	u := int(r>>32) % 1000
	q := engine.Qty(10 + r>>40%90)
	off := engine.Price(1 + r>>8%64)
	if cross {
		off = -30
	}
	if r&(1<<20) == 0 {
		bn.apply(bn.e, bn.limit(u, engine.Buy, engine.GTC, benchMid-off, q))
	} else {
		bn.apply(bn.e, bn.limit(u, engine.Sell, engine.GTC, benchMid+off, q))
	}
	if v := bn.out.Order(); v != nil && v.Status.Working() && len(mx.ids) < cap(mx.ids) {
		mx.ids = append(mx.ids, v.OrderID)
		mx.own = append(mx.own, u)
	}
}

// track records the working state of every order the last command changed.
func (mx *mixed) track() {
	for i := range mx.bn.out.Updates {
		v := &mx.bn.out.Updates[i]
		n := int(v.OrderID >> 10)
		for len(mx.alive) <= n {
			mx.alive = append(mx.alive, false)
		}
		mx.alive[n] = v.Status.Working()
	}
}

func (mx *mixed) step() {
	defer mx.track()
	bn := mx.bn
	r := mx.rnd.next()
	u := int(r>>32) % 1000
	switch k := r % 100; {
	case k < 60:
		mx.limit(r, bn.e.WorkingOrders() > mx.target)
	case k < 70: // crossing IOC or market
		side := engine.Side(1 + r>>16&1)
		q := engine.Qty(10 + r>>40%200)
		if k < 65 {
			p := engine.Price(benchMid + 40)
			if side == engine.Sell {
				p = benchMid - 40
			}
			bn.apply(bn.e, bn.limit(u, side, engine.IOC, p, q))
		} else {
			ui, uid := bn.user(u)
			bn.apply(bn.e, engine.Cmd{Kind: engine.CmdPlace, User: ui, UID: uid, Market: 0, Side: side, Type: engine.Market, Qty: q})
		}
	default: // cancel a tracked resting order; drop tracked ones filled since
		for try := 0; try < 8 && len(mx.ids) > 0; try++ {
			i := int(r>>24+uint64(try)*7919) % len(mx.ids)
			id, ui := mx.ids[i], mx.own[i]
			last := len(mx.ids) - 1
			mx.ids[i], mx.own[i] = mx.ids[last], mx.own[last]
			mx.ids, mx.own = mx.ids[:last], mx.own[:last]
			u, uid := bn.user(ui)
			if !mx.alive[id>>10] {
				continue
			}
			bn.apply(bn.e, engine.Cmd{Kind: engine.CmdCancel, User: u, UID: uid, Market: 0, OrderID: id})
			mx.cancels++
			if bn.out.Reject == engine.OK {
				mx.hits++
			}
			return
		}
		// nothing tracked is working: a cancel of an unknown order
		u, uid := bn.user(ui0(r))
		bn.apply(bn.e, engine.Cmd{Kind: engine.CmdCancel, User: u, UID: uid, Market: 0, OrderID: 1 << 40})
		mx.cancels++
	}
}

func ui0(r uint64) int { return int(r>>32) % 1000 }

// BenchmarkMixed: one command of the mixed stream per op over a book of
// about 10k resting orders, Apply plus Flush as the shard loop does, and
// Prefetch of the next command, as the shard loop does within a drained
// batch (under load a batch holds many commands; a shard woken for a lone
// command has nothing to look ahead at).
func BenchmarkMixed(b *testing.B) {
	// one OS thread throughout, as a pinned shard has, and so that
	// valgrind's per-thread call stacks can tell what replay costs
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := newMixedStream(b)
	s.time(b, s.run.replay)
}

// BenchmarkMixedLatency: BenchmarkMixed's stream with every command timed
// on its own (the monotonic clock read before its prefetch and after its
// Flush), for the distribution of one command's time: p50-ns ... max-ns.
// Each sample includes one clock read's cost, reported as clock-ns (the
// median of an empty interval, taken before the stream). Its ns/op holds
// the clock reads and the histogram too: BenchmarkMixed is the throughput.
func BenchmarkMixedLatency(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := newMixedStream(b)
	h := hdrhistogram.New(1, int64(time.Second), 3)
	for range 1000 {
		t0 := nanotime()
		h.RecordValue(nanotime() - t0)
	}
	clock := h.ValueAtQuantile(50)
	h.Reset()
	s.time(b, func(cmds []engine.Cmd) int { return s.run.replayTimed(cmds, h) })
	for _, q := range []struct {
		unit string
		q    float64
	}{{"p50-ns", 50}, {"p99-ns", 99}, {"p99.9-ns", 99.9}} {
		b.ReportMetric(float64(h.ValueAtQuantile(q.q)), q.unit)
	}
	b.ReportMetric(float64(h.Max()), "max-ns")
	b.ReportMetric(float64(clock), "clock-ns")
}

// mixedStream is the mixed benchmarks' setup. The stream is generated
// ahead, as exchange-core's benchmarks do: a generator engine runs the
// mixed driver (which picks what to cancel from what its engine answered)
// and records each command, untimed, in chunks; the measured engine, run,
// built identically, applies the recorded chunk. So the time is the
// engine's, not the driver's bookkeeping, and both engines must end in the
// same state (mixedStream.time checks it).
type mixedStream struct {
	gen, run *bench
	mx       *mixed
	cmds     []engine.Cmd // the chunk generated last
}

// mixedChunk is how many commands are generated, then applied, at a time
// (up to 120 MiB of them). Generating a chunk runs a second engine with its
// own 10k-order book on this core and writes the chunk, which most likely
// evicts the measured engine's book from the caches, so the first commands
// of each timed chunk miss where the stream itself would not. The stream
// and its end state do not depend on the chunk size; the time does, so the
// chunk is large enough to spread that cost thin (at 1 << 16 it was ~7 ns
// of a ~107 ns command).
const mixedChunk = 1 << 20

// mixedWarmChunk is the size of the warm-up's chunks (untimed).
const mixedWarmChunk = 50_000

func newMixedStream(b *testing.B) *mixedStream {
	// room for the largest chunk this run generates, the warm-up's included
	room := max(mixedWarmChunk, min(b.N, mixedChunk))
	s := &mixedStream{gen: newBench(b, 1000), run: newBench(b, 1000), cmds: make([]engine.Cmd, 0, room)}
	s.gen.rec = &s.cmds
	s.mx = mixedOn(s.gen, 10_000) // the book's setup is recorded too
	s.run.replay(s.cmds)
	for range 4 { // warm-up: 200k commands
		s.next(mixedWarmChunk)
		s.run.replay(s.cmds)
	}
	return s
}

// next generates the stream's next n commands into cmds.
func (s *mixedStream) next(n int) {
	s.cmds = s.cmds[:0]
	for range n {
		s.mx.step()
	}
}

// time runs b.N commands of the stream through replay, the generation of
// each chunk untimed, then checks that both engines ended in the same
// state and reports the stream's shape.
func (s *mixedStream) time(b *testing.B, replay func([]engine.Cmd) int) {
	trades := 0
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += len(s.cmds) {
		b.StopTimer()
		s.next(min(mixedChunk, b.N-done))
		b.StartTimer()
		trades += replay(s.cmds)
	}
	b.StopTimer()
	if got, want := engine.StateHash(s.run.cl.Acc, s.run.cl.All), engine.StateHash(s.gen.cl.Acc, s.gen.cl.All); got != want {
		b.Fatalf("measured engine's state hash %x differs from the generator's %x", got, want)
	}
	b.ReportMetric(float64(s.run.e.WorkingOrders()), "resting")
	b.ReportMetric(float64(trades)/float64(b.N), "trades/op")
	b.ReportMetric(float64(s.mx.hits)/float64(max(s.mx.cancels, 1)), "cancel-hit-rate")
}

// replay applies cmds as the shard loop does (PrefetchAhead, Apply,
// Flush), and returns how many trades they made. It is the part
// BenchmarkMixed times, kept out of line so that a profiler can name it
// (valgrind --toggle-collect).
//
//go:noinline
func (bn *bench) replay(cmds []engine.Cmd) (trades int) {
	for i := range cmds {
		bn.e.PrefetchAhead(cmds, i)
		bn.seq++
		bn.e.Apply(&cmds[i], bn.seq, int64(bn.seq), &bn.out)
		bn.e.Flush()
		trades += len(bn.out.Trades)
	}
	return trades
}

// replayTimed is replay with each command's time recorded into h. The
// loop body is replay's, not a shared function: a call per command (the
// body is too large to inline) would add to BenchmarkMixed's time.
func (bn *bench) replayTimed(cmds []engine.Cmd, h *hdrhistogram.Histogram) (trades int) {
	for i := range cmds {
		t0 := nanotime()
		bn.e.PrefetchAhead(cmds, i)
		bn.seq++
		bn.e.Apply(&cmds[i], bn.seq, int64(bn.seq), &bn.out)
		bn.e.Flush()
		h.RecordValue(min(nanotime()-t0, h.HighestTrackableValue())) // beyond it a sample would be dropped
		trades += len(bn.out.Trades)
	}
	return trades
}

// epoch is the monotonic clock's origin for nanotime.
var epoch = time.Now()

// nanotime reads the monotonic clock (one clock read: time.Since of a
// time that has a monotonic reading).
func nanotime() int64 { return int64(time.Since(epoch)) }

// BenchmarkByKind: the cost of one kind of command at a time, to read
// BenchmarkMixed by. Each case repeats one pattern, so branches and caches
// favour it more than the mixed stream's random order does; compare the
// cases with each other, not with Mixed. Per op:
//   - place-cancel: a passive bid joins an existing level of the 10k-order
//     book and is cancelled by id (two commands);
//   - place-cancel-new-level: the same on an empty book, where the bid
//     creates its level and its user's list and the cancel drops both (two
//     commands);
//   - take-one: an IOC buys from the head of a deep resting ask (one
//     command, one fill; the maker stays, partly filled; one op in 1e5
//     also places the next ask);
//   - place-take: a passive ask on an empty book, then an IOC that fills it
//     (two commands, one fill; the maker, its level and its list go).
func BenchmarkByKind(b *testing.B) {
	// want fails b unless the last command made exactly trades trades (a
	// case whose setup went wrong would time something else)
	want := func(b *testing.B, bn *bench, trades int) {
		if bn.out.Reject != engine.OK || len(bn.out.Trades) != trades {
			b.Fatalf("got reject %v and %d trades, want OK and %d", bn.out.Reject, len(bn.out.Trades), trades)
		}
	}
	placeCancel := func(b *testing.B, bn *bench) {
		for i := 0; i < b.N; i++ {
			bn.apply(bn.e, bn.limit(i, engine.Buy, engine.GTC, benchMid-5, 10))
			ui, uid := bn.user(i)
			bn.apply(bn.e, engine.Cmd{Kind: engine.CmdCancel, User: ui, UID: uid, Market: 0, OrderID: bn.out.Order().OrderID})
			want(b, bn, 0)
		}
	}
	cases := []struct {
		name string
		run  func(b *testing.B)
	}{
		{"place-cancel", func(b *testing.B) {
			bn := newMixed(b, 10_000).bn
			b.ResetTimer()
			placeCancel(b, bn)
		}},
		{"place-cancel-new-level", func(b *testing.B) {
			bn := newBench(b, 1000)
			b.ResetTimer()
			placeCancel(b, bn)
		}},
		{"take-one", func(b *testing.B) {
			// user 0's asks of the market's largest size (1e6 steps: 1e5
			// takes each), a new one as each is used up; takers are the
			// other users (user 0 would expire its own ask)
			const size, take = 1_000_000, 10
			bn := newBench(b, 1000)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%(size/take) == 0 {
					bn.apply(bn.e, bn.limit(0, engine.Sell, engine.GTC, benchMid, size))
					want(b, bn, 0)
				}
				bn.apply(bn.e, bn.limit(1+i%999, engine.Buy, engine.IOC, benchMid, take))
				want(b, bn, 1)
			}
		}},
		{"place-take", func(b *testing.B) {
			bn := newBench(b, 1000)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				bn.apply(bn.e, bn.limit(i, engine.Sell, engine.GTC, benchMid, 10))
				bn.apply(bn.e, bn.limit(i+1, engine.Buy, engine.IOC, benchMid, 10))
				want(b, bn, 1)
			}
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			c.run(b)
		})
	}
}

// restingBytes places n non-crossing orders over many users and price
// levels and returns the heap growth per order.
func restingBytes(tb testing.TB, n int) float64 {
	bn := newBench(tb, 1000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		off := engine.Price(1 + i%5000)
		if i&1 == 0 {
			bn.apply(bn.e, bn.limit(i, engine.Buy, engine.GTC, benchMid-off, 10))
		} else {
			bn.apply(bn.e, bn.limit(i, engine.Sell, engine.GTC, benchMid+off, 10))
		}
	}
	if got := bn.e.WorkingOrders(); got != n {
		tb.Fatalf("got %d resting orders, want %d", got, n)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(bn)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// BenchmarkRestingOrderMemory reports heap bytes per resting order with 1M
// resting orders (target <= 256).
func BenchmarkRestingOrderMemory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.ReportMetric(restingBytes(b, 1_000_000), "bytes/order")
	}
}

// TestRestingOrderMemory keeps memory per resting order under 256 bytes
// (200k orders here; the benchmark measures 1M).
func TestRestingOrderMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("places 200k orders")
	}
	if got := restingBytes(t, 200_000); got > 256 {
		t.Errorf("got %.0f bytes per resting order, want <= 256", got)
	}
}

// TestMixedStreamInvariants drives the benchmark's stream (a ~10k-order
// book, heavy churn: id tables and level pools grow, shrink and reuse
// slots) and checks the whole-state invariants and a snapshot round trip
// along the way.
func TestMixedStreamInvariants(t *testing.T) {
	n := 300_000
	if testing.Short() {
		n = 50_000
	}
	mx := newMixed(t, 10_000)
	specs := enginetest.Specs(enginetest.Coins(), enginetest.MarketConfigs())
	trades := 0
	for i := 1; i <= n; i++ {
		mx.step()
		trades += len(mx.bn.out.Trades)
		if i%50_000 == 0 {
			if err := engine.CheckInvariants(mx.bn.cl.Acc, mx.bn.cl.All); err != nil {
				t.Fatalf("after %d commands: %v", i, err)
			}
			if err := ownInvariants(mx.bn.cl, specs); err != nil {
				t.Fatalf("after %d commands: %v", i, err)
			}
		}
	}
	if trades < n/10 || mx.hits < n/10 {
		t.Fatalf("stream too tame: %d trades, %d cancels hit in %d commands", trades, mx.hits, n)
	}
	// a restart from snapshots gives the same state
	cl := mx.bn.cl
	re := enginetest.NewCluster(1)
	if err := re.Acc.LoadSnapshot(cl.Acc.AppendSnapshot(nil)); err != nil {
		t.Fatal(err)
	}
	for i, e := range cl.All {
		if err := re.All[i].LoadSnapshot(e.AppendSnapshot(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := engine.StateHash(re.Acc, re.All), engine.StateHash(cl.Acc, cl.All); got != want {
		t.Fatalf("state hash after restore: got %x, want %x", got, want)
	}
	if err := engine.CheckInvariants(re.Acc, re.All); err != nil {
		t.Fatal(err)
	}
	// and the restored engine goes on working
	mx.bn.cl, mx.bn.e = re, re.Engines[0]
	for i := 0; i < 50_000; i++ {
		mx.step()
	}
	if err := engine.CheckInvariants(re.Acc, re.All); err != nil {
		t.Fatalf("50k commands after the restore: %v", err)
	}
	if err := ownInvariants(re, specs); err != nil {
		t.Fatalf("50k commands after the restore: %v", err)
	}
}

// TestFreeze: a frozen copy encodes exactly what the engine's snapshot
// was when it was frozen, however the engine changes afterwards, and the
// copy's memory is reused by the next freeze.
func TestFreeze(t *testing.T) {
	mx := newMixed(t, 20_000)
	e := mx.bn.e
	var f *engine.Frozen
	for round := 0; round < 3; round++ {
		want := e.AppendSnapshot(nil)
		f = e.Freeze(f)
		for i := 0; i < 30_000; i++ { // fills, cancels, new levels, pool reuse
			mx.step()
		}
		if got := f.AppendSnapshot(nil); string(got) != string(want) {
			t.Fatalf("round %d: the frozen copy encodes %d bytes that differ from the %d of the snapshot at the freeze", round, len(got), len(want))
		}
		if string(e.AppendSnapshot(nil)) == string(want) {
			t.Fatalf("round %d: the engine did not change after the freeze", round)
		}
	}
}

// TestFreezeSparse: when few of the pool's slots hold working orders,
// Freeze encodes at once instead of copying the pool; the result is the
// same.
func TestFreezeSparse(t *testing.T) {
	bn := newBench(t, 100)
	var ids []int64
	for i := 0; i < 10_000; i++ {
		bn.apply(bn.e, bn.limit(i, engine.Buy, engine.GTC, benchMid-1-engine.Price(i%40), 10))
		ids = append(ids, bn.out.Order().OrderID)
	}
	for i, id := range ids[:9_500] {
		u, uid := bn.user(i)
		bn.apply(bn.e, engine.Cmd{Kind: engine.CmdCancel, User: u, UID: uid, Market: 0, OrderID: id})
		if bn.out.Reject != engine.OK {
			t.Fatalf("cancel %d: %v", id, bn.out.Reject)
		}
	}
	want := bn.e.AppendSnapshot(nil)
	f := bn.e.Freeze(nil)
	for i := 0; i < 100; i++ {
		bn.apply(bn.e, bn.limit(i, engine.Sell, engine.GTC, benchMid+1, 10))
	}
	if got := f.AppendSnapshot(nil); string(got) != string(want) {
		t.Fatalf("the frozen sparse book encodes %d bytes that differ from the %d of the snapshot at the freeze", len(got), len(want))
	}
}

// BenchmarkSnapshot: encoding the engine of a 300k-order book, which the
// shards used to wait for while a snapshot was taken, against freezing it
// (what they wait for now, journal/snapshot.go) and encoding the copy.
func BenchmarkSnapshot(b *testing.B) {
	mx := newMixed(b, 300_000)
	e := mx.bn.e
	var buf []byte
	var f *engine.Frozen
	perOrder := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(e.WorkingOrders()), "ns/order")
	}
	b.Run("encode", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			buf = e.AppendSnapshot(buf[:0])
		}
		perOrder(b)
	})
	b.Run("freeze", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			f = e.Freeze(f)
		}
		perOrder(b)
	})
	b.Run("encode-frozen", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			buf = f.AppendSnapshot(buf[:0])
		}
		perOrder(b)
	})
}
