package core

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

const dayMs = 86_400_000

// TestRebates trades for referred users of two brokers on two markets (one
// quoted in BTC), settles the day and checks every record, the payments
// to the unit, that a second settlement pays nothing, that the next day's
// trades wait for their own day, that a replay keeps it all, and that the
// settler pays an ended day by itself.
func TestRebates(t *testing.T) {
	dir := t.TempDir()
	day := int32(20_000) // 2024-10-04
	var clock atomic.Int64
	clock.Store(int64(day)*dayMs + 10*3_600_000)
	o := testOptions(t, dir)
	o.Clock = clock.Load
	n, err := openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	user := func(uid int64, broker bool, rate int64, referrer int64) engine.UserIdx {
		out, _ := do(t, n, engine.Cmd{Kind: engine.CmdAddUser, UID: uid, Broker: broker, Amount: engine.Amount(rate), Referrer: referrer})
		mustOK(t, "add user", out)
		return engine.UserIdx(n.Accounts().NumUsers() - 1)
	}
	const rateA, rateB = 33_333_333, 50_000_000 // 33.333333%, 50%
	user(feeUID, false, 0, 0)
	brokerA := user(500, true, rateA, 0)
	brokerB := user(600, true, rateB, 0)
	user(700, false, 0, 0)
	if out, _ := do(t, n, engine.Cmd{Kind: engine.CmdAddUser, UID: 701, Amount: 1}); out.Reject != engine.RejectInvalidAmount {
		t.Fatalf("a rate for a user that is not a broker: got %v, want INVALID_AMOUNT", out.Reject)
	}
	x := user(100, false, 0, 500) // referred by A
	y := user(200, false, 0, 600) // referred by B
	z := user(300, false, 0, 700) // referred by someone who is not a broker: no accrual
	w := user(400, false, 0, 0)
	for _, u := range []struct {
		idx engine.UserIdx
		uid int64
	}{{x, 100}, {y, 200}, {z, 300}, {w, 400}} {
		for c, amt := range []engine.Amount{10e8, 100e8, 1000e6} {
			mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: u.idx, UID: u.uid, Coin: engine.CoinID(c), Amount: amt})))
		}
	}
	place := func(u engine.UserIdx, uid int64, m engine.MarketID, side engine.Side, price engine.Price, qty engine.Qty) {
		t.Helper()
		mustOK(t, "place", first(do(t, n, engine.Cmd{Kind: engine.CmdPlace, User: u, UID: uid, Market: m, Side: side,
			Type: engine.Limit, TIF: engine.GTC, Price: price, Qty: qty})))
	}
	// BTCUSDT (tick 0.01 USDT, step 0.0001 BTC; maker 0.05%, taker 0.1%):
	// X buys 0.5 BTC at 100.00 as maker from W: X's fee 0.00025 BTC, 0.025 USDT.
	place(x, 100, 0, engine.Buy, 10000, 5000)
	place(w, 400, 0, engine.Sell, 10000, 5000)
	// Y sells 0.3 BTC at 101.00 as taker to Z: Y's fee 0.0303 USDT.
	place(z, 300, 0, engine.Buy, 10100, 3000)
	place(y, 200, 0, engine.Sell, 10100, 3000)
	// ETHBTC (tick 0.0001 BTC): X sells 2 ETH at 0.05 as maker to Y:
	// X's fee 0.00005 BTC; Y's 0.002 ETH, 0.0001 BTC at the trade's price.
	place(x, 100, 2, engine.Sell, 500, 20000)
	place(y, 200, 2, engine.Buy, 500, 20000)

	if _, err := n.SettleRebates(day, day, deadline()); !errors.Is(err, ErrDayNotEnded) {
		t.Fatalf("settling a day that has not ended: got %v, want ErrDayNotEnded", err)
	}
	clock.Store(int64(day+1)*dayMs + 1000)
	// The next day's trade accrues to the next day.
	place(x, 100, 0, engine.Buy, 10100, 1000)
	place(w, 400, 0, engine.Sell, 10100, 1000)

	feeBefore := balances(t, n, 0)
	res, err := n.SettleRebates(day, day, deadline())
	if err != nil || res != (Settled{Paid: 4}) {
		t.Fatalf("settle: got %+v %v, want 4 paid", res, err)
	}
	// Commission = fee in the quote coin * rate, rounded down.
	want := map[int64][]journal.RebateRecord{
		500: {
			{BrokerUID: 500, Day: day, Market: 0, Coin: 2, Deal: 50_000_000, Fee: 25_000, Rate: rateA, Commission: 8_333, USDT: 8_333},
			{BrokerUID: 500, Day: day, Market: 2, Coin: 0, Deal: 10_000_000, Fee: 5_000, Rate: rateA, Commission: 1_666, USDT: 1_682}, // 0.00001666 BTC at 101.00
		},
		600: {
			{BrokerUID: 600, Day: day, Market: 0, Coin: 2, Deal: 30_300_000, Fee: 30_300, Rate: rateB, Commission: 15_150, USDT: 15_150},
			{BrokerUID: 600, Day: day, Market: 2, Coin: 0, Deal: 10_000_000, Fee: 10_000, Rate: rateB, Commission: 5_000, USDT: 5_050},
		},
	}
	settledMs := clock.Load()
	checkRecords := func(when string) {
		t.Helper()
		for uid, recs := range want {
			var got []journal.RebateRecord
			if err := n.Store().RebateRecords(uid, day-5, day+5, func(r *journal.RebateRecord) bool { got = append(got, *r); return true }); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(recs) {
				t.Fatalf("%s: broker %d records: got %+v, want %+v", when, uid, got, recs)
			}
			for i := range recs {
				w := recs[i]
				w.SettledMs = settledMs
				if got[i] != w {
					t.Fatalf("%s: broker %d record %d:\n got %+v\nwant %+v", when, uid, i, got[i], w)
				}
			}
		}
		for _, uid := range []int64{700, 100, 1} {
			if err := n.Store().RebateRecords(uid, day-5, day+5, func(r *journal.RebateRecord) bool {
				t.Fatalf("%s: user %d has a rebate record %+v", when, uid, r)
				return false
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkRecords("after settling")
	checkBalances := func(when string) {
		t.Helper()
		a, b, fee := balances(t, n, brokerA), balances(t, n, brokerB), balances(t, n, 0)
		if a[2] != 8_333 || a[0] != 1_666 || b[2] != 15_150 || b[0] != 5_000 {
			t.Fatalf("%s: brokers' balances: A %v B %v", when, a, b)
		}
		if fee[2] != feeBefore[2]-8_333-15_150 || fee[0] != feeBefore[0]-1_666-5_000 {
			t.Fatalf("%s: fee account: got %v, was %v", when, fee, feeBefore)
		}
	}
	checkBalances("after settling")
	bills, err := n.Store().Bills(500, journal.CoinAll, 0, 0, maxTime, 0, 10, nil)
	if err != nil || len(bills) != 2 {
		t.Fatalf("broker A's bills: got %+v %v, want two rebate bills", bills, err)
	}
	for _, b := range bills {
		if b.Biz != engine.BizRebate || b.Delta <= 0 {
			t.Fatalf("broker A's bill: got %+v, want a rebate credit", b)
		}
	}

	// Settling again (an operator, the timer) pays nothing more.
	res, err = n.SettleRebates(day-3, day, deadline())
	if err != nil || res != (Settled{Before: 4}) {
		t.Fatalf("settle again: got %+v %v, want 4 paid before", res, err)
	}
	checkBalances("after settling again")
	h, _, err := n.State(deadline())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if got := hashRO(t, dir, true); got != h {
		t.Fatalf("full replay: hash %s, want %s", hashString(got), hashString(h))
	}

	// Reopened, with the settler running: it settles the second day once
	// the clock has passed it, and nothing of the first again.
	clock.Store(int64(day+2)*dayMs + 5)
	o.SettleEvery = 20 * time.Millisecond
	if n, err = openNode(o); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	checkRecords("after the restart")
	checkBalances("after the restart")
	var next []journal.RebateRecord
	for end := time.Now().Add(10 * time.Second); len(next) == 0 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if err := n.Store().RebateRecords(500, day+1, day+1, func(r *journal.RebateRecord) bool { next = append(next, *r); return true }); err != nil {
			t.Fatal(err)
		}
	}
	// X bought 0.1 BTC at 101.00 as maker: 0.00005 BTC, 0.00505 USDT.
	if len(next) != 1 || next[0].Fee != 5_050 || next[0].Deal != 10_100_000 || next[0].Commission != 1_683 || next[0].SettledMs < clock.Load() {
		t.Fatalf("the settler's record of the next day: got %+v", next)
	}
	if a := balances(t, n, brokerA); a[2] != 8_333+1_683 {
		t.Fatalf("broker A after the settler: %v", a)
	}
}

// balances returns u's total of each coin.
func balances(tb testing.TB, n *Node, u engine.UserIdx) []engine.Amount {
	tb.Helper()
	bal, err := n.Balances(u, deadline(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]engine.Amount, len(bal))
	for i, b := range bal {
		out[i] = b.Avail + b.Frozen
	}
	return out
}

// TestFuturesRebates: a referred user's contract fees accrue to its broker
// as product FUTURES; settlement pays the commission from the fee
// account's futures wallet, where contract fees are paid, to the broker's
// spot wallet.
func TestFuturesRebates(t *testing.T) {
	dir := t.TempDir()
	day := int32(20_000)
	var clock atomic.Int64
	clock.Store(int64(day)*dayMs + 10*3_600_000)
	o := testOptions(t, dir)
	o.Markets, o.Clock = crashMarkets(), clock.Load
	n, err := openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	user := func(uid int64, broker bool, rate int64, referrer int64) engine.UserIdx {
		out, _ := do(t, n, engine.Cmd{Kind: engine.CmdAddUser, UID: uid, Broker: broker, Amount: engine.Amount(rate), Referrer: referrer})
		mustOK(t, "add user", out)
		return engine.UserIdx(n.Accounts().NumUsers() - 1)
	}
	user(feeUID, false, 0, 0)
	broker := user(500, true, 50_000_000, 0) // 50%
	x := user(100, false, 0, 500)
	w := user(400, false, 0, 0)
	for _, u := range []struct {
		idx engine.UserIdx
		uid int64
	}{{x, 100}, {w, 400}} {
		mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: u.idx, UID: u.uid, Coin: usdt | engine.Futures, Amount: 1000e6})))
	}
	// X opens LONG 0.5 at 100.00 as maker (fee 0.02% of 50 USDT: 0.01),
	// W opens SHORT as taker (0.06%: 0.03, W has no broker).
	mustOK(t, "place", first(do(t, n, engine.Cmd{Kind: engine.CmdPlace, User: x, UID: 100, Market: crashContract, Side: engine.Buy,
		Pos: engine.Long, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 5000})))
	mustOK(t, "place", first(do(t, n, engine.Cmd{Kind: engine.CmdPlace, User: w, UID: 400, Market: crashContract, Side: engine.Sell,
		Pos: engine.Short, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 5000})))
	feeBefore, err := n.FuturesBalances(0, deadline(), nil)
	if err != nil || feeBefore[usdt].Avail != 40_000 {
		t.Fatalf("fee account's futures USDT %+v %v, want 0.04 in fees", feeBefore, err)
	}
	clock.Store(int64(day+1)*dayMs + 1000)
	if res, err := n.SettleRebates(day, day, deadline()); err != nil || res != (Settled{Paid: 1}) {
		t.Fatalf("settle: got %+v %v, want 1 paid", res, err)
	}
	var got []journal.RebateRecord
	if err := n.Store().RebateRecords(500, day-1, day+1, func(r *journal.RebateRecord) bool { got = append(got, *r); return true }); err != nil {
		t.Fatal(err)
	}
	want := journal.RebateRecord{BrokerUID: 500, Day: day, Product: journal.ProductFutures, Market: crashContract, Coin: usdt,
		Deal: 50_000_000, Fee: 10_000, Rate: 50_000_000, Commission: 5_000, USDT: 5_000, SettledMs: clock.Load()}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("records:\n got %+v\nwant %+v", got, want)
	}
	if b := balances(t, n, broker); b[usdt] != 5_000 {
		t.Fatalf("broker's spot USDT %d, want 5000", b[usdt])
	}
	fee, _ := n.FuturesBalances(0, deadline(), nil)
	if fee[usdt].Avail != 35_000 {
		t.Fatalf("fee account's futures USDT %d, want 35000", fee[usdt].Avail)
	}
	// settling again pays nothing more
	if res, err := n.SettleRebates(day, day, deadline()); err != nil || res.Paid != 0 {
		t.Fatalf("second settle: %+v %v", res, err)
	}
	live, _, err := n.State(deadline())
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	if hashRO(t, dir, true) != live {
		t.Fatal("a full replay gives another state hash")
	}
}
