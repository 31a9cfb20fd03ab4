package core

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// TestFundingTimer: the timer samples the premium each minute of the
// exchange's clock with the spot index's mid, and settles funding at 08:00:
// the long pays the short rate × size × mark, a record is kept, and a
// restart repeats nothing.
func TestFundingTimer(t *testing.T) {
	dir := t.TempDir()
	day := int64(20_000) * dayMs
	var clock atomic.Int64
	clock.Store(day + 7*3_600_000 + 50*minuteMs) // 07:50
	o := testOptions(t, dir)
	o.Markets, o.Clock = crashMarkets(), clock.Load // no timers while the books are made
	n, err := openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	user := func(uid int64) engine.UserIdx {
		out, _ := do(t, n, engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
		mustOK(t, "add user", out)
		u := engine.UserIdx(n.Accounts().NumUsers() - 1)
		for _, c := range []engine.CoinID{usdt, usdt | engine.Futures, 0} {
			mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: uid, Coin: c, Amount: 1e12})))
		}
		return u
	}
	user(feeUID)
	a, b, c := user(100), user(200), user(300)
	place := func(u engine.UserIdx, uid int64, m engine.MarketID, sd engine.Side, ps engine.PosSide, price engine.Price, qty engine.Qty) {
		t.Helper()
		mustOK(t, "place", first(do(t, n, engine.Cmd{Kind: engine.CmdPlace, User: u, UID: uid, Market: m, Side: sd, Pos: ps,
			Type: engine.Limit, TIF: engine.GTC, Price: price, Qty: qty})))
	}
	// contract: A LONG 1 at 100.00 against B; C's book 101.00 / 103.00:
	// mark = median(101, 103, 100) = 101. Spot BTCUSDT book 99 / 101:
	// index 100. Premium 1%: the rate is clamped to 0.75%.
	place(a, 100, crashContract, engine.Buy, engine.Long, 10000, 10000)
	place(b, 200, crashContract, engine.Sell, engine.Short, 10000, 10000)
	place(c, 300, crashContract, engine.Buy, engine.Long, 10100, 1)
	place(c, 300, crashContract, engine.Sell, engine.Short, 10300, 1)
	place(c, 300, 0, engine.Buy, 0, 9900, 1)
	place(c, 300, 0, engine.Sell, 0, 10100, 1)
	before := func(u engine.UserIdx) engine.Amount {
		bal, err := n.FuturesBalances(u, deadline(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return bal[usdt].Avail + bal[usdt].Frozen
	}
	n.Close()
	// with the timer: the first tick at 07:55 samples 07:55 (00:00, from
	// before the first settlement, is not paid)
	clock.Store(day + 7*3_600_000 + 55*minuteMs)
	o.SettleEvery = 5 * time.Millisecond
	if n, err = openNode(o); err != nil {
		t.Fatal(err)
	}
	records := func(want int) []engine.FundingRecord {
		var recs []engine.FundingRecord
		for end := time.Now().Add(10 * time.Second); len(recs) < want && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			recs = recs[:0]
			if err := n.Store().FundingRecords(crashContract, day, day+dayMs, func(r *engine.FundingRecord) bool { recs = append(recs, *r); return true }); err != nil {
				t.Fatal(err)
			}
		}
		return recs
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if _, k, _, _, _ := n.Premium(crashContract); k > 0 {
			break
		}
	}
	a0, b0 := before(a), before(b)
	clock.Store(day + 8*3_600_000 + 30_000) // 08:00:30: funding
	recs := records(1)
	if len(recs) != 1 || recs[0].TimeMs != day+8*3_600_000 || recs[0].Rate != 750_000 || recs[0].Mark != 10100 || recs[0].Index != 10000 {
		t.Fatalf("funding records %+v", recs)
	}
	// 0.0075 × 1 BTC × 101.00 = 0.7575 USDT
	if got := a0 - before(a); got != 757_500 {
		t.Fatalf("the long paid %d, want 757500", got)
	}
	if got := before(b) - b0; got != 757_500 {
		t.Fatalf("the short got %d, want 757500", got)
	}
	bills, err := n.Store().Bills(100, int(usdt|engine.Futures), journal.Biz(engine.BizFunding), 0, maxTime, 0, 10, nil)
	if err != nil || len(bills) != 1 || bills[0].Delta != -757_500 {
		t.Fatalf("the long's funding bills %+v %v", bills, err)
	}
	live, _, err := n.State(deadline())
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	if hashRO(t, dir, true) != live {
		t.Fatal("a full replay gives another state hash")
	}
	// a restart at the same time settles nothing again
	n, err = openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if h, _, err := n.State(deadline()); err != nil || h != live {
		t.Fatalf("a restart changed the state (%v)", err)
	}
	n.Close()
	// down across 16:00: the restart pays 16:00 once (no samples since:
	// the interest rate, 0.01%)
	clock.Store(day + 16*3_600_000 + 5*minuteMs)
	if n, err = openNode(o); err != nil {
		t.Fatal(err)
	}
	recs = records(2)
	if len(recs) != 2 || recs[0].TimeMs != day+16*3_600_000 || recs[0].Rate != 10_000 {
		t.Fatalf("funding records after the downtime %+v", recs)
	}
	n.Close()
}
