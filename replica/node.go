package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// StateMachine receives a group's committed entries. Its methods are called
// from the group's loop, one at a time, never concurrently.
type StateMachine interface {
	// Apply applies the committed entry at index. Entries come in index order,
	// each once per run of the group (after a restart, from the index the
	// group was told the machine holds, or from a snapshot's). An error is
	// fatal to the group: a member that cannot apply what the others applied
	// must stop rather than diverge.
	Apply(index uint64, data []byte) error
	// Snapshot encodes the state after the last entry Apply was given.
	Snapshot() ([]byte, error)
	// Restore replaces the whole state with a snapshot's, the state after
	// the entry at index; the next entry applied is index+1.
	Restore(index uint64, data []byte) error
}

// Errors of Propose. Only ErrNotLeader, ErrNoQuorum and ErrDropped promise
// that the data was not, and will never be, committed; after ErrTimeout,
// ErrUnknown, ErrClosed or the context's error it may still be.
var (
	ErrNotLeader = errors.New("replica: not the leader")
	ErrNoQuorum  = errors.New("replica: the leader has not heard from a quorum within an election timeout")
	ErrDropped   = errors.New("replica: another entry was committed at the proposal's index")
	ErrTimeout   = errors.New("replica: not committed within the deadline; it may still be")
	ErrUnknown   = errors.New("replica: a snapshot overtook the proposal; it may or may not be committed")
	ErrClosed    = errors.New("replica: group closed")
)

// NotLeaderError is ErrNotLeader with the leader this member knows of (0 if
// none: an election is under way).
type NotLeaderError struct{ Leader uint64 }

func (e NotLeaderError) Error() string {
	return fmt.Sprintf("replica: not the leader (leader %d)", e.Leader)
}

// Is makes errors.Is(err, ErrNotLeader) hold.
func (e NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// A proposal's entry data is an envelope around the caller's bytes:
//
//	version(1) = 1, nonce(8), seq(8), data
//
// nonce is drawn at random for each run of a member and seq counts that run's
// proposals, so a member that finds its own envelope in a committed entry
// knows which waiting Propose it answers, and never confuses it with an entry
// proposed before a restart. Entries with empty data are the ones raft appends
// itself when a leader is elected; they carry nothing to apply.
const (
	envelopeVersion = 1
	envelopeHead    = 17
)

func envelope(nonce, seq uint64, data []byte) []byte {
	b := make([]byte, envelopeHead, envelopeHead+len(data))
	b[0] = envelopeVersion
	binary.LittleEndian.PutUint64(b[1:], nonce)
	binary.LittleEndian.PutUint64(b[9:], seq)
	return append(b, data...)
}

func openEnvelope(b []byte) (nonce, seq uint64, data []byte, err error) {
	if len(b) < envelopeHead || b[0] != envelopeVersion {
		return 0, 0, nil, fmt.Errorf("replica: entry of %d bytes is not an envelope", len(b))
	}
	return binary.LittleEndian.Uint64(b[1:]), binary.LittleEndian.Uint64(b[9:]), b[envelopeHead:], nil
}

// proposal is one Propose waiting for its entry to commit.
type proposal struct {
	seq   uint64
	index uint64 // 0 until the entry is appended to the local log
	term  uint64 // the entry's term, once appended
	born  int64  // tick count when proposed
	done  func(index uint64, err error)
}

// nodeConfig is what the loop needs beyond raft's own Config.
type nodeConfig struct {
	ID            uint64
	ElectionTicks int
	// SnapshotEntries: once this many entries were applied since the last
	// snapshot, the state machine is snapshotted and the log compacted.
	SnapshotEntries uint64
	// CompactKeep entries before the snapshot's index stay in the log, so a
	// follower a little behind gets entries rather than a whole snapshot.
	CompactKeep uint64
	// GCTicks: a proposal still unanswered after this many ticks is answered
	// ErrTimeout and forgotten (its caller gave up long before).
	GCTicks int64
	// HoldCommit: a leader holds back the messages that only carry a new
	// commit index to a follower that has every entry (raft sends one to
	// each follower at every commit), until the next append to that
	// follower carries the commit instead, or flushHeld (at the latest the
	// next tick). See hold.
	HoldCommit bool
	Applied    uint64 // the state machine's index when the node starts
	Nonce      uint64
	Logger     *slog.Logger
}

// node is the single-threaded core of a member: a RawNode, its Storage and
// state machine, and the waiting proposals. Group drives it from one
// goroutine with a clock and a transport; the tests drive it step by step.
type node struct {
	cfg  nodeConfig
	rn   *raft.RawNode
	st   *Storage
	sm   StateMachine
	send func([]raftpb.Message)

	seq     uint64
	pending map[uint64]*proposal   // by seq
	byIndex map[uint64][]*proposal // appended, by the index of their entry

	conf     raftpb.ConfState
	applied  uint64
	lastSnap uint64
	soft     raft.SoftState
	term     uint64

	ticks     int64
	lastHeard map[uint64]int64 // peer -> tick count when a message last came from it

	held map[uint64]raftpb.Message // HoldCommit: by follower, the newest commit-only append held back
	// written is the last index of the newest entries written to the
	// local log (set by the writer before their sync: Group.run); ackedTo
	// the index up to which ackEarly answered.
	written atomic.Uint64
	ackedTo uint64
	out     []raftpb.Message

	leaderChanges uint64
	snapsReceived uint64 // snapshots restored from the leader's messages
}

func newNode(cfg nodeConfig, st *Storage, sm StateMachine, send func([]raftpb.Message)) (*node, error) {
	if cfg.ElectionTicks <= 0 {
		cfg.ElectionTicks = 10
	}
	if cfg.GCTicks <= 0 {
		cfg.GCTicks = int64(100 * cfg.ElectionTicks)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	_, conf, err := st.InitialState()
	if err != nil {
		return nil, err
	}
	if len(conf.Voters) == 0 {
		return nil, errors.New("replica: storage holds no members: Bootstrap it first")
	}
	n := &node{
		cfg: cfg, st: st, sm: sm, send: send,
		pending:   map[uint64]*proposal{},
		byIndex:   map[uint64][]*proposal{},
		conf:      conf,
		lastHeard: map[uint64]int64{},
		held:      map[uint64]raftpb.Message{},
	}
	// A state machine behind the stored snapshot starts from it: raft never
	// hands out entries the log no longer holds.
	applied := cfg.Applied
	if snap := st.SnapshotMeta(); snap.Index > applied {
		s, err := st.Snapshot()
		if err != nil {
			return nil, err
		}
		if err := sm.Restore(s.Metadata.Index, s.Data); err != nil {
			return nil, fmt.Errorf("replica: restore the stored snapshot at %d: %w", s.Metadata.Index, err)
		}
		applied = s.Metadata.Index
	}
	if hs := st.HardState(); applied > hs.Commit && applied > st.SnapshotMeta().Index {
		// A leader answers an entry once the followers' quorum holds it
		// (ackEarly), before its hard state records the new commit; its
		// state machine may then have applied the entry, which its log
		// holds (written before anything applying it wrote). The entry is
		// committed for good, so the commit index is raised to it.
		last, err := st.LastIndex()
		if err != nil {
			return nil, err
		}
		if applied > last {
			return nil, fmt.Errorf("replica: the state machine holds index %d, past the log's last index %d (commit %d)", applied, last, hs.Commit)
		}
		hs.Commit = applied
		if err := st.Save(hs, nil, raftpb.Snapshot{}); err != nil {
			return nil, err
		}
	}
	n.applied, n.lastSnap = applied, st.SnapshotMeta().Index
	rc := &raft.Config{
		ID:                        cfg.ID,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             1,
		Storage:                   st,
		Applied:                   applied,
		MaxSizePerMsg:             1 << 20,
		MaxCommittedSizePerReady:  16 << 20,
		MaxUncommittedEntriesSize: 256 << 20,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: true,
		Logger:                    raftLogger{cfg.Logger},
	}
	rn, err := raft.NewRawNode(rc)
	if err != nil {
		return nil, err
	}
	n.rn = rn
	bs := rn.BasicStatus()
	n.soft, n.term = bs.SoftState, bs.Term
	return n, nil
}

func (n *node) leader() uint64 { return n.soft.Lead }

func (n *node) isLeader() bool { return n.soft.RaftState == raft.StateLeader }

func (n *node) tick() {
	n.flushHeld()
	n.ticks++
	n.rn.Tick()
	for seq, p := range n.pending {
		if n.ticks-p.born > n.cfg.GCTicks {
			n.finish(p, 0, ErrTimeout)
			delete(n.pending, seq)
		}
	}
}

// step hands raft a message from a peer. Messages from non-members and
// local message types are refused: only raft's own peers may speak.
func (n *node) step(m raftpb.Message) error {
	if m.To != n.cfg.ID || !n.member(m.From) || raft.IsLocalMsg(m.Type) {
		return fmt.Errorf("replica: refused a %s from %d to %d", m.Type, m.From, m.To)
	}
	n.lastHeard[m.From] = n.ticks
	err := n.rn.Step(m)
	if errors.Is(err, raft.ErrStepPeerNotFound) || errors.Is(err, raft.ErrStepLocalMsg) {
		return err
	}
	return nil
}

func (n *node) member(id uint64) bool {
	for _, v := range n.conf.Voters {
		if v == id && id != n.cfg.ID {
			return true
		}
	}
	return false
}

// quorumActive reports whether this member, as leader, heard from enough
// peers within the last election timeout to form a quorum with itself. raft's
// CheckQuorum makes a leader without one step down after an election
// timeout; this lets a proposal be refused at once meanwhile.
func (n *node) quorumActive() bool {
	alive := 1
	for _, v := range n.conf.Voters {
		if v == n.cfg.ID {
			continue
		}
		if t, ok := n.lastHeard[v]; ok && n.ticks-t <= int64(n.cfg.ElectionTicks) {
			alive++
		}
	}
	return alive > len(n.conf.Voters)/2
}

// propose appends data to the log if this member leads with a quorum;
// done is called once, from the loop, when the entry commits or fails.
func (n *node) propose(data []byte, done func(uint64, error)) {
	if !n.isLeader() {
		done(0, NotLeaderError{Leader: n.leader()})
		return
	}
	if !n.quorumActive() {
		done(0, ErrNoQuorum)
		return
	}
	n.seq++
	if err := n.rn.Propose(envelope(n.cfg.Nonce, n.seq, data)); err != nil {
		// raft refuses without appending: leadership is being transferred,
		// or too much is uncommitted.
		done(0, NotLeaderError{Leader: n.leader()})
		return
	}
	n.pending[n.seq] = &proposal{seq: n.seq, born: n.ticks, done: done}
}

func (n *node) finish(p *proposal, index uint64, err error) {
	if p.done != nil {
		p.done(index, err)
		p.done = nil
	}
}

// ready runs one raft Ready if there is one, in the order raft requires:
//  1. a leader sends its messages first, so followers write the new entries
//     while it writes them itself (raft thesis 10.2.1): its own write counts
//     toward the quorum only once persisted, when Advance reports it;
//  2. the snapshot, entries and hard state are written in one synced batch;
//  3. a member that is not leader sends only now: its votes and append
//     acknowledgements must describe what it holds durably;
//  4. a received snapshot is restored and the committed entries applied;
//  5. Advance, and a snapshot of the state machine when enough was applied.
//
// readyBegin does 1 and returns the write (2) to do, readyEnd the rest once
// it is done; Group.run writes on another goroutine meanwhile and steps
// messages (raft takes them between Ready and Advance), ready does all in
// turn. An error is fatal: storage or the state machine failed, and the
// member must stop.
func (n *node) ready() (bool, error) {
	j := n.readyBegin()
	if j == nil {
		return false, nil
	}
	j.save()
	return true, n.readyEnd(j)
}

// readyJob is a Ready between readyBegin and readyEnd.
type readyJob struct {
	n       *node
	rd      raft.Ready
	leading bool
	err     error
}

// wrote records the job's entries as written (before their sync).
func (j *readyJob) wrote() {
	if k := len(j.rd.Entries); k > 0 {
		j.n.written.Store(j.rd.Entries[k-1].Index)
	}
}

// save does the job's write. Only a leader answers before the sync
// (ackEarly), so only its write is split into a write and a sync.
func (j *readyJob) save() {
	var written func()
	if j.leading {
		written = j.wrote
	}
	j.err = j.n.st.save(j.rd.HardState, j.rd.Entries, j.rd.Snapshot, written)
}

// writes reports whether the job writes anything (else it is messages and
// committed entries only, done at once on the loop).
func (j *readyJob) writes() bool {
	return !raft.IsEmptySnap(j.rd.Snapshot) || !raft.IsEmptyHardState(j.rd.HardState) || len(j.rd.Entries) > 0
}

func (n *node) readyBegin() *readyJob {
	if !n.rn.HasReady() {
		return nil
	}
	rd := n.rn.Ready()
	if rd.SoftState != nil {
		if rd.SoftState.Lead != n.soft.Lead && rd.SoftState.Lead != raft.None {
			n.leaderChanges++
		}
		n.soft = *rd.SoftState
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		n.term = rd.HardState.Term
	}
	leading := n.isLeader()
	if leading {
		n.send(n.hold(rd.Messages))
	} else {
		clear(n.held) // of a term this member no longer leads
	}
	for i := range rd.Entries {
		n.appended(&rd.Entries[i])
	}
	return &readyJob{n: n, rd: rd, leading: leading}
}

func (n *node) readyEnd(j *readyJob) error {
	if j.err != nil {
		return fmt.Errorf("replica: save raft state: %w", j.err)
	}
	rd := j.rd
	if !j.leading {
		n.send(rd.Messages)
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.restore(rd.Snapshot); err != nil {
			return err
		}
	}
	for i := range rd.CommittedEntries {
		if err := n.apply(&rd.CommittedEntries[i]); err != nil {
			return err
		}
	}
	n.rn.Advance(rd)
	return n.maybeSnapshot()
}

// ackEarly answers, on the leader, the proposals whose entries are
// committed and written to the local log, without waiting for the Ready
// that wrote them to finish: raft counts the leader toward a commit only
// once its own write is synced (Advance), so a commit reached meanwhile is
// the followers' quorum, every one of them synced; and the entry's write
// already precedes in the WAL anything its answer leads the caller to
// commit. An entry of the term this member still leads is its own at that
// index (a leader never replaces its log). So a stalled sync on the leader
// does not hold up its answers while the followers keep up.
func (n *node) ackEarly() {
	if len(n.pending) == 0 {
		return
	}
	bs := n.rn.BasicStatus()
	lim := min(bs.Commit, n.written.Load())
	if bs.RaftState != raft.StateLeader || lim <= n.ackedTo {
		return
	}
	for idx, ps := range n.byIndex {
		if idx > lim || idx <= n.ackedTo {
			continue
		}
		for _, p := range ps {
			if _, live := n.pending[p.seq]; live && p.term == bs.Term {
				delete(n.pending, p.seq)
				n.finish(p, idx, nil)
			}
		}
	}
	n.ackedTo = lim
}

// hold returns the leader's messages to send now. With HoldCommit, an
// append that carries no entries to a follower known to hold every entry
// up to the append's position (it only tells the follower a new commit
// index, which raft sends each follower at every commit) is held back
// instead: the next append to that follower carries the commit anyway, so
// under a steady stream each entry costs one message and one answer per
// follower rather than two of each, and a follower applies the entry when
// the next one reaches it. A held message is dropped once a later append
// to the same follower goes out, and sent by flushHeld (the group's timer,
// or the next tick) otherwise. Holding a message is a delay the network
// could have caused: it changes no decision raft takes.
func (n *node) hold(msgs []raftpb.Message) []raftpb.Message {
	if !n.cfg.HoldCommit {
		return msgs
	}
	out := n.out[:0]
	for _, m := range msgs {
		if m.Type == raftpb.MsgApp {
			if len(m.Entries) == 0 && n.commitOnly(m) {
				n.held[m.To] = m
				continue
			}
			delete(n.held, m.To) // this one carries a commit at least as new
		}
		out = append(out, m)
	}
	n.out = out[:0]
	return out
}

// commitOnly reports whether the empty append m goes to a follower that is
// replicating and known to hold the entry m follows (so the append asks it
// nothing but to learn m.Commit).
func (n *node) commitOnly(m raftpb.Message) bool {
	only := false
	n.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if id == m.To {
			only = pr.State == tracker.StateReplicate && pr.Match == m.Index
		}
	})
	return only
}

// flushHeld sends the held commit-only messages.
func (n *node) flushHeld() {
	if len(n.held) == 0 {
		return
	}
	msgs := n.out[:0]
	for to, m := range n.held {
		msgs = append(msgs, m)
		delete(n.held, to)
	}
	if n.isLeader() {
		n.send(msgs)
	}
	clear(msgs)
	n.out = msgs[:0]
}

// appended notes the index of an own proposal's entry as it enters the log.
func (n *node) appended(e *raftpb.Entry) {
	if e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
		return
	}
	nonce, seq, _, err := openEnvelope(e.Data)
	if err != nil || nonce != n.cfg.Nonce {
		return
	}
	if p, ok := n.pending[seq]; ok && p.index == 0 {
		p.index, p.term = e.Index, e.Term
		n.byIndex[e.Index] = append(n.byIndex[e.Index], p)
	}
}

// settle answers the proposals whose entry was at index, now that the entry
// committed there is e: the one whose envelope it is succeeded, any other
// was replaced in the log and can never commit (an index holds one entry
// for good once committed).
func (n *node) settle(e *raftpb.Entry) {
	ps, ok := n.byIndex[e.Index]
	if !ok {
		return
	}
	delete(n.byIndex, e.Index)
	var nonce, seq uint64
	if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
		nonce, seq, _, _ = openEnvelope(e.Data)
	}
	for _, p := range ps {
		if _, live := n.pending[p.seq]; !live {
			continue
		}
		delete(n.pending, p.seq)
		if nonce == n.cfg.Nonce && seq == p.seq {
			n.finish(p, e.Index, nil)
		} else {
			n.finish(p, 0, ErrDropped)
		}
	}
}

func (n *node) apply(e *raftpb.Entry) error {
	if e.Index <= n.applied {
		return nil
	}
	if e.Index != n.applied+1 {
		return fmt.Errorf("replica: committed entry %d follows applied index %d", e.Index, n.applied)
	}
	n.settle(e)
	switch e.Type {
	case raftpb.EntryNormal:
		if len(e.Data) > 0 {
			_, _, data, err := openEnvelope(e.Data)
			if err != nil {
				return fmt.Errorf("replica: committed entry %d: %w", e.Index, err)
			}
			if err := n.sm.Apply(e.Index, data); err != nil {
				return fmt.Errorf("replica: apply entry %d: %w", e.Index, err)
			}
		}
	case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
		// Membership is fixed at Bootstrap and no member proposes a change;
		// one in the log means a foreign writer.
		return fmt.Errorf("replica: committed entry %d is a configuration change, which this group never proposes", e.Index)
	}
	n.applied = e.Index
	return nil
}

func (n *node) restore(s raftpb.Snapshot) error {
	idx := s.Metadata.Index
	if err := n.sm.Restore(idx, s.Data); err != nil {
		return fmt.Errorf("replica: restore snapshot at %d: %w", idx, err)
	}
	// The log before the snapshot is gone: what became of a proposal whose
	// entry was in it cannot be told.
	for i, ps := range n.byIndex {
		if i <= idx {
			for _, p := range ps {
				if _, live := n.pending[p.seq]; live {
					delete(n.pending, p.seq)
					n.finish(p, 0, ErrUnknown)
				}
			}
			delete(n.byIndex, i)
		}
	}
	n.applied, n.lastSnap = idx, idx
	n.conf = s.Metadata.ConfState
	n.snapsReceived++
	return nil
}

func (n *node) maybeSnapshot() error {
	if n.cfg.SnapshotEntries == 0 || n.applied-n.lastSnap < n.cfg.SnapshotEntries {
		return nil
	}
	data, err := n.sm.Snapshot()
	if err != nil {
		return fmt.Errorf("replica: snapshot at %d: %w", n.applied, err)
	}
	if err := n.st.CreateSnapshot(n.applied, n.conf, data); err != nil {
		return fmt.Errorf("replica: store snapshot at %d: %w", n.applied, err)
	}
	n.lastSnap = n.applied
	if n.applied > n.cfg.CompactKeep {
		to := n.applied - n.cfg.CompactKeep
		if first, _ := n.st.FirstIndex(); to >= first {
			if err := n.st.Compact(to); err != nil {
				return fmt.Errorf("replica: compact the log to %d: %w", to, err)
			}
		}
	}
	return nil
}

// failAll answers every waiting proposal with err.
func (n *node) failAll(err error) {
	for seq, p := range n.pending {
		n.finish(p, 0, err)
		delete(n.pending, seq)
	}
	clear(n.byIndex)
}

// Status is a member's view of its group.
type Status struct {
	ID     uint64
	Leader uint64 // 0 while none is known
	Term   uint64
	State  string // "leader", "follower", "candidate" or "pre-candidate"
	// Commit is the highest index known committed; Applied the highest
	// handed to the state machine; LastIndex the last in the local log.
	Commit, Applied, LastIndex uint64
	SnapshotIndex              uint64
	// Match, on the leader only: the highest index each member (itself
	// included) is known to hold. Commit - Match is a member's lag.
	Match map[uint64]uint64
	// LeaderChanges counts the leaders this member has seen since it
	// started; SnapshotsReceived the snapshots it restored from a leader's
	// message (catch-up of a member too far behind for the log).
	LeaderChanges, SnapshotsReceived uint64
}

func (n *node) status() Status {
	s := n.rn.Status()
	last, _ := n.st.LastIndex()
	st := Status{
		ID: n.cfg.ID, Leader: s.Lead, Term: s.Term, State: s.RaftState.String(),
		Commit: s.Commit, Applied: n.applied, LastIndex: last,
		SnapshotIndex: n.st.SnapshotMeta().Index, LeaderChanges: n.leaderChanges,
		SnapshotsReceived: n.snapsReceived,
	}
	switch s.RaftState {
	case raft.StateLeader:
		st.State = "leader"
		st.Match = map[uint64]uint64{}
		for id, pr := range s.Progress {
			st.Match[id] = pr.Match
		}
	case raft.StateFollower:
		st.State = "follower"
	case raft.StateCandidate:
		st.State = "candidate"
	case raft.StatePreCandidate:
		st.State = "pre-candidate"
	}
	return st
}

// raftLogger sends raft's log lines to slog; raft's own Fatal and Panic
// mean a broken invariant, and panic.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)              { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(f string, v ...any)   { r.l.Debug(fmt.Sprintf(f, v...)) }
func (r raftLogger) Info(v ...any)               { r.l.Info(fmt.Sprint(v...)) }
func (r raftLogger) Infof(f string, v ...any)    { r.l.Info(fmt.Sprintf(f, v...)) }
func (r raftLogger) Warning(v ...any)            { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(f string, v ...any) { r.l.Warn(fmt.Sprintf(f, v...)) }
func (r raftLogger) Error(v ...any)              { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(f string, v ...any)   { r.l.Error(fmt.Sprintf(f, v...)) }
func (r raftLogger) Fatal(v ...any)              { r.Panic(v...) }
func (r raftLogger) Fatalf(f string, v ...any)   { r.Panicf(f, v...) }
func (r raftLogger) Panic(v ...any)              { s := fmt.Sprint(v...); r.l.Error(s); panic(s) }
func (r raftLogger) Panicf(f string, v ...any)   { s := fmt.Sprintf(f, v...); r.l.Error(s); panic(s) }
