package core

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// TestNodeBasics places, matches, cancels, queries and reads history, then
// reopens the directory and checks the state came back.
func TestNodeBasics(t *testing.T) {
	dir := t.TempDir()
	n, err := openNode(testOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if !n.Store().Seeding() || n.Shards() != 2 {
		t.Fatalf("seeding %v shards %d, want true 2", n.Store().Seeding(), n.Shards())
	}
	addUser(t, n, feeUID)
	a := addUser(t, n, 100)
	b := addUser(t, n, 200)
	mustOK(t, "deposit a", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: a, UID: 100, Coin: 2, Amount: 1_000_000_000})))
	mustOK(t, "deposit b", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: b, UID: 200, Coin: 0, Amount: 100_000_000})))

	bal, err := n.Balances(a, deadline(), nil)
	if err != nil || len(bal) != 3 || bal[2].Avail != 1_000_000_000 {
		t.Fatalf("balances of a: got %+v %v, want 1000 USDT available", bal, err)
	}
	// a buys 0.5 BTC at 100.00; b sells 0.2 at 100.00: one trade.
	buy := engine.Cmd{Kind: engine.CmdPlace, User: a, UID: 100, Market: 0, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 5000}
	buy.Text.Set([]byte("a-1"))
	out, _ := do(t, n, buy)
	mustOK(t, "buy", out)
	buyID := out.Order().OrderID
	sell := engine.Cmd{Kind: engine.CmdPlace, User: b, UID: 200, Market: 0, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 2000}
	out, _ = do(t, n, sell)
	mustOK(t, "sell", out)
	if out.Order().Status != engine.StatusFilled {
		t.Fatalf("sell status: got %v, want filled", out.Order().Status)
	}
	sellID := out.Order().OrderID

	oo, err := n.OpenOrders(a, 100, engine.AllMarkets, deadline(), nil)
	if err != nil || len(oo) != 1 || oo[0].OrderID != buyID || oo[0].ExecutedQty != 2000 {
		t.Fatalf("open orders: got %+v %v", oo, err)
	}
	book, err := n.Depth(0, 10, deadline(), nil, nil)
	if err != nil || len(book.Bids) != 1 || len(book.Asks) != 0 || book.Last != 10000 || book.Seq == 0 {
		t.Fatalf("depth: got %+v %v", book, err)
	}
	v, ok, err := n.Order(b, 200, 0, sellID, nil, deadline())
	if err != nil || !ok || v.Status != engine.StatusFilled {
		t.Fatalf("finished order from history: got %+v %v %v", v, ok, err)
	}
	v, ok, err = n.Order(a, 100, 0, 0, []byte("a-1"), deadline())
	if err != nil || !ok || v.OrderID != buyID {
		t.Fatalf("order by client id: got %+v %v %v", v, ok, err)
	}
	trades, err := n.Store().Trades(100, 0, 0, maxTime, 10, nil)
	if err != nil || len(trades) != 1 || trades[0].Qty != 2000 {
		t.Fatalf("trades of a: got %+v %v", trades, err)
	}
	pub, err := n.Store().MarketTrades(0, 10, nil)
	if err != nil || len(pub) != 1 {
		t.Fatalf("market trades: got %+v %v", pub, err)
	}
	bills, err := n.Store().Bills(100, journal.CoinAll, 0, 0, maxTime, 0, 10, nil)
	if err != nil || len(bills) != 3 {
		t.Fatalf("bills of a: got %+v %v, want deposit, trade_in, trade_out", bills, err)
	}
	for i := 1; i < len(bills); i++ {
		if bills[i].TimeMs > bills[i-1].TimeMs {
			t.Fatalf("bills not newest first: %+v", bills)
		}
	}
	dep, err := n.Store().Bills(100, 2, journal.Biz(engine.BizDeposit), 0, maxTime, 0, 10, nil)
	if err != nil || len(dep) != 1 || dep[0].Delta != 1_000_000_000 {
		t.Fatalf("deposit bills of a in USDT: got %+v %v", dep, err)
	}
	all, err := n.AllOrders(b, 200, 0, 0, maxTime, 0, 10, deadline(), nil)
	if err != nil || len(all) != 1 || all[0].OrderID != sellID {
		t.Fatalf("all orders of b: got %+v %v", all, err)
	}
	out, _ = do(t, n, engine.Cmd{Kind: engine.CmdCancel, User: a, UID: 100, Market: 0, OrderID: buyID})
	mustOK(t, "cancel", out)
	wantBal, _ := n.Balances(a, deadline(), nil)
	seqs := n.Seqs()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Submit(AcquireRequest()); err != ErrClosed {
		t.Fatalf("submit after close: got %v, want ErrClosed", err)
	}

	n, err = openNode(testOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if !n.Store().Seeding() {
		t.Fatal("reopened node says seeded, but Seeded was never called")
	}
	if err := n.Store().Seeded(); err != nil {
		t.Fatal(err)
	}
	gotBal, _ := n.Balances(a, deadline(), nil)
	if len(gotBal) != len(wantBal) {
		t.Fatalf("balances after reopen: got %+v, want %+v", gotBal, wantBal)
	}
	for i := range gotBal {
		if gotBal[i] != wantBal[i] {
			t.Fatalf("balances after reopen: got %+v, want %+v", gotBal, wantBal)
		}
	}
	if got := n.Seqs(); !equalSeqs(got, seqs) {
		t.Fatalf("seqs after reopen: got %v, want %v", got, seqs)
	}
}

func first(o engine.Out, _ uint64) engine.Out { return o }

func equalSeqs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBusyAndTimeout: a full ring refuses at once with ErrBusy; a wait
// past its deadline returns ErrTimeout, and the late result neither
// corrupts a reused request nor is lost from the journal.
func TestBusyAndTimeout(t *testing.T) {
	o := testOptions(t, t.TempDir())
	o.RingSize = 8
	n, err := openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	addUser(t, n, feeUID)
	u := addUser(t, n, 100)
	// Hold every shard at a barrier so nothing drains.
	n.barMu.Lock()
	b, err := n.stopAll(deadline())
	if err != nil {
		t.Fatal(err)
	}
	var reqs []*Request
	busy := false
	for i := 0; i < 64 && !busy; i++ {
		r := AcquireRequest()
		r.Cmd = engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 100, Coin: 2, Amount: 1}
		switch err := n.Submit(r); err {
		case nil:
			reqs = append(reqs, r)
		case ErrBusy:
			busy = true
			ReleaseRequest(r)
		default:
			t.Fatal(err)
		}
	}
	if !busy || len(reqs) != 8 {
		t.Fatalf("got busy %v after %d queued, want busy after 8", busy, len(reqs))
	}
	if err := reqs[0].Wait(time.Now().Add(10 * time.Millisecond)); err != ErrTimeout {
		t.Fatalf("wait on a held shard: got %v, want ErrTimeout", err)
	}
	ReleaseRequest(reqs[0]) // abandoned: the shard recycles it
	close(b.release)
	n.barMu.Unlock()
	for _, r := range reqs[1:] {
		if err := r.Wait(deadline()); err != nil {
			t.Fatal(err)
		}
		ReleaseRequest(r)
	}
	bal, err := n.Balances(u, deadline(), nil)
	if err != nil || bal[2].Avail != 8 {
		t.Fatalf("balance after 8 deposits of 1 (one timed out but applied): got %+v %v", bal, err)
	}
}

// TestMetaRefusesRenumbering: a configuration that drops or renumbers a
// journaled market or coin is refused, naming it; appending is fine.
func TestMetaRefusesRenumbering(t *testing.T) {
	dir := t.TempDir()
	n, err := openNode(testOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	n.Close()

	o := testOptions(t, dir)
	o.Markets = o.Markets[:2]
	if _, err := openNode(o); err == nil || !strings.Contains(err.Error(), "ETHBTC") {
		t.Fatalf("dropped market: got %v, want an error naming ETHBTC", err)
	}
	o = testOptions(t, dir)
	o.Markets[0], o.Markets[1] = o.Markets[1], o.Markets[0]
	o.Markets[0].ID, o.Markets[1].ID = 0, 1
	if _, err := openNode(o); err == nil || !strings.Contains(err.Error(), "ETHUSDT") && !strings.Contains(err.Error(), "BTCUSDT") {
		t.Fatalf("renumbered market: got %v, want an error naming it", err)
	}
	o = testOptions(t, dir)
	o.Coins = o.Coins[:2]
	if _, err := openNode(o); err == nil || !strings.Contains(err.Error(), "USDT") {
		t.Fatalf("dropped coin: got %v, want an error naming USDT", err)
	}
	o = testOptions(t, dir)
	extra := *o.Markets[0]
	extra.ID, extra.Symbol = 3, "BTCUSDT2"
	o.Markets = append(o.Markets, &extra)
	n, err = openNode(o)
	if err != nil {
		t.Fatalf("appended market: %v", err)
	}
	n.Close()
}

// TestPinned runs a node with its shard goroutines pinned to CPUs.
func TestPinned(t *testing.T) {
	o := testOptions(t, t.TempDir())
	o.PinCPUs = true
	n, err := openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	addUser(t, n, feeUID)
	u := addUser(t, n, 100)
	mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 100, Coin: 1, Amount: 5})))
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOnAddUserAfterSnapshot: OnAddUser sees every registered user, with
// its seed, whether its CmdAddUser is replayed or covered by a snapshot.
func TestOnAddUserAfterSnapshot(t *testing.T) {
	dir := t.TempDir()
	n, err := openNode(testOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	reg := func(n *Node, uid int64) {
		r := AcquireRequest()
		r.Cmd = engine.Cmd{Kind: engine.CmdAddUser, UID: uid}
		r.Cmd.Text.Set([]byte(fmt.Sprintf("seed-%d", uid)))
		if err := n.Submit(r); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(deadline()); err != nil || r.Out.Reject != engine.OK {
			t.Fatalf("add user %d: %v %v", uid, err, r.Out.Reject)
		}
		ReleaseRequest(r)
	}
	for _, uid := range []int64{feeUID, 100, 200} {
		reg(n, uid)
	}
	n.Close() // snapshot covers the three
	var got []string
	o := testOptions(t, dir)
	o.OnAddUser = func(c *engine.Cmd) { got = append(got, fmt.Sprintf("%d:%s", c.UID, c.Text.String())) }
	n, err = openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	reg(n, 300) // after the snapshot: replayed from the journal tail
	img := t.TempDir() + "/img"
	crashImage(t, n, img)
	n.Close()
	got = got[:0]
	o.Dir = img
	n, err = openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	want := "1:seed-1 100:seed-100 200:seed-200 300:seed-300"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("OnAddUser calls: got %q, want %q", s, want)
	}
}

// TestSnapshotPruning keeps the newest snapshots only, and a restart from
// them gives the same state.
func TestSnapshotPruning(t *testing.T) {
	dir := t.TempDir()
	n, err := openNode(testOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	addUser(t, n, feeUID)
	u := addUser(t, n, 100)
	for i := 0; i < 5; i++ {
		mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 100, Coin: 1, Amount: 7})))
		if err := n.Snapshot(); err != nil {
			t.Fatal(err)
		}
	}
	want, _, _ := n.State(deadline())
	n.Close()
	n, err = openNode(testOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := n.State(deadline())
	n.Close()
	if got != want {
		t.Fatalf("hash after restart: got %s, want %s", hashString(got), hashString(want))
	}
	// The snapshots' keys ("s" snapNo, docs/JOURNAL.md), read with Pebble alone.
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	it, _ := db.NewIter(&pebble.IterOptions{LowerBound: []byte{'s'}, UpperBound: []byte{'t'}})
	var nos []uint64
	for ok := it.First(); ok; ok = it.Next() {
		nos = append(nos, binary.BigEndian.Uint64(it.Key()[1:]))
	}
	it.Close()
	const keep = 2 // the journal keeps its 2 newest snapshots
	if len(nos) != keep || nos[len(nos)-1] != 5 {
		t.Fatalf("snapshots kept: got %v, want the newest %d ending at 5 (Close adds none: nothing changed)", nos, keep)
	}
}

// TestRulesChange: a restart with changed market rules replays the journal
// under the rules it was written with (same state hash), then journals the
// change (CmdSetRules) and applies the new rules to new commands; a full
// replay from seq 1 and a snapshot-based one agree with the live state.
func TestRulesChange(t *testing.T) {
	dir := t.TempDir()
	n, err := openNode(testOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	addUser(t, n, feeUID)
	a := addUser(t, n, 100)
	b := addUser(t, n, 200)
	mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: a, UID: 100, Coin: 2, Amount: 1_000_000_000})))
	mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: b, UID: 200, Coin: 0, Amount: 100_000_000})))
	trade := func(n *Node) {
		mustOK(t, "buy", first(do(t, n, engine.Cmd{Kind: engine.CmdPlace, User: a, UID: 100, Market: 0, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 1000})))
		mustOK(t, "sell", first(do(t, n, engine.Cmd{Kind: engine.CmdPlace, User: b, UID: 200, Market: 0, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 1000})))
	}
	trade(n)
	want, _, _ := n.State(deadline())
	img := t.TempDir() + "/img"
	crashImage(t, n, img) // no snapshot covers the trade
	n.Close()

	o := testOptions(t, img)
	spec := *o.Markets[0]
	spec.TakerRate *= 2
	o.Markets[0] = &spec
	n, err = openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := n.State(deadline())
	if got != want {
		t.Fatalf("hash after a restart with new rules: got %s, want %s (replayed under the old rules)", hashString(got), hashString(want))
	}
	trade(n)
	tr, err := n.Store().Trades(200, 0, 0, maxTime, 10, nil)
	if err != nil || len(tr) != 2 || tr[1].TakerFee != 2*tr[0].TakerFee {
		t.Fatalf("trades of the seller: got %+v %v, want the second taker fee twice the first", tr, err)
	}
	h1, _, _ := n.State(deadline())
	img2 := t.TempDir() + "/img2"
	crashImage(t, n, img2) // the rules change and the second trade in the journal's tail
	n.Close()              // a snapshot after the change
	n, err = openNode(o)   // the journal's rules are now the configured ones: no change
	if err != nil {
		t.Fatal(err)
	}
	trade(n)
	h3, _, _ := n.State(deadline())
	tr, _ = n.Store().Trades(200, 0, 0, maxTime, 10, nil)
	n.Close()
	if len(tr) != 3 || tr[2].TakerFee != tr[1].TakerFee {
		t.Fatalf("trades of the seller after a second restart: got %+v, want the third taker fee equal to the second", tr)
	}
	for _, c := range []struct {
		dir  string
		full bool
		want [32]byte
	}{{img2, true, h1}, {img2, false, h1}, {img, false, h3}, {img, true, h3}, {dir, true, want}} {
		if got := hashRO(t, c.dir, c.full); got != c.want {
			t.Errorf("read-only replay of %s (full %v): hash %s, want %s", filepath.Base(c.dir), c.full, hashString(got), hashString(c.want))
		}
	}
}

// TestSeeded: a new directory is seeding until Seeded, across reopens (a
// crash before Seeded), and no longer after it.
func TestSeeded(t *testing.T) {
	dir := t.TempDir()
	for i, want := range []bool{true, true, false, false} {
		n, err := openNode(testOptions(t, dir))
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Store().Seeding(); got != want {
			t.Fatalf("open %d: Seeding() = %v, want %v", i, got, want)
		}
		if i == 1 {
			if err := n.Store().Seeded(); err != nil {
				t.Fatal(err)
			}
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSegmentsJoinOpenBatch: while syncs are paced, requests the shard
// drains one at a time (each submitted once the one before is applied)
// join the batch waiting for its sync slot when they fall in the same
// millisecond: fewer journal records than requests, some holding several.
func TestSegmentsJoinOpenBatch(t *testing.T) {
	testForcePace = true
	defer func() { testForcePace = false }()
	dir := t.TempDir()
	n, err := openNode(testOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	u := addUser(t, n, 100)
	_, before, _ := n.State(deadline())
	const reqs = 40
	var rs []*Request
	for i := 0; i < reqs; i++ {
		r := AcquireRequest()
		r.Cmd = engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 100, Coin: 2, Amount: 1}
		if err := n.Submit(r); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
		// drained alone: the next request comes in the shard's next drain
		for sh := n.shards[len(n.shards)-1]; sh.applying.Load() < before[len(before)-1]+uint64(i+1); {
			runtime.Gosched()
		}
	}
	for _, r := range rs {
		if err := r.Wait(deadline()); err != nil {
			t.Fatal(err)
		}
		ReleaseRequest(r)
	}
	_, after, _ := n.State(deadline())
	n.Close()
	ledger := len(after) - 1
	if got := after[ledger] - before[ledger]; got != reqs {
		t.Fatalf("ledger applied %d deposits, want %d", got, reqs)
	}
	recs, most := 0, 0
	err = records(t, dir, func(sh int, seq uint64, _ int64, cmds []engine.Cmd) error {
		if sh == ledger && seq > before[ledger] {
			recs, most = recs+1, max(most, len(cmds))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d deposits drained one by one: %d journal records, the largest holds %d", reqs, recs, most)
	if most < 2 || recs >= reqs {
		t.Fatalf("%d journal records for %d deposits drained one by one, none with more than %d", recs, reqs, most)
	}
}
