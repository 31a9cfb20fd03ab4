package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func testMarkets(t testing.TB) ([]Coin, []*MarketSpec) {
	coins := []Coin{{ID: 0, Name: "USDT", ExternalID: 2, Scale: 8}, {ID: 1, Name: "BTC", ExternalID: 1, Scale: 8},
		{ID: 2, Name: "ETH", ExternalID: 3, Scale: 8}}
	cfg := SpotConfig{TickSize: "0.01", StepSize: "0.0001", MinTradeAmount: "0.0001", MaxTradeAmount: "1000",
		TakerFeeRate: "0.001", MakerFeeRate: "0.0008", BuyLimitPriceRatio: "0.1", SellLimitPriceRatio: "0.1",
		MarketBuyLimitSize: "100", MarketSellLimitSize: "100", MarketFallbackPriceRatio: "0.05", EnableTrade: true}
	var ms []*MarketSpec
	for i, base := range []CoinID{1, 2} {
		c := cfg
		c.Symbol = coins[base].Name + "USDT"
		m, err := NewMarketSpec(MarketID(i), c, coins[base], coins[0])
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return coins, ms
}

// world is a small exchange: one ledger engine and market engines.
type world struct {
	acc     *Accounts
	ledger  *Engine
	engines []*Engine // market engines
	seq     uint64
	out     Out
	stats   [rejectCount]int
	trades  int
}

func newWorld(t testing.TB, shards int) *world {
	coins, ms := testMarkets(t)
	w := &world{acc: NewAccounts(coins)}
	for s := 0; s < shards; s++ {
		var own []*MarketSpec
		for _, m := range ms {
			if int(m.ID)%shards == s {
				own = append(own, m)
			}
		}
		w.engines = append(w.engines, New(s, w.acc, own, 1))
	}
	w.ledger = New(shards, w.acc, nil, 1)
	return w
}

func (w *world) all() []*Engine { return append(append([]*Engine(nil), w.engines...), w.ledger) }

func (w *world) apply(c Cmd) Reject {
	e := w.ledger
	if c.Kind <= CmdCancelAll {
		for _, m := range w.engines {
			if m.Owns(c.Market) {
				e = m
			}
		}
	}
	w.seq++
	e.Apply(&c, w.seq, int64(w.seq), &w.out)
	e.Flush()
	return w.out.Reject
}

// run drives a seeded random stream and checks the invariants after every
// command when built with -tags invariants.
func (w *world) run(t testing.TB, seed uint64, n int) {
	r := rand.New(rand.NewPCG(seed, 7))
	const users = 8
	for uid := int64(1); uid <= users; uid++ {
		w.apply(Cmd{Kind: CmdAddUser, UID: uid})
		for c := CoinID(0); c < 3; c++ {
			w.apply(Cmd{Kind: CmdDeposit, UID: uid, User: UserIdx(uid - 1), Coin: c, Amount: 1e13})
		}
	}
	var ids []int64
	for i := 0; i < n; i++ {
		uid := 1 + r.Int64N(users)
		c := Cmd{UID: uid, User: UserIdx(uid - 1), Market: MarketID(r.IntN(2))}
		switch k := r.IntN(10); {
		case k < 6:
			c.Kind, c.Type, c.TIF = CmdPlace, Limit, GTC
			if r.IntN(4) == 0 {
				c.TIF = TIF(1 + r.IntN(4))
			}
			c.Side = Side(1 + r.IntN(2))
			c.Price = Price(9950 + r.Int64N(60)) // bids [9950, 10010), asks [9990, 10050)
			if c.Side == Sell {
				c.Price += 40
			}
			c.Qty = Qty(1 + r.Int64N(50))
			switch r.IntN(10) { // client ids: reused ones, and ones that look generated
			case 0, 1, 2:
				c.Text.Set(fmt.Appendf(nil, "c%d", r.IntN(40)))
			case 3:
				c.Text.Set(fmt.Appendf(nil, "x-%d", (1+r.Int64N(4000))<<10|int64(c.Market)))
			}
		case k < 7:
			c.Kind, c.Type, c.Side, c.Qty = CmdPlace, Market, Side(1+r.IntN(2)), Qty(1+r.Int64N(80))
		case k < 8 && len(ids) > 0 || k == 9 && r.IntN(20) > 0 && len(ids) > 0:
			c.Kind, c.OrderID = CmdCancel, ids[r.IntN(len(ids))]
			if r.IntN(3) == 0 { // by client id
				c.OrderID = 0
				c.Text.Set(fmt.Appendf(nil, "c%d", r.IntN(40)))
				if r.IntN(2) == 0 {
					c.Text.Set(fmt.Appendf(nil, "x-%d", ids[r.IntN(len(ids))]))
				}
			}
		default:
			c.Kind = CmdCancelAll
		}
		w.stats[w.apply(c)]++
		w.trades += len(w.out.Trades)
		if w.out.HasOrder && w.out.Order.Status.Working() {
			ids = append(ids, w.out.Order.OrderID)
		}
		if Invariants {
			if err := CheckInvariants(w.acc, w.all()); err != nil {
				t.Fatalf("after command %d %+v: %v", i, c, err)
			}
		}
	}
	if err := CheckInvariants(w.acc, w.all()); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotRoundTripAndHash(t *testing.T) {
	w := newWorld(t, 1)
	w.run(t, 1, 20000)
	w2 := newWorld(t, 2)
	w2.run(t, 1, 20000)
	h1, h2 := StateHash(w.acc, w.all()), StateHash(w2.acc, w2.all())
	if h1 != h2 {
		t.Fatalf("hash with 1 shard %x, with 2 shards %x", h1, h2)
	}
	if w.engines[0].WorkingOrders() == 0 {
		t.Fatal("stream left no working orders; the test would prove nothing")
	}

	// Restore w2's shards into fresh engines and compare.
	coins, ms := testMarkets(t)
	acc := NewAccounts(coins)
	if err := acc.LoadSnapshot(w2.acc.AppendSnapshot(nil)); err != nil {
		t.Fatal(err)
	}
	var restored []*Engine
	for s, e := range w2.engines {
		var own []*MarketSpec
		for _, m := range ms {
			if int(m.ID)%2 == s {
				own = append(own, m)
			}
		}
		r := New(s, acc, own, 1)
		if err := r.LoadSnapshot(e.AppendSnapshot(nil)); err != nil {
			t.Fatal(err)
		}
		restored = append(restored, r)
	}
	if err := CheckInvariants(acc, restored); err != nil {
		t.Fatal(err)
	}
	if h := StateHash(acc, restored); h != h2 {
		t.Fatalf("restored hash %x, want %x", h, h2)
	}
	t.Logf("outcomes %v, trades %d, working %d", w2.stats, w2.trades, w2.engines[0].WorkingOrders()+w2.engines[1].WorkingOrders())
	if w2.trades < 1000 || w2.stats[OK] < 10000 {
		t.Fatalf("stream too tame: %d trades, %d accepted", w2.trades, w2.stats[OK])
	}
}
