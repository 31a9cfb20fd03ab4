package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

func TestAudit(t *testing.T) {
	coins := []engine.Coin{{ID: 0, Name: "BTC", ExternalID: 1, Scale: 8}, {ID: 1, Name: "USDT", ExternalID: 2, Scale: 6}}
	spec, err := engine.NewMarketSpec(0, engine.SpotConfig{Symbol: "BTCUSDT", BaseAsset: "BTC", QuoteAsset: "USDT",
		TickSize: "0.01", StepSize: "0.0001", MinTradeAmount: "0.0001", MaxTradeAmount: "1000",
		TakerFeeRate: "0.001", MakerFeeRate: "0.0005", BuyLimitPriceRatio: "0.5", SellLimitPriceRatio: "0.5",
		MarketBuyLimitSize: "100", MarketSellLimitSize: "100", MarketFallbackPriceRatio: "0.05", EnableTrade: true},
		coins[0], coins[1])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n, err := core.Start(journal.Options{Dir: dir}, journal.LoadOptions{Shards: 1, Coins: coins, Markets: []*engine.MarketSpec{spec}, FeeUID: 1}, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	users := map[int64]engine.UserIdx{}
	do := func(c engine.Cmd) engine.Out {
		r := core.AcquireRequest()
		defer core.ReleaseRequest(r)
		r.Cmd = c
		if err := n.Submit(r); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if r.Out.Reject != engine.OK {
			t.Fatalf("%+v: %v", c, r.Out.Reject)
		}
		if c.Kind == engine.CmdAddUser {
			users[c.UID] = r.Cmd.User
		}
		return r.Out
	}
	for _, uid := range []int64{1, 10, 20} {
		do(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
	}
	do(engine.Cmd{Kind: engine.CmdDeposit, User: users[10], UID: 10, Coin: 1, Amount: 1_000_000_000})
	do(engine.Cmd{Kind: engine.CmdDeposit, User: users[20], UID: 20, Coin: 0, Amount: 100_000_000})
	do(engine.Cmd{Kind: engine.CmdPlace, User: users[10], UID: 10, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 5000})
	do(engine.Cmd{Kind: engine.CmdPlace, User: users[20], UID: 20, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 2000})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := compareReplays(dir, false); err != nil {
		t.Fatal(err)
	}
	for _, csv := range []bool{false, true} {
		tp, bp := filepath.Join(t.TempDir(), "trades"), filepath.Join(t.TempDir(), "bills")
		if err := run(dir, csv, tp, bp, csv, false); err != nil {
			t.Fatalf("audit (csv %v): %v", csv, err)
		}
		tb, _ := os.ReadFile(tp)
		bb, _ := os.ReadFile(bp)
		wantT, wantB := 1, 2+4+1 // one trade; two deposits, in/out for both sides, fee income
		if csv {
			wantT++
			wantB++
		}
		if got := bytes.Count(tb, []byte("\n")); got != wantT {
			t.Errorf("csv %v: trades: got %d lines, want %d:\n%s", csv, got, wantT, tb)
		}
		if got := bytes.Count(bb, []byte("\n")); got < wantB-1 {
			t.Errorf("csv %v: bills: got %d lines, want about %d:\n%s", csv, got, wantB, bb)
		}
		t.Logf("trades:\n%sbills:\n%s", tb, bb)
	}
}

// ledgerNode starts a node on dir with one coin and no markets, and a do
// that applies a command, requiring it accepted.
func ledgerNode(t *testing.T, dir string) (*core.Node, func(engine.Cmd) *core.Request) {
	coins := []engine.Coin{{ID: 0, Name: "USDT", ExternalID: 1, Scale: 6}}
	n, err := core.Start(journal.Options{Dir: dir}, journal.LoadOptions{Shards: 1, Coins: coins, FeeUID: 1}, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return n, func(c engine.Cmd) *core.Request {
		r := core.AcquireRequest()
		r.Cmd = c
		if err := n.Submit(r); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(time.Now().Add(5 * time.Second)); err != nil || r.Out.Reject != engine.OK {
			t.Fatalf("%+v: %v %v", c, err, r.Out.Reject)
		}
		return r
	}
}

// TestAuditViolation forges a journal record (by the byte format in
// docs/JOURNAL.md): the ledger's last record, a withdrawal of the whole
// balance, repeated as the next record. Replaying it debits twice, the
// balance goes negative, and the audit must fail.
func TestAuditViolation(t *testing.T) {
	dir := t.TempDir()
	n, do := ledgerNode(t, dir)
	do(engine.Cmd{Kind: engine.CmdAddUser, UID: 1})
	u := do(engine.Cmd{Kind: engine.CmdAddUser, UID: 10}).Cmd.User
	do(engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 10, Amount: 500})
	w := do(engine.Cmd{Kind: engine.CmdWithdraw, User: u, UID: 10, Amount: 500})
	seq := w.Seq
	n.Close()
	if err := run(dir, true, "", "", false, false); err != nil {
		t.Fatalf("audit of the honest directory: %v", err)
	}

	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte{'j', 1, 0, 0, 0, 0, 0, 0, 0, 0} // ledger is shard 1 with one market shard
	binary.BigEndian.PutUint64(key[2:], seq)
	v, c, err := db.Get(key)
	if err != nil {
		t.Fatalf("ledger record at seq %d: %v", seq, err)
	}
	forged := append([]byte(nil), v[:len(v)-4]...)
	c.Close()
	binary.LittleEndian.PutUint64(forged[4:], seq+1) // firstSeq
	forged = binary.LittleEndian.AppendUint32(forged, crc32.Checksum(forged, crc32.MakeTable(crc32.Castagnoli)))
	binary.BigEndian.PutUint64(key[2:], seq+1)
	if err := db.Set(key, forged, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	err = run(dir, true, "", "", false, false)
	if err == nil || !strings.Contains(err.Error(), "invariant") {
		t.Fatalf("audit of a double withdrawal: got %v, want an invariant violation", err)
	}
	t.Logf("audit refused as expected: %v", err)
}

// TestAuditDamagedTable: a byte flipped in a table the replay does not
// read (history rows) is found by the audit's read-back: a verdict and an
// error, never a panic; flips the replay reads are refused at load.
func TestAuditDamagedTable(t *testing.T) {
	dir := t.TempDir()
	n, do := ledgerNode(t, dir)
	do(engine.Cmd{Kind: engine.CmdAddUser, UID: 1})
	u := do(engine.Cmd{Kind: engine.CmdAddUser, UID: 10}).Cmd.User
	for i := 0; i < 200; i++ {
		do(engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 10, Amount: engine.Amount(1 + i)})
	}
	n.Close() // flushes to a table
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table")
	}
	good, _ := os.ReadFile(tables[0])
	var found, internal int
	for off := 0; off < len(good); off += 1 + len(good)/20 {
		b := bytes.Clone(good)
		b[off] ^= 0x04
		os.WriteFile(tables[0], b, 0o644)
		err := run(dir, false, "", "", false, false)
		switch {
		case err == nil:
		case errors.Is(err, journal.ErrCorrupt):
			found++
		default:
			t.Fatalf("flip at %d: audit error %v, want ErrCorrupt (or nothing, for a byte no read covers)", off, err)
		}
		if strings.Contains(fmt.Sprint(err), "internal error") {
			internal++
		}
	}
	os.WriteFile(tables[0], good, 0o644)
	if found == 0 || internal != 0 {
		t.Fatalf("%d flips found damaged, %d internal errors: want some found, no internal error", found, internal)
	}
	if err := run(dir, false, "", "", false, false); err != nil {
		t.Fatalf("audit of the repaired directory: %v", err)
	}
}

// TestAuditInstalledSnapshot: member a misses commands b (the group's
// leader) applied and installs b's journal snapshot, as a replicated
// member too far behind does, then applies more. a's journal has a gap
// the installed snapshot covers: -full goes on from it, says so, and
// agrees with the snapshot+tail load (-compare).
func TestAuditInstalledSnapshot(t *testing.T) {
	adir, bdir := t.TempDir(), t.TempDir()
	var u engine.UserIdx
	for _, dir := range []string{adir, bdir} {
		n, do := ledgerNode(t, dir)
		do(engine.Cmd{Kind: engine.CmdAddUser, UID: 1})
		u = do(engine.Cmd{Kind: engine.CmdAddUser, UID: 10}).Cmd.User
		do(engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 10, Amount: 500})
		if dir == bdir {
			for i := 0; i < 5; i++ {
				do(engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 10, Amount: 100})
			}
		}
		n.Close()
	}
	if err := run(adir, true, "", "", false, false); err != nil {
		t.Fatalf("audit before the install: %v", err)
	}
	bs, bst, err := load(bdir, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := journal.AppendSnapshotEngines(journal.SnapshotHead(bst), bst.Engines)
	bs.Close()
	s, err := journal.Open(journal.Options{Dir: adir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(journal.LoadOptions{Shards: 1, Coins: []engine.Coin{{ID: 0, Name: "USDT", ExternalID: 1, Scale: 6}}, FeeUID: 1}); err != nil {
		t.Fatal(err)
	}
	no, err := s.WriteSnapshotRows(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	n, do := ledgerNode(t, adir)
	do(engine.Cmd{Kind: engine.CmdWithdraw, User: u, UID: 10, Amount: 700})
	n.Close()

	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = f
	err = run(adir, true, "", "", false, false)
	os.Stdout = stdout
	f.Close()
	if err != nil {
		t.Fatalf("audit -full across the installed snapshot: %v", err)
	}
	b, _ := os.ReadFile(out)
	if want := fmt.Sprintf("note\tthe journal records snapshot %d covers were not written on this member", no); !strings.Contains(string(b), want) {
		t.Errorf("audit -full output lacks %q:\n%s", want, b)
	}
	if err := compareReplays(adir, true); err != nil {
		t.Fatal(err)
	}
}
