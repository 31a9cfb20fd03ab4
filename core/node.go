package core

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

var (
	// ErrBusy: the shard's ring is full; nothing was applied (HTTP 503, -1054).
	ErrBusy = errors.New("core: shard busy")
	// ErrTimeout: the deadline passed before the result was durable. The
	// command may still be applied and journaled later.
	ErrTimeout = errors.New("core: deadline exceeded")
	// ErrClosed: the node is shutting down.
	ErrClosed = errors.New("core: closed")
	// ErrUnavailable: the journal could not be written (a full disk, an
	// I/O error), so the node takes no more commands and answers no read
	// of its memory, which may hold commands that are not durable. A
	// command answered with it is not acknowledged: it is applied only if
	// the journal kept it, which a restart shows.
	ErrUnavailable = errors.New("core: the journal cannot be written")

	errNotSubmitted = errors.New("core: request was not submitted")
)

const (
	// maxBatch bounds the commands one shard applies and syncs at once.
	maxBatch = 4096

	defaultSnapshotEvery    = 2_000_000
	defaultSnapshotInterval = 10 * time.Minute
)

// Options configures Open.
type Options struct {
	PinCPUs          bool          // lock each shard goroutine to a CPU
	RingSize         int           // slots per ring (power of two); 0: 4096
	SnapshotEvery    int           // commands between snapshots; 0: 2,000,000
	SnapshotInterval time.Duration // 0: 10 minutes
	// ScrubEvery is how often the store is read whole in the background,
	// so that a damaged block is found before a client meets it
	// (journal.Store.Scrub); the first scrub is one interval after Open.
	// 0: 24 hours; negative: never.
	ScrubEvery time.Duration
	Logger     *slog.Logger // nil: discard

	// Markets are the configured markets' rules (nil: keep the journal's).
	// Open changes the rules of every market whose configured rules differ
	// from those its journal last set, with a CmdSetRules each, so that the
	// change is journaled at one sequence number and replays (a replicated
	// member does it once it leads; followers apply the leader's).
	Markets []*engine.MarketSpec

	// Clock is the exchange's clock in Unix milliseconds (nil: the
	// system's). Every batch takes its time from it (journaled with the
	// batch, so a replay is unchanged), as do rebate settlement's day
	// boundaries; the node never goes back before its last batch.
	Clock func() int64
	// SettleEvery is how often the rebate settler and the funding timer
	// (funding.go) look for work; the settler looks for ended days to
	// settle (rebate.go); 0: every second; negative: never.
	SettleEvery time.Duration

	// OnAddUser is called on the ledger goroutine for every CmdAddUser
	// applied live, once it is durable (Load calls it for the replayed
	// ones), so the edge can register credentials.
	OnAddUser func(c *engine.Cmd)

	// Replica makes the node a member of a raft group (replicated.go);
	// nil: a single node.
	Replica *ReplicaOptions
}

// Query selects a read that runs inside a shard, answered after the sync
// that covers every command before it (docs/DESIGN.md, "The path of one order").
type Query uint8

const (
	QueryNone       Query = iota // a command
	QueryOpenOrders              // Cmd.User, Cmd.Market (or engine.AllMarkets)
	QueryOrder                   // Cmd.User, Cmd.Market, Cmd.OrderID or Cmd.Text
	QueryDepth                   // Cmd.Market, Cmd.Qty = levels per side
	QuerySettled                 // Cmd as the CmdRebate it asks about: was its day paid? (rebate.go)
	QueryPositions               // User's positions in Market (or AllMarkets) and its settings there
	QueryPlans                   // User's plans in Market (or AllContracts)
	QueryContracts               // contract markets' books, last prices, open interest; a user's settings and positions (contract_query.go)

)

// Balance is one coin of a user's balance.
type Balance struct {
	Coin   engine.CoinID
	Avail  engine.Amount
	Frozen engine.Amount
}

// Node is the running exchange core: one goroutine per shard, each with a
// bounded lock-free ring in front of it and the journal behind it
// (doc.go).
type Node struct {
	opt       Options
	log       *slog.Logger
	store     *journal.Store
	st        *journal.State
	shards    []*shard // market shards then the ledger
	nMarket   int      // market shards; the ledger is shard nMarket
	syncPace  syncPace
	committer *committer
	// frozen[i] is shard i's book as of the last snapshot's barrier,
	// kept so that the next snapshot reuses its memory (barrier.go)
	frozen []*engine.Frozen

	floor    int64      // the newest batch time in the journal at Open (Now)
	settleMu sync.Mutex // one rebate settlement at a time

	premMu sync.Mutex                    // guards prem
	prem   map[engine.MarketID]*premiums // the funding timer's samples (funding.go)

	closed     atomic.Bool  // Submit refuses once set
	submitters atomic.Int64 // Submits between their closed check and their push
	barMu      sync.Mutex   // one barrier at a time
	sinceSnap  atomic.Int64 // commands applied since the last snapshot
	stopSnap   chan struct{}
	wg         sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error
	metrics    metrics

	// failed is set once a commit failed (fail): Submit and memory reads
	// answer ErrUnavailable from then on. failedCh is closed then, and
	// spaceBack once a probe write in the data directory succeeds again.
	failed    atomic.Pointer[error]
	failOnce  sync.Once
	failedCh  chan struct{}
	spaceBack chan struct{}

	// ackBeforeSync is a deliberately broken mode for the crash test's
	// self-check (JOURNAL_TEST_ACK_BEFORE_SYNC=1 in the test binary only):
	// a batch is answered after it is applied, before it is committed.
	ackBeforeSync bool

	repl *replicated // nil: a single node (replicated.go)
}

// Open starts the shards on st, loaded from store (journal.Store.Load).
// The node owns both from then on: Close closes the store.
func Open(store *journal.Store, st *journal.State, o Options) (*Node, error) {
	if store.ReadOnly() {
		return nil, errors.New("core: the store is read-only")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{opt: o, log: log, store: store, st: st, nMarket: st.MarketShards(),
		failedCh: make(chan struct{}), spaceBack: make(chan struct{})}
	n.ackBeforeSync = testHooks && os.Getenv("JOURNAL_TEST_ACK_BEFORE_SYNC") == "1"
	n.syncPace.force = testHooks && (testForcePace || os.Getenv("JOURNAL_TEST_FORCE_PACE") == "1")
	for _, t := range st.Times {
		n.floor = max(n.floor, t)
	}
	n.frozen = make([]*engine.Frozen, len(st.Engines))
	n.metrics.init(len(st.Engines))
	for i, e := range st.Engines {
		n.shards = append(n.shards, newShard(n, i, e))
	}
	n.committer = newCommitter(store, &n.syncPace, &n.metrics)
	if o.Replica != nil {
		// Every batch goes through the committer, which replicates it.
		n.syncPace.force = true
		n.repl = newReplicated(n, *o.Replica)
		n.committer.repl = n.repl
	}
	go n.committer.run()
	for _, s := range n.shards {
		n.wg.Add(1)
		go s.run()
	}
	n.stopSnap = make(chan struct{}) // before anything that may Close
	if n.repl != nil {
		if err := n.repl.start(); err != nil {
			n.Close()
			return nil, err
		}
	}
	n.wg.Add(1)
	go n.snapshotter()
	if o.ScrubEvery >= 0 {
		n.wg.Add(1)
		go n.scrubber()
	}
	store.Serving(true)
	if n.repl == nil {
		if err := n.configRules(); err != nil {
			n.Close()
			return nil, err
		}
	} else { // a member changes them once it leads: the leader's CmdSetRules replicates
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			select {
			case <-n.WritableCh():
			case <-n.stopSnap:
				return
			}
			if err := n.configRules(); err != nil {
				n.log.Error("core: replica: configured rules not applied", "err", err.Error())
			}
		}()
	}
	if o.SettleEvery >= 0 { // after the rules: settlement reads the markets' specs
		n.wg.Add(2)
		go n.settler()
		go n.funder()
	}
	return n, nil
}

// configRules changes the rules of every market whose configured rules
// (Options.Markets) differ from those it runs under.
func (n *Node) configRules() error {
	for _, spec := range n.opt.Markets {
		if spec == nil {
			continue
		}
		if cur := n.rulesOf(spec.ID); cur == nil || *cur == *spec {
			continue
		}
		if err := n.SetRules(spec, time.Now().Add(30*time.Second)); err != nil {
			return fmt.Errorf("core: rules of %s: %w", spec.Symbol, err)
		}
		n.log.Info("core: market rules changed", "market", spec.Symbol)
	}
	return nil
}

// rulesOf returns the rules market m runs under now. Only configRules
// changes rules (each on its market's shard; a replicated member once it
// leads, when no replayed entry changes them any more), so this read
// outside the shards is safe in configRules and once it has returned.
func (n *Node) rulesOf(m engine.MarketID) *engine.MarketSpec {
	if int(m) >= len(n.st.Markets) {
		return nil
	}
	return n.st.Markets[m]
}

// SetRules changes a market's rules (fees, limits, bands, trading on or
// off; not its tick or step size or coins) with a journaled CmdSetRules.
func (n *Node) SetRules(spec *engine.MarketSpec, deadline time.Time) error {
	r := AcquireRequest()
	r.Cmd = engine.Cmd{Kind: engine.CmdSetRules, Market: spec.ID}
	r.Rules = spec
	if err := n.Submit(r); err != nil {
		ReleaseRequest(r)
		return err
	}
	if err := r.Wait(deadline); err != nil {
		return err // a timed-out request is not released: the shard may still write it
	}
	rej := r.Out.Reject
	ReleaseRequest(r)
	if rej != engine.OK {
		return fmt.Errorf("core: rules of %s rejected: %v", spec.Symbol, rej)
	}
	return nil
}

// Now returns the exchange's time in Unix milliseconds (Options.Clock),
// never before the journal's newest batch.
func (n *Node) Now() int64 {
	var t int64
	if n.opt.Clock != nil {
		t = n.opt.Clock()
	} else {
		t = time.Now().UnixMilli()
	}
	return max(t, n.floor)
}

// Store returns the node's store (history reads, seeding).
func (n *Node) Store() *journal.Store { return n.store }

// Accounts returns the shared balance table (for lookups; reading balances
// for a client goes through Balances).
func (n *Node) Accounts() *engine.Accounts { return n.st.Accounts }

// Shards returns the number of market shards (the ledger shard is one more).
func (n *Node) Shards() int { return n.nMarket }

// Seqs returns each shard's last flushed sequence, market shards then the
// ledger.
func (n *Node) Seqs() []uint64 {
	s := make([]uint64, len(n.shards))
	for i, sh := range n.shards {
		s[i] = sh.flushed.Load()
	}
	return s
}

// Written returns the Pebble keys and bytes the shards have committed
// since Open (journal records and history rows).
func (n *Node) Written() (keys, bytes uint64) {
	for _, s := range n.shards {
		keys += s.wroteKeys.Load()
		bytes += s.wroteBytes.Load()
	}
	return keys, bytes
}

// shardOf returns the shard a command or query goes to: the ledger for
// commands on balances and users, else the market's shard.
func (n *Node) shardOf(c *engine.Cmd) *shard {
	switch c.Kind {
	case engine.CmdDeposit, engine.CmdWithdraw, engine.CmdAddUser, engine.CmdRebate,
		engine.CmdTransfer, engine.CmdLeverage, engine.CmdMarginMode, engine.CmdPositionMargin:
		return n.shards[n.nMarket] // the ledger, which owns futures wallets and contracts
	}
	if c.Market == engine.AllContracts {
		return n.shards[n.nMarket]
	}
	if c.Market == engine.AllMarkets {
		return n.shards[0]
	}
	return n.shards[n.st.MarketShard(c.Market)]
}

// Submit pushes r onto its shard's ring (by Cmd.Kind and Cmd.Market). It
// never blocks: a full ring returns ErrBusy and nothing is applied.
func (n *Node) Submit(r *Request) error {
	if n.repl != nil && r.Query == QueryNone && !n.repl.writable.Load() {
		return ErrNotLeader
	}
	if r.Cmd.Text.N > engine.ClientIDMax {
		// A request is plain data from the edge; a bad length must not
		// panic a shard (Text.Bytes would slice past the array).
		r.Cmd.Text.N = engine.ClientIDMax
	}
	return n.push(n.shardOf(&r.Cmd), r)
}

func (n *Node) push(s *shard, r *Request) error {
	if n.failed.Load() != nil {
		return ErrUnavailable
	}
	n.submitters.Add(1)
	if n.closed.Load() {
		n.submitters.Add(-1)
		return ErrClosed
	}
	idle := r.rt.state.Load()
	r.rt.state.Store(idle&^stateMask | stateQueued)
	r.rt.refs.Add(1) // the shard's, dropped by complete
	if !s.q.push(r) {
		r.rt.refs.Add(-1)
		r.rt.state.Store(idle)
		n.submitters.Add(-1)
		return ErrBusy
	}
	n.submitters.Add(-1)
	return nil
}

// Balances returns u's balance of every coin, as of durable state only:
// it reads u's cells, then waits until every shard has flushed what it
// was applying at the time, so nothing shown can be taken back by a crash.
func (n *Node) Balances(u engine.UserIdx, deadline time.Time, dst []Balance) ([]Balance, error) {
	return n.balances(u, 0, deadline, dst)
}

// FuturesBalances is Balances of u's futures wallets (Coin carries
// engine.Futures); a futures wallet's frozen part is its working opens'
// reservations plus its positions' margin.
func (n *Node) FuturesBalances(u engine.UserIdx, deadline time.Time, dst []Balance) ([]Balance, error) {
	return n.balances(u, engine.Futures, deadline, dst)
}

func (n *Node) balances(u engine.UserIdx, wallet engine.CoinID, deadline time.Time, dst []Balance) ([]Balance, error) {
	if n.failed.Load() != nil {
		return dst, ErrUnavailable
	}
	acc := n.st.Accounts
	if int(u) >= acc.NumUsers() {
		return dst, nil
	}
	for i := range acc.Coins() {
		c := engine.CoinID(i) | wallet
		a, f := acc.Balance(u, c)
		dst = append(dst, Balance{Coin: c, Avail: a, Frozen: f})
	}
	for _, s := range n.shards {
		want := s.applying.Load()
		for spins := 0; s.flushed.Load() < want; spins++ {
			if n.closed.Load() && s.stopped.Load() {
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
func (n *Node) query(q Query, c engine.Cmd, deadline time.Time) (*Request, error) {
	r := AcquireRequest()
	r.Cmd, r.Query = c, q
	if err := n.Submit(r); err != nil {
		ReleaseRequest(r)
		return nil, err
	}
	if err := r.Wait(deadline); err != nil {
		ReleaseRequest(r)
		return nil, err
	}
	return r, nil
}

// OpenOrders returns u's working orders in market m (or engine.AllMarkets,
// gathered from every shard), oldest first.
func (n *Node) OpenOrders(u engine.UserIdx, uid int64, m engine.MarketID, deadline time.Time, dst []engine.OrderView) ([]engine.OrderView, error) {
	c := engine.Cmd{User: u, UID: uid, Market: m}
	if m != engine.AllMarkets {
		r, err := n.query(QueryOpenOrders, c, deadline)
		if err != nil {
			return dst, err
		}
		dst = append(dst, r.Orders...)
		ReleaseRequest(r)
		return dst, nil
	}
	// Every market shard, in parallel: submit all, then wait for all.
	reqs := make([]*Request, 0, n.nMarket)
	var err error
	for i := 0; i < n.nMarket; i++ {
		r := AcquireRequest()
		r.Cmd, r.Query = c, QueryOpenOrders
		if e := n.push(n.shards[i], r); e != nil {
			ReleaseRequest(r)
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
		ReleaseRequest(r)
	}
	if err != nil {
		return dst[:start], err
	}
	engine.SortOrders(dst[start:])
	return dst, nil
}

// Order returns u's order in m by id (or client id when orderID is 0):
// working orders from the shard, finished ones from history.
func (n *Node) Order(u engine.UserIdx, uid int64, m engine.MarketID, orderID int64, cid []byte, deadline time.Time) (engine.OrderView, bool, error) {
	c := engine.Cmd{User: u, UID: uid, Market: m, OrderID: orderID}
	if orderID == 0 && !c.Text.Set(cid) {
		return engine.OrderView{}, false, nil
	}
	r, err := n.query(QueryOrder, c, deadline)
	if err != nil {
		return engine.OrderView{}, false, err
	}
	v, ok := r.Order, r.HasOrder
	ReleaseRequest(r)
	if ok {
		return v, true, nil
	}
	// Not working: finished orders are in history, which the query's sync
	// has made complete up to it.
	return n.store.Order(uid, m, orderID, cid)
}

// Depth returns up to limit levels per side of m, best first, and the last price.
func (n *Node) Depth(m engine.MarketID, limit int, deadline time.Time, bids, asks []engine.Level) (Book, error) {
	r, err := n.query(QueryDepth, engine.Cmd{Market: m, Qty: engine.Qty(limit)}, deadline)
	if err != nil {
		return Book{Bids: bids, Asks: asks}, err
	}
	b := Book{Bids: append(bids, r.Bids...), Asks: append(asks, r.Asks...), Last: r.Last, Seq: r.Seq}
	ReleaseRequest(r)
	return b, nil
}

// Book is a market's book as Depth answers it.
type Book struct {
	Bids, Asks []engine.Level // best first, up to the limit asked for
	Last       engine.Price   // the last trade's price; 0 before the first
	// Seq is the market's shard's last command as of the answer: it grows
	// with every change of the book (and with the shard's other commands).
	Seq uint64
}

// AllOrders returns u's (uid's) orders in m created within [startMs,
// endMs], oldest first (id order, which is creation order: ids and batch
// times both grow along a market's shard), skipping offset and returning
// at most limit: the working ones from the shard merged with the finished
// ones from history. The shard answers after every earlier batch is
// durable, so an order that finished before the answer has its row; one
// that finished since is in both, and its row (the later state) wins.
func (n *Node) AllOrders(u engine.UserIdx, uid int64, m engine.MarketID, startMs, endMs int64, offset, limit int, deadline time.Time, dst []engine.OrderView) ([]engine.OrderView, error) {
	if limit <= 0 || endMs < startMs {
		return dst, nil
	}
	r, err := n.query(QueryOpenOrders, engine.Cmd{User: u, UID: uid, Market: m}, deadline)
	if err != nil {
		return dst, err
	}
	defer ReleaseRequest(r)
	if testAfterWorking != nil {
		testAfterWorking()
	}
	working := r.Orders
	emit := func(o *engine.OrderView) bool { // false once limit is reached
		if o.TimeMs < startMs || o.TimeMs > endMs {
			return true
		}
		if offset > 0 {
			offset--
			return true
		}
		dst = append(dst, *o)
		limit--
		return limit > 0
	}
	err = n.store.FinishedOrders(uid, m, startMs, endMs, func(h *engine.OrderView) bool {
		for ; len(working) > 0 && working[0].OrderID <= h.OrderID; working = working[1:] {
			if working[0].OrderID != h.OrderID && !emit(&working[0]) {
				return false
			}
		}
		return emit(h)
	})
	for ; err == nil && limit > 0 && len(working) > 0; working = working[1:] {
		emit(&working[0])
	}
	return dst, err
}

// scrubRate paces the background scrub: a store's worth of reads spread
// thin, so that it does not compete with the shards' syncs.
const scrubRate = 8 << 20 // bytes per second

// scrubber scrubs the store every ScrubEvery until the node closes.
func (n *Node) scrubber() {
	defer n.wg.Done()
	every := n.opt.ScrubEvery
	if every == 0 {
		every = 24 * time.Hour
	}
	for {
		select {
		case <-n.stopSnap:
			return
		case <-time.After(every):
		}
		t0 := time.Now()
		if err := n.store.Scrub(scrubRate, n.stopSnap); err != nil {
			n.log.Error("core: scrub found damage: reads that meet it answer 500; restore the data directory from a backup or a replica", "err", err)
		} else {
			n.log.Info("core: scrub: every table and value read back intact", "took", time.Since(t0).Round(time.Second))
		}
	}
}

// testAfterWorking, when set (tests only), runs in AllOrders between the
// shard's answer and the read of history.
var testAfterWorking func()

// Close stops accepting, drains every ring, writes a snapshot and closes
// the store.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.closed.Store(true)
		for n.submitters.Load() != 0 { // pushes that passed the check
			runtime.Gosched()
		}
		if n.repl != nil {
			// No more entries applied; a leader's batches in flight fail.
			n.repl.close()
		}
		close(n.stopSnap)
		n.barMu.Lock()
		if n.failed.Load() == nil && n.repl == nil { // else the memory may be ahead of the journal
			if err := n.snapshotLocked(); err != nil {
				n.log.Error("core: snapshot at close", "err", err)
			}
		}
		for _, s := range n.shards {
			r := &Request{}
			r.rt.op = opStop
			for !s.q.push(r) {
				time.Sleep(50 * time.Microsecond)
			}
		}
		n.barMu.Unlock()
		n.wg.Wait()
		n.committer.close()
		n.closeErr = n.store.Close()
	})
	return n.closeErr
}

// fail puts the node in its failed state after a commit failed (err,
// journal.ErrWriteFailed): no more commands, no reads of memory, a log
// line, and a goroutine that probes the data directory for space.
func (n *Node) fail(err error) {
	n.failOnce.Do(func() {
		n.failed.Store(&err)
		close(n.failedCh)
		n.log.Error("core: the journal cannot be written: writes and reads of working orders and balances answer 503 "+
			"until a restart, which replays what is durable; finished orders, trades and bills are still served", "err", err)
		n.wg.Add(1)
		go n.probeSpace()
	})
}

// Failed returns a channel closed when the journal cannot be written any
// more, and SpaceBack one closed once the data directory takes writes
// again: then a restart (exchanged exits for its supervisor) brings the
// node back with everything durable.
func (n *Node) Failed() <-chan struct{}    { return n.failedCh }
func (n *Node) SpaceBack() <-chan struct{} { return n.spaceBack }

// probeSpace checks every second whether the data directory has room to
// start again (journal.Store.HasRoom) until it has (then it closes
// spaceBack) or the node closes, and reminds the log of the failure every
// minute.
func (n *Node) probeSpace() {
	defer n.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for i := 1; ; i++ {
		select {
		case <-n.stopSnap:
			return
		case <-t.C:
		}
		if n.store.HasRoom() {
			n.log.Info("core: the data directory has room again: restart the server to resume (exchanged exits for its supervisor)")
			close(n.spaceBack)
			return
		}
		if i%60 == 0 {
			n.log.Error("core: the journal still cannot be written", "err", (*n.failed.Load()).Error())
		}
	}
}

// Start opens the store jo, loads it (lo) and starts a node on it (o):
// the whole start-up of a data directory. OnAddUser, when set in o, is
// used for the load too.
func Start(jo journal.Options, lo journal.LoadOptions, o Options) (*Node, error) {
	if jo.Logger == nil {
		jo.Logger = o.Logger
	}
	if lo.OnAddUser == nil {
		lo.OnAddUser = o.OnAddUser
	}
	if o.Markets == nil {
		o.Markets = lo.Markets
	}
	store, err := journal.Open(jo)
	if err != nil {
		return nil, err
	}
	st, err := store.Load(lo)
	if err == nil {
		var n *Node
		if n, err = Open(store, st, o); err == nil {
			return n, nil
		}
	}
	store.Close()
	return nil, err
}

// Positions returns u's positions in contract market m (or
// engine.AllContracts) and, for one market, u's margin mode and LONG and
// SHORT leverage there. Like every in-shard query it answers after the
// commands before it are durable.
func (n *Node) Positions(u engine.UserIdx, uid int64, m engine.MarketID, deadline time.Time, dst []engine.PositionView) ([]engine.PositionView, engine.MarginMode, [2]int32, error) {
	r, err := n.query(QueryPositions, engine.Cmd{User: u, UID: uid, Market: m}, deadline)
	if err != nil {
		return dst, 0, [2]int32{}, err
	}
	dst = append(dst, r.Positions...)
	mode, lev := r.Mode, r.Lev
	ReleaseRequest(r)
	return dst, mode, lev, nil
}

// Plans returns u's take-profit and stop-loss plans in contract market m
// (or engine.AllContracts), by id.
func (n *Node) Plans(u engine.UserIdx, uid int64, m engine.MarketID, deadline time.Time, dst []engine.PlanView) ([]engine.PlanView, error) {
	r, err := n.query(QueryPlans, engine.Cmd{User: u, UID: uid, Market: m}, deadline)
	if err != nil {
		return dst, err
	}
	dst = append(dst, r.Plans...)
	ReleaseRequest(r)
	return dst, nil
}
