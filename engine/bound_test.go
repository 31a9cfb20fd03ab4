package engine_test

import (
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

// boundBook fills ETHBTC (min quantity one step) with n asks of one step by
// uid 11 at 0.05000, after one ask of uid 10 at 0.04999 when own is true,
// and returns the harness and uid 10's user index.
func boundBook(t *testing.T, n int, own bool) (*harness, engine.UserIdx) {
	h := newHarness(t, 1)
	for _, uid := range []int64{enginetest.FeeUID, 10, 11} {
		h.step(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
	}
	for u, uid := range map[engine.UserIdx]int64{1: 10, 2: 11} {
		for c := engine.CoinID(0); c < 3; c++ {
			h.step(engine.Cmd{Kind: engine.CmdDeposit, UID: uid, User: u, Coin: c, Amount: 1 << 50})
		}
	}
	const ethbtc = 2
	if own {
		h.step(engine.Cmd{Kind: engine.CmdPlace, UID: 10, User: 1, Market: ethbtc, Side: engine.Sell,
			Type: engine.Limit, TIF: engine.GTC, Price: 4999, Qty: 1})
	}
	for i := 0; i < n; i++ {
		if !h.step(engine.Cmd{Kind: engine.CmdPlace, UID: 11, User: 2, Market: ethbtc, Side: engine.Sell,
			Type: engine.Limit, TIF: engine.GTC, Price: 5000, Qty: 1}) {
			t.FailNow()
		}
	}
	return h, 1
}

// TestFOKIsAllOrNothingAtFillBound: a FOK order may meet at most
// MaxFillsPerOrder resting orders, and the user's own resting orders in its
// way count among them (they are expired, one step each). With one own ask
// in front of exactly MaxFillsPerOrder others, a FOK for all of the others'
// quantity must expire with no fill (or fill entirely), never fill part.
func TestFOKIsAllOrNothingAtFillBound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10k-order book")
	}
	h, u := boundBook(t, engine.MaxFillsPerOrder, true)
	c := engine.Cmd{Kind: engine.CmdPlace, UID: 10, User: u, Market: 2, Side: engine.Buy, Type: engine.Limit,
		TIF: engine.FOK, Price: 5000, Qty: engine.MaxFillsPerOrder}
	h.step(c) // compares with the reference model, which expires it unfilled
	o := h.eo.Order()
	if h.eo.Reject != engine.OK || (o.ExecutedQty != 0 && o.ExecutedQty != o.OrigQty) {
		t.Errorf("FOK for %d behind one own order and %d others: got %v, status %d, executed %d of %d; want all or nothing",
			c.Qty, engine.MaxFillsPerOrder, h.eo.Reject, o.Status, o.ExecutedQty, o.OrigQty)
	}
}

// TestIOCStopsAtFillBound: an IOC (and a GTC) order meets at most
// MaxFillsPerOrder resting orders; the rest of it expires (a GTC does not
// rest then, engine/types.go).
func TestIOCStopsAtFillBound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10k-order book")
	}
	for _, tif := range []engine.TIF{engine.IOC, engine.GTC} {
		h, u := boundBook(t, engine.MaxFillsPerOrder+5, false)
		c := engine.Cmd{Kind: engine.CmdPlace, UID: 10, User: u, Market: 2, Side: engine.Buy, Type: engine.Limit,
			TIF: tif, Price: 5000, Qty: engine.MaxFillsPerOrder + 3}
		if !h.step(c) {
			continue
		}
		o := h.eo.Order()
		if o.ExecutedQty != engine.MaxFillsPerOrder || o.Status != engine.StatusExpired || len(h.eo.Trades) != engine.MaxFillsPerOrder {
			t.Errorf("TIF %d for %d over %d one-step asks: got status %d, executed %d, %d trades; want EXPIRED after %d",
				tif, c.Qty, engine.MaxFillsPerOrder+5, o.Status, o.ExecutedQty, len(h.eo.Trades), engine.MaxFillsPerOrder)
		}
		if h.eo.NumBills() >= 1<<16 {
			t.Errorf("%d bills in one command: bill ids hold 16 bits of index", h.eo.NumBills())
		}
		if err := h.checkInvariants(); err != nil {
			t.Error(err)
		}
	}
}
