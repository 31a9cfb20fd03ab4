package replica

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

func openDB(t testing.TB, dir string) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(f string, a ...any) {
	panic(fmt.Sprintf(f, a...))
}

func ents(term uint64, from, to uint64) []raftpb.Entry {
	var es []raftpb.Entry
	for i := from; i <= to; i++ {
		es = append(es, raftpb.Entry{Term: term, Index: i, Data: []byte(fmt.Sprintf("t%d-i%d", term, i))})
	}
	return es
}

// The state a Storage reports, read through raft's interface.
func checkSame(t *testing.T, what string, got *Storage, want *raft.MemoryStorage) {
	t.Helper()
	gf, _ := got.FirstIndex()
	wf, _ := want.FirstIndex()
	gl, _ := got.LastIndex()
	wl, _ := want.LastIndex()
	if gf != wf || gl != wl {
		t.Fatalf("%s: log %d..%d, want %d..%d", what, gf, gl, wf, wl)
	}
	// MemoryStorage cannot take a snapshot at index 0, the way Storage is
	// bootstrapped, so every test group has the members 1, 2 and 3.
	ghs, gcs, _ := got.InitialState()
	whs, _, _ := want.InitialState()
	wcs := raftpb.ConfState{Voters: []uint64{1, 2, 3}}
	if ghs != whs || gcs.Equivalent(wcs) != nil {
		t.Fatalf("%s: initial state %v %v, want %v %v", what, ghs, gcs, whs, wcs)
	}
	for i := wf - 1; i <= wl+1; i++ {
		gt, gerr := got.Term(i)
		wt, werr := want.Term(i)
		if gt != wt || !errors.Is(gerr, werr) && !(gerr != nil && werr != nil) {
			t.Fatalf("%s: Term(%d) = %d, %v; want %d, %v", what, i, gt, gerr, wt, werr)
		}
	}
	if wf > 1 {
		if _, err := got.Term(wf - 2); !errors.Is(err, raft.ErrCompacted) {
			t.Fatalf("%s: Term below the log: %v, want ErrCompacted", what, err)
		}
		if _, err := got.Entries(wf-1, wl+1, 1<<30); !errors.Is(err, raft.ErrCompacted) {
			t.Fatalf("%s: Entries below the log: %v, want ErrCompacted", what, err)
		}
	}
	for _, max := range []uint64{0, 40, 1 << 30} {
		for lo := wf; lo <= wl; lo += 3 {
			g, err := got.Entries(lo, wl+1, max)
			if err != nil {
				t.Fatalf("%s: Entries(%d, %d, %d): %v", what, lo, wl+1, max, err)
			}
			w, _ := want.Entries(lo, wl+1, max)
			if len(g) != len(w) {
				t.Fatalf("%s: Entries(%d, %d, %d) gave %d entries, want %d", what, lo, wl+1, max, len(g), len(w))
			}
			for i := range g {
				if g[i].Index != w[i].Index || g[i].Term != w[i].Term || !bytes.Equal(g[i].Data, w[i].Data) {
					t.Fatalf("%s: Entries(%d..): %v, want %v", what, lo, g[i], w[i])
				}
			}
		}
	}
	gs, err := got.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := want.Snapshot()
	if gs.Metadata.Index != ws.Metadata.Index || gs.Metadata.Term != ws.Metadata.Term ||
		gs.Metadata.Index > 0 && gs.Metadata.ConfState.Equivalent(ws.Metadata.ConfState) != nil || !bytes.Equal(gs.Data, ws.Data) {
		t.Fatalf("%s: snapshot %v (%q), want %v (%q)", what, gs.Metadata, gs.Data, ws.Metadata, ws.Data)
	}
}

// TestStorageReopen writes a log with overwrites, a snapshot, a compaction
// and a received snapshot, and reads the same state back through raft's
// interface before and after the DB is closed and opened again.
func TestStorageReopen(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	st, err := NewStorage(db, 7)
	if err != nil {
		t.Fatal(err)
	}
	mem := raft.NewMemoryStorage()
	cs := raftpb.ConfState{Voters: []uint64{1, 2, 3}}
	if err := st.Bootstrap(cs.Voters); err != nil {
		t.Fatal(err)
	}
	if err := st.Bootstrap(cs.Voters); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("second Bootstrap: %v, want ErrNotEmpty", err)
	}

	step := func(what string, hs raftpb.HardState, es []raftpb.Entry) {
		t.Helper()
		if err := st.Save(hs, es, raftpb.Snapshot{}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		mem.SetHardState(hs)
		mem.Append(es)
		checkSame(t, what, st, mem)
	}
	step("first append", raftpb.HardState{Term: 1, Vote: 1, Commit: 0}, ents(1, 1, 20))
	step("overwrite the tail", raftpb.HardState{Term: 2, Vote: 2, Commit: 10}, ents(2, 15, 17))
	step("append after it", raftpb.HardState{Term: 2, Vote: 2, Commit: 17}, ents(2, 18, 30))

	if err := st.CreateSnapshot(25, cs, []byte("state@25")); err != nil {
		t.Fatal(err)
	}
	mem.CreateSnapshot(25, &cs, []byte("state@25"))
	if err := st.Compact(20); err != nil {
		t.Fatal(err)
	}
	mem.Compact(20)
	checkSame(t, "snapshot and compaction", st, mem)
	if err := st.Compact(26); err == nil {
		t.Fatal("compaction past the snapshot was accepted")
	}

	db.Close()
	db = openDB(t, dir)
	if st, err = NewStorage(db, 7); err != nil {
		t.Fatal(err)
	}
	checkSame(t, "reopened", st, mem)
	other, err := NewStorage(db, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !other.Empty() {
		t.Fatal("group 8 sees group 7's state")
	}

	// A snapshot from the leader replaces the whole log.
	snap := raftpb.Snapshot{Data: []byte("state@40"), Metadata: raftpb.SnapshotMetadata{Index: 40, Term: 3, ConfState: cs}}
	hs := raftpb.HardState{Term: 3, Vote: 1, Commit: 40}
	if err := st.Save(hs, ents(3, 41, 45), snap); err != nil {
		t.Fatal(err)
	}
	mem.ApplySnapshot(snap)
	mem.SetHardState(hs)
	mem.Append(ents(3, 41, 45))
	checkSame(t, "received snapshot", st, mem)
	if err := st.Save(raftpb.HardState{}, nil, raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 30, Term: 2}}); !errors.Is(err, raft.ErrSnapOutOfDate) {
		t.Fatalf("older snapshot: %v, want ErrSnapOutOfDate", err)
	}

	db.Close()
	db = openDB(t, dir)
	defer db.Close()
	if st, err = NewStorage(db, 7); err != nil {
		t.Fatal(err)
	}
	checkSame(t, "reopened after the snapshot", st, mem)
}

// TestStorageRandom compares Storage with raft's MemoryStorage over random
// appends (overwriting tails), snapshots, compactions and reopens, with a
// cache too small to hold the log, so reads come from Pebble and the cache.
func TestStorageRandom(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	dir := t.TempDir()
	db := openDB(t, dir)
	defer func() { db.Close() }()
	st, _ := NewStorage(db, 1)
	cs := raftpb.ConfState{Voters: []uint64{1, 2, 3}}
	st.Bootstrap(cs.Voters)
	mem := raft.NewMemoryStorage()
	rng := rand.New(rand.NewPCG(1, 2))
	term := uint64(1)
	snapIdx := uint64(0)
	for r := 0; r < rounds; r++ {
		first, _ := mem.FirstIndex()
		last, _ := mem.LastIndex()
		switch k := rng.IntN(10); {
		case k < 6: // append, perhaps over the tail
			from := last + 1
			if last >= first && rng.IntN(3) == 0 {
				from = last - uint64(rng.IntN(int(min(last-first+1, 8))))
				term++
			}
			if from <= snapIdx {
				from = snapIdx + 1
			}
			es := ents(term, from, from+uint64(rng.IntN(6)))
			hs := raftpb.HardState{Term: term, Vote: 1, Commit: snapIdx}
			if err := st.Save(hs, es, raftpb.Snapshot{}); err != nil {
				t.Fatal(err)
			}
			mem.SetHardState(hs)
			mem.Append(es)
		case k < 8 && last > snapIdx: // snapshot, and compact some
			idx := snapIdx + 1 + uint64(rng.IntN(int(last-snapIdx)))
			data := []byte(fmt.Sprintf("state@%d", idx))
			if err := st.CreateSnapshot(idx, cs, data); err != nil {
				t.Fatal(err)
			}
			mem.CreateSnapshot(idx, &cs, data)
			snapIdx = idx
			if c := idx - uint64(rng.IntN(3)); c >= first {
				if err := st.Compact(c); err != nil {
					t.Fatal(err)
				}
				mem.Compact(c)
			}
		case k == 8:
			db.Close()
			db = openDB(t, dir)
			st, _ = NewStorage(db, 1)
		case k == 9: // a snapshot from a leader, ahead of the log
			idx := last + uint64(rng.IntN(4)) + 1
			term++
			snap := raftpb.Snapshot{Data: []byte(fmt.Sprintf("leader@%d", idx)), Metadata: raftpb.SnapshotMetadata{Index: idx, Term: term, ConfState: cs}}
			if err := st.Save(raftpb.HardState{Term: term, Commit: idx}, nil, snap); err != nil {
				t.Fatal(err)
			}
			mem.ApplySnapshot(snap)
			mem.SetHardState(raftpb.HardState{Term: term, Commit: idx})
			snapIdx = idx
		}
		// The cache is trimmed to a few entries, so reads straddle it.
		st.mu.Lock()
		for len(st.tail) > 3 {
			st.tailBytes -= st.tail[0].Size()
			st.tail = st.tail[1:]
		}
		st.mu.Unlock()
		checkSame(t, fmt.Sprintf("round %d", r), st, mem)
	}
}

// A leader that answered an entry on its followers' quorum (ackEarly) may
// have applied it before its hard state recorded the commit: a restart
// raises the commit index to what was applied, if the log holds it.
func TestRestartAppliedPastCommit(t *testing.T) {
	db := openDB(t, t.TempDir())
	st, err := NewStorage(db, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Bootstrap([]uint64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	var es []raftpb.Entry
	for i := uint64(1); i <= 5; i++ {
		es = append(es, raftpb.Entry{Index: i, Term: 1, Data: []byte{byte(i)}})
	}
	if err := st.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 2}, es, raftpb.Snapshot{}); err != nil {
		t.Fatal(err)
	}
	send := func([]raftpb.Message) {}
	if _, err := newNode(nodeConfig{ID: 1, Applied: 9}, st, &recorder{id: 1, seen: &seenLog{m: map[uint64][]byte{}}}, send); err == nil {
		t.Fatal("applied 9 with a log ending at 5: no error")
	}
	n, err := newNode(nodeConfig{ID: 1, Applied: 4}, st, &recorder{id: 1, seen: &seenLog{m: map[uint64][]byte{}}}, send)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.HardState().Commit; c != 4 || n.rn.BasicStatus().Commit != 4 {
		t.Fatalf("commit after the restart: stored %d, raft %d, want 4", c, n.rn.BasicStatus().Commit)
	}
}
