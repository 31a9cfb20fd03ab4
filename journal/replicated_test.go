package journal

import (
	"reflect"
	"testing"

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
