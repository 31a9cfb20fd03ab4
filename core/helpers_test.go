package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
	"github.com/weexcore/exchange/internal/walio"
	"github.com/weexcore/exchange/journal"
)

func init() { testHooks = true }

const feeUID = 1

// testOpts is everything a test sets to open a node: the journal's,
// the load's and the node's options in one.
type testOpts struct {
	Dir              string
	Shards           int
	Coins            []engine.Coin
	Markets          []*engine.MarketSpec
	FeeUID           int64
	InsuranceUID     int64
	Logf             func(format string, args ...any) // nil: discard
	RingSize         int
	SnapshotEvery    int
	SnapshotInterval time.Duration
	PinCPUs          bool
	OnAddUser        func(*engine.Cmd)
	Reserve          int64
	FullReplay       bool // loadRO only
	Clock            func() int64
	SettleEvery      time.Duration // the tests' default: never
}

func testOptions(tb testing.TB, dir string) testOpts {
	return testOpts{Dir: dir, Shards: 2, Coins: enginetest.SmallCoins(), Markets: enginetest.SmallSpecs(3), FeeUID: feeUID, Reserve: 1 << 20, SettleEvery: -1,
		Logf: func(f string, a ...any) { tb.Logf(f, a...) }}
}

// openNode opens o.Dir and starts a node on it, as cmd/exchanged does.
func openNode(o testOpts) (*Node, error) {
	log := testLogger(o.Logf)
	return Start(journal.Options{Dir: o.Dir, Tuning: walio.All(), Reserve: o.Reserve},
		journal.LoadOptions{Shards: o.Shards, Coins: o.Coins, Markets: o.Markets, FeeUID: o.FeeUID, InsuranceUID: o.InsuranceUID, FullReplay: o.FullReplay},
		Options{RingSize: o.RingSize, SnapshotEvery: o.SnapshotEvery, SnapshotInterval: o.SnapshotInterval,
			PinCPUs: o.PinCPUs, Logger: log, OnAddUser: o.OnAddUser, Clock: o.Clock, SettleEvery: o.SettleEvery})
}

// loadRO opens dir read-only and loads it as the audit tool does (coins
// and markets from the meta); full replays from seq 1.
func loadRO(dir string, full bool) (*journal.State, error) {
	s, err := journal.Open(journal.Options{Dir: dir, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Load(journal.LoadOptions{FullReplay: full})
}

// hashRO is the state hash of dir, loaded read-only.
func hashRO(tb testing.TB, dir string, full bool) [32]byte {
	tb.Helper()
	st, err := loadRO(dir, full)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Hash()
}

// testLogger turns logf (nil: discard) into a logger, one call per line.
func testLogger(logf func(string, ...any)) *slog.Logger {
	if logf == nil {
		return nil
	}
	return slog.New(slog.NewTextHandler(logWriter(logf), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type logWriter func(string, ...any)

func (w logWriter) Write(p []byte) (int, error) {
	w("%s", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// records reads every journal record of dir (read-only).
func records(tb testing.TB, dir string, f func(shard int, seq uint64, timeMs int64, cmds []engine.Cmd) error) error {
	s, err := journal.Open(journal.Options{Dir: dir, ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Records(f)
}

// The journal's key layout (docs/JOURNAL.md), for tests that damage it.
const pfxJournal = 'j'

func journalKey(shard int, seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{pfxJournal, byte(shard)}, seq)
}

// quietLogger keeps a plain Pebble open in a test silent.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(f string, a ...any) {
	panic(fmt.Sprintf(f, a...))
}

func deadline() time.Time { return time.Now().Add(10 * time.Second) }

// do submits c and waits for it.
func do(tb testing.TB, n *Node, c engine.Cmd) (engine.Out, uint64) {
	tb.Helper()
	r := AcquireRequest()
	r.Cmd = c
	for {
		err := n.Submit(r)
		if err == ErrBusy {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			tb.Fatalf("submit %+v: %v", c, err)
		}
		break
	}
	if err := r.Wait(deadline()); err != nil {
		tb.Fatalf("wait %+v: %v", c, err)
	}
	out, seq := r.Out, r.Seq
	if r.HasOrder { // as the engine answered it: the order is its only update kept
		out.Updates, out.OrderAt = []engine.OrderView{r.Order}, 1
	}
	ReleaseRequest(r)
	return out, seq
}

func addUser(tb testing.TB, n *Node, uid int64) engine.UserIdx {
	tb.Helper()
	r := AcquireRequest()
	r.Cmd = engine.Cmd{Kind: engine.CmdAddUser, UID: uid}
	if err := n.Submit(r); err != nil {
		tb.Fatal(err)
	}
	if err := r.Wait(deadline()); err != nil {
		tb.Fatal(err)
	}
	if r.Out.Reject != engine.OK {
		tb.Fatalf("add user %d: %v", uid, r.Out.Reject)
	}
	u := r.Cmd.User
	ReleaseRequest(r)
	return u
}

func mustOK(tb testing.TB, what string, out engine.Out) {
	tb.Helper()
	if out.Reject != engine.OK {
		tb.Fatalf("%s: got %v, want OK", what, out.Reject)
	}
}

func hashString(h [32]byte) string { return fmt.Sprintf("%x", h[:8]) }

const maxTime = int64(^uint64(0) >> 1)

// crashImage copies a running node's directory while every shard is
// stopped at a barrier: everything acknowledged is synced, so the copy is
// what a power cut right then would leave (no Close, no final snapshot).
func crashImage(t *testing.T, n *Node, dst string) {
	t.Helper()
	err := n.atBarrier(deadline(), func() {
		dir := n.store.Dir()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(dst, 0o755)
		for _, e := range ents {
			if !e.Type().IsRegular() || e.Name() == "LOCK" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if errors.Is(err, os.ErrNotExist) {
				continue // a WAL spare being written was just renamed into place
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
