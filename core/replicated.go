package core

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
	"github.com/weexcore/exchange/replica"
)

// Replication (docs/REPLICATION.md). A replicated node is one member of a
// raft group (package replica). The leader runs as a single node does,
// except that its committer proposes the records of each sync slot as one
// raft entry and writes them to the journal only once the entry is
// committed (a quorum holds it durably): only then are the commands
// answered and their credits flushed. A follower refuses commands; it
// replays the committed entries of others through its shards with their
// recorded decisions, as a journal replay does, and writes the same
// records and history rows. A leader that loses leadership, or whose
// proposal fails, stops: its engines may hold commands the group never
// committed, so it must rebuild from what is durable, which the first form
// here does by exiting (Deposed) for its supervisor to restart it.
//
// Without Options.Replica nothing here runs: n.repl is nil and every hook
// in the single-node path is one nil check.

// ReplicaOptions make a node a member of a raft group.
type ReplicaOptions struct {
	ID uint64
	// Peers are every member's raft transport address, this one's
	// included (it listens on its own).
	Peers  map[uint64]string
	Secret []byte // shared by the members, at least 16 bytes
	// Tick and ElectionTicks as replica.Config (0: 50 ms and 10).
	Tick          time.Duration
	ElectionTicks int
	// ProposeTimeout bounds one entry's wait for its commit (0: 3 s).
	ProposeTimeout time.Duration
	// CompactKeep: raft entries kept behind a snapshot, so that a member a
	// little behind catches up from the log (0: 1,000). The node's
	// journal snapshots (Options.SnapshotEvery, SnapshotInterval) are its
	// raft snapshots.
	CompactKeep uint64
}

var (
	// ErrNotLeader: this node does not lead its group (or lost its
	// leadership, or has not yet caught up as the new leader); nothing
	// was applied. LeaderID names the leader when one is known.
	ErrNotLeader = errors.New("core: not the leader")

	errDeposed = errors.New("core: no longer the leader")

	// ErrRestart: the node installed a snapshot received from the leader
	// and must be restarted to load it (exchanged exits with 75).
	ErrRestart = errors.New("core: a snapshot from the leader was installed: restart to load it")
)

// replGroup is the group number of the node's raft group in its DB.
const replGroup = 0

// Entry data: version(1) = 1, member id(8), run nonce(8), then the rows of
// the sync slot's batches (journal.Batch.AppendRows). The nonce tells a
// member its own entries of this run, which its committer journals itself.
const (
	replEntryVersion = 1
	replEntryHead    = 17
)

type replicated struct {
	n     *Node
	opt   ReplicaOptions
	log   *slog.Logger
	nonce uint64
	g     *replica.Group
	tr    *replica.Transport

	writable   atomic.Bool   // leading, caught up: commands are taken
	writableCh chan struct{} // closed when writable is first set
	deposed    chan struct{} // closed by depose
	deposeOnce sync.Once
	deposeErr  error

	// ctx is cancelled by depose: a proposal in flight then returns at
	// once (its outcome unknown) rather than at its timeout.
	ctx    context.Context
	cancel context.CancelFunc

	restored  atomic.Bool   // Restore installed a snapshot: restart (ErrRestart)
	applied   atomic.Uint64 // last index whose state this node holds
	refused   atomic.Uint64 // proposals that failed (the node then stops)
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	group *journal.Group // the applied index's writes (apply goroutine)
	kv    [][2][]byte

	// Committed entries are applied by their own goroutine (applier), not
	// by the raft loop, so that a follower's acknowledgement of the next
	// entry never waits for the shards to apply this one. The raft loop
	// queues them in index order; handled is the last index the applier
	// is done with (applied, or this run's own, which the committer
	// journals), queued the entries given to it and not yet handled.
	applyQ  chan replEntry
	queued  atomic.Int64
	handled atomic.Uint64
}

// replEntry is a committed entry queued for the applier.
type replEntry struct {
	index uint64
	data  []byte
	own   bool
}

// replApplyQueue bounds the committed entries queued for the applier; with
// it full, the raft loop waits (a follower that cannot keep up with
// applying stops acknowledging, and the leader's flow control holds).
const replApplyQueue = 1024

// replayJob is one shard's part of a committed entry.
type replayJob struct {
	recs []*journal.ReplRecord
	err  error
	done chan struct{}
}

func newReplicated(n *Node, o ReplicaOptions) *replicated {
	var nb [8]byte
	rand.Read(nb[:])
	r := &replicated{n: n, opt: o, log: n.log, nonce: binary.LittleEndian.Uint64(nb[:]),
		writableCh: make(chan struct{}), deposed: make(chan struct{}), stop: make(chan struct{}),
		applyQ: make(chan replEntry, replApplyQueue)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// start opens the raft member on the store's DB, from the applied index
// the journal holds, and the goroutine that watches leadership. The
// shards must be running: applying entries goes through them.
func (r *replicated) start() error {
	db := r.n.store.DB()
	applied, err := replica.LoadApplied(db, replGroup)
	if err != nil {
		return fmt.Errorf("core: replica applied index: %w", err)
	}
	r.applied.Store(applied)
	r.handled.Store(applied)
	r.group = r.n.store.NewGroup()
	r.wg.Add(1)
	go r.applier()
	members := make([]uint64, 0, len(r.opt.Peers))
	peers := map[uint64]string{}
	for id, a := range r.opt.Peers {
		members = append(members, id)
		if id != r.opt.ID {
			peers[id] = a
		}
	}
	listen, ok := r.opt.Peers[r.opt.ID]
	if !ok {
		return fmt.Errorf("core: replica: member %d has no address among the peers", r.opt.ID)
	}
	cfg := replica.Config{ID: r.opt.ID, Group: replGroup, Members: members, Applied: applied,
		Tick: r.opt.Tick, ElectionTicks: r.opt.ElectionTicks, ProposeTimeout: r.opt.ProposeTimeout,
		// Snapshots are the journal's, taken at a barrier (snapshotted).
		SnapshotEntries: 1 << 62, CompactKeep: r.opt.CompactKeep,
		Logger: r.log}
	g, tr, err := replica.Open(cfg, replica.TransportConfig{Listen: listen, Peers: peers, Secret: r.opt.Secret}, db, replSM{r})
	if err != nil {
		if errors.Is(err, ErrRestart) {
			return ErrRestart
		}
		return fmt.Errorf("core: replica: %w", err)
	}
	r.g, r.tr = g, tr
	r.log.Info("core: replica started", "id", r.opt.ID, "members", len(members), "applied", applied, "raft", listen)
	r.wg.Add(1)
	go r.watch()
	return nil
}

// watch makes the node writable once it leads and has applied every entry
// of earlier terms (its own no-op entry committed), and deposes it when it
// stops leading or its group stops.
func (r *replicated) watch() {
	defer r.wg.Done()
	tick := r.opt.Tick
	if tick <= 0 {
		tick = 50 * time.Millisecond
	}
	t := time.NewTicker(tick / 5)
	defer t.Stop()
	head := r.header(nil)
	for {
		select {
		case <-r.stop:
			return
		case <-r.g.Done():
			if r.restored.Load() {
				r.depose(fmt.Errorf("%w: %w", errDeposed, ErrRestart))
			} else {
				r.depose(fmt.Errorf("%w: the raft member stopped: %v", errDeposed, r.g.Err()))
			}
			return
		case <-t.C:
		}
		lead := r.g.Leader()
		if r.writable.Load() {
			if lead != r.opt.ID {
				r.depose(fmt.Errorf("%w: leader is now %d", errDeposed, lead))
				return
			}
			continue
		}
		if lead != r.opt.ID {
			continue
		}
		// Every entry before this no-op is applied once the applier has
		// handled it: raft hands entries over in index order, and the
		// applier takes them in that order.
		idx, err := r.g.Propose(r.ctx, head)
		if err != nil {
			r.log.Info("core: replica: no-op as new leader not committed; trying again", "err", err)
			continue
		}
		for r.handled.Load() < idx {
			select {
			case <-r.stop:
				return
			case <-r.deposed:
				return
			case <-time.After(time.Millisecond):
			}
		}
		r.writable.Store(true)
		close(r.writableCh)
		r.log.Info("core: replica: leading, taking commands", "id", r.opt.ID, "index", idx)
	}
}

func (r *replicated) header(dst []byte) []byte {
	dst = append(dst, replEntryVersion)
	dst = binary.LittleEndian.AppendUint64(dst, r.opt.ID)
	return binary.LittleEndian.AppendUint64(dst, r.nonce)
}

// depose stops the node taking commands for good; Deposed's channel
// closes, for the process to exit and rebuild from what is durable.
func (r *replicated) depose(err error) {
	r.deposeOnce.Do(func() {
		r.deposeErr = err
		r.writable.Store(false)
		close(r.deposed)
		r.cancel()
		select {
		case <-r.stop: // closing: not news
		default:
			r.log.Error("core: replica: deposed: taking no more commands; restart to rebuild from the committed log", "err", err)
		}
	})
}

func (r *replicated) isDeposed() bool {
	select {
	case <-r.deposed:
		return true
	default:
		return false
	}
}

// runReplicated is the committer of a replicated node. At each sync slot
// it seals the batches queued, proposes their rows as one entry and goes
// on to the next slot without waiting (pipelined: the entries' indexes
// follow the slots); finish takes the slots in order, waits for each
// entry's commit, writes its batches with the applied index (unsynced:
// the raft log holds them) and marks them durable, after which the shards
// answer.
func (c *committer) runReplicated() {
	defer close(c.done)
	r := c.repl
	sl := newSleeper()
	defer sl.close()
	slots := make(chan *replSlot, replPipeline)
	finished := make(chan struct{})
	go r.finish(c, slots, finished)
	defer func() {
		close(slots)
		<-finished
	}()
	var last int64
	var rate replRate
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			return
		}
		if d := last + int64(rate.gap(c.pace, nanotime())) - nanotime(); d > 0 {
			sl.sleep(time.Duration(d))
		}
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		c.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		last = nanotime()
		for _, p := range batch {
			p.seal()
		}
		slot := &replSlot{batch: batch, t0: last}
		if r.isDeposed() {
			slot.err = r.deposeErr
		} else {
			// A new buffer each time: raft holds it until the loop takes it.
			data := r.header(make([]byte, 0, 4096))
			for _, p := range batch {
				if data, slot.err = p.b.AppendRows(data); slot.err != nil {
					break
				}
			}
			if slot.err == nil {
				slot.p, slot.err = r.g.ProposeAsync(r.ctx, data)
			}
		}
		slots <- slot
	}
}

// replRate spaces a replicated node's entries by its load. Every entry
// costs each member a fixed amount (a log write and fdatasync, messages,
// the wake-ups of applying it), about as much on a follower as applying a
// few hundred commands, so under load entries are spaced further apart to
// carry more commands each: replGapMin up to replLoadLow commands/s,
// rising to replGapMax at replLoadHigh. An answer waits for its entry's
// slot; at low load that wait stays short (bench/LOG.md, "Replicated
// entries spaced by load").
type replRate struct {
	at, cmds int64 // the window's start (nanotime) and syncPace.cmds then
	cur      time.Duration
}

const (
	replGapMin   = paceGap
	replGapMax   = 1500 * time.Microsecond
	replLoadLow  = 1000 // commands/s
	replLoadHigh = 4000
)

// gap returns the gap to keep between entries, re-deciding it from the
// commands applied once per paceWindow.
func (r *replRate) gap(p *syncPace, now int64) time.Duration {
	if d := now - r.at; d >= int64(paceWindow) {
		n := p.cmds.Load()
		if r.at != 0 {
			r.cur = replGapFor((n - r.cmds) * int64(time.Second) / d)
		}
		r.at, r.cmds = now, n
	}
	return max(r.cur, replGapMin)
}

// replGapFor returns the gap between entries at rate commands/s.
func replGapFor(rate int64) time.Duration {
	return ramp(rate, replLoadLow, replLoadHigh, replGapMin, replGapMax)
}

// replPipeline bounds the slots proposed and not yet finished.
const replPipeline = 64

// replSlot is one sync slot's batches and their entry's proposal.
type replSlot struct {
	batch []*pendingCommit
	p     *replica.Proposal
	err   error
	t0    int64
}

// finish completes the slots in order (runReplicated).
func (r *replicated) finish(c *committer, slots <-chan *replSlot, finished chan<- struct{}) {
	defer close(finished)
	group := r.n.store.NewGroup()
	defer group.Close()
	var bs []*journal.Batch
	var kv [][2][]byte
	for sl := range slots {
		err := sl.err
		var idx uint64
		if err == nil {
			idx, err = sl.p.Wait(r.ctx)
		}
		if err != nil && !errors.Is(err, errDeposed) {
			r.refused.Add(1)
			switch {
			case errors.Is(err, replica.ErrNotLeader), errors.Is(err, replica.ErrNoQuorum), errors.Is(err, replica.ErrDropped):
				err = fmt.Errorf("%w: %w: %w", errDeposed, ErrNotLeader, err)
			default: // it may still commit
				err = fmt.Errorf("%w: %w: %w", errDeposed, ErrTimeout, err)
			}
			r.depose(err)
		}
		if err == nil && r.isDeposed() {
			// Committed, but an earlier slot failed: its batches are not
			// in the journal, so neither may these be (a gap in a shard's
			// sequence). The restart applies this entry from the log.
			err = r.deposeErr
		}
		if err == nil {
			bs = bs[:0]
			for _, p := range sl.batch {
				bs = append(bs, p.b)
			}
			kv = append(kv[:0], [2][]byte{replica.AppliedKey(replGroup), replica.AppliedValue(idx)})
			if err = group.CommitRows(bs, kv, false); err != nil {
				r.depose(fmt.Errorf("%w: %w", errDeposed, err))
			} else {
				r.applied.Store(idx)
			}
			clear(bs)
		}
		c.metrics.commit(nanotime() - sl.t0)
		for _, p := range sl.batch {
			p.err = err
			p.fin.Store(true)
			select {
			case p.done <- struct{}{}:
			default:
			}
		}
	}
}

// replyErr is what the requests of a batch whose commit failed are
// answered: ErrNotLeader when the group refused it for sure, ErrTimeout
// when it may still be committed, else ErrUnavailable (the journal).
func replyErr(err error) error {
	switch {
	case !errors.Is(err, errDeposed):
		return ErrUnavailable
	case errors.Is(err, ErrNotLeader):
		return ErrNotLeader
	}
	return ErrTimeout
}

// replSM is the group's state machine.
type replSM struct{ r *replicated }

// Apply queues a committed entry for the applier (on the raft loop). The
// member's own entries of this run need nothing applied: when nothing is
// queued before one, it is handled at once, without a wake-up.
func (m replSM) Apply(index uint64, data []byte) error {
	r := m.r
	if len(data) < replEntryHead || data[0] != replEntryVersion {
		return fmt.Errorf("core: entry %d is not a replicated batch (%d bytes)", index, len(data))
	}
	own := binary.LittleEndian.Uint64(data[1:]) == r.opt.ID && binary.LittleEndian.Uint64(data[9:]) == r.nonce
	if own && r.queued.Load() == 0 {
		r.handled.Store(index)
		return nil
	}
	r.queued.Add(1)
	select {
	case r.applyQ <- replEntry{index: index, data: data, own: own}:
		return nil
	case <-r.stop:
		return ErrClosed
	}
}

// applier applies the queued entries in order. After a failure it applies
// nothing more (the journal would have a gap) and deposes the node, which
// restarts and applies them again from the log.
func (r *replicated) applier() {
	defer r.wg.Done()
	failed := false
	for {
		var e replEntry
		select {
		case e = <-r.applyQ:
		case <-r.stop:
			return
		}
		if !e.own && !failed {
			if err := r.apply(e.index, e.data); err != nil {
				failed = true
				r.depose(fmt.Errorf("%w: %w", errDeposed, err))
			}
		}
		if !failed {
			r.handled.Store(e.index)
		}
		r.queued.Add(-1)
	}
}

// drain waits until the applier has handled every entry queued (the raft
// loop, which alone queues them, calls it).
func (r *replicated) drain() error {
	for r.queued.Load() != 0 {
		select {
		case <-r.stop:
			return ErrClosed
		case <-time.After(100 * time.Microsecond):
		}
	}
	return nil
}

func (m replSM) Snapshot() ([]byte, error) {
	return nil, errors.New("core: a replica snapshot is taken at a barrier (snapshotted), never by the raft loop")
}

// Restore installs a snapshot the leader sent (this member is too far
// behind for the log): the journal's snapshot, stored with the applied
// index in one synced batch. The shards' state cannot be swapped under
// the edge, so the member then stops (ErrRestart) and the process exits
// for its supervisor: the restart loads the snapshot and raft hands over
// the entries after it. History rows (trades, candles, orders) of the
// entries the snapshot covers are not on this member.
func (m replSM) Restore(index uint64, data []byte) error {
	r := m.r
	if err := r.drain(); err != nil {
		return err
	}
	if index <= r.applied.Load() {
		return nil
	}
	// No journal snapshot of the old state after this one (barMu; the
	// barrier's snapshot checks restored).
	r.n.barMu.Lock()
	defer r.n.barMu.Unlock()
	r.restored.Store(true)
	snap, users, err := decodeReplSnap(data)
	if err != nil {
		return fmt.Errorf("core: the leader's snapshot at %d: %w", index, err)
	}
	r.kv = append(r.kv[:0], [2][]byte{replica.AppliedKey(replGroup), replica.AppliedValue(index)})
	r.kv = append(r.kv, users...)
	no, err := r.n.store.WriteSnapshotRows(snap, r.kv)
	if err != nil {
		return fmt.Errorf("core: install the leader's snapshot at %d: %w", index, err)
	}
	r.log.Warn("core: replica: installed the leader's snapshot; restarting to load it", "index", index, "snapshot", no, "bytes", len(data), "users", len(users))
	return ErrRestart
}

// snapshotted registers the journal snapshot v, taken at a barrier at
// which this member's state was that of raft index idx, as its raft
// snapshot, and compacts the raft log behind it. It does so in the
// background: the caller holds barMu, which a follower's raft loop may
// be waiting for (Restore). On a follower idx may be behind the state by
// part of the entry after it (apply): a member restoring the snapshot
// then skips the records it holds when that entry comes.
func (r *replicated) snapshotted(idx uint64, v []byte) {
	if r.g == nil || idx == 0 {
		return
	}
	select {
	case <-r.stop: // closing
		return
	default:
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		users, err := r.n.store.UserRows()
		if err != nil {
			r.log.Warn("core: replica: snapshot not registered with raft: the users' rows", "index", idx, "err", err)
			return
		}
		v := encodeReplSnap(v, users)
		if err := r.g.SnapshotAt(idx, v); err != nil {
			r.log.Warn("core: replica: snapshot not registered with raft", "index", idx, "err", err)
			return
		}
		r.log.Info("core: replica: raft snapshot", "index", idx, "bytes", len(v))
	}()
}

// A raft snapshot is the journal's snapshot and the users' registration
// rows (journal.Store.UserRows), which a member that installs it needs to
// announce the users the snapshot holds (their credentials): replSnapMagic,
// uvarint length and the journal snapshot, uvarint count of rows, each
// uvarint length and key, uvarint length and value. The rows may include
// users created after the snapshot; their entries write the same rows
// again. Data without the magic (an older member's) is a journal snapshot
// alone (a journal snapshot begins with its version byte, 1).
const replSnapMagic = "RSNP"

func encodeReplSnap(snap []byte, rows [][2][]byte) []byte {
	n := len(replSnapMagic) + 2*binary.MaxVarintLen64 + len(snap)
	for _, kv := range rows {
		n += 2*binary.MaxVarintLen64 + len(kv[0]) + len(kv[1])
	}
	b := make([]byte, 0, n)
	b = append(b, replSnapMagic...)
	b = binary.AppendUvarint(b, uint64(len(snap)))
	b = append(b, snap...)
	b = binary.AppendUvarint(b, uint64(len(rows)))
	for _, kv := range rows {
		b = binary.AppendUvarint(b, uint64(len(kv[0])))
		b = append(b, kv[0]...)
		b = binary.AppendUvarint(b, uint64(len(kv[1])))
		b = append(b, kv[1]...)
	}
	return b
}

func decodeReplSnap(b []byte) (snap []byte, rows [][2][]byte, err error) {
	if !bytes.HasPrefix(b, []byte(replSnapMagic)) {
		return b, nil, nil
	}
	b = b[len(replSnapMagic):]
	next := func() ([]byte, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, false
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, true
	}
	var ok bool
	if snap, ok = next(); !ok {
		return nil, nil, errors.New("truncated journal snapshot")
	}
	count, k := binary.Uvarint(b)
	if k <= 0 || count > uint64(len(b)) {
		return nil, nil, errors.New("bad count of user rows")
	}
	b = b[k:]
	rows = make([][2][]byte, count)
	for i := range rows {
		if rows[i][0], ok = next(); ok {
			rows[i][1], ok = next()
		}
		if !ok {
			return nil, nil, fmt.Errorf("truncated user row %d of %d", i, count)
		}
	}
	if len(b) != 0 {
		return nil, nil, fmt.Errorf("%d bytes after the user rows", len(b))
	}
	return snap, rows, nil
}

// apply replays a committed entry of another member (or of an earlier run
// of this one) through the shards: the ledger's records first, then the
// market shards' in parallel, as journal replay does; each shard commits
// what it wrote before it takes the next request (so a barrier never sees
// its memory ahead of its journal), and the applied index is written
// after all of them. A crash in between leaves the applied index behind
// some shards' records: the entry is applied again, and each shard skips
// the records it holds.
func (r *replicated) apply(index uint64, data []byte) error {
	n := r.n
	recs, err := journal.DecodeRows(data[replEntryHead:], n.nMarket)
	if err != nil {
		return fmt.Errorf("core: entry %d: %w", index, err)
	}
	if len(recs) == 0 {
		r.applied.Store(index)
		return nil
	}
	jobs := make([]*replayJob, len(n.shards))
	for i := range recs {
		s := recs[i].Shard
		if s < 0 || s >= len(n.shards) {
			return fmt.Errorf("core: entry %d: record of shard %d, the node has %d", index, s, len(n.shards))
		}
		if jobs[s] == nil {
			jobs[s] = &replayJob{done: make(chan struct{})}
		}
		jobs[s].recs = append(jobs[s].recs, &recs[i])
	}
	if err := r.run(n.nMarket, jobs[n.nMarket:]); err != nil {
		return fmt.Errorf("core: entry %d: %w", index, err)
	}
	if err := r.run(0, jobs[:n.nMarket]); err != nil {
		return fmt.Errorf("core: entry %d: %w", index, err)
	}
	r.kv = append(r.kv[:0], [2][]byte{replica.AppliedKey(replGroup), replica.AppliedValue(index)})
	if err := r.group.CommitRows(nil, r.kv, false); err != nil {
		return fmt.Errorf("core: entry %d: %w", index, err)
	}
	r.applied.Store(index)
	return nil
}

// run hands the jobs (of shards from first on) to their shards and waits
// for all of them.
func (r *replicated) run(first int, jobs []*replayJob) error {
	for i, j := range jobs {
		if j == nil {
			continue
		}
		s := r.n.shards[first+i]
		q := &Request{}
		q.rt.op, q.rt.rep = opReplay, j
		for !s.q.push(q) {
			if r.n.closed.Load() && s.stopped.Load() {
				return ErrClosed
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	var errs []error
	for _, j := range jobs {
		if j != nil {
			<-j.done
			errs = append(errs, j.err)
		}
	}
	return errors.Join(errs...)
}

// replay applies job's records on the shard goroutine, with their
// recorded decisions, writes their records and history rows (unsynced:
// the raft log holds the entry) and flushes their credits.
func (s *shard) replay(j *replayJob) {
	defer close(j.done)
	if s.rb == nil {
		s.rb = s.n.store.NewBatch()
	}
	total, wrote := 0, false
	for _, rec := range j.recs {
		last := rec.First + uint64(len(rec.Cmds)) - 1
		if last <= s.seq {
			continue // in the journal already (a restart between the journal's commit and raft's)
		}
		if rec.First != s.seq+1 {
			j.err = fmt.Errorf("shard %d: replicated record at seq %d, the shard is at %d", s.id, rec.First, s.seq)
			return
		}
		s.w.Begin(rec.First, rec.TimeMs)
		s.timeMs = rec.TimeMs // a shard's batch times never go back
		count := 0
		for i := range rec.Cmds {
			c := &rec.Cmds[i]
			s.seq++
			s.applying.Store(s.seq)
			if c.Kind == engine.CmdSetRules {
				s.eng.StageRules(rec.Rules[s.seq])
			}
			s.apply(c)
			if s.out.Rules != nil {
				s.n.st.Markets[s.out.Rules.ID] = s.out.Rules
			}
			s.w.Add(s.rb, c, &s.out)
			if c.Kind == engine.CmdAddUser && s.out.Reject == engine.OK && s.n.opt.OnAddUser != nil {
				s.n.opt.OnAddUser(c)
			}
			count++
		}
		for _, kv := range rec.Rows {
			s.rb.SetRow(kv[0], kv[1])
		}
		s.w.Finish(s.rb)
		s.flush(-1)
		total += count
		wrote = true
	}
	if wrote {
		// One commit for the job's records (the shard takes no request
		// in between).
		s.wroteKeys.Add(uint64(s.rb.Keys()))
		s.wroteBytes.Add(uint64(s.rb.Bytes()))
		err := s.rb.CommitUnsynced()
		s.rb.Reset()
		if err != nil {
			j.err = fmt.Errorf("shard %d: %w", s.id, err)
			return // the memory is ahead of the journal: the member stops
		}
		s.flushed.Store(s.seq)
		s.n.sinceSnap.Add(int64(total))
	}
	s.n.metrics.resting(s.id, s.eng.WorkingOrders(), s.eng.OpenPositions())
}

// Replicated reports whether the node is a member of a raft group.
func (n *Node) Replicated() bool { return n.repl != nil }

// Writable reports whether the node takes commands: always for a single
// node; for a member, once it leads and has caught up, until deposed.
func (n *Node) Writable() bool { return n.repl == nil || n.repl.writable.Load() }

// WritableCh is closed once the node takes commands (at once for a single
// node).
func (n *Node) WritableCh() <-chan struct{} {
	if n.repl == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return n.repl.writableCh
}

// LeaderID is the member this one believes leads (0: none known, or a
// single node).
func (n *Node) LeaderID() uint64 {
	if n.repl == nil || n.repl.g == nil {
		return 0
	}
	return n.repl.g.Leader()
}

// Deposed is closed when a replicated node stops taking commands for good
// (it lost its leadership, a proposal failed, or its raft member stopped):
// its engines may hold commands the group did not commit, so the process
// must restart and rebuild from the journal and the committed log. Nil (it
// never closes) for a single node.
func (n *Node) Deposed() <-chan struct{} {
	if n.repl == nil {
		return nil
	}
	return n.repl.deposed
}

// ReplicaStatus is the raft member's view (zero for a single node).
func (n *Node) ReplicaStatus() replica.Status {
	if n.repl == nil || n.repl.g == nil {
		return replica.Status{}
	}
	return n.repl.g.Status()
}

func (r *replicated) close() {
	r.closeOnce.Do(func() {
		close(r.stop)
		if r.g != nil {
			r.g.Close()
			r.tr.Close()
		}
		r.wg.Wait()
		if r.group != nil {
			r.group.Close()
		}
	})
}

var (
	replLeaderDesc   = prometheus.NewDesc("exchanged_replica_leader", "The member this one believes leads (0: none known).", nil, nil)
	replStateDesc    = prometheus.NewDesc("exchanged_replica_is_leader", "1 while this member leads and takes commands.", nil, nil)
	replTermDesc     = prometheus.NewDesc("exchanged_replica_term", "The raft term.", nil, nil)
	replCommitDesc   = prometheus.NewDesc("exchanged_replica_commit_index", "The highest raft index known committed.", nil, nil)
	replAppliedDesc  = prometheus.NewDesc("exchanged_replica_applied_index", "The highest raft index whose state this member holds.", nil, nil)
	replLagDesc      = prometheus.NewDesc("exchanged_replica_lag_entries", "Entries a member is behind the commit index (on the leader, per member; elsewhere, this one's commit - applied).", []string{"member"}, nil)
	replChangesDesc  = prometheus.NewDesc("exchanged_replica_leader_changes_total", "Leaders this member has seen since it started.", nil, nil)
	replRefusedDesc  = prometheus.NewDesc("exchanged_replica_proposals_failed_total", "Proposals that failed (the member then stops taking commands).", nil, nil)
	replSnapshotDesc = prometheus.NewDesc("exchanged_replica_snapshots_received_total", "Snapshots restored from the leader.", nil, nil)
	replDroppedDesc  = prometheus.NewDesc("exchanged_replica_transport_dropped_total", "Raft messages the transport dropped (queue full, too large, connection failed); raft sends again.", nil, nil)
	replConnectsDesc = prometheus.NewDesc("exchanged_replica_transport_connects_total", "Connections the transport made to peers (one each, plus reconnections).", nil, nil)
)

type replCollector struct{ r *replicated }

func (c replCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{replLeaderDesc, replStateDesc, replTermDesc, replCommitDesc, replAppliedDesc, replLagDesc, replChangesDesc, replRefusedDesc, replSnapshotDesc, replDroppedDesc, replConnectsDesc} {
		ch <- d
	}
}

func (c replCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	if r.g == nil {
		return
	}
	st := r.g.Status()
	g := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), l...)
	}
	g(replLeaderDesc, st.Leader)
	w := uint64(0)
	if r.writable.Load() {
		w = 1
	}
	g(replStateDesc, w)
	g(replTermDesc, st.Term)
	g(replCommitDesc, st.Commit)
	g(replAppliedDesc, r.applied.Load())
	if st.Match != nil {
		for id, m := range st.Match {
			g(replLagDesc, st.Commit-min(m, st.Commit), strconv.FormatUint(id, 10))
		}
	} else {
		g(replLagDesc, st.Commit-min(r.handled.Load(), st.Commit), strconv.FormatUint(r.opt.ID, 10))
	}
	ch <- prometheus.MustNewConstMetric(replChangesDesc, prometheus.CounterValue, float64(st.LeaderChanges))
	ch <- prometheus.MustNewConstMetric(replRefusedDesc, prometheus.CounterValue, float64(r.refused.Load()))
	ch <- prometheus.MustNewConstMetric(replSnapshotDesc, prometheus.CounterValue, float64(st.SnapshotsReceived))
	ts := r.tr.Stats()
	ch <- prometheus.MustNewConstMetric(replDroppedDesc, prometheus.CounterValue, float64(ts.Dropped))
	ch <- prometheus.MustNewConstMetric(replConnectsDesc, prometheus.CounterValue, float64(ts.Connects))
}
