package engine_test

import (
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

// TestCreditsWaitForFlush: credits to available balances (deposits, trade
// proceeds, released reservations) are applied by Flush, never by Apply, so
// no decision rests on money a crash could take back (engine.Accounts).
// Totals and bills change at once.
func TestCreditsWaitForFlush(t *testing.T) {
	cl := enginetest.NewCluster(1)
	var out engine.Out
	seq := uint64(0)
	apply := func(e *engine.Engine, c engine.Cmd) engine.Reject {
		seq++
		e.Apply(&c, seq, int64(seq), &out)
		return out.Reject
	}
	for _, uid := range []int64{enginetest.FeeUID, 10, 11} {
		apply(cl.Ledger, engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
	}
	led := cl.Ledger
	if r := apply(led, engine.Cmd{Kind: engine.CmdDeposit, UID: 10, User: 1, Coin: 0, Amount: 1_000_000_000}); r != engine.OK {
		t.Fatalf("deposit: got %v, want OK", r)
	}
	if got := cl.Acc.Total(1, 0); got != 1_000_000_000 {
		t.Errorf("total right after the deposit: got %d, want 1000000000", got)
	}
	if a, _ := cl.Acc.Balance(1, 0); a != 0 || !led.Pending() {
		t.Errorf("before Flush: got available %d, pending %v; want 0, true", a, led.Pending())
	}
	if err := engine.CheckInvariants(cl.Acc, cl.All); err != nil {
		t.Errorf("CheckInvariants with unflushed credits (counted as available): %v", err)
	}
	if r := apply(led, engine.Cmd{Kind: engine.CmdWithdraw, UID: 10, User: 1, Coin: 0, Amount: 1}); r != engine.RejectInsufficientBalance {
		t.Errorf("withdraw before Flush: got %v, want INSUFFICIENT_BALANCE", r)
	}
	led.Flush()
	if a, _ := cl.Acc.Balance(1, 0); a != 1_000_000_000 || led.Pending() {
		t.Errorf("after Flush: got available %d, pending %v; want 1000000000, false", a, led.Pending())
	}

	// trade proceeds: uid 11 sells 1 BTC it has; uid 10 buys it
	apply(led, engine.Cmd{Kind: engine.CmdDeposit, UID: 11, User: 2, Coin: 1, Amount: 100_000_000})
	led.Flush()
	e := cl.Engines[0]
	apply(e, engine.Cmd{Kind: engine.CmdPlace, UID: 11, User: 2, Market: 0, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 10000})
	e.Flush()
	apply(e, engine.Cmd{Kind: engine.CmdPlace, UID: 10, User: 1, Market: 0, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 10000})
	if len(out.Trades) != 1 {
		t.Fatalf("got %d trades, want 1", len(out.Trades))
	}
	// the seller's 99.9 USDT and the buyer's 0.998 BTC wait for Flush
	if a, _ := cl.Acc.Balance(2, 0); a != 0 {
		t.Errorf("seller's USDT before Flush: got available %d, want 0", a)
	}
	if err := engine.CheckInvariants(cl.Acc, cl.All); err != nil {
		t.Errorf("CheckInvariants after a fill, before Flush: %v", err)
	}
	if r := apply(e, engine.Cmd{Kind: engine.CmdPlace, UID: 10, User: 1, Market: 0, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 20000, Qty: 10}); r != engine.RejectInsufficientBalance {
		t.Errorf("selling bought BTC before Flush: got %v, want INSUFFICIENT_BALANCE", r)
	}
	e.Flush()
	if a, f := cl.Acc.Balance(2, 0); a != 99_900_000 || f != 0 {
		t.Errorf("seller's USDT after Flush: got %d/%d, want 99900000/0", a, f)
	}
	if r := apply(e, engine.Cmd{Kind: engine.CmdPlace, UID: 10, User: 1, Market: 0, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 20000, Qty: 10}); r != engine.OK {
		t.Errorf("selling bought BTC after Flush: got %v, want OK", r)
	}
	e.Flush()
	if err := engine.CheckInvariants(cl.Acc, cl.All); err != nil {
		t.Error(err)
	}
}

// TestFlushTo: FlushTo(mark) makes available only the credits queued
// before PendingLen returned mark (the shard runtime answers a batch while
// the next one is already applied), and keeps the later ones pending.
func TestFlushTo(t *testing.T) {
	cl := enginetest.NewCluster(1)
	var out engine.Out
	seq := uint64(0)
	led := cl.Ledger
	apply := func(c engine.Cmd) {
		seq++
		led.Apply(&c, seq, int64(seq), &out)
		if out.Reject != engine.OK {
			t.Fatalf("%+v: got %v, want OK", c, out.Reject)
		}
	}
	apply(engine.Cmd{Kind: engine.CmdAddUser, UID: enginetest.FeeUID})
	apply(engine.Cmd{Kind: engine.CmdAddUser, UID: 10})
	led.Flush()
	apply(engine.Cmd{Kind: engine.CmdDeposit, UID: 10, User: 1, Coin: 0, Amount: 100})
	apply(engine.Cmd{Kind: engine.CmdDeposit, UID: 10, User: 1, Coin: 1, Amount: 200})
	first := led.PendingLen()
	apply(engine.Cmd{Kind: engine.CmdDeposit, UID: 10, User: 1, Coin: 0, Amount: 1000})
	second := led.PendingLen()
	if first != 2 || second != 3 {
		t.Fatalf("marks: got %d, %d; want 2, 3", first, second)
	}
	led.FlushTo(first)
	a0, _ := cl.Acc.Balance(1, 0)
	a1, _ := cl.Acc.Balance(1, 1)
	if a0 != 100 || a1 != 200 || led.PendingLen() != 1 {
		t.Fatalf("after FlushTo(first): got available %d, %d and %d pending; want 100, 200, 1", a0, a1, led.PendingLen())
	}
	led.FlushTo(second - first)
	if a0, _ = cl.Acc.Balance(1, 0); a0 != 1100 || led.Pending() {
		t.Fatalf("after FlushTo(rest): got available %d, pending %v; want 1100, false", a0, led.Pending())
	}
}
