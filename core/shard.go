package core

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// testForcePace, when set (tests only), makes every commit go through the
// committer, as under load.
var testForcePace bool

// testApplied, when set (tests only), sees every command a shard applies
// live and what it produced, before the batch is written.
var testApplied func(shard int, c *engine.Cmd, o *engine.Out)

// benchNoHistory skips the history rows (benchmarks only: it measures what
// the journal itself costs).
var benchNoHistory bool

// maxFlights bounds the batches a shard has in flight (built, handed to
// the committer, not yet durable); with all of them waiting for their
// sync, the shard waits for the oldest. Under load a shard builds about
// one batch per request, so the bound must cover a sync gap's worth of
// requests or the shard stops applying and its requests miss the next
// sync.
const maxFlights = 16

// flight is a built batch: its Pebble batch, the requests to answer once
// it is durable, and how far to flush the engine's credits then.
type flight struct {
	b      *journal.Batch
	reqs   []*Request
	adds   []*Request // CmdAddUser applied in the batch (ledger: OnAddUser after sync)
	mark   int        // engine.PendingLen after the batch's last command
	first  uint64     // the batch's first seq
	seq    uint64     // the batch's last seq
	timeMs int64      // the time of every command in it
	count  int
	pc     pendingCommit
}

// shard is one ring, one engine and one journal stream (doc.go has the
// loop's invariants).
type shard struct {
	id  int
	n   *Node
	eng *engine.Engine
	q   *ring

	seq    uint64 // last applied (shard goroutine)
	timeMs int64  // time of the last batch

	// wrote counts Pebble keys and bytes committed (for benchmarks and
	// operators: the history rows, not the journal, dominate both).
	wroteKeys, wroteBytes atomic.Uint64

	applying atomic.Uint64 // seq of the command being applied (published before Apply)
	flushed  atomic.Uint64 // last seq durable and flushed
	stopped  atomic.Bool

	// Batches handed to the committer and not yet answered are
	// fl[head], ... fl[head+inFlight-1] (mod maxFlights), oldest first;
	// the next one is built in fl[(head+inFlight) % maxFlights].
	fl             [maxFlights]flight
	head, inFlight int
	batch          []*Request
	out            engine.Out

	// The newest flight stays open while it waits for its sync slot: the
	// segments drained meanwhile (within the same millisecond) join it,
	// so a sync writes one journal record per shard and millisecond
	// rather than one per wake-up, which under load is one per request.
	// The committer seals it (finishes its record and history rows) when
	// it takes it. openMu guards open and w.
	openMu sync.Mutex
	open   *flight
	w      *journal.Writer

	rb *journal.Batch // replicated follower: replayed records (replicated.go)
}

func newShard(n *Node, id int, e *engine.Engine) *shard {
	s := &shard{id: id, n: n, eng: e, q: newRing(n.opt.RingSize), w: journal.NewWriter(id), batch: make([]*Request, 0, maxBatch)}
	s.w.NoHistory = benchNoHistory
	s.w.Accrue(n.st.Accounts, n.st.Markets) // a market's entry changes on its own shard only
	s.w.KeepCandles(n.store)
	s.seq, s.timeMs = n.st.Seqs[id], n.st.Times[id]
	s.applying.Store(s.seq)
	s.flushed.Store(s.seq)
	return s
}

func (s *shard) run() {
	defer s.n.wg.Done()
	defer s.stopped.Store(true)
	for i := range s.fl {
		f := &s.fl[i]
		f.b = s.n.store.NewBatch()
		defer f.b.Close()
		f.pc.done = make(chan struct{}, 1)
		f.pc.seal = func() { s.seal(f) }
	}
	if s.n.opt.PinCPUs {
		runtime.LockOSThread()
		cpu := s.id % runtime.NumCPU()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			s.n.log.Warn("core: shard not pinned", "shard", s.id, "cpu", cpu, "err", err)
		}
	}
	defer func() {
		if s.rb != nil {
			s.rb.Close()
		}
	}()
	var idleSince int64 // nanotime when the ring was first found empty; 0: busy
	for {
		for s.inFlight > 0 && s.fl[s.head].pc.fin.Load() {
			s.finishOldest()
		}
		s.batch = s.q.drain(s.batch[:0], maxBatch)
		if len(s.batch) == 0 {
			if s.inFlight > 0 {
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
		case opReplay:
			s.replay(r.rt.rep)
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
	if s.n.failed.Load() != nil {
		for _, r := range b {
			r.complete(ErrUnavailable)
		}
		return
	}
	now := s.n.Now()
	if now < s.timeMs {
		now = s.timeMs
	}
	s.timeMs = now
	n := s.n
	s.openMu.Lock()
	f := s.open
	if f != nil && f.timeMs != now {
		s.sealLocked(f) // a new millisecond: a new record (the committer has it queued)
		f = nil
	}
	opened := f == nil
	if opened {
		f = &s.fl[(s.head+s.inFlight)%maxFlights]
		f.first, f.timeMs, f.count = s.seq+1, now, 0
		f.reqs, f.adds = f.reqs[:0], f.adds[:0]
		s.w.Begin(f.first, now)
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
		if c.Kind == engine.CmdSetRules {
			s.eng.StageRules(r.Rules)
		}
		s.apply(c)
		if s.out.Rules != nil {
			s.n.st.Markets[s.out.Rules.ID] = s.out.Rules
		}
		count++
		s.w.Add(f.b, c, &s.out)
		if r.Rebate != nil && c.Kind == engine.CmdRebate && s.out.Reject == engine.OK {
			r.Rebate.SettledMs = now
			s.w.AddRebate(f.b, r.Rebate)
		}
		if testApplied != nil {
			testApplied(s.id, c, &s.out)
		}
		r.Out.Reject, r.Out.BillID, r.HasOrder = s.out.Reject, s.out.BillID, s.out.OrderAt != 0
		if r.HasOrder {
			r.Order = s.out.Updates[s.out.OrderAt-1]
		}
		if c.Kind == engine.CmdPlan || c.Kind == engine.CmdPlanCancel {
			r.Plans = append(r.Plans[:0], s.out.Plans...)
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
		n.syncPace.commit(count)
	}
	paced := n.syncPace.interval() > 0 && !n.ackBeforeSync
	if !opened || paced || s.inFlight > 0 {
		// Pipelined: the committer seals and syncs this batch (with other
		// shards') at the next sync slot while the shard goes on applying;
		// until then later segments of the same millisecond join it.
		if opened {
			s.open = f
			s.inFlight++
		}
		s.openMu.Unlock()
		if opened {
			f.pc.b = f.b
			n.committer.enqueue(&f.pc)
			if s.inFlight == maxFlights {
				s.finishOldest()
			}
		}
		return
	}
	s.sealLocked(f)
	s.openMu.Unlock()
	reqs := f.reqs
	if n.ackBeforeSync {
		// Broken on purpose (the crash test's self-check): answer
		// before the commit, so a kill can take back acked commands.
		s.answer(reqs, f.adds)
		reqs = nil
	}
	t0 := nanotime()
	err := f.b.Commit()
	n.metrics.commit(nanotime() - t0)
	f.b.Reset() // keeps its buffer: a drained batch is megabytes
	if err != nil {
		s.commitFailed(err, reqs)
		clear(f.reqs)
		return
	}
	n.sinceSnap.Add(int64(f.count))
	s.answer(reqs, f.adds)
	clear(f.reqs)
}

// apply applies c to the engine into s.out, counting its reject. In
// builds with -tags invariants the whole state is checked after it.
func (s *shard) apply(c *engine.Cmd) {
	if engine.Invariants {
		s.n.applyChecked(s, c)
	} else {
		s.eng.Apply(c, s.seq, s.timeMs, &s.out)
	}
	s.n.metrics.reject(s.id, s.out.Reject)
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
	s.w.Finish(f.b)
	s.wroteKeys.Add(uint64(f.b.Keys()))
	s.wroteBytes.Add(uint64(f.b.Bytes()))
	s.open = nil // f was the open flight, or (a synchronous commit) there was none
}

// commitFailed answers reqs, whose batch could not be made durable, with
// ErrUnavailable, and fails the node: the state in memory is ahead of the
// journal from here on, so nothing more is applied or read from it.
func (s *shard) commitFailed(err error, reqs []*Request) {
	if s.n.repl == nil || !errors.Is(err, errDeposed) {
		s.n.fail(fmt.Errorf("shard %d: %w", s.id, err))
	}
	for _, r := range reqs {
		r.complete(replyErr(err))
	}
}

// answer makes the batch's credits available (Flush), registers its new
// users with the edge, and wakes its requests; after it the shard does not
// touch b. Normally it runs once the batch is synced.
func (s *shard) answer(b, adds []*Request) {
	s.flush(-1)
	s.flushed.Store(s.seq)
	if f := s.n.opt.OnAddUser; f != nil && b != nil {
		for _, r := range adds {
			f(&r.Cmd)
		}
	}
	s.n.metrics.resting(s.id, s.eng.WorkingOrders(), s.eng.OpenPositions())
	for _, r := range b {
		r.complete(nil)
	}
}

// flush makes the first mark pending credits available (all: mark < 0).
func (s *shard) flush(mark int) {
	if engine.Invariants {
		invariantsMu.Lock()
		defer invariantsMu.Unlock()
	}
	if mark < 0 {
		s.eng.Flush()
	} else {
		s.eng.FlushTo(mark)
	}
}

// finishAll answers every batch in flight, oldest first.
func (s *shard) finishAll() {
	for s.inFlight > 0 {
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
	f.b.Reset()
	if f.pc.err != nil {
		s.commitFailed(f.pc.err, f.reqs)
		clear(f.reqs)
		f.reqs = f.reqs[:0]
		s.head = (s.head + 1) % maxFlights
		s.inFlight--
		return
	}
	s.n.sinceSnap.Add(int64(f.count))
	s.flush(f.mark)
	for i := 1; i < s.inFlight; i++ { // marks of the later batches move down
		s.fl[(s.head+i)%maxFlights].mark -= f.mark
	}
	s.flushed.Store(f.seq)
	if cb := s.n.opt.OnAddUser; cb != nil {
		for _, r := range f.adds {
			cb(&r.Cmd)
		}
	}
	s.n.metrics.resting(s.id, s.eng.WorkingOrders(), s.eng.OpenPositions())
	for _, r := range f.reqs {
		r.complete(nil)
	}
	clear(f.reqs)
	f.reqs = f.reqs[:0]
	s.head = (s.head + 1) % maxFlights
	s.inFlight--
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
		r.Last, r.Seq = s.eng.LastPrice(c.Market), s.seq
	case QueryPlans:
		r.Plans = s.eng.Plans(c.User, c.Market, r.Plans[:0])
	case QueryPositions:
		r.Positions = s.eng.Positions(c.User, c.Market, r.Positions[:0])
		if c.Market != engine.AllMarkets && c.Market != engine.AllContracts {
			r.Mode, r.Lev[0], r.Lev[1], _ = s.eng.Settings(c.User, c.Market)
		}
	case QueryContracts:
		s.contractQuery(r)
	case QuerySettled:
		r.HasOrder = s.n.st.Accounts.Settled(engine.SettleKey{Day: int32(c.OrderID >> 1), Broker: c.User,
			Market: c.Market, Product: uint8(c.OrderID & 1)})
	}
}
