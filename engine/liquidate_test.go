package engine_test

import (
	"testing"

	"github.com/weexcore/exchange/engine"
)

// liqWorld is ctWorld with 20% bands (so one trade can move the price past
// a liquidation) and a victim, uid 10, holding LONG 0.1 BTC opened at
// 50000 with leverage 10 in margin mode mode: 5000 USDT of open value,
// 500 of margin, 3 of taker fee. uid 11 holds the SHORT side; uid 12 bids
// 0.05 at bid (it rests: nothing trades there yet).
func liqWorld(t *testing.T, mode engine.MarginMode, bid string) *ctWorld {
	w := liqFunded(t)
	if mode == engine.Isolated {
		w.ok(engine.Cmd{Kind: engine.CmdMarginMode, UID: 10, Mode: engine.Isolated})
	}
	w.ok(engine.Cmd{Kind: engine.CmdLeverage, UID: 10, Amount: 10})
	w.ok(w.order(11, engine.Sell, engine.Short, "50000", "0.1"))
	w.ok(w.order(10, engine.Buy, engine.Long, "50000", "0.1"))
	w.wallet(10, "497", "500")
	w.ok(w.order(12, engine.Buy, engine.Long, bid, "0.05"))
	return w
}

// liqFunded is ctWorld with 20% bands, 1000 USDT in uid 10's futures
// wallet and 100000 in uids 11's and 12's.
func liqFunded(t *testing.T) *ctWorld {
	cfg := ctConfig()
	cfg.BuyLimitPriceRatio, cfg.SellLimitPriceRatio = "0.2", "0.2"
	w := newCtWorldWith(t, cfg)
	w.deposit(10, "1000")
	w.deposit(11, "100000")
	w.deposit(12, "100000")
	return w
}

// kinds returns the command's order updates of each kind, by user uid.
func (w *ctWorld) kinds(k engine.OrderKind) map[int64]engine.OrderView {
	got := map[int64]engine.OrderView{}
	for _, v := range w.out.Updates {
		if v.Kind == k {
			got[v.UID] = v
		}
	}
	return got
}

// TestLiquidationIsolatedTakeover: the mark falls to the isolated LONG's
// trigger; the liquidation order sells to the bid above the bankruptcy
// price, what is left of that part's margin goes to the insurance
// account, which takes over the rest at the bankruptcy price.
func TestLiquidationIsolatedTakeover(t *testing.T) {
	w := liqWorld(t, engine.Isolated, "45100")
	w.deposit(2, "1000")
	// underwater when 500 + N - 5000 <= 0.005 N: mark <= 45226.1
	if lp := w.position(10, engine.Long).LiqPrice; lp != w.price("45226.1") {
		t.Fatalf("liquidation price %d", lp)
	}
	w.ok(w.order(11, engine.Sell, engine.Short, "45300", "0.01")) // no bid there: rests, mark = last 50000
	if len(w.kinds(engine.KindLiquidation)) != 0 {
		t.Fatal("liquidated above the trigger")
	}
	w.ok(engine.Cmd{Kind: engine.CmdCancelAll, UID: 11})
	w.ok(w.order(11, engine.Sell, engine.Short, "45100", "0.01")) // trades: last 45100
	liq := w.kinds(engine.KindLiquidation)
	v, ok := liq[10]
	// bankruptcy ceil((5000 - 500) / 0.1) = 45000.0
	if !ok || v.Price != w.price("45000") || v.OrigQty != w.qty("0.1") || v.ExecutedQty != v.OrigQty ||
		v.Side != engine.Sell || v.Pos != engine.Long || v.Status != engine.StatusFilled {
		t.Fatalf("liquidation order %+v", v)
	}
	ins, ok := liq[2]
	if !ok || ins.Side != engine.Buy || ins.Pos != engine.Long || ins.ExecutedQty != w.qty("0.06") || ins.Price != w.price("45000") {
		t.Fatalf("takeover order %+v", ins)
	}
	if p := w.position(10, engine.Long); p.Size != 0 {
		t.Fatalf("victim still holds %+v", p)
	}
	// 0.04 at 45100: 1804 - 2000 of open value + 200 of margin = 4 to
	// the insurance account; 0.06 at 45000: exactly the margin lost
	w.wallet(10, "497", "0")
	// insurance: 1000 + 4, margin ceil(2700 / 20) = 135 frozen
	w.wallet(2, "869", "135")
	if p := w.position(2, engine.Long); p.Size != w.qty("0.06") || p.OpenValue != usd(t, "2700") || p.Margin != usd(t, "135") {
		t.Fatalf("insurance position %+v", p)
	}
	// the bidder filled 0.01 and 0.04 at 45100
	if p := w.position(12, engine.Long); p.Size != w.qty("0.05") || p.OpenValue != usd(t, "2255") {
		t.Fatalf("bidder position %+v", p)
	}
	if w.e.BadDebt(w.ct.ID) != 0 {
		t.Fatal("bad debt")
	}
}

// TestLiquidationIsolatedADL: the same with an empty insurance account:
// the rest closes against the SHORT, at the bankruptcy price.
func TestLiquidationIsolatedADL(t *testing.T) {
	w := liqWorld(t, engine.Isolated, "45100")
	w.ok(w.order(11, engine.Sell, engine.Short, "45100", "0.01"))
	liq, adl := w.kinds(engine.KindLiquidation), w.kinds(engine.KindADL)
	if len(liq) != 1 || liq[10].ExecutedQty != w.qty("0.1") {
		t.Fatalf("liquidation orders %+v", liq)
	}
	a, ok := adl[11]
	if !ok || a.Side != engine.Buy || a.Pos != engine.Short || a.ExecutedQty != w.qty("0.06") || a.Price != w.price("45000") {
		t.Fatalf("ADL order %+v", a)
	}
	w.wallet(10, "497", "0")
	w.wallet(2, "4", "0") // the first part's margin left over
	// uid 11: SHORT 0.11 for 5451; 0.06 of it closed at 45000 realizes
	// 5451 * 6/11 - 2700 = 273.272727
	p := w.position(11, engine.Short)
	if p.Size != w.qty("0.05") || p.Realized != usd(t, "273.272727") {
		t.Fatalf("deleveraged position %+v", p)
	}
	// ADL fills do not move the last price: the mark is still 45100
	if m := w.e.MarkPrice(w.ct.ID); m != w.price("45100") {
		t.Fatalf("mark %d", m)
	}
}

// TestLiquidationCross: a cross account is liquidated when its wallet plus
// uPnL falls to the maintenance margin; a fill below its bankruptcy price
// takes the loss beyond the position's margin from the wallet.
func TestLiquidationCross(t *testing.T) {
	w := liqWorld(t, engine.Cross, "40100")
	// D = 997; underwater when 997 + N - 5000 <= 0.005 N: mark <= 40231.1;
	// bankruptcy ceil((5000 - 997) / 0.1) = 40030.0
	if lp := w.position(10, engine.Long).LiqPrice; lp != w.price("40231.1") {
		t.Fatalf("liquidation price %d", lp)
	}
	w.ok(w.order(11, engine.Sell, engine.Short, "40300", "0.01"))
	w.ok(engine.Cmd{Kind: engine.CmdCancelAll, UID: 11})
	if len(w.kinds(engine.KindLiquidation)) != 0 {
		t.Fatal("liquidated above the trigger")
	}
	w.ok(w.order(11, engine.Sell, engine.Short, "40100", "0.01"))
	v := w.kinds(engine.KindLiquidation)[10]
	if v.Price != w.price("40030") || v.ExecutedQty != w.qty("0.1") {
		t.Fatalf("liquidation order %+v", v)
	}
	// 0.04 at 40100 loses 396 against 200 of margin: 196 from the wallet;
	// 0.06 at 40030 (ADL: the insurance account is empty) loses 598.2
	// against 300: 298.2 from the wallet. 497 - 196 - 298.2 = 2.8, the
	// first part's gain over the bankruptcy price.
	w.wallet(10, "2.8", "0")
	w.wallet(2, "0", "0")
	if len(w.kinds(engine.KindADL)) != 1 || w.e.BadDebt(w.ct.ID) != 0 {
		t.Fatalf("ADL %+v, bad debt %d", w.kinds(engine.KindADL), w.e.BadDebt(w.ct.ID))
	}
}

// TestLiquidationShortRising: a SHORT is liquidated as the mark rises.
func TestLiquidationShortRising(t *testing.T) {
	w := liqFunded(t)
	w.deposit(2, "1000")
	w.ok(engine.Cmd{Kind: engine.CmdMarginMode, UID: 10, Mode: engine.Isolated})
	w.ok(engine.Cmd{Kind: engine.CmdLeverage, UID: 10, Amount: 10})
	w.ok(w.order(11, engine.Buy, engine.Long, "50000", "0.1"))
	w.ok(w.order(10, engine.Sell, engine.Short, "50000", "0.1"))
	// underwater when 500 + 5000 - N <= 0.005 N: mark >= 54726.4;
	// bankruptcy floor((5000 + 500) / 0.1) = 55000.0
	if lp := w.position(10, engine.Short).LiqPrice; lp != w.price("54726.4") {
		t.Fatalf("liquidation price %d", lp)
	}
	w.ok(w.order(12, engine.Sell, engine.Short, "54800", "0.05"))
	w.ok(w.order(11, engine.Buy, engine.Long, "54700", "0.01")) // rests below the ask: mark = median(54700, 54800, 50000)
	if len(w.kinds(engine.KindLiquidation)) != 0 {
		t.Fatal("liquidated below the trigger")
	}
	w.ok(w.order(11, engine.Buy, engine.Long, "54800", "0.01")) // trades: last 54800
	v := w.kinds(engine.KindLiquidation)[10]
	if v.Price != w.price("55000") || v.Side != engine.Buy || v.ExecutedQty != w.qty("0.1") {
		t.Fatalf("liquidation order %+v", v)
	}
	// 0.04 at 54800: 200 of margin + 2000 - 2192 = 8 to the insurance
	// account, which then takes over 0.06 at 55000 (margin 3300 / 20)
	w.wallet(10, "497", "0")
	w.wallet(2, "843", "165")
	if p := w.position(2, engine.Short); p.Size != w.qty("0.06") || p.OpenValue != usd(t, "3300") {
		t.Fatalf("insurance position %+v", p)
	}
}
