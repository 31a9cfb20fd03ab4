package journal

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
	"github.com/weexcore/exchange/internal/walio"
)

const feeUID = 1

func testLoadOptions(tb testing.TB) LoadOptions {
	return LoadOptions{Shards: 2, Coins: enginetest.SmallCoins(), Markets: enginetest.SmallSpecs(2), FeeUID: feeUID}
}

// testLog is a logger into a buffer that tests read.
type testLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *testLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func (l *testLog) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// openLoad opens dir (read-write, every tuning on) and loads it with the
// test's coins and markets.
func openLoad(tb testing.TB, dir string, log *slog.Logger) (*Store, *State, error) {
	s, err := Open(Options{Dir: dir, Tuning: walio.All(), Logger: log, Reserve: 1 << 20})
	if err != nil {
		return nil, nil, err
	}
	st, err := s.Load(testLoadOptions(tb))
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, st, nil
}

// loadRO opens dir read-only and loads it as the audit tool does (coins
// and markets from the meta).
func loadRO(dir string, full bool) (*State, error) {
	s, err := Open(Options{Dir: dir, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Load(LoadOptions{FullReplay: full})
}

// shards applies commands to a loaded state and journals them as the
// runtime does, one goroutine for all shards: each call of run is one
// synced Pebble batch holding one record per shard it touched.
type shards struct {
	s   *Store
	st  *State
	w   []*Writer
	b   *Batch
	out engine.Out
	now int64
}

func newShards(s *Store, st *State) *shards {
	sh := &shards{s: s, st: st, b: s.NewBatch(), now: 1_700_000_000_000}
	for i := range st.Engines {
		sh.w = append(sh.w, NewWriter(i))
	}
	return sh
}

func (sh *shards) shardOf(c *engine.Cmd) int {
	switch c.Kind {
	case engine.CmdDeposit, engine.CmdWithdraw, engine.CmdAddUser:
		return sh.st.MarketShards()
	}
	return sh.st.MarketShard(c.Market)
}

// run applies cmds (in order; their results in cmds, Cmd.User of an
// added user included) and commits them in one synced batch.
func (sh *shards) run(tb testing.TB, cmds []engine.Cmd) []engine.Reject {
	tb.Helper()
	sh.now++
	started := make([]bool, len(sh.w))
	rej := make([]engine.Reject, len(cmds))
	for i := range cmds {
		c := &cmds[i]
		k := sh.shardOf(c)
		if !started[k] {
			started[k] = true
			sh.w[k].Begin(sh.st.Seqs[k]+1, sh.now)
		}
		sh.st.Seqs[k]++
		sh.st.Engines[k].Apply(c, sh.st.Seqs[k], sh.now, &sh.out)
		sh.st.Times[k] = sh.now
		sh.w[k].Add(sh.b, c, &sh.out)
		rej[i] = sh.out.Reject
	}
	for k, ok := range started {
		if ok {
			sh.w[k].Finish(sh.b)
		}
	}
	if err := sh.b.Commit(); err != nil {
		tb.Fatal(err)
	}
	sh.b.Reset()
	for _, e := range sh.st.Engines {
		e.Flush()
	}
	return rej
}

// do runs one command and fails the test unless it is accepted.
func (sh *shards) do(tb testing.TB, c engine.Cmd) engine.Cmd {
	tb.Helper()
	cmds := []engine.Cmd{c}
	if r := sh.run(tb, cmds); r[0] != engine.OK {
		tb.Fatalf("%+v: got %v, want OK", c, r[0])
	}
	return cmds[0]
}

// loadBatches registers the fee account and users 100 and 200, then runs
// batches of per deposits and sell orders each.
func (sh *shards) loadBatches(tb testing.TB, batches, per int) {
	tb.Helper()
	sh.do(tb, engine.Cmd{Kind: engine.CmdAddUser, UID: feeUID})
	u := sh.do(tb, engine.Cmd{Kind: engine.CmdAddUser, UID: 100}).User
	v := sh.do(tb, engine.Cmd{Kind: engine.CmdAddUser, UID: 200}).User
	sh.moreBatches(tb, u, v, batches, per)
}

// moreBatches is loadBatches' load for its users u (uid 100) and v (200).
func (sh *shards) moreBatches(tb testing.TB, u, v engine.UserIdx, batches, per int) {
	for b := 0; b < batches; b++ {
		cmds := make([]engine.Cmd, per)
		for i := range cmds {
			switch i % 3 {
			case 0:
				cmds[i] = engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 100, Coin: 2, Amount: 1_000_000}
			case 1:
				cmds[i] = engine.Cmd{Kind: engine.CmdDeposit, User: v, UID: 200, Coin: 0, Amount: 1_000_000}
			default:
				cmds[i] = engine.Cmd{Kind: engine.CmdPlace, User: v, UID: 200, Market: engine.MarketID(b % 2), Side: engine.Sell,
					Type: engine.Limit, TIF: engine.GTC, Price: engine.Price(10000 + i), Qty: 1}
			}
		}
		sh.run(tb, cmds)
	}
}

// crashImage copies dir, whose store is open with everything committed
// (and so synced), as a power cut right then would leave it: no Close,
// no final snapshot.
func crashImage(tb testing.TB, dir, dst string) {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	os.MkdirAll(dst, 0o755)
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		in, err := os.Open(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // a WAL spare being written was just renamed into place
		}
		if err != nil {
			tb.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			tb.Fatal(err)
		}
		in.Close()
		out.Close()
		if size, ok := walio.RecordedSize(filepath.Join(dir, e.Name())); ok { // a WAL's spare size
			walio.SetRecordedSize(filepath.Join(dst, e.Name()), size)
		}
	}
}

// image runs batches×per commands into a new directory and returns a
// crash image of it with its state hash and sequences.
func image(tb testing.TB, batches, per int) (img string, hash [32]byte, seqs []uint64) {
	tb.Helper()
	dir := tb.TempDir()
	s, st, err := openLoad(tb, dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	newShards(s, st).loadBatches(tb, batches, per)
	img = filepath.Join(tb.TempDir(), "img")
	crashImage(tb, dir, img)
	hash, seqs = st.Hash(), append([]uint64(nil), st.Seqs...)
	s.Close()
	return img, hash, seqs
}

// plainDB opens dir with Pebble alone (no checks of ours).
func plainDB(tb testing.TB, dir string, readOnly bool) *pebble.DB {
	tb.Helper()
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: readOnly, Logger: quietLogger{}})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// quietLogger keeps a plain Pebble open silent.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)      {}
func (quietLogger) Errorf(string, ...any)     {}
func (quietLogger) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

func hashString(h [32]byte) string { return fmt.Sprintf("%x", h[:8]) }

func engineCheck(st *State) error { return engine.CheckInvariants(st.Accounts, st.Engines) }
