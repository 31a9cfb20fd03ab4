package engine_test

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

// harness runs one command stream through a cluster of engines and through
// the reference model, comparing every Out and, periodically, the state.
type harness struct {
	t     testing.TB
	cl    *enginetest.Cluster
	ref   *enginetest.Ref
	pr    *enginetest.Printer
	specs []*engine.MarketSpec
	seq   uint64
	ts    int64
	eo    engine.Out
	ro    engine.Out

	// statistics, to prove the stream exercised what it should
	rejects [32]int
	trades  int
	expired int
	maxBook int
	// timeIsSeq makes each command's time in ms its seq (scenarios);
	// otherwise pairs of commands share a millisecond.
	timeIsSeq bool
	// ct: the contract world (reference_ct_test.go); positions, settings,
	// wallets and bad debt are compared after every command
	ct   bool
	ctSt ctStats
}

func newHarness(t testing.TB, shards int) *harness {
	coins := enginetest.Coins()
	specs := enginetest.Specs(coins, enginetest.MarketConfigs())
	return &harness{t: t, cl: enginetest.NewCluster(shards), specs: specs,
		ref: enginetest.NewRef(coins, enginetest.MarketConfigs(), enginetest.FeeUID),
		pr:  &enginetest.Printer{Coins: coins, Specs: specs}, ts: 1_700_000_000_000}
}

// step applies c to both and compares the outputs. It returns false (after
// reporting) on a mismatch.
func (h *harness) step(c engine.Cmd) bool {
	h.seq++
	if h.timeIsSeq {
		h.ts = int64(h.seq)
	} else {
		h.ts += int64(h.seq % 2) // pairs of commands share a millisecond
	}
	e := h.cl.Route(&c)
	ec := c
	e.Prefetch(&ec, &ec) // as a shard does for the next command; it must change nothing
	// one Out for every engine: a spot fill follows contract fills in it
	// (TestBugSpotTradeKeepsContractFields)
	e.Apply(&ec, h.seq, h.ts, &h.eo)
	e.Flush()
	h.ref.Apply(c, h.seq, h.ts, e.Shard(), &h.ro)
	if d := diffOut(&h.eo, &h.ro); d != "" {
		h.t.Errorf("command seq %d %s: %s\ngot (engine):\n%swant (reference):\n%s", h.seq, fmtCmd(&c), d,
			clip(h.pr.Out(nil, &h.eo)), clip(h.pr.Out(nil, &h.ro)))
		return false
	}
	if h.ct {
		if d := h.diffContracts(); d != "" {
			h.t.Errorf("after command seq %d %s (events equal):\n%s\nevents:\n%s", h.seq, fmtCmd(&c), d, clip(h.pr.Out(nil, &h.eo)))
			return false
		}
		h.ctSt.count(&c, &h.eo)
	}
	// ids clients see are positive and exact as JavaScript doubles
	// (docs/API.md, "Numbers and ids")
	for i := range h.eo.Updates {
		if id := h.eo.Updates[i].OrderID; id <= 0 || id >= 1<<53 {
			h.t.Errorf("command seq %d: order id %d, want in (0, 2^53)", h.seq, id)
		}
	}
	for i := range h.eo.Trades {
		if id := h.eo.Trades[i].TradeID; id <= 0 || id >= 1<<53 {
			h.t.Errorf("command seq %d: trade id %d, want in (0, 2^53)", h.seq, id)
		}
	}
	if int(h.eo.Reject) < len(h.rejects) {
		h.rejects[h.eo.Reject]++
	}
	h.trades += len(h.eo.Trades)
	if h.eo.Order() != nil && h.eo.Order().Status == engine.StatusExpired {
		h.expired++
	}
	return true
}

// clip keeps the first 30 lines of a long event listing.
func clip(b []byte) []byte {
	n := 0
	for i, c := range b {
		if c == '\n' {
			if n++; n == 30 {
				return append(b[:i+1:i+1], fmt.Sprintf("  ... (%d more lines)\n", bytes.Count(b[i+1:], []byte{'\n'}))...)
			}
		}
	}
	return b
}

func fmtCmd(c *engine.Cmd) string {
	return fmt.Sprintf("{Kind:%d Side:%d Type:%d TIF:%d Market:%d Coin:%d User:%d UID:%d Price:%d Qty:%d OrderID:%d Amount:%d Text:%q Pos:%d Mode:%d}",
		c.Kind, c.Side, c.Type, c.TIF, c.Market, c.Coin, c.User, c.UID, c.Price, c.Qty, c.OrderID, c.Amount, c.Text.String(), c.Pos, c.Mode)
}

// diffOut describes the first difference between got and want, or "".
func diffOut(got, want *engine.Out) string {
	if got.Reject != want.Reject {
		return fmt.Sprintf("reject: got %v, want %v", got.Reject, want.Reject)
	}
	if got.OrderAt != want.OrderAt {
		return fmt.Sprintf("OrderAt: got %v, want %v", got.OrderAt, want.OrderAt)
	}
	if got.BillID != want.BillID {
		return fmt.Sprintf("BillID: got %#x, want %#x", got.BillID, want.BillID)
	}
	if len(got.Updates) != len(want.Updates) {
		return fmt.Sprintf("%d updates, want %d", len(got.Updates), len(want.Updates))
	}
	for i := range got.Updates {
		if got.Updates[i] != want.Updates[i] {
			return fmt.Sprintf("update %d: got %+v, want %+v", i, got.Updates[i], want.Updates[i])
		}
	}
	if len(got.Trades) != len(want.Trades) {
		return fmt.Sprintf("%d trades, want %d", len(got.Trades), len(want.Trades))
	}
	for i := range got.Trades {
		if got.Trades[i] != want.Trades[i] {
			return fmt.Sprintf("trade %d: got %+v, want %+v", i, got.Trades[i], want.Trades[i])
		}
	}
	gb, wb := got.AppendBills(nil), want.AppendBills(nil)
	if len(gb) != len(wb) || len(got.Bills) != len(want.Bills) || got.NumBills() != len(gb) {
		return fmt.Sprintf("%d bills (%d not of fills, %d counted), want %d (%d)", len(gb), len(got.Bills), got.NumBills(), len(wb), len(want.Bills))
	}
	for i := range gb {
		if gb[i] != wb[i] {
			return fmt.Sprintf("bill %d: got %+v, want %+v", i, gb[i], wb[i])
		}
	}
	return ""
}

// diffState compares the engines' full state with the reference: balances,
// net per coin, every user's working orders, depth and last price per
// market, and the state hash. It returns "" when equal.
func (h *harness) diffState() string {
	var sb strings.Builder
	acc := h.cl.Acc
	if acc.NumUsers() != len(h.ref.Users) {
		return fmt.Sprintf("users: got %d, want %d", acc.NumUsers(), len(h.ref.Users))
	}
	for c := range h.ref.Coins {
		if got, want := acc.Net(engine.CoinID(c)), h.ref.Net[c]; int64(got) != want {
			fmt.Fprintf(&sb, "net %s: got %d, want %d\n", h.ref.Coins[c].Name, got, want)
		}
	}
	for u := range h.ref.Users {
		for c := range h.ref.Coins {
			for _, w := range []engine.CoinID{engine.CoinID(c), engine.CoinID(c) | engine.Futures} {
				ga, gf := acc.Balance(engine.UserIdx(u), w)
				wa, wf := h.ref.Balance(engine.UserIdx(u), w)
				if int64(ga) != wa || int64(gf) != wf {
					fmt.Fprintf(&sb, "uid %d %s wallet %d: got avail %d frozen %d, want avail %d frozen %d\n",
						h.ref.Users[u].UID, h.ref.Coins[c].Name, w>>15, ga, gf, wa, wf)
				}
			}
		}
	}
	var views []engine.OrderView
	for _, m := range h.ref.AllMarkets() {
		e := h.cl.Route(&engine.Cmd{Kind: engine.CmdPlace, Market: m.ID})
		if got, want := e.LastPrice(m.ID), m.Last; int64(got) != want {
			fmt.Fprintf(&sb, "%s last price: got %d, want %d\n", m.Symbol, got, want)
		}
		for u := range h.ref.Users {
			views = e.OpenOrders(engine.UserIdx(u), m.ID, views[:0])
			want := h.ref.OpenOrders(engine.UserIdx(u), m.ID)
			if len(views) != len(want) {
				fmt.Fprintf(&sb, "%s uid %d: got %d open orders, want %d\n", m.Symbol, h.ref.Users[u].UID, len(views), len(want))
				continue
			}
			for i := range views {
				if views[i] != want[i] {
					fmt.Fprintf(&sb, "%s uid %d open order %d: got %+v, want %+v\n", m.Symbol, h.ref.Users[u].UID, i, views[i], want[i])
				}
			}
		}
		gb, ga := e.Depth(m.ID, 1<<30, nil, nil)
		wb, wa := h.ref.Depth(m.ID)
		if fmt.Sprint(gb, ga) != fmt.Sprint(wb, wa) {
			fmt.Fprintf(&sb, "%s depth: got bids %v asks %v, want bids %v asks %v\n", m.Symbol, gb, ga, wb, wa)
		}
		gb, ga = e.Depth(m.ID, 3, gb[:0], ga[:0])
		if fmt.Sprint(gb, ga) != fmt.Sprint(wb[:min(3, len(wb))], wa[:min(3, len(wa))]) {
			fmt.Fprintf(&sb, "%s depth 3: got bids %v asks %v, want the first 3 of bids %v asks %v\n", m.Symbol, gb, ga, wb, wa)
		}
		// every working order is found by id and by client id, as itself
		for _, o := range m.Orders {
			want := h.ref.OpenOrders(o.User, m.ID)
			var w engine.OrderView
			for _, v := range want {
				if v.OrderID == o.ID {
					w = v
				}
			}
			if got, ok := e.Order(o.User, m.ID, o.ID, nil); !ok || got != w {
				fmt.Fprintf(&sb, "%s Order(id %d): got %+v, %v; want %+v\n", m.Symbol, o.ID, got, ok, w)
			}
			if got, ok := e.Order(o.User, m.ID, 0, []byte(o.CID)); !ok || got != w {
				fmt.Fprintf(&sb, "%s Order(cid %q): got %+v, %v; want %+v\n", m.Symbol, o.CID, got, ok, w)
			}
		}
	}
	// every user's working orders in all markets, oldest first
	for u := range h.ref.Users {
		var want []engine.OrderView
		for _, m := range h.ref.AllMarkets() {
			want = append(want, h.ref.OpenOrders(engine.UserIdx(u), m.ID)...)
		}
		slices.SortStableFunc(want, func(a, b engine.OrderView) int {
			return cmp.Or(cmp.Compare(a.TimeMs, b.TimeMs), cmp.Compare(a.OrderID, b.OrderID))
		})
		var got []engine.OrderView
		for _, e := range h.cl.All { // the ledger owns the contract markets
			got = e.OpenOrders(engine.UserIdx(u), engine.AllMarkets, got)
		}
		engine.SortOrders(got)
		if !slices.Equal(got, want) {
			fmt.Fprintf(&sb, "uid %d OpenOrders(AllMarkets): got %d orders %v, want %d %v\n", h.ref.Users[u].UID, len(got), ids(got), len(want), ids(want))
		}
	}
	if sb.Len() == 0 {
		if got, want := engine.StateHash(acc, h.cl.All), h.ref.StateHash(); got != want {
			fmt.Fprintf(&sb, "state hash: got %x, want %x (every field compared above is equal)\n", got, want)
		}
	}
	return sb.String()
}

func ids(vs []engine.OrderView) []int64 {
	var r []int64
	for _, v := range vs {
		r = append(r, v.OrderID)
	}
	return r
}

// checkInvariants runs engine.CheckInvariants and this file's own
// whole-state checks (written against the public API only).
func (h *harness) checkInvariants() error {
	if err := engine.CheckInvariants(h.cl.Acc, h.cl.All); err != nil {
		return fmt.Errorf("engine.CheckInvariants: %v", err)
	}
	return ownInvariants(h.cl, h.specs)
}

// ownInvariants checks, through the engines' public API: books sorted and
// not crossed, level aggregates equal to the working orders, working orders
// really working and not overfilled, frozen balances equal to what the
// working orders' remainders need, no negative balance, and money conserved
// per coin.
func ownInvariants(cl *enginetest.Cluster, specs []*engine.MarketSpec) error {
	acc := cl.Acc
	nu, nc := acc.NumUsers(), len(acc.Coins())
	need := make([]engine.Amount, nu*nc)
	var views []engine.OrderView
	for _, e := range cl.Engines {
		for _, s := range e.Markets() {
			bids, asks := e.Depth(s.ID, 1<<30, nil, nil)
			for i := 1; i < len(bids); i++ {
				if bids[i].Price >= bids[i-1].Price {
					return fmt.Errorf("%s bids not sorted: %v", s.Symbol, bids)
				}
			}
			for i := 1; i < len(asks); i++ {
				if asks[i].Price <= asks[i-1].Price {
					return fmt.Errorf("%s asks not sorted: %v", s.Symbol, asks)
				}
			}
			if len(bids) > 0 && len(asks) > 0 && bids[0].Price >= asks[0].Price {
				return fmt.Errorf("%s crossed: best bid %d, best ask %d", s.Symbol, bids[0].Price, asks[0].Price)
			}
			type key struct {
				sd engine.Side
				p  engine.Price
			}
			agg := map[key]engine.Level{}
			for u := 0; u < nu; u++ {
				views = e.OpenOrders(engine.UserIdx(u), s.ID, views[:0])
				for i, v := range views {
					if !v.Status.Working() || v.ExecutedQty < 0 || v.ExecutedQty >= v.OrigQty || v.Price <= 0 || v.Type != engine.Limit {
						return fmt.Errorf("%s: bad working order %+v", s.Symbol, v)
					}
					if i > 0 && (v.TimeMs < views[i-1].TimeMs || v.OrderID <= views[i-1].OrderID) {
						return fmt.Errorf("%s: open orders of user %d not oldest first", s.Symbol, u)
					}
					k := key{v.Side, v.Price}
					l := agg[k]
					l.Qty += v.OrigQty - v.ExecutedQty
					l.Count++
					agg[k] = l
					var x engine.Amount
					c := s.Quote
					if v.Side == engine.Buy {
						x, _ = s.Notional(v.Price, v.OrigQty-v.ExecutedQty)
					} else {
						c = s.Base
						x, _ = s.BaseAmount(v.OrigQty - v.ExecutedQty)
					}
					need[u*nc+int(c)] += x
				}
			}
			n := 0
			for sd, lv := range map[engine.Side][]engine.Level{engine.Buy: bids, engine.Sell: asks} {
				for _, l := range lv {
					a := agg[key{sd, l.Price}]
					if a.Qty != l.Qty || a.Count != l.Count {
						return fmt.Errorf("%s level %d: depth says qty %d count %d, orders sum to %d/%d", s.Symbol, l.Price, l.Qty, l.Count, a.Qty, a.Count)
					}
					n++
				}
			}
			if n != len(agg) {
				return fmt.Errorf("%s: %d levels, orders at %d prices", s.Symbol, n, len(agg))
			}
		}
	}
	sum := make([]engine.Amount, nc)
	for u := 0; u < nu; u++ {
		for c := 0; c < nc; c++ {
			a, f := acc.Balance(engine.UserIdx(u), engine.CoinID(c))
			if a < 0 || f < 0 {
				return fmt.Errorf("uid %d coin %d: negative balance avail %d frozen %d", acc.UID(engine.UserIdx(u)), c, a, f)
			}
			if f != need[u*nc+c] {
				return fmt.Errorf("uid %d coin %d: frozen %d, working orders need %d", acc.UID(engine.UserIdx(u)), c, f, need[u*nc+c])
			}
			sum[c] += a + f
		}
	}
	// contracts (engine/contract.go): per margin coin, the futures wallets
	// plus short minus long open value less bad debt join the sum; a
	// futures wallet's frozen part holds at least its positions' margins.
	margins := make([]engine.Amount, nu*nc)
	var pos []engine.PositionView
	for _, e := range cl.All {
		for _, s := range e.Markets() {
			if !s.Contract {
				continue
			}
			c := s.Margin.Spot()
			sum[c] -= e.BadDebt(s.ID)
			var long, short engine.Qty
			for u := 0; u < nu; u++ {
				pos = e.Positions(engine.UserIdx(u), s.ID, pos[:0])
				for _, p := range pos {
					if p.Size <= 0 || p.Margin < 0 || p.OpenValue < 0 || p.Closing < 0 || p.Closing > p.Size {
						return fmt.Errorf("%s uid %d: bad position %+v", s.Symbol, acc.UID(engine.UserIdx(u)), p)
					}
					margins[u*nc+int(c)] += p.Margin
					if p.Side == engine.Long {
						sum[c] -= p.OpenValue
						long += p.Size
					} else {
						sum[c] += p.OpenValue
						short += p.Size
					}
				}
			}
			if long != short {
				return fmt.Errorf("%s: long positions %d, short %d", s.Symbol, long, short)
			}
		}
	}
	for u := 0; u < nu; u++ {
		for c := 0; c < nc; c++ {
			a, f := acc.Balance(engine.UserIdx(u), engine.CoinID(c)|engine.Futures)
			if a < 0 || f < margins[u*nc+c] {
				return fmt.Errorf("uid %d coin %d futures: avail %d frozen %d, positions' margins %d", acc.UID(engine.UserIdx(u)), c, a, f, margins[u*nc+c])
			}
			sum[c] += a + f
		}
	}
	for c := range sum {
		if net := acc.Net(engine.CoinID(c)); sum[c] != net {
			return fmt.Errorf("coin %d: balances and positions sum to %d, deposits minus withdrawals %d", c, sum[c], net)
		}
	}
	return nil
}

// streamLen is the reference comparison's length: >= 100k commands in the
// normal build; shorter with -tags invariants, where whole-state checks run
// after every command.
func streamLen(t *testing.T) int {
	switch {
	case testing.Short():
		return 20_000
	case engine.Invariants:
		return 30_000
	}
	return 110_000
}

// restore replaces the cluster by one loaded from its snapshots (accounts
// and every engine), as a restart does; the stream then goes on against it.
func (h *harness) restore() {
	h.t.Helper()
	nc := h.cl.Fresh()
	if err := nc.Acc.LoadSnapshot(h.cl.Acc.AppendSnapshot(nil)); err != nil {
		h.t.Fatalf("loading the accounts snapshot: %v", err)
	}
	for i, e := range h.cl.All {
		if err := nc.All[i].LoadSnapshot(e.AppendSnapshot(nil)); err != nil {
			h.t.Fatalf("loading shard %d's snapshot: %v", i, err)
		}
	}
	if got, want := engine.StateHash(nc.Acc, nc.All), engine.StateHash(h.cl.Acc, h.cl.All); got != want {
		h.t.Fatalf("state hash after restoring snapshots: got %x, want %x", got, want)
	}
	h.cl = nc
}

func runStream(t *testing.T, seed uint64, n, shards int) *harness {
	return runStreamUsers(t, seed, n, shards, 0, 40)
}

func runStreamSnap(t *testing.T, seed uint64, n, shards, snapEvery int) *harness {
	return runStreamUsers(t, seed, n, shards, snapEvery, 40)
}

// runStreamUsers runs a stream among users traders; with snapEvery > 0 the
// engines are restored from snapshots every snapEvery commands.
func runStreamUsers(t *testing.T, seed uint64, n, shards, snapEvery, users int) *harness {
	h := newHarness(t, shards)
	g := enginetest.NewGen(seed, h.ref, users)
	for _, c := range g.Setup() {
		if !h.step(c) {
			return h
		}
		if h.eo.Reject != engine.OK {
			t.Fatalf("setup %s: got %v, want OK", fmtCmd(&c), h.eo.Reject)
		}
	}
	for i := 0; i < n; i++ {
		c := g.Next()
		if !h.step(c) {
			t.Fatalf("stopped after %d commands of seed %d", i, seed)
		}
		g.Observe(&c, h.ro.Reject)
		if engine.Invariants {
			if err := h.checkInvariants(); err != nil {
				t.Fatalf("after command seq %d %s: %v", h.seq, fmtCmd(&c), err)
			}
		}
		if i%5000 == 4999 || i == n-1 {
			if d := h.diffState(); d != "" {
				t.Fatalf("state after command seq %d (seed %d) differs:\n%s", h.seq, seed, d)
			}
		}
		for _, m := range h.ref.Markets {
			h.maxBook = max(h.maxBook, len(m.Orders))
		}
		if snapEvery > 0 && i%snapEvery == snapEvery-1 {
			h.restore()
		}
	}
	return h
}

// TestReferenceStream runs a long seeded random stream through one engine
// and through the reference model and compares every event, the final
// balances, books and the state hash.
func TestReferenceStream(t *testing.T) {
	h := runStream(t, 1, streamLen(t), 1)
	h.report(t)
}

// TestReferenceStreamSharded runs the same kind of stream with the markets
// spread over two engines sharing one Accounts (and a ledger engine).
func TestReferenceStreamSharded(t *testing.T) {
	h := runStream(t, 2, streamLen(t), 2)
	h.report(t)
}

// report logs what the stream exercised and fails if it was too tame to
// prove anything.
func (h *harness) report(t *testing.T) {
	if t.Failed() {
		return
	}
	var rs []string
	for r, n := range h.rejects {
		if n > 0 {
			rs = append(rs, fmt.Sprintf("%v=%d", engine.Reject(r), n))
		}
	}
	t.Logf("%d commands, %d trades, %d expired orders, largest book %d orders; outcomes %s",
		h.seq, h.trades, h.expired, h.maxBook, strings.Join(rs, " "))
	if testing.Short() {
		return // a short stream need not reach every outcome (with 1100 users, a duplicate client id is rare)
	}
	want := []engine.Reject{engine.OK, engine.RejectInsufficientBalance, engine.RejectInvalidPrice, engine.RejectInvalidQuantity,
		engine.RejectQuantityTooLarge, engine.RejectPriceOutOfRange, engine.RejectDuplicateClientOrderID, engine.RejectUnknownOrder,
		engine.RejectUnknownMarket, engine.RejectUnknownUser, engine.RejectUnknownCoin, engine.RejectTradingDisabled,
		engine.RejectInvalidTimeInForce, engine.RejectInvalidType, engine.RejectInvalidSide, engine.RejectOverflow,
		engine.RejectPostOnlyWouldTake, engine.RejectInvalidAmount, engine.RejectUserExists}
	for _, r := range want {
		if h.rejects[r] == 0 {
			t.Errorf("the stream never produced %v; it proves less than it should", r)
		}
	}
	if h.trades < int(h.seq)/10 {
		t.Errorf("got %d trades in %d commands, want at least one per ten commands", h.trades, h.seq)
	}
}

// TestReferenceStreamSnapshots runs a stream over two shards and restarts
// the engines from their snapshots every 7000 commands: the restored state
// must go on producing exactly the reference model's events.
func TestReferenceStreamSnapshots(t *testing.T) {
	h := runStreamSnap(t, 3, streamLen(t)/2, 2, 7000)
	h.report(t)
}

// TestReferenceStreamManyUsers trades among more users than one page of
// the accounts table holds (1024), so cells on later pages are used.
func TestReferenceStreamManyUsers(t *testing.T) {
	h := runStreamUsers(t, 4, streamLen(t)/4, 2, 0, 1100)
	if h.ref.Users[len(h.ref.Users)-1].UID < 10_000+1024 {
		t.Fatalf("only %d users", len(h.ref.Users))
	}
	h.report(t)
}
