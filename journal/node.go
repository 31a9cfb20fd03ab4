package journal

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	dto "github.com/prometheus/client_model/go"

	"github.com/weexcore/exchange/engine"
)

const (
	// maxMarketShards keeps every engine shard number (market shards and the
	// ledger) below 64: shard numbers are packed into bill ids.
	maxMarketShards = 63
	// maxBatch bounds the commands one shard applies and syncs at once.
	maxBatch = 4096

	defaultSnapshotEvery    = 2_000_000
	defaultSnapshotInterval = 10 * time.Minute
)

type impl struct {
	syncPace  syncPace   // group commit under load (pace.go)
	committer *committer // commits for the shards while syncs are paced
	opt       Options
	logf      func(string, ...any)
	db        *pebble.DB
	fs        *journalFS   // nil when read-only
	dbMu      sync.RWMutex // guards db against Close for history readers
	acc       *engine.Accounts
	mkts      []*engine.MarketSpec
	nMarket   int      // market shards; the ledger is shard nMarket
	shards    []*shard // market shards then the ledger
	engines   []*engine.Engine
	// frozen[i] is engines[i]'s book as of the last snapshot's barrier
	// (snapshot.go), kept so that the next one reuses its memory
	frozen []*engine.Frozen
	fresh  bool
	meta   *meta      // as stored (Seeded rewrites it)
	metaMu sync.Mutex // guards meta
	// replayed commands and the time recover took (snapshot load + replay)
	replayed  int
	replayDur time.Duration
	snapNo    uint64 // number of the newest snapshot (coordinator only)

	closed     atomic.Bool  // Submit refuses once set
	submitters atomic.Int64 // Submits between their closed check and their push
	barMu      sync.Mutex   // one barrier at a time
	sinceSnap  atomic.Int64 // commands applied since the last snapshot
	stopSnap   chan struct{}
	wg         sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error

	// ackBeforeSync is a deliberately broken mode for the crash test's
	// self-check (JOURNAL_TEST_ACK_BEFORE_SYNC=1 in the test binary only):
	// a batch is answered after it is applied, before it is committed.
	ackBeforeSync bool
}

func open(o Options) (*Node, error) {
	n := &Node{}
	x := &n.impl
	x.opt = o
	x.logf = o.Logf
	if x.logf == nil {
		x.logf = func(string, ...any) {}
	}
	if o.Dir == "" {
		return nil, errors.New("journal: no directory")
	}
	_, err := os.Stat(o.Dir)
	exists := err == nil
	if !exists && o.ReadOnly {
		return nil, fmt.Errorf("journal: %s does not exist", o.Dir)
	}
	if exists {
		if err := checkWALs(o.Dir); err != nil {
			return nil, err
		}
	}
	po := &pebble.Options{ReadOnly: o.ReadOnly, Logger: quietLogger{x.logf},
		// A drained batch of 4096 commands with their history rows is a few
		// MB: with the 4 MB default every such batch would be flushed to L0
		// on its own and compactions would eat the CPU the shards need.
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: 4,
		L0StopWritesThreshold:       24,
	}
	if !o.ReadOnly {
		// WAL sync chunks record in each chunk how far the WAL was synced,
		// so recovery can tell a torn tail (tolerated: never acknowledged)
		// from a corrupt chunk followed by synced ones (refused). Without
		// them Pebble would end the log silently at the first bad chunk.
		// (The format set below comes after FormatWALSyncChunks.)
		//
		// Journal records and history blocks are large values written
		// once and never changed: kept in blob files, compactions move
		// their keys and references instead of rewriting them (CPU per
		// durable command: -13% in BenchmarkDurable/batch=4096).
		po.FormatMajorVersion = pebble.FormatValueSeparation
		po.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
			return pebble.ValueSeparationPolicy{Enabled: true, MinimumSize: 1024, MaxBlobReferenceDepth: 10,
				RewriteMinimumAge: 10 * time.Minute, TargetGarbageRatio: 1}
		}
	}
	if !o.ReadOnly {
		po.EventListener = storageEvents(x.logf)
		if err := x.openFS(po); err != nil {
			return nil, err
		}
	}
	db, err := pebble.Open(o.Dir, po)
	if err != nil {
		x.closeFS()
		return nil, fmt.Errorf("journal: open %s: %v", o.Dir, err)
	}
	if !o.ReadOnly && db.FormatMajorVersion() >= pebble.FormatWALSyncChunks {
		// A new DB is created at an old format and ratcheted up, so its
		// first WAL lacks sync chunks: reopen to start a WAL that has them
		// (closing the first stops the spare it was writing; the second
		// gets a spare written anew).
		if _, c, err := db.Get([]byte{pfxMeta}); errors.Is(err, pebble.ErrNotFound) {
			db.Close()
			x.closeFS()
			if err := x.openFS(po); err != nil {
				return nil, err
			}
			if db, err = pebble.Open(o.Dir, po); err != nil {
				x.closeFS()
				return nil, fmt.Errorf("journal: open %s: %v", o.Dir, err)
			}
		} else if err == nil {
			c.Close()
		}
	}
	x.db = db
	if sp := x.fs; sp != nil {
		sp.wg.Add(1)
		go x.watchBacklog(sp)
	}
	if err := x.start(); err != nil {
		x.closeFS() // first: it stops watchBacklog, which reads db
		db.Close()
		return nil, err
	}
	if x.fs != nil {
		x.fs.pacer.on.Store(true)
	}
	return n, nil
}

// memTableSize is Pebble's MemTableSize here.
const memTableSize = 64 << 20

// watchBacklog samples the memtables' size and L0's depth for sp's pacer
// (tablepace.go) until sp is closed.
func (x *impl) watchBacklog(sp *journalFS) {
	defer sp.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-sp.stop:
			return
		case <-t.C:
		}
		if !x.dbMu.TryRLock() { // closing (closeDB holds it and waits for this goroutine)
			continue
		}
		if x.db != nil {
			m := x.db.Metrics()
			sp.pacer.l0.Store(int32(m.Levels[0].Sublevels))
			sp.pacer.mem.Store(int32((m.MemTable.Size + memTableSize - 1) / memTableSize))
		}
		x.dbMu.RUnlock()
	}
}

// openFS makes Pebble write through a journalFS (walspare.go): WALs on
// spares, paced flushes and compactions (tablepace.go).
func (x *impl) openFS(po *pebble.Options) error {
	sp, err := newJournalFS(vfs.Default, x.opt.Dir, int64(po.MemTableSize), x.logf)
	if err != nil {
		return fmt.Errorf("journal: WAL spare in %s: %v", x.opt.Dir, err)
	}
	x.fs, po.FS = sp, sp
	return nil
}

func (x *impl) closeFS() {
	if x.fs != nil {
		x.fs.close()
		x.fs = nil
	}
}

// start reads the meta, builds the engines, loads and replays, and starts
// the shard goroutines.
func (x *impl) start() error {
	o := &x.opt
	v, closer, err := x.db.Get([]byte{pfxMeta})
	var m *meta
	switch {
	case err == nil:
		m, err = decodeMeta(v)
		closer.Close()
		if err != nil {
			return err
		}
	case errors.Is(err, pebble.ErrNotFound):
		if o.ReadOnly {
			return fmt.Errorf("journal: %s holds no journal", o.Dir)
		}
		x.fresh = true
		s := o.Shards
		if s <= 0 {
			s = runtime.NumCPU()
		}
		if s > maxMarketShards {
			return fmt.Errorf("journal: %d shards, at most %d", s, maxMarketShards)
		}
		m = &meta{Version: metaVersion, Shards: s, Seeding: true}
	default:
		return fmt.Errorf("journal: read meta: %v", err)
	}
	if o.ReadOnly && len(o.Coins) == 0 && len(o.Markets) == 0 {
		o.Coins, o.Markets = m.Coins, m.Markets
	}
	if o.ReadOnly && o.FeeUID == 0 {
		o.FeeUID = m.FeeUID
	}
	nm, err := m.merge(o.Coins, o.Markets, o.FeeUID)
	if err != nil {
		return err
	}
	x.nMarket = m.Shards
	if o.Shards > 0 && o.Shards != m.Shards {
		x.logf("journal: %s was created with %d shards; using %d, not %d", o.Dir, m.Shards, m.Shards, o.Shards)
	}
	x.ackBeforeSync = ackBeforeSyncForTest()
	x.syncPace.force = testHooks && (testForcePace || os.Getenv("JOURNAL_TEST_FORCE_PACE") == "1")

	// The journal must be replayed with the market rules it was applied
	// under. If the configuration changed a stored market's rules, replay
	// with the stored ones, snapshot, and only then switch (and record the
	// new rules in the meta, after the snapshot is durable).
	replaySpecs, changed := o.Markets, false
	if !x.fresh && !o.ReadOnly {
		replaySpecs, changed = m.replaySpecs(o.Markets)
	}
	x.build(replaySpecs)
	if err := x.recover(); err != nil {
		return err
	}
	if changed {
		x.logf("journal: market rules changed: snapshot under the old rules, then switch")
		v := encodeSnapshot(x)
		x.snapNo++
		if err := x.db.Set(snapshotKey(nil, x.snapNo), v, pebble.Sync); err != nil {
			return fmt.Errorf("journal: write snapshot: %v", err)
		}
		seqs, times := x.seqsNow(), make([]int64, len(x.shards))
		for i, s := range x.shards {
			times[i] = s.timeMs
		}
		x.build(o.Markets)
		if err := x.restoreSnapshot(v); err != nil {
			return fmt.Errorf("journal: reload snapshot under the new rules: %v", err)
		}
		for i, s := range x.shards {
			s.seq, s.timeMs = seqs[i], times[i]
			s.applying.Store(s.seq)
			s.flushed.Store(s.seq)
		}
	}
	x.meta = nm
	if !o.ReadOnly {
		if err := x.db.Set([]byte{pfxMeta}, nm.encode(), pebble.Sync); err != nil {
			return fmt.Errorf("journal: write meta: %v", err)
		}
	}
	if o.ReadOnly {
		return nil
	}
	x.committer = newCommitter(x.db, &x.syncPace)
	go x.committer.run()
	for _, s := range x.shards {
		x.wg.Add(1)
		go s.run()
	}
	x.stopSnap = make(chan struct{})
	x.wg.Add(1)
	go x.snapshotter()
	return nil
}

// build makes the accounts, engines and shards for specs (not started).
func (x *impl) build(specs []*engine.MarketSpec) {
	o := &x.opt
	x.mkts = specs
	x.acc = engine.NewAccounts(o.Coins)
	per := make([][]*engine.MarketSpec, x.nMarket)
	for _, s := range specs {
		if s != nil {
			i := int(s.ID) % x.nMarket
			per[i] = append(per[i], s)
		}
	}
	x.engines = make([]*engine.Engine, x.nMarket+1)
	x.frozen = make([]*engine.Frozen, x.nMarket+1)
	x.shards = make([]*shard, x.nMarket+1)
	for i := 0; i <= x.nMarket; i++ {
		if i < x.nMarket {
			x.engines[i] = engine.New(i, x.acc, per[i], o.FeeUID)
		} else {
			x.engines[i] = engine.New(i, x.acc, nil, o.FeeUID)
		}
		x.shards[i] = newShard(x, i, x.engines[i], o.RingSize)
	}
}

// Seeding reports whether the data directory is new: created by this Open,
// or by an earlier one whose owner did not get to call Seeded (it may have
// applied part of its initial commands before a crash).
func (n *Node) Seeding() bool {
	n.metaMu.Lock()
	defer n.metaMu.Unlock()
	return n.meta.Seeding
}

// Seeded records, durably, that the owner has applied its initial
// commands: later Opens report Seeding false.
func (n *Node) Seeded() error {
	n.metaMu.Lock()
	defer n.metaMu.Unlock()
	if !n.meta.Seeding {
		return nil
	}
	m := *n.meta
	m.Seeding = false
	n.dbMu.RLock()
	defer n.dbMu.RUnlock()
	if n.db == nil {
		return ErrClosed
	}
	if err := n.db.Set([]byte{pfxMeta}, m.encode(), pebble.Sync); err != nil {
		return fmt.Errorf("journal: write meta: %v", err)
	}
	n.meta = &m
	return nil
}

// Replayed returns how many journaled commands Open replayed and how long
// loading the snapshot and replaying took.
func (n *Node) Replayed() (int, time.Duration) { return n.replayed, n.replayDur }

// Written returns the Pebble keys and bytes the shards have committed
// since Open (journal records and history rows).
func (n *Node) Written() (keys, bytes uint64) {
	for _, s := range n.shards {
		keys += s.wroteKeys.Load()
		bytes += s.wroteBytes.Load()
	}
	return keys, bytes
}

// Shards returns the number of market shards (the ledger shard is one more).
func (n *Node) Shards() int { return n.nMarket }

// Engines returns every engine, market shards then the ledger. They may be
// read only while the node is stopped or read-only (audit, tests).
func (n *Node) Engines() []*engine.Engine { return n.engines }

// Seqs returns each shard's last flushed sequence, market shards then the
// ledger.
func (n *Node) Seqs() []uint64 {
	s := make([]uint64, len(n.shards))
	for i, sh := range n.shards {
		s[i] = sh.flushed.Load()
	}
	return s
}

func (x *impl) accounts() *engine.Accounts    { return x.acc }
func (x *impl) markets() []*engine.MarketSpec { return x.mkts }

// shardOf returns the shard a command or query goes to.
func (x *impl) shardOf(c *engine.Cmd) *shard {
	switch c.Kind {
	case engine.CmdDeposit, engine.CmdWithdraw, engine.CmdAddUser:
		return x.shards[x.nMarket]
	}
	if c.Market == engine.AllMarkets {
		return x.shards[0]
	}
	return x.shards[int(c.Market)%x.nMarket]
}

func (x *impl) submit(r *Request) error {
	if r.Cmd.Text.N > engine.ClientIDMax {
		// A request is plain data from the edge; a bad length must not
		// panic a shard (Text.Bytes would slice past the array).
		r.Cmd.Text.N = engine.ClientIDMax
	}
	return x.push(x.shardOf(&r.Cmd), r)
}

func (x *impl) push(s *shard, r *Request) error {
	if x.opt.ReadOnly {
		return ErrClosed
	}
	x.submitters.Add(1)
	if x.closed.Load() {
		x.submitters.Add(-1)
		return ErrClosed
	}
	idle := r.rt.state.Load()
	r.rt.state.Store(idle&^stateMask | stateQueued)
	r.rt.refs.Add(1) // the shard's, dropped by complete
	if !s.q.push(r) {
		r.rt.refs.Add(-1)
		r.rt.state.Store(idle)
		x.submitters.Add(-1)
		return ErrBusy
	}
	x.submitters.Add(-1)
	return nil
}

// balances reads u's cells, then waits until every shard has flushed what
// it was applying at the time, so nothing shown can be taken back by a
// crash.
func (x *impl) balances(u engine.UserIdx, deadline time.Time, dst []Balance) ([]Balance, error) {
	if int(u) >= x.acc.NumUsers() {
		return dst, nil
	}
	for i := range x.acc.Coins() {
		c := engine.CoinID(i)
		a, f := x.acc.Balance(u, c)
		dst = append(dst, Balance{Coin: c, Avail: a, Frozen: f})
	}
	for _, s := range x.shards {
		want := s.applying.Load()
		for spins := 0; s.flushed.Load() < want; spins++ {
			if x.closed.Load() && s.stopped.Load() {
				break
			}
			if time.Now().After(deadline) {
				return dst, ErrTimeout
			}
			if spins < 16 {
				runtime.Gosched()
			} else {
				time.Sleep(20 * time.Microsecond)
			}
		}
	}
	return dst, nil
}

// query runs one in-shard query and waits for it.
func (x *impl) query(q Query, c engine.Cmd, deadline time.Time) (*Request, error) {
	r := acquireRequest()
	r.Cmd, r.Query = c, q
	if err := x.submit(r); err != nil {
		releaseRequest(r)
		return nil, err
	}
	if err := r.Wait(deadline); err != nil {
		releaseRequest(r)
		return nil, err
	}
	return r, nil
}

func (x *impl) openOrders(u engine.UserIdx, uid int64, m engine.MarketID, deadline time.Time, dst []engine.OrderView) ([]engine.OrderView, error) {
	c := engine.Cmd{User: u, UID: uid, Market: m}
	if m != engine.AllMarkets {
		r, err := x.query(QueryOpenOrders, c, deadline)
		if err != nil {
			return dst, err
		}
		dst = append(dst, r.Orders...)
		releaseRequest(r)
		return dst, nil
	}
	// Every market shard, in parallel: submit all, then wait for all.
	reqs := make([]*Request, 0, x.nMarket)
	var err error
	for i := 0; i < x.nMarket; i++ {
		r := acquireRequest()
		r.Cmd, r.Query = c, QueryOpenOrders
		if e := x.push(x.shards[i], r); e != nil {
			releaseRequest(r)
			err = e
			break
		}
		reqs = append(reqs, r)
	}
	start := len(dst)
	for _, r := range reqs {
		if e := r.Wait(deadline); e != nil {
			if err == nil {
				err = e
			}
		} else if err == nil {
			dst = append(dst, r.Orders...)
		}
		releaseRequest(r)
	}
	if err != nil {
		return dst[:start], err
	}
	engine.SortOrders(dst[start:])
	return dst, nil
}

func (x *impl) order(u engine.UserIdx, uid int64, m engine.MarketID, orderID int64, cid []byte, deadline time.Time) (engine.OrderView, bool, error) {
	c := engine.Cmd{User: u, UID: uid, Market: m, OrderID: orderID}
	if orderID == 0 && !c.Text.Set(cid) {
		return engine.OrderView{}, false, nil
	}
	r, err := x.query(QueryOrder, c, deadline)
	if err != nil {
		return engine.OrderView{}, false, err
	}
	v, ok := r.Order, r.HasOrder
	releaseRequest(r)
	if ok {
		return v, true, nil
	}
	// Not working: finished orders are in history, which the query's sync
	// has made complete up to it.
	return x.historyOrder(uid, m, orderID, cid)
}

func (x *impl) depth(m engine.MarketID, limit int, deadline time.Time, bids, asks []engine.Level) ([]engine.Level, []engine.Level, engine.Price, error) {
	r, err := x.query(QueryDepth, engine.Cmd{Market: m, Qty: engine.Qty(limit)}, deadline)
	if err != nil {
		return bids, asks, 0, err
	}
	bids = append(bids, r.Bids...)
	asks = append(asks, r.Asks...)
	last := r.Last
	releaseRequest(r)
	return bids, asks, last, nil
}

// close stops accepting, drains every ring, writes a snapshot and closes
// Pebble.
func (x *impl) close() error {
	x.closeOnce.Do(func() {
		x.closed.Store(true)
		if x.opt.ReadOnly {
			x.closeErr = x.closeDB()
			return
		}
		for x.submitters.Load() != 0 { // pushes that passed the check
			runtime.Gosched()
		}
		close(x.stopSnap)
		x.barMu.Lock()
		if err := x.snapshotLocked(); err != nil {
			x.logf("journal: snapshot at close: %v", err)
		}
		for _, s := range x.shards {
			r := &Request{}
			r.rt.op = opStop
			for !s.q.push(r) {
				time.Sleep(50 * time.Microsecond)
			}
		}
		x.barMu.Unlock()
		x.wg.Wait()
		x.committer.close()
		x.closeErr = x.closeDB()
	})
	return x.closeErr
}

func (x *impl) closeDB() error {
	x.dbMu.Lock()
	defer x.dbMu.Unlock()
	if x.db == nil {
		return nil
	}
	if !x.opt.ReadOnly {
		x.fs.pacer.on.Store(false) // nothing left to make room for
		// Flush the memtable so the next Open (or audit) need not replay
		// up to 64 MB of WAL before it can replay the journal.
		if err := x.db.Flush(); err != nil {
			x.logf("journal: flush at close: %v", err)
		}
	}
	err := x.db.Close()
	x.db = nil
	x.closeFS()
	if err != nil {
		return fmt.Errorf("journal: close: %v", err)
	}
	return nil
}

// storageEvents logs Pebble's background work that competes with the
// shards' syncs for the disk and the CPU: memtable flushes, compactions,
// write stalls and slow disk operations, and WAL files created (new, or
// recycled: a recycled WAL is overwritten in place, and its fdatasync
// need not update the file's metadata) and deleted (not recycled: its
// blocks are freed, journalFS.Remove). An operator (or the benchmark's
// reader) can set a latency spike against them.
func storageEvents(logf func(string, ...any)) *pebble.EventListener {
	return &pebble.EventListener{
		FlushEnd: func(i pebble.FlushInfo) {
			if i.Err == nil || !strings.Contains(i.Err.Error(), "empty table") { // nothing to flush: not news
				logf("journal: pebble: %s", i)
			}
		},
		CompactionEnd:   func(i pebble.CompactionInfo) { logf("journal: pebble: %s", i) },
		WriteStallBegin: func(i pebble.WriteStallBeginInfo) { logf("journal: pebble: %s", i) },
		WriteStallEnd:   func() { logf("journal: pebble: write stall ending") },
		DiskSlow:        func(i pebble.DiskSlowInfo) { logf("journal: pebble: %s", i) },
		WALCreated:      func(i pebble.WALCreateInfo) { logf("journal: pebble: %s", i) },
		WALDeleted:      func(i pebble.WALDeleteInfo) { logf("journal: pebble: %s", i) },
	}
}

// quietLogger routes Pebble's log lines to Options.Logf.
type quietLogger struct{ logf func(string, ...any) }

func (l quietLogger) Infof(format string, args ...any)  {}
func (l quietLogger) Errorf(format string, args ...any) { l.logf("pebble: "+format, args...) }
func (l quietLogger) Fatalf(format string, args ...any) {
	l.logf("pebble: "+format, args...)
	panic(fmt.Sprintf("pebble: "+format, args...))
}

func ackBeforeSyncForTest() bool {
	return testHooks && os.Getenv("JOURNAL_TEST_ACK_BEFORE_SYNC") == "1"
}

// LatencyBucket is one bucket of a latency histogram: how many took less
// than Upper (and at least the previous bucket's Upper); Upper 0 is the
// last, unbounded bucket.
type LatencyBucket struct {
	Upper time.Duration
	Count uint64
}

// WALSyncs returns the latencies of the WAL fdatasyncs since Open (Pebble
// measures them: 100 µs buckets below 5 ms, then growing ones), the
// non-empty buckets in order. It reads all of Pebble's metrics: for an
// operator's or a benchmark's occasional look, not for a hot path.
func (n *Node) WALSyncs() []LatencyBucket {
	h := n.db.Metrics().LogWriter.FsyncLatency
	if h == nil {
		return nil
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil || m.Histogram == nil {
		return nil
	}
	var out []LatencyBucket
	var below uint64 // cumulative count of the buckets before
	for _, b := range m.Histogram.Bucket {
		if b.GetUpperBound() <= 0 {
			continue // (Pebble's first bound is 0) its count joins the next bucket's
		}
		c := b.GetCumulativeCount()
		if c > below {
			out = append(out, LatencyBucket{Upper: time.Duration(b.GetUpperBound()), Count: c - below})
		}
		below = c
	}
	if total := m.Histogram.GetSampleCount(); total > below {
		out = append(out, LatencyBucket{Count: total - below})
	}
	return out
}
