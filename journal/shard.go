package journal

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/sys/unix"

	"github.com/weexcore/exchange/engine"
)

// testHooks enables test-only behaviour (set by the package's tests).
var testHooks bool

// benchNoHistory skips the history rows (benchmarks only: it measures what
// the journal itself costs).
var benchNoHistory bool

// testForcePace, when set (tests only), makes every commit go through
// the committer, as under load.
var testForcePace bool

// testApplied, when set (tests only), sees every command a shard applies
// live and what it produced, before the batch is written.
var testApplied func(shard int, c *engine.Cmd, o *engine.Out)

// shard is one ring, one engine and one journal stream.
//
// The loop, per drained batch (invariants):
//   - timeMs never goes backwards: max(previous, wall clock), once per batch;
//   - seq is previous+1 for every command: gap-free per shard;
//   - applying is published before each Apply, flushed only after the batch
//     is synced and the engine flushed, so flushed <= applying and anything
//     read while applying > flushed may still be taken back by a crash;
//   - no request of a batch is answered before the batch is synced, queries
//     included (DESIGN.md "Ack after sync").
//
// flight is a built batch: its Pebble batch, the requests to answer once
// it is durable, and how far to flush the engine's credits then.
// maxFlights bounds the batches a shard has in flight; with all of them
// waiting for their sync, the shard waits for the oldest. A shard builds
// one batch per wake-up, which at a few thousand requests/s per shard is
// one per request, so a bound of 4 was reached within one sync gap and the
// shard stopped applying until a sync finished: at 11,000 requests/s (two
// shards) a request then waited up to 0.75-0.87 ms (p99) in the ring
// before it was applied, and missed the next sync. With 16 that wait is
// 0.20-0.31 ms and the server's own answer time p50 0.61-0.66 ms instead
// of 0.69-0.85 (three interleaved runs each).
const maxFlights = 16

type flight struct {
	wb     *pebble.Batch
	reqs   []*Request
	adds   []*Request // CmdAddUser applied in the batch (ledger: OnAddUser after sync)
	mark   int        // engine.PendingLen after the batch's last command
	first  uint64     // the batch's first seq
	seq    uint64     // the batch's last seq
	timeMs int64      // the time of every command in it
	count  int
	pc     pendingCommit
}

type shard struct {
	id  int
	x   *impl
	eng *engine.Engine
	q   *ring

	seq    uint64 // last applied (shard goroutine; set by recovery before start)
	timeMs int64  // time of the last batch

	// wrote counts Pebble keys and bytes committed (for benchmarks and
	// operators: the history rows, not the journal, dominate both).
	wroteKeys, wroteBytes atomic.Uint64

	applying atomic.Uint64 // seq of the command being applied (published before Apply)
	flushed  atomic.Uint64 // last seq durable and flushed
	stopped  atomic.Bool

	// Batches handed to the committer and not yet answered are
	// fl[head], ... fl[head+n-1] (mod maxFlights), oldest first; the next
	// one is built in fl[(head+n) % maxFlights].
	fl      [maxFlights]flight
	head, n int
	batch   []*Request
	out     engine.Out

	// The newest flight stays open while it waits for its sync slot: the
	// segments drained meanwhile (within the same millisecond) join it,
	// so a sync writes one journal record per shard and millisecond
	// rather than one per wake-up, which under load is one per request.
	// The committer seals it (finishes its record and history rows) when
	// it takes it. openMu guards open and everything sealing uses.
	openMu sync.Mutex
	open   *flight
	hist   *histBatch
	rec    []byte
	key    []byte // scratch
	val    []byte // scratch
}

func newShard(x *impl, id int, e *engine.Engine, ringSize int) *shard {
	return &shard{id: id, x: x, eng: e, q: newRing(ringSize), hist: newHistBatch(), batch: make([]*Request, 0, maxBatch)}
}

func (s *shard) run() {
	defer s.x.wg.Done()
	defer s.stopped.Store(true)
	for i := range s.fl {
		f := &s.fl[i]
		f.wb = s.x.db.NewBatch(pebble.WithInitialSizeBytes(256<<10), pebble.WithMaxRetainedSizeBytes(64<<20))
		defer f.wb.Close()
		f.pc.done = make(chan struct{}, 1)
		f.pc.seal = func() { s.seal(f) }
	}
	if s.x.opt.PinCPUs {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(s.id % runtime.NumCPU())
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			s.x.logf("journal: shard %d: pin to cpu %d: %v", s.id, s.id%runtime.NumCPU(), err)
		}
	}
	var idleSince int64 // nanotime when the ring was first found empty; 0: busy
	for {
		for s.n > 0 && s.fl[s.head].pc.fin.Load() {
			s.finishOldest()
		}
		s.batch = s.q.drain(s.batch[:0], maxBatch)
		if len(s.batch) == 0 {
			if s.n > 0 {
				s.q.park(s.fl[s.head].pc.done) // a push, or the oldest batch in flight is durable
			} else if s.q.idle(&idleSince) {
				s.q.park(nil)
			}
			continue
		}
		idleSince = 0
		if s.process(s.batch) {
			return
		}
	}
}

// process handles one drained batch; it reports true when told to stop.
func (s *shard) process(b []*Request) bool {
	start := 0
	for i, r := range b {
		if r.rt.op == opCmd {
			continue
		}
		s.segment(b[start:i])
		start = i + 1
		s.finishAll() // a barrier sees everything before it durable
		switch r.rt.op {
		case opBarrier:
			r.rt.bar.arrive()
		case opStop:
			// Nothing can follow: Close waited for every Submit.
			s.segment(b[start:])
			s.finishAll()
			return true
		}
	}
	s.segment(b[start:])
	return false
}

// segment applies, journals, syncs and answers the requests of b (no
// barriers inside).
func (s *shard) segment(b []*Request) {
	if len(b) == 0 {
		return
	}
	now := time.Now().UnixMilli()
	if now < s.timeMs {
		now = s.timeMs
	}
	s.timeMs = now
	x := s.x
	s.openMu.Lock()
	f := s.open
	if f != nil && f.timeMs != now {
		s.sealLocked(f) // a new millisecond: a new record (the committer has it queued)
		f = nil
	}
	opened := f == nil
	if opened {
		f = &s.fl[(s.head+s.n)%maxFlights]
		f.first, f.timeMs, f.count = s.seq+1, now, 0
		f.reqs, f.adds = f.reqs[:0], f.adds[:0]
		s.rec = appendRecordHeader(s.rec[:0], s.id, f.first, now)
		s.hist.reset()
	}
	count := 0
	for i, r := range b {
		if i+1 < len(b) { // overlap their cache misses with r (engine/prefetch.go)
			var then *engine.Cmd
			if i+2 < len(b) {
				then = &b[i+2].Cmd
			}
			s.eng.Prefetch(&b[i+1].Cmd, then)
		}
		if r.Query != QueryNone {
			s.query(r)
			continue
		}
		s.seq++
		s.applying.Store(s.seq)
		c := &r.Cmd
		c.Dec = engine.Decision{} // a client cannot submit a recorded decision
		s.eng.Apply(c, s.seq, now, &s.out)
		count++
		s.rec = appendCmd(s.rec, c)
		if testApplied != nil {
			testApplied(s.id, c, &s.out)
		}
		if !benchNoHistory {
			s.history(f.wb, c, s.seq-f.first)
		}
		r.Out.Reject, r.Out.BillID, r.HasOrder = s.out.Reject, s.out.BillID, s.out.OrderAt != 0
		if r.HasOrder {
			r.Order = s.out.Updates[s.out.OrderAt-1]
		}
		r.Seq, r.TimeMs = s.seq, now
		if c.Kind == engine.CmdAddUser && s.out.Reject == engine.OK {
			f.adds = append(f.adds, r)
		}
	}
	if opened && count == 0 {
		// Queries only: answered once everything before them is durable.
		s.openMu.Unlock()
		s.finishAll()
		s.answer(b, nil)
		return
	}
	f.count += count
	f.reqs = append(f.reqs, b...)
	f.mark, f.seq = s.eng.PendingLen(), s.seq
	if count > 0 {
		x.syncPace.commit(count)
	}
	paced := x.syncPace.interval() > 0 && !x.ackBeforeSync
	if !opened || paced || s.n > 0 {
		// Pipelined: the committer seals and syncs this batch (with other
		// shards') at the next sync slot while the shard goes on applying;
		// until then later segments of the same millisecond join it.
		if opened {
			s.open = f
			s.n++
		}
		s.openMu.Unlock()
		if opened {
			f.pc.wb = f.wb
			x.committer.enqueue(&f.pc)
			if s.n == maxFlights {
				s.finishOldest()
			}
		}
		return
	}
	s.sealLocked(f)
	s.openMu.Unlock()
	reqs := f.reqs
	if x.ackBeforeSync {
		// Broken on purpose (the crash test's self-check): answer
		// before the commit, so a kill can take back acked commands.
		s.answer(reqs, f.adds)
		reqs = nil
	}
	if err := f.wb.Commit(pebble.Sync); err != nil {
		s.commitFailed(err)
	}
	f.wb.Reset() // keeps its buffer: a drained batch is megabytes
	x.sinceSnap.Add(int64(f.count))
	s.answer(reqs, f.adds)
	clear(f.reqs)
}

// seal finishes f for the committer, unless a later segment of the shard
// already did.
func (s *shard) seal(f *flight) {
	s.openMu.Lock()
	if s.open == f {
		s.sealLocked(f)
	}
	s.openMu.Unlock()
}

// sealLocked writes f's journal record and history rows into its batch
// and closes it (openMu held).
func (s *shard) sealLocked(f *flight) {
	s.rec = finishRecord(s.rec, f.count)
	s.key, s.val = s.hist.write(f.wb, s.id, f.first, f.timeMs, s.key, s.val)
	s.key = journalKey(s.key[:0], s.id, f.first)
	f.wb.Set(s.key, s.rec, nil)
	s.wroteKeys.Add(uint64(f.wb.Count()))
	s.wroteBytes.Add(uint64(f.wb.Len()))
	s.open = nil // f was the open flight, or (a synchronous commit) there was none
}

// commitFailed stops the process: the state in memory is ahead of the
// journal and can no longer be made durable, so stopping loudly is the
// only honest answer.
func (s *shard) commitFailed(err error) {
	panic("journal: shard " + itoa(s.id) + ": commit: " + err.Error())
}

// answer makes the batch's credits available (Flush), registers its new
// users with the edge, and wakes its requests; after it the shard does not
// touch b. Normally it runs once the batch is synced.
func (s *shard) answer(b, adds []*Request) {
	s.eng.Flush()
	s.flushed.Store(s.seq)
	if f := s.x.opt.OnAddUser; f != nil && b != nil {
		for _, r := range adds {
			f(&r.Cmd)
		}
	}
	for _, r := range b {
		r.complete(nil)
	}
}

// finishAll answers every batch in flight, oldest first.
func (s *shard) finishAll() {
	for s.n > 0 {
		s.finishOldest()
	}
}

// finishOldest waits until the oldest batch in flight is durable and
// answers it: its credits (and only its) become available, then its
// requests are woken.
func (s *shard) finishOldest() {
	f := &s.fl[s.head]
	for !f.pc.fin.Load() {
		<-f.pc.done
	}
	select { // a signal park did not consume
	case <-f.pc.done:
	default:
	}
	f.pc.fin.Store(false)
	if f.pc.err != nil {
		s.commitFailed(f.pc.err)
	}
	f.wb.Reset()
	s.x.sinceSnap.Add(int64(f.count))
	s.eng.FlushTo(f.mark)
	for i := 1; i < s.n; i++ { // marks of the later batches move down
		s.fl[(s.head+i)%maxFlights].mark -= f.mark
	}
	s.flushed.Store(f.seq)
	if cb := s.x.opt.OnAddUser; cb != nil {
		for _, r := range f.adds {
			cb(&r.Cmd)
		}
	}
	for _, r := range f.reqs {
		r.complete(nil)
	}
	clear(f.reqs)
	f.reqs = f.reqs[:0]
	s.head = (s.head + 1) % maxFlights
	s.n--
}

// query answers r from the engine's memory.
func (s *shard) query(r *Request) {
	c := &r.Cmd
	switch r.Query {
	case QueryOpenOrders:
		r.Orders = s.eng.OpenOrders(c.User, c.Market, r.Orders[:0])
	case QueryOrder:
		r.Order, r.HasOrder = s.eng.Order(c.User, c.Market, c.OrderID, c.Text.Bytes())
		if r.HasOrder && r.Order.UID != c.UID {
			r.Order, r.HasOrder = engine.OrderView{}, false
		}
	case QueryDepth:
		r.Bids, r.Asks = s.eng.Depth(c.Market, int(c.Qty), r.Bids[:0], r.Asks[:0])
		r.Last = s.eng.LastPrice(c.Market)
	}
}

// history records c's events in the batch's history blocks, and writes
// the registration row of a new user.
func (s *shard) history(wb *pebble.Batch, c *engine.Cmd, seqOff uint64) {
	s.hist.add(c, &s.out, seqOff)
	if c.Kind == engine.CmdAddUser && s.out.Reject == engine.OK {
		s.key = userKey(s.key[:0], c.User)
		s.val = appendCmd(s.val[:0], c)
		wb.Set(s.key, s.val, nil)
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		if i /= 10; i == 0 {
			break
		}
	}
	return string(b[n:])
}
