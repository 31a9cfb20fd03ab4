package journal

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// v3Hash is the state hash of testdata/v3dir, a data directory written by
// the server before the journal and the runtime were split (commit
// 2b5711e: exchanged -shards 2 on its demo config, orders, trades, an admin
// user, a deposit and a withdrawal, a clean stop, then more orders and a
// kill -9, so it holds a snapshot, a journal tail after it and a WAL to
// recover). Its layout must keep replaying to the same state.
const v3Hash = "d1d4210565e8cfb7c27cba22986dcd515b94546902fe950dbfb7dc2d4e43c90a"

func TestReplaysOldDirectory(t *testing.T) {
	for _, full := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "data")
		copyDir(t, "testdata/v3dir", dir)
		st, err := loadRO(dir, full)
		if err != nil {
			t.Fatalf("full=%v: %v", full, err)
		}
		if got := hashHex(st); got != v3Hash {
			t.Errorf("full=%v: state hash %s, want %s", full, got, v3Hash)
		}
		if err := engineCheck(st); err != nil {
			t.Errorf("full=%v: %v", full, err)
		}
		if want := []uint64{16, 13, 12}; !slices.Equal(st.Seqs, want) {
			t.Errorf("full=%v: seqs %v, want %v", full, st.Seqs, want)
		}
	}
	// Read-write, as the server opens it (its own coins and markets come
	// from the meta here: the test's differ).
	dir := filepath.Join(t.TempDir(), "data")
	copyDir(t, "testdata/v3dir", dir)
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.readMeta()
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Load(LoadOptions{Coins: m.Coins, Markets: m.Markets, FeeUID: m.FeeUID})
	if err != nil {
		t.Fatal(err)
	}
	if got := hashHex(st); got != v3Hash {
		t.Errorf("read-write: state hash %s, want %s", got, v3Hash)
	}
	var bills int
	for uid := int64(10001); uid <= 10002; uid++ {
		b, err := s.Bills(uid, CoinAll, 0, 0, maxTime, 0, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		bills += len(b)
	}
	if bills == 0 {
		t.Error("no finance records read from the old directory")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func hashHex(st *State) string {
	h := st.Hash()
	return hex.EncodeToString(h[:])
}
