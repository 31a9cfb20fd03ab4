package journal

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
)

// TestReplicatedRows: the rows a replicated leader proposes (AppendRows)
// decode (DecodeRows) into the records it applied, with their recorded
// decisions, the rules a CmdSetRules installed and the rebate rows
// attached where a follower needs them.
func TestReplicatedRows(t *testing.T) {
	s, st, err := openLoad(t, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sh := newShards(s, st)
	sh.loadBatches(t, 2, 6)
	ledger := st.MarketShards()
	m := engine.MarketID(1)
	k := st.MarketShard(m)

	b := s.NewBatch()
	defer b.Close()
	var out engine.Out
	now := int64(1_800_000_000_000)
	// The market's shard: an order and a rules change.
	spec := *st.Markets[m]
	spec.EnableTrade = !spec.EnableTrade
	mcmds := []engine.Cmd{
		{Kind: engine.CmdPlace, User: 2, UID: 200, Market: m, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 20000, Qty: 1},
		{Kind: engine.CmdSetRules, Market: m},
	}
	sh.w[k].Begin(st.Seqs[k]+1, now)
	first := st.Seqs[k] + 1
	for i := range mcmds {
		c := &mcmds[i]
		if c.Kind == engine.CmdSetRules {
			st.Engines[k].StageRules(&spec)
		}
		st.Seqs[k]++
		st.Engines[k].Apply(c, st.Seqs[k], now, &out)
		if c.Kind == engine.CmdSetRules && out.Rules == nil {
			t.Fatalf("rules change rejected: %v", out.Reject)
		}
		sh.w[k].Add(b, c, &out)
	}
	sh.w[k].Finish(b)
	// The ledger: a deposit, and a rebate row its batch carries.
	lcmds := []engine.Cmd{{Kind: engine.CmdDeposit, User: 1, UID: 100, Coin: 0, Amount: 5}}
	lfirst := st.Seqs[ledger] + 1
	sh.w[ledger].Begin(lfirst, now)
	st.Seqs[ledger]++
	st.Engines[ledger].Apply(&lcmds[0], st.Seqs[ledger], now, &out)
	sh.w[ledger].Add(b, &lcmds[0], &out)
	reb := &RebateRecord{BrokerUID: 100, Day: 3, Market: m, Fee: 7, Rate: 1, SettledMs: now}
	sh.w[ledger].AddRebate(b, reb)
	sh.w[ledger].Finish(b)

	data, err := b.AppendRows([]byte("head"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeRows(data[4:], ledger)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	byShard := map[int]ReplRecord{}
	for _, r := range recs {
		byShard[r.Shard] = r
	}
	mr, lr := byShard[k], byShard[ledger]
	if mr.First != first || mr.TimeMs != now || !reflect.DeepEqual(mr.Cmds, mcmds) {
		t.Errorf("market record: first %d time %d cmds %+v, want %d %d %+v", mr.First, mr.TimeMs, mr.Cmds, first, now, mcmds)
	}
	if got := mr.Rules[first+1]; got == nil || *got != spec || len(mr.Rules) != 1 {
		t.Errorf("market record's rules %v, want %+v at seq %d", mr.Rules, spec, first+1)
	}
	if len(mr.Rows) != 0 {
		t.Errorf("market record carries %d raw rows", len(mr.Rows))
	}
	if lr.First != lfirst || !reflect.DeepEqual(lr.Cmds, lcmds) || lr.Rules != nil {
		t.Errorf("ledger record: first %d cmds %+v rules %v, want %d %+v", lr.First, lr.Cmds, lr.Rules, lfirst, lcmds)
	}
	if len(lr.Rows) != 1 || lr.Rows[0][0][0] != pfxRebate {
		t.Fatalf("ledger record's raw rows: %q", lr.Rows)
	}
	if got, err := decodeRebate(lr.Rows[0][0], lr.Rows[0][1]); err != nil || got.Fee != 7 || got.SettledMs != now {
		t.Errorf("rebate row decodes to %+v, %v", got, err)
	}
	// Damage is refused, not applied.
	if _, err := DecodeRows(data[4:len(data)-3], ledger); err == nil {
		t.Error("truncated rows decoded")
	}
}

// TestFullReplayAcrossInstall: member a falls behind b (the group) and
// installs b's snapshot (WriteSnapshotRows), so its journal stops short of
// the snapshot's sequences and goes on after them. A full replay replays
// a's records up to the snapshot, goes on from it (FromInstalled) and
// ends in the state of the snapshot and tail, and of b; across local
// snapshots (the installed one is not pruned) and a second install.
// Without the install marker the same gap is a missing record.
func TestFullReplayAcrossInstall(t *testing.T) {
	adir, bdir := t.TempDir(), t.TempDir()
	a, ast, err := openLoad(t, adir, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, bst, err := openLoad(t, bdir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ash, bsh := newShards(a, ast), newShards(b, bst)
	var u, v engine.UserIdx
	for _, sh := range []*shards{ash, bsh} {
		sh.do(t, engine.Cmd{Kind: engine.CmdAddUser, UID: feeUID})
		u = sh.do(t, engine.Cmd{Kind: engine.CmdAddUser, UID: 100}).User
		v = sh.do(t, engine.Cmd{Kind: engine.CmdAddUser, UID: 200}).User
		sh.moreBatches(t, u, v, 3, 6)
	}
	if _, err := a.WriteSnapshot(encodeSnapshot(ast)); err != nil {
		t.Fatal(err)
	}
	reopen := func() {
		t.Helper()
		if a, ast, err = openLoad(t, adir, nil); err != nil {
			t.Fatal(err)
		}
		now := bsh.now
		ash = newShards(a, ast)
		ash.now = now
	}
	// install: b runs batches a misses, and a installs b's snapshot and
	// restarts on it.
	install := func(batches int) uint64 {
		t.Helper()
		bsh.moreBatches(t, u, v, batches, 6)
		no, err := a.WriteSnapshotRows(encodeSnapshot(bst), nil)
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		reopen()
		if ast.Hash() != bst.Hash() {
			t.Fatal("the installed snapshot does not load b's state")
		}
		return no
	}
	// check: both replays of a (closed) end in b's state.
	check := func(no uint64) {
		t.Helper()
		a.Close()
		ro, err := Open(Options{Dir: adir, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		added := map[int64]int{}
		full, err := ro.Load(LoadOptions{FullReplay: true, OnAddUser: func(c *engine.Cmd) { added[c.UID]++ }})
		ro.Close()
		if err != nil {
			t.Fatalf("full replay across installed snapshot %d: %v", no, err)
		}
		for uid, n := range added {
			if n != 1 {
				t.Errorf("user %d announced %d times", uid, n)
			}
		}
		tail, err := loadRO(adir, false)
		if err != nil {
			t.Fatal(err)
		}
		if full.FromInstalled != no || tail.FromInstalled != 0 {
			t.Errorf("FromInstalled: full %d, snapshot+tail %d; want %d, 0", full.FromInstalled, tail.FromInstalled, no)
		}
		if full.Hash() != tail.Hash() || full.Hash() != bst.Hash() || !slices.Equal(full.Seqs, bst.Seqs) {
			t.Errorf("full replay %s seqs %v, snapshot+tail %s, b %s seqs %v",
				hashString(full.Hash()), full.Seqs, hashString(tail.Hash()), hashString(bst.Hash()), bst.Seqs)
		}
		reopen()
	}
	both := func(batches int) {
		ash.moreBatches(t, u, v, batches, 6)
		bsh.moreBatches(t, u, v, batches, 6)
	}

	no := install(2)
	both(1) // market 0's shard and the ledger: market 1's shard has no record after the snapshot
	check(no)
	for range 3 {
		if _, err := a.WriteSnapshot(encodeSnapshot(ast)); err != nil {
			t.Fatal(err)
		}
	}
	check(no)
	a.Close()
	db := plainDB(t, adir, true)
	var kept []uint64
	it, _ := db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxSnapshot}, UpperBound: []byte{pfxSnapshot + 1}})
	for valid := it.First(); valid; valid = it.Next() {
		kept = append(kept, be.Uint64(it.Key()[1:]))
	}
	it.Close()
	db.Close()
	if want := []uint64{no, no + 2, no + 3}; !slices.Equal(kept, want) {
		t.Errorf("snapshots kept %v, want %v (the installed one and the two newest)", kept, want)
	}
	reopen()

	no = install(1)
	both(2)
	check(no)

	a.Close()
	db = plainDB(t, adir, false)
	if err := db.DeleteRange([]byte{pfxInstall}, []byte{pfxInstall + 1}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := loadRO(adir, true); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "gap") {
		t.Fatalf("full replay of the gap without the install marker: %v, want a gap (ErrCorrupt)", err)
	}
	if st, err := loadRO(adir, false); err != nil || st.Hash() != bst.Hash() {
		t.Fatalf("snapshot+tail without the install marker: %v", err)
	}
}
