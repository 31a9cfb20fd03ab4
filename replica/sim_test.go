package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// recorder is a state machine that keeps every entry it applied, so members
// can be compared entry by entry; its snapshot is that whole list. Every
// Apply and Restore is also checked against what any member applied at the
// same index (seen).
type recorder struct {
	id      uint64
	seen    *seenLog
	mu      sync.Mutex
	indexes []uint64
	data    [][]byte
}

// seenLog is what any member applied at each index.
type seenLog struct {
	mu sync.Mutex
	m  map[uint64][]byte
}

func short(d []byte) string {
	if len(d) > 24 {
		return fmt.Sprintf("%q...(%d bytes)", d[:24], len(d))
	}
	return fmt.Sprintf("%q", d)
}

// entries copies what the recorder holds.
func (r *recorder) entries() ([]uint64, [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.indexes...), append([][]byte(nil), r.data...)
}

func (r *recorder) last() uint64 {
	if len(r.indexes) == 0 {
		return 0
	}
	return r.indexes[len(r.indexes)-1]
}

func (r *recorder) check(index uint64, data []byte) error {
	r.seen.mu.Lock()
	defer r.seen.mu.Unlock()
	if prev, ok := r.seen.m[index]; ok && !bytes.Equal(prev, data) {
		return fmt.Errorf("member %d applies %s at %d where another applied %s", r.id, short(data), index, short(prev))
	}
	r.seen.m[index] = append([]byte(nil), data...)
	return nil
}

func (r *recorder) Apply(index uint64, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if index <= r.last() {
		return fmt.Errorf("member %d: apply %d after %d", r.id, index, r.last())
	}
	if err := r.check(index, data); err != nil {
		return err
	}
	r.indexes = append(r.indexes, index)
	r.data = append(r.data, append([]byte(nil), data...))
	return nil
}

func (r *recorder) Snapshot() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b []byte
	for i, idx := range r.indexes {
		b = binary.AppendUvarint(b, idx)
		b = binary.AppendUvarint(b, uint64(len(r.data[i])))
		b = append(b, r.data[i]...)
	}
	return b, nil
}

func (r *recorder) Restore(index uint64, b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.indexes, r.data = nil, nil
	for len(b) > 0 {
		idx, k := binary.Uvarint(b)
		n, k2 := binary.Uvarint(b[k:])
		if k <= 0 || k2 <= 0 || uint64(len(b)-k-k2) < n {
			return errors.New("bad snapshot")
		}
		d := b[k+k2 : k+k2+int(n)]
		if idx > index {
			return fmt.Errorf("snapshot at %d holds entry %d", index, idx)
		}
		if err := r.check(idx, d); err != nil {
			return err
		}
		r.indexes = append(r.indexes, idx)
		r.data = append(r.data, append([]byte(nil), d...))
		b = b[k+k2+int(n):]
	}
	return nil
}

// simMember is one member of a simulated group: a node on a real Pebble in
// a crashable in-memory file system, so a restart can lose what was not
// synced, as a power cut would.
type simMember struct {
	id      uint64
	fs      *vfs.MemFS
	db      *pebble.DB
	n       *node
	sm      *recorder
	reports []report // snapshot reports to hand raft after the Ready
	// A Ready begun and not ended (as Group.run writes it on another
	// goroutine while stepping messages), and whether it was written.
	job   *readyJob
	saved bool
}

type simMsg struct {
	to uint64
	b  []byte
}

type simGroup struct {
	t        *testing.T
	draining bool // settle runs every Ready to its end
	rng      *rand.Rand
	members  map[uint64]*simMember
	ids      []uint64
	net      []simMsg
	cut      map[uint64]bool // isolated members: nothing to or from them
	seen     *seenLog
	nonce    uint64

	acked   map[uint64][]byte // index -> data, of every successful propose
	refused map[string]error  // data -> error, of proposes refused for good
	leaders map[[2]uint64]bool
	snaps   int // snapshot messages sent
}

func newSimGroup(t *testing.T, seed uint64) *simGroup {
	g := &simGroup{
		t: t, rng: rand.New(rand.NewPCG(seed, seed*7919+1)),
		members: map[uint64]*simMember{}, ids: []uint64{1, 2, 3},
		cut: map[uint64]bool{}, seen: &seenLog{m: map[uint64][]byte{}},
		acked: map[uint64][]byte{}, refused: map[string]error{},
		leaders: map[[2]uint64]bool{},
	}
	for _, id := range g.ids {
		m := &simMember{id: id, fs: vfs.NewCrashableMem()}
		g.members[id] = m
		g.start(m, true)
	}
	return g
}

func (g *simGroup) start(m *simMember, bootstrap bool) {
	db, err := pebble.Open("db", &pebble.Options{FS: m.fs, Logger: quietPebble{}})
	if err != nil {
		g.t.Fatal(err)
	}
	st, err := NewStorage(db, 1)
	if err != nil {
		g.t.Fatal(err)
	}
	if bootstrap {
		if err := st.Bootstrap(g.ids); err != nil {
			g.t.Fatal(err)
		}
	}
	m.db = db
	m.sm = &recorder{id: m.id, seen: g.seen}
	g.nonce++
	m.n, err = newNode(nodeConfig{
		ID: m.id, ElectionTicks: 10, SnapshotEntries: 15, CompactKeep: 3,
		GCTicks: 1 << 40, Nonce: g.nonce, HoldCommit: true,
	}, st, m.sm, func(msgs []raftpb.Message) { g.send(m, msgs) })
	if err != nil {
		g.t.Fatal(err)
	}
}

// crash drops m's memory and whatever its file system had not synced, and
// starts it again from what is left. Its waiting proposals are never
// answered: a client of a crashed server learns nothing.
func (g *simGroup) crash(m *simMember) {
	fs := m.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	m.db.Close()
	m.fs = fs
	m.job, m.saved = nil, false
	m.reports = nil
	g.start(m, false)
}

func (g *simGroup) send(from *simMember, msgs []raftpb.Message) {
	for _, msg := range msgs {
		b, err := msg.Marshal()
		if err != nil {
			g.t.Fatal(err)
		}
		if msg.Type == raftpb.MsgSnap {
			g.snaps++
			from.reports = append(from.reports, report{id: msg.To, snapshot: true, ok: true})
		}
		g.net = append(g.net, simMsg{to: msg.To, b: b})
	}
}

// settle runs the members' Readies. Each step of one (begin, write, end)
// may be left for a later event, as the write of a Group's Ready may take
// a while, during which messages are stepped, proposals taken and early
// answers given; while draining, all are run until none is left.
func (g *simGroup) settle() {
	for again := true; again; {
		again = false
		for _, id := range g.ids {
			m := g.members[id]
			if m.job == nil {
				if m.job = m.n.readyBegin(); m.job == nil {
					continue
				}
				again = true
			}
			if !m.saved {
				if !g.draining && g.rng.IntN(4) == 0 {
					continue
				}
				m.job.save()
				m.saved, again = true, true
			}
			m.n.ackEarly()
			if !g.draining && g.rng.IntN(4) == 0 {
				continue
			}
			err := m.n.readyEnd(m.job)
			m.job, m.saved, again = nil, false, true
			if err != nil {
				g.t.Fatalf("member %d: %v", id, err)
			}
			for _, r := range m.reports {
				m.n.rn.ReportSnapshot(r.id, raft.SnapshotFinish)
			}
			m.reports = m.reports[:0]
			if m.n.soft.Lead != 0 {
				g.leaders[[2]uint64{m.n.term, m.n.soft.Lead}] = true
			}
		}
	}
}

// deliver takes message i off the network and steps it into its member,
// unless a partition cuts it.
func (g *simGroup) deliver(i int, keep bool) {
	msg := g.net[i]
	if !keep {
		g.net[i] = g.net[len(g.net)-1]
		g.net = g.net[:len(g.net)-1]
	}
	var m raftpb.Message
	if err := m.Unmarshal(msg.b); err != nil {
		g.t.Fatal(err)
	}
	if g.cut[m.From] || g.cut[m.To] {
		return
	}
	to := g.members[msg.to]
	to.n.step(m)
	to.n.ackEarly()
}

func (g *simGroup) leader() *simMember {
	for _, id := range g.ids {
		if m := g.members[id]; m.n.isLeader() {
			return m
		}
	}
	return nil
}

func (g *simGroup) propose(m *simMember, data []byte) {
	d := string(data)
	m.n.propose(data, func(index uint64, err error) {
		switch {
		case err == nil:
			if prev, ok := g.acked[index]; ok {
				g.t.Fatalf("index %d acknowledged twice: %s and %s", index, short(prev), short([]byte(d)))
			}
			g.acked[index] = []byte(d)
		case errors.Is(err, ErrNotLeader), errors.Is(err, ErrNoQuorum), errors.Is(err, ErrDropped):
			g.refused[d] = err
		case errors.Is(err, ErrUnknown), errors.Is(err, ErrTimeout):
		default:
			g.t.Fatalf("propose %s: unexpected %v", short([]byte(d)), err)
		}
	})
}

// run plays steps random events on the group: messages delivered out of
// order, duplicated or dropped, ticks, proposals, members isolated and
// healed, members crashed and restarted, then heals everything and lets
// the group converge.
func (g *simGroup) run(seed uint64, steps int) {
	rng := g.rng
	next := 0
	for s := 0; s < steps; s++ {
		switch k := rng.IntN(100); {
		case k < 45 && len(g.net) > 0:
			i := rng.IntN(len(g.net))
			switch r := rng.IntN(20); {
			case r == 0: // dropped
				g.net[i] = g.net[len(g.net)-1]
				g.net = g.net[:len(g.net)-1]
			case r == 1: // duplicated
				g.deliver(i, true)
			default:
				g.deliver(i, false)
			}
		case k < 70:
			g.members[g.ids[rng.IntN(3)]].n.tick()
		case k < 90:
			m := g.leader()
			if m == nil || rng.IntN(5) == 0 {
				m = g.members[g.ids[rng.IntN(3)]]
			}
			// Entries carry batches: some proposals are large.
			data := fmt.Appendf(nil, "s%d-p%d-", seed, next)
			data = append(data, bytes.Repeat([]byte{'x'}, rng.IntN(3)*rng.IntN(2000))...)
			next++
			g.propose(m, data)
		case k < 94:
			// Isolate the leader most of the time, to force elections.
			if len(g.cut) > 0 {
				clear(g.cut)
			} else if m := g.leader(); m != nil && rng.IntN(4) > 0 {
				g.cut[m.id] = true
			} else {
				g.cut[g.ids[rng.IntN(3)]] = true
			}
		case k < 95:
			g.crash(g.members[g.ids[rng.IntN(3)]])
		}
		g.settle()
	}

	// Heal, and run until every member applied everything committed.
	clear(g.cut)
	g.draining = true
	for round := 0; ; round++ {
		if round > 3000 {
			g.t.Fatalf("seed %d: no convergence: %v", seed, g.describe())
		}
		for len(g.net) > 0 {
			g.deliver(0, false)
			g.settle()
		}
		l := g.leader()
		if l != nil {
			c := l.n.rn.Status().Commit
			done := true
			for _, id := range g.ids {
				m := g.members[id]
				if m.n.rn.Status().Commit != c || m.n.applied != c {
					done = false
				}
			}
			if done && round > 0 {
				break
			}
		}
		for _, id := range g.ids {
			g.members[id].n.tick()
		}
		g.settle()
	}
}

func (g *simGroup) describe() string {
	var b bytes.Buffer
	for _, id := range g.ids {
		m := g.members[id]
		s := m.n.status()
		fmt.Fprintf(&b, "[%d %s term %d lead %d commit %d applied %d last %d] ", id, s.State, s.Term, s.Leader, s.Commit, s.Applied, s.LastIndex)
	}
	return b.String()
}

func (g *simGroup) check(seed uint64) {
	t := g.t
	ref := g.members[g.ids[0]].sm
	for _, id := range g.ids[1:] {
		sm := g.members[id].sm
		if len(sm.indexes) != len(ref.indexes) {
			t.Fatalf("seed %d: member %d applied %d entries, member %d %d", seed, id, len(sm.indexes), ref.id, len(ref.indexes))
		}
		for i := range sm.indexes {
			if sm.indexes[i] != ref.indexes[i] || !bytes.Equal(sm.data[i], ref.data[i]) {
				t.Fatalf("seed %d: entry %d differs: member %d has %d %s, member %d %d %s", seed, i,
					id, sm.indexes[i], short(sm.data[i]), ref.id, ref.indexes[i], short(ref.data[i]))
			}
		}
	}
	at := map[uint64][]byte{}
	inLog := map[string]bool{}
	for i, idx := range ref.indexes {
		at[idx] = ref.data[i]
		if inLog[string(ref.data[i])] {
			t.Fatalf("seed %d: %s applied twice", seed, short(ref.data[i]))
		}
		inLog[string(ref.data[i])] = true
	}
	for idx, d := range g.acked {
		if !bytes.Equal(at[idx], d) {
			t.Fatalf("seed %d: acknowledged %s at %d, but the log has %s there", seed, short(d), idx, short(at[idx]))
		}
	}
	for d, err := range g.refused {
		if inLog[d] {
			t.Fatalf("seed %d: %s was refused (%v) yet applied", seed, short([]byte(d)), err)
		}
	}
	if len(g.acked) == 0 {
		t.Fatalf("seed %d: nothing acknowledged", seed)
	}
}

// TestSimulated drives three members through a network that drops,
// duplicates, reorders and partitions messages, with crashes that lose
// unsynced writes, over many seeds, and checks: members apply the same
// entries at the same indexes in the same order (checked at every Apply and
// Restore, and in full at the end); every acknowledged proposal is in the log
// at its index; no proposal refused for good (not leader, no quorum,
// dropped) is ever applied; leaders change; snapshots are sent and restored.
// raft's election timeouts are drawn from crypto/rand, so a seed fixes the
// network's choices, not the whole run. REPLICA_SIM_SEEDS sets the number of
// seeds.
func TestSimulated(t *testing.T) {
	seeds, steps := 50, 1500
	if testing.Short() {
		seeds = 10
	}
	if v := os.Getenv("REPLICA_SIM_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		seeds = n
	}
	var leaderChanges, snaps, restores, acked int
	refused := map[string]int{}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		g := newSimGroup(t, seed)
		g.run(seed, steps)
		g.check(seed)
		leaderChanges += len(g.leaders) - 1
		snaps += g.snaps
		acked += len(g.acked)
		for _, err := range g.refused {
			switch {
			case errors.Is(err, ErrNotLeader):
				refused["not leader"]++
			case errors.Is(err, ErrNoQuorum):
				refused["no quorum"]++
			case errors.Is(err, ErrDropped):
				refused["dropped"]++
			}
		}
		for _, m := range g.members {
			restores += int(m.n.snapsReceived)
			m.db.Close()
		}
	}
	t.Logf("%d seeds: %d leader changes, %d acknowledged, refused %v, %d snapshots sent, %d received",
		seeds, leaderChanges, acked, refused, snaps, restores)
	// raft draws election timeouts from crypto/rand, so what a run covers
	// varies a little: these bounds hold with a wide margin (a run of 50
	// seeds sees about 3 leader changes a seed and about 100 no-quorum
	// refusals; ErrDropped, 0 to 25 times, is checked whenever it occurs).
	if leaderChanges < seeds {
		t.Fatalf("%d leader changes in %d seeds", leaderChanges, seeds)
	}
	if seeds >= 20 && refused["no quorum"] == 0 {
		t.Fatalf("refusals %v: the no-quorum path was never taken", refused)
	}
	if snaps == 0 || restores == 0 {
		t.Fatalf("no snapshot was sent (%d) or restored (%d): catch-up by snapshot untested", snaps, restores)
	}
}
