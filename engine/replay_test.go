package engine_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

// journaled is one applied command as a shard journals it: the command
// with the decisions Apply recorded in it, its seq and time, and what it
// produced.
type journaled struct {
	c   engine.Cmd
	seq uint64
	ts  int64
	out engine.Out
}

func copyOut(o *engine.Out) engine.Out {
	c := *o
	c.Updates = append([]engine.OrderView(nil), o.Updates...)
	c.Trades = append([]engine.Trade(nil), o.Trades...)
	c.Bills = append([]engine.Bill(nil), o.Bills...)
	return c
}

// shardStream returns a random command for one of the markets in ids: limit
// and market orders around a fixed mid, cancels of guessed order ids and
// client ids, cancel-all. It needs no state, so shards can run it
// concurrently.
func shardStream(r *rand.Rand, ids []engine.MarketID, users int, placed []int64) engine.Cmd {
	u := 1 + r.IntN(users)
	mid := ids[r.IntN(len(ids))]
	c := engine.Cmd{User: engine.UserIdx(u), UID: int64(10_000 + u), Market: mid}
	p := []int64{3_000_000, 40_000, 6_000, 3_000_000}[mid]
	switch k := r.IntN(100); {
	case k < 60:
		c.Kind, c.Type, c.TIF, c.Side = engine.CmdPlace, engine.Limit, engine.TIF(1+r.IntN(4)), engine.Side(1+r.IntN(2))
		c.Price = engine.Price(p + r.Int64N(41) - 20)
		c.Qty = engine.Qty(10 + r.Int64N(2000))
		if r.IntN(3) == 0 {
			c.Text.Set([]byte(fmt.Sprintf("c%d", r.IntN(8))))
		}
	case k < 70:
		c.Kind, c.Type, c.Side = engine.CmdPlace, engine.Market, engine.Side(1+r.IntN(2))
		c.Qty = engine.Qty(10 + r.Int64N(500))
	case k < 90:
		c.Kind = engine.CmdCancel
		c.OrderID = (1+r.Int64N(max(placed[mid], 1)))<<10 | int64(mid)
	case k < 97:
		c.Kind = engine.CmdCancel
		c.Text.Set([]byte(fmt.Sprintf("c%d", r.IntN(8))))
	default:
		c.Kind = engine.CmdCancelAll
	}
	return c
}

// TestConcurrentShardsReplay checks the journal rule (docs/DESIGN.md): two
// market shards and the ledger shard apply their streams concurrently over
// one Accounts (reservations and withdrawals racing for the same balances),
// each journaling its commands with the decisions Apply recorded. Replaying
// the journals shard by shard, in another interleaving, must give every
// shard the same events (bill afterAmounts aside: they sum over all shards)
// and the same state hash, and the invariants must hold on both.
func TestConcurrentShardsReplay(t *testing.T) {
	const users = 12
	n := 20_000
	if testing.Short() || raceEnabled {
		n = 4_000
	}
	setup := func(cl *enginetest.Cluster) {
		var out engine.Out
		seq := uint64(0)
		for i := 0; i <= users; i++ {
			uid := int64(10_000 + i)
			if i == 0 {
				uid = enginetest.FeeUID
			}
			seq++
			c := engine.Cmd{Kind: engine.CmdAddUser, UID: uid}
			cl.Ledger.Apply(&c, seq, 0, &out)
			for coin := engine.CoinID(0); coin < 3; coin++ {
				seq++
				// tight funds: reservations often fail, and withdrawals race them
				c := engine.Cmd{Kind: engine.CmdDeposit, UID: uid, User: engine.UserIdx(i), Coin: coin,
					Amount: []engine.Amount{50_000_000_000, 200_000_000, 2_000_000_000}[coin]}
				cl.Ledger.Apply(&c, seq, 0, &out)
			}
		}
		cl.Ledger.Flush()
	}
	live := enginetest.NewCluster(2)
	setup(live)
	const setupSeq = 4 * (users + 1)

	journals := make([][]journaled, 3) // shard 0, shard 1, ledger
	var wg sync.WaitGroup
	for s := 0; s < 3; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(s), 99))
			var out engine.Out
			e := live.All[s]
			placed := make([]int64, 4)
			var ids []engine.MarketID
			if s < 2 {
				for _, m := range e.Markets() {
					ids = append(ids, m.ID)
				}
			}
			for i := 0; i < n; i++ {
				var c engine.Cmd
				if s < 2 {
					c = shardStream(r, ids, users, placed)
				} else {
					u := 1 + r.IntN(users)
					c = engine.Cmd{Kind: engine.CmdDeposit, User: engine.UserIdx(u), UID: int64(10_000 + u), Coin: engine.CoinID(r.IntN(3))}
					c.Amount = []engine.Amount{5_000_000_000, 20_000_000, 200_000_000}[c.Coin] / engine.Amount(1+r.IntN(4))
					if r.IntN(2) == 0 {
						c.Kind = engine.CmdWithdraw
					}
				}
				seq := uint64(setupSeq + i + 1)
				e.Apply(&c, seq, int64(seq), &out)
				e.Flush()
				if v := out.Order(); v != nil && out.Reject == engine.OK && c.Kind == engine.CmdPlace {
					placed[c.Market] = v.OrderID >> 10
				}
				journals[s] = append(journals[s], journaled{c: c, seq: seq, ts: int64(seq), out: copyOut(&out)})
			}
		}(s)
	}
	wg.Wait()
	if err := engine.CheckInvariants(live.Acc, live.All); err != nil {
		t.Fatalf("live run: %v", err)
	}
	liveHash := engine.StateHash(live.Acc, live.All)

	// Replay: the ledger first, then shard 1, then shard 0.
	re := enginetest.NewCluster(2)
	setup(re)
	var out engine.Out
	refused := 0
	for _, s := range []int{2, 1, 0} {
		e := re.All[s]
		for i := range journals[s] {
			j := &journals[s][i]
			c := j.c
			if !c.Replaying() {
				t.Fatalf("shard %d command %d: Apply recorded no decision", s, i)
			}
			e.Apply(&c, j.seq, j.ts, &out)
			e.Flush()
			if j.out.Reject == engine.RejectInsufficientBalance {
				refused++
			}
			// afterAmounts depend on the other shards
			for b := range out.Bills {
				if b < len(j.out.Bills) {
					j.out.Bills[b].After = out.Bills[b].After
				}
			}
			for k := range out.Trades {
				if k < len(j.out.Trades) {
					j.out.Trades[k].After = out.Trades[k].After
				}
			}
			if d := diffOut(&out, &j.out); d != "" {
				t.Fatalf("shard %d command %d %s replayed: %s", s, i, fmtCmd(&c), d)
			}
		}
	}
	if err := engine.CheckInvariants(re.Acc, re.All); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if got := engine.StateHash(re.Acc, re.All); got != liveHash {
		t.Fatalf("replayed state hash %x, want the live one %x", got, liveHash)
	}
	if refused == 0 || re.Engines[0].WorkingOrders()+re.Engines[1].WorkingOrders() == 0 {
		t.Fatalf("stream too tame: %d refused for balance, %d working orders", refused,
			re.Engines[0].WorkingOrders()+re.Engines[1].WorkingOrders())
	}
	t.Logf("%d commands per shard, %d refused for balance", n, refused)
}
