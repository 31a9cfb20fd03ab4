package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// histModel is what the history queries must return, built from the
// events the shards produced (testApplied), kept in the simplest form.
type histModel struct {
	mu     sync.Mutex
	orders map[int64]engine.OrderView // latest state by id
	bills  map[int64][]engine.Bill    // by uid
	trades map[int64][]engine.Trade   // by uid: that user's side only
	public map[engine.MarketID][]engine.Trade
	times  []int64
}

func newHistModel() *histModel {
	return &histModel{orders: map[int64]engine.OrderView{}, bills: map[int64][]engine.Bill{},
		trades: map[int64][]engine.Trade{}, public: map[engine.MarketID][]engine.Trade{}}
}

func (h *histModel) add(_ int, _ *engine.Cmd, o *engine.Out) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, u := range o.Updates {
		h.orders[u.OrderID] = u
		h.times = append(h.times, u.UpdateTimeMs)
	}
	for _, t := range o.Trades {
		// history keeps what clients see of a trade; its bills are kept
		// as bills (below)
		t.BuyerUser, t.SellerUser, t.BaseCoin, t.QuoteCoin, t.Base, t.After, t.BillID = 0, 0, 0, 0, 0, [4]engine.Amount{}, 0
		h.public[t.Market] = append(h.public[t.Market], t)
		mk := t
		mk.TakerOrder, mk.TakerUID, mk.TakerFee = 0, 0, 0
		h.trades[t.MakerUID] = append(h.trades[t.MakerUID], mk)
		tk := t
		tk.MakerOrder, tk.MakerUID, tk.MakerFee = 0, 0, 0
		h.trades[t.TakerUID] = append(h.trades[t.TakerUID], tk)
	}
	for _, b := range o.AppendBills(nil) {
		b.User = 0 // not kept in history
		h.bills[b.UID] = append(h.bills[b.UID], b)
	}
}

// billOrder is the order of a user's finance records in history: time,
// then shard, then seq and index within the command.
func billOrder(a, b engine.Bill) int {
	key := func(x engine.Bill) [4]uint64 {
		return [4]uint64{uint64(x.TimeMs), x.BillID & 63, x.BillID >> 22, x.BillID >> 6 & (1<<16 - 1)}
	}
	ka, kb := key(a), key(b)
	return slices.Compare(ka[:], kb[:])
}

// TestHistoryMatchesEvents drives a random concurrent stream (limit, IOC
// and market orders, client ids, cancels by id and client id, deposits and
// withdrawals, six users over three markets on two shards, so batches hold
// many commands and a user's coins change on several shards at once) and
// checks every history query against the events the engine emitted, before
// and after a restart.
func TestHistoryMatchesEvents(t *testing.T) {
	for _, paced := range []bool{false, true} {
		t.Run(fmt.Sprintf("paced=%v", paced), func(t *testing.T) {
			testForcePace = paced
			defer func() { testForcePace = false }()
			testHistoryMatchesEvents(t)
		})
	}
}

func testHistoryMatchesEvents(t *testing.T) {
	h := newHistModel()
	testApplied = h.add
	defer func() { testApplied = nil }()
	dir := t.TempDir()
	o := testOptions(t, dir)
	o.Logf = nil
	n, err := openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	addUser(t, n, feeUID)
	const users = 6
	var idx [users]engine.UserIdx
	for i := range idx {
		idx[i] = addUser(t, n, int64(100+i))
		for c := 0; c < 3; c++ {
			mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: idx[i], UID: int64(100 + i), Coin: engine.CoinID(c), Amount: 1 << 40})))
		}
	}
	cmds := 6000
	if testing.Short() {
		cmds = 1500
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var mine []int64 // ids this goroutine placed
			var reqs []*Request
			for i := 0; i < cmds/4; {
				reqs = reqs[:0]
				for k := 1 + rng.IntN(32); k > 0 && i < cmds/4; k-- {
					i++
					u := rng.IntN(users)
					r := AcquireRequest()
					r.Cmd = histCmd(rng, idx[u], int64(100+u), g, i, mine)
					for n.Submit(r) == ErrBusy {
					}
					reqs = append(reqs, r)
				}
				for _, r := range reqs {
					if err := r.Wait(deadline()); err != nil {
						t.Error(err)
						return
					}
					if r.Cmd.Kind == engine.CmdPlace && r.HasOrder {
						mine = append(mine, r.Order.OrderID)
					}
					ReleaseRequest(r)
				}
			}
		}(g)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d orders, %d trades, %d bills", len(h.orders), len(h.public[0])+len(h.public[1])+len(h.public[2]), len(h.bills[100]))
	checkHistory(t, n, h, idx[:])
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	testApplied = nil
	if n, err = openNode(o); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	checkHistory(t, n, h, idx[:])
}

func histCmd(rng *rand.Rand, u engine.UserIdx, uid int64, g, i int, mine []int64) engine.Cmd {
	m := engine.MarketID(rng.IntN(3))
	side := engine.Side(1 + rng.IntN(2))
	c := engine.Cmd{Kind: engine.CmdPlace, User: u, UID: uid, Market: m, Side: side, Type: engine.Limit, TIF: engine.GTC,
		Price: engine.Price(9990 + rng.IntN(21)), Qty: engine.Qty(1 + rng.IntN(40))}
	if m == 2 { // ETHBTC: tick 0.0001
		c.Price = engine.Price(490 + rng.IntN(21))
	}
	switch p := rng.IntN(100); {
	case p < 10:
		c.TIF = engine.IOC
	case p < 13:
		c.Type, c.TIF = engine.Market, 0
		c.Price = 0
	case p < 33 && len(mine) > 0:
		c = engine.Cmd{Kind: engine.CmdCancel, User: u, UID: uid, Market: m, OrderID: mine[rng.IntN(len(mine))]}
	case p < 38:
		c = engine.Cmd{Kind: engine.CmdCancel, User: u, UID: uid, Market: m}
		c.Text.Set(fmt.Appendf(nil, "c-%d", rng.IntN(50)))
	case p < 41:
		c = engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: uid, Coin: engine.CoinID(rng.IntN(3)), Amount: engine.Amount(1 + rng.IntN(1000))}
	case p < 44:
		c = engine.Cmd{Kind: engine.CmdWithdraw, User: u, UID: uid, Coin: engine.CoinID(rng.IntN(3)), Amount: engine.Amount(1 + rng.IntN(1000))}
	}
	if c.Kind == engine.CmdPlace {
		switch rng.IntN(4) {
		case 0:
			c.Text.Set(fmt.Appendf(nil, "c-%d", rng.IntN(50))) // reused once the order is done
		case 1:
			c.Text.Set(fmt.Appendf(nil, "x-%d", rng.IntN(40000))) // looks generated
		}
	}
	return c
}

func checkHistory(t *testing.T, n *Node, h *histModel, idx []engine.UserIdx) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	times := slices.Clone(h.times)
	slices.Sort(times)
	pick := func(r *rand.Rand) int64 { return times[r.IntN(len(times))] }
	rng := rand.New(rand.NewPCG(1, 2))
	byCID := map[string]int64{} // uid/market/cid -> latest order id
	for _, o := range h.orders {
		k := fmt.Sprintf("%d/%d/%s", o.UID, o.Market, o.AppendClientID(nil))
		byCID[k] = max(byCID[k], o.OrderID)
	}
	mixed := 0 // (user, market) pairs with working and finished orders: allOrders merges both
	for u := range idx {
		uid := int64(100 + u)
		for m := engine.MarketID(0); m < 3; m++ {
			var want []engine.OrderView
			for _, o := range h.orders {
				if o.UID == uid && o.Market == m {
					want = append(want, o)
				}
			}
			slices.SortFunc(want, func(a, b engine.OrderView) int { return int(a.OrderID - b.OrderID) })
			got, err := n.AllOrders(idx[u], uid, m, 0, maxTime, 0, 100000, deadline(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("uid %d market %d: all orders: got %d, want %d\n got %+v\nwant %+v", uid, m, len(got), len(want), head(got), head(want))
			}
			for k := 0; k < 20; k++ { // time windows, offsets, limits
				s, e := pick(rng), pick(rng)
				if s > e {
					s, e = e, s
				}
				off, lim := rng.IntN(5), 1+rng.IntN(30)
				var w []engine.OrderView
				for _, o := range want {
					if o.TimeMs >= s && o.TimeMs <= e {
						w = append(w, o)
					}
				}
				w = w[min(off, len(w)):]
				w = w[:min(lim, len(w))]
				got, err := n.AllOrders(idx[u], uid, m, s, e, off, lim, deadline(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, w) {
					t.Fatalf("uid %d market %d: all orders in [%d, %d] offset %d limit %d: got %+v, want %+v", uid, m, s, e, off, lim, got, w)
				}
			}
			working := 0
			other := (u + 1) % len(idx) // another user asks for u's orders
			for _, o := range want {
				if o.Status.Working() {
					working++
				}
				got, ok, err := n.Order(idx[u], uid, m, o.OrderID, nil, deadline())
				if err != nil || !ok || got != o {
					t.Fatalf("order %d: got %+v %v %v, want %+v", o.OrderID, got, ok, err, o)
				}
				cid := o.AppendClientID(nil)
				got, ok, err = n.Order(idx[u], uid, m, 0, cid, deadline())
				if w := h.orders[byCID[fmt.Sprintf("%d/%d/%s", uid, m, cid)]]; err != nil || !ok || got != w {
					t.Fatalf("order by client id %q: got %+v %v %v, want %+v", cid, got, ok, err, w)
				}
				if _, ok, err := n.Order(idx[other], int64(100+other), m, o.OrderID, nil, deadline()); ok || err != nil {
					t.Fatalf("user %d asking for user %d's order %d (working %v): got %v %v", 100+other, uid, o.OrderID, o.Status.Working(), ok, err)
				}
			}
			if working > 0 && working < len(want) {
				mixed++
			}
			wt := slices.Clone(nonNil(h.trades[uid]))
			wt = slices.DeleteFunc(wt, func(x engine.Trade) bool { return x.Market != m })
			slices.SortFunc(wt, func(a, b engine.Trade) int { return int(a.TradeID - b.TradeID) })
			gt, err := n.Store().Trades(uid, m, 0, maxTime, 100000, nil)
			if err != nil || !slices.Equal(nonNil(gt), wt) {
				t.Fatalf("uid %d market %d: trades: got %d %v, want %d", uid, m, len(gt), err, len(wt))
			}
			s, e := pick(rng), pick(rng)
			if s > e {
				s, e = e, s
			}
			wt = slices.DeleteFunc(wt, func(x engine.Trade) bool { return x.TimeMs < s || x.TimeMs > e })
			gt, err = n.Store().Trades(uid, m, s, e, 100000, nil)
			if err != nil || !slices.Equal(nonNil(gt), wt) {
				t.Fatalf("uid %d market %d: trades in [%d, %d]: got %d %v, want %d", uid, m, s, e, len(gt), err, len(wt))
			}
		}
		all := slices.Clone(h.bills[uid])
		slices.SortFunc(all, billOrder)
		slices.Reverse(all)
		for k := 0; k < 30; k++ {
			coin, biz := journal.CoinAll, engine.BizType(0)
			s, e, off, lim := int64(0), maxTime, 0, 100000
			if k > 0 {
				if rng.IntN(2) == 0 {
					coin = rng.IntN(3)
				}
				if rng.IntN(2) == 0 {
					biz = engine.BizType(1 + rng.IntN(4))
				}
				s, e = pick(rng), pick(rng)+1
				if s > e {
					s, e = e, s
				}
				off, lim = rng.IntN(10), 1+rng.IntN(100)
			}
			var w []engine.Bill
			for _, b := range all {
				if (coin == journal.CoinAll || int(b.Coin) == coin) && (biz == 0 || b.Biz == biz) && b.TimeMs >= s && b.TimeMs < e {
					w = append(w, b)
				}
			}
			w = w[min(off, len(w)):]
			w = w[:min(lim, len(w))]
			got, err := n.Store().Bills(uid, coin, journal.Biz(biz), s, e, off, lim, nil)
			if err != nil || !slices.Equal(nonNil(got), nonNil(w)) {
				t.Fatalf("uid %d: bills coin %d biz %v [%d, %d) offset %d limit %d: got %d %v, want %d\n got %+v\nwant %+v",
					uid, coin, biz, s, e, off, lim, len(got), err, len(w), head(got), head(w))
			}
		}
	}
	if mixed == 0 {
		t.Fatal("no user has both working and finished orders in a market: the stream does not exercise allOrders' merge")
	}
	for m := engine.MarketID(0); m < 3; m++ {
		w := slices.Clone(h.public[m])
		slices.Reverse(w)
		got, err := n.Store().MarketTrades(m, 100000, nil)
		if err != nil || !slices.Equal(nonNil(got), nonNil(w)) {
			t.Fatalf("market %d: public trades: got %d %v, want %d", m, len(got), err, len(w))
		}
		if len(w) == 0 {
			t.Fatalf("market %d: no trades: the stream does not exercise history", m)
		}
	}
	var trades []engine.Trade
	var bills []engine.Bill
	if err := n.Store().Export(func(t *engine.Trade) error { trades = append(trades, *t); return nil },
		func(b *engine.Bill) error { bills = append(bills, *b); return nil }); err != nil {
		t.Fatal(err)
	}
	var wt []engine.Trade
	for m := engine.MarketID(0); m < 3; m++ {
		wt = append(wt, h.public[m]...)
	}
	var wb []engine.Bill
	for _, uid := range slices.Sorted(mapsKeys(h.bills)) {
		b := slices.Clone(h.bills[uid])
		slices.SortFunc(b, billOrder)
		wb = append(wb, b...)
	}
	if !slices.Equal(trades, wt) || !slices.Equal(bills, wb) {
		t.Fatalf("export: got %d trades, %d bills; want %d, %d", len(trades), len(bills), len(wt), len(wb))
	}
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func head[T any](s []T) []T { return s[:min(len(s), 3)] }

// TestAllOrdersFinishedMeanwhile: an order that finishes between the
// shard's answer (working orders) and the read of history (finished ones)
// is listed once, in its finished state.
func TestAllOrdersFinishedMeanwhile(t *testing.T) {
	n, err := openNode(testOptions(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	addUser(t, n, feeUID)
	a := addUser(t, n, 100)
	mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: a, UID: 100, Coin: 2, Amount: 1_000_000_000})))
	var ids []int64
	for i := 0; i < 3; i++ {
		out, _ := do(t, n, engine.Cmd{Kind: engine.CmdPlace, User: a, UID: 100, Market: 0, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: engine.Price(9000 + i), Qty: 1000})
		mustOK(t, "place", out)
		ids = append(ids, out.Order().OrderID)
	}
	testAfterWorking = func() {
		testAfterWorking = nil
		mustOK(t, "cancel", first(do(t, n, engine.Cmd{Kind: engine.CmdCancel, User: a, UID: 100, Market: 0, OrderID: ids[1]})))
	}
	defer func() { testAfterWorking = nil }()
	got, err := n.AllOrders(a, 100, 0, 0, maxTime, 0, 10, deadline(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].OrderID != ids[0] || got[1].OrderID != ids[1] || got[2].OrderID != ids[2] ||
		!got[0].Status.Working() || got[1].Status != engine.StatusCanceled || !got[2].Status.Working() {
		t.Fatalf("all orders, the middle one cancelled meanwhile: got %+v, want %v with the middle one cancelled", got, ids)
	}
}
