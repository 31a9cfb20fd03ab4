package engine_test

import (
	"bytes"
	"testing"

	"github.com/weexcore/exchange/engine"
)

// ctWorld is one engine owning a BTCUSDT perpetual (tick 0.1, step
// 0.0001, maker 0.02%, taker 0.06%, leverage 1-100, default 20, bands 5%)
// and a spot market, with the fee account (uid 1) and the insurance
// account (uid 2). Every command is followed by the whole-state
// invariants, and every few by a snapshot round trip.
type ctWorld struct {
	t    *testing.T
	acc  *engine.Accounts
	e    *engine.Engine
	ct   *engine.MarketSpec
	seq  uint64
	out  engine.Out
	usdt engine.CoinID
}

const ctUSDT = engine.CoinID(0)

func ctCoins() []engine.Coin {
	return []engine.Coin{{ID: 0, Name: "USDT", ExternalID: 2, Scale: 6}, {ID: 1, Name: "BTC", ExternalID: 1, Scale: 8}}
}

func ctConfig() engine.ContractConfig {
	return engine.ContractConfig{Symbol: "BTCUSDT", V2Symbol: "cmt_btcusdt", ContractID: 1,
		BaseAsset: "BTC", QuoteAsset: "USDT", MarginAsset: "USDT", ContractVal: "1",
		TickSize: "0.1", StepSize: "0.0001", MinOrderSize: "0.0001", MaxOrderSize: "100", MaxPositionSize: "1000",
		MakerFeeRate: "0.0002", TakerFeeRate: "0.0006", MinLeverage: 1, MaxLeverage: 100, DefaultLeverage: 20,
		MaintenanceMarginRate: "0.005", BuyLimitPriceRatio: "0.05", SellLimitPriceRatio: "0.05",
		MarketFallbackPriceRatio: "0.05", IndexSymbol: "BTCUSDT", FundingIntervalHours: 8,
		InterestRate: "0.0001", MaxFundingRate: "0.0075", EnableTrade: true}
}

func newCtWorld(t *testing.T) *ctWorld { return newCtWorldWith(t, ctConfig()) }

func newCtWorldWith(t *testing.T, cfg engine.ContractConfig) *ctWorld {
	t.Helper()
	coins := ctCoins()
	spec, err := engine.NewContractSpec(engine.ContractBase, cfg, coins[1], coins[0])
	if err != nil {
		t.Fatal(err)
	}
	w := &ctWorld{t: t, acc: engine.NewAccounts(coins), ct: spec}
	w.e = engine.New(0, w.acc, []*engine.MarketSpec{spec}, 1)
	w.e.SetInsuranceUID(2)
	for _, uid := range []int64{1, 2, 10, 11, 12} {
		w.ok(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
	}
	return w
}

func (w *ctWorld) user(uid int64) engine.UserIdx {
	u, ok := w.acc.Lookup(uid)
	if !ok {
		w.t.Fatalf("no user %d", uid)
	}
	return u
}

// apply applies c (filling in User from UID and Market) and checks the
// invariants.
func (w *ctWorld) apply(c engine.Cmd) engine.Reject {
	w.t.Helper()
	if c.Kind != engine.CmdAddUser {
		c.User = w.user(c.UID)
	}
	if c.Market == 0 {
		c.Market = w.ct.ID
	}
	w.seq++
	w.e.Apply(&c, w.seq, int64(w.seq)*1000, &w.out)
	w.e.Flush()
	if err := engine.CheckInvariants(w.acc, []*engine.Engine{w.e}); err != nil {
		w.t.Fatalf("after command %d %+v: %v", w.seq, c, err)
	}
	if w.seq%5 == 0 {
		w.roundTrip()
	}
	return w.out.Reject
}

func (w *ctWorld) ok(c engine.Cmd) {
	w.t.Helper()
	if r := w.apply(c); r != engine.OK {
		w.t.Fatalf("command %d %+v: %v", w.seq, c, r)
	}
}

func (w *ctWorld) reject(want engine.Reject, c engine.Cmd) {
	w.t.Helper()
	before := engine.StateHash(w.acc, []*engine.Engine{w.e})
	if r := w.apply(c); r != want {
		w.t.Fatalf("command %d %+v: got %v, want %v", w.seq, c, r, want)
	}
	if engine.StateHash(w.acc, []*engine.Engine{w.e}) != before {
		w.t.Fatalf("command %d: a rejected command changed the state", w.seq)
	}
}

// roundTrip checks that a snapshot restores the same state hash.
func (w *ctWorld) roundTrip() {
	w.t.Helper()
	coins := ctCoins()
	acc := engine.NewAccounts(coins)
	if err := acc.LoadSnapshot(w.acc.AppendSnapshot(nil)); err != nil {
		w.t.Fatal(err)
	}
	e := engine.New(0, acc, []*engine.MarketSpec{w.ct}, 1)
	if err := e.LoadSnapshot(w.e.AppendSnapshot(nil)); err != nil {
		w.t.Fatal(err)
	}
	if engine.StateHash(acc, []*engine.Engine{e}) != engine.StateHash(w.acc, []*engine.Engine{w.e}) {
		w.t.Fatal("snapshot round trip changed the state hash")
	}
	var a, b []byte
	a, b = w.e.AppendSnapshot(nil), e.AppendSnapshot(nil)
	if !bytes.Equal(a, b) {
		w.t.Fatal("snapshot round trip changed the engine snapshot")
	}
}

// usd is a USDT amount in units (scale 6) from a decimal string.
func usd(t *testing.T, s string) engine.Amount {
	v, err := engine.ParseFixed([]byte(s), 6)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Amount(v)
}

func (w *ctWorld) price(s string) engine.Price {
	p, err := w.ct.ParsePrice([]byte(s))
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *ctWorld) qty(s string) engine.Qty {
	q, err := w.ct.ParseQty([]byte(s))
	if err != nil {
		w.t.Fatal(err)
	}
	return q
}

func (w *ctWorld) deposit(uid int64, amount string) {
	w.ok(engine.Cmd{Kind: engine.CmdDeposit, UID: uid, Coin: ctUSDT | engine.Futures, Amount: usd(w.t, amount)})
}

func (w *ctWorld) order(uid int64, sd engine.Side, ps engine.PosSide, price, qty string) engine.Cmd {
	c := engine.Cmd{Kind: engine.CmdPlace, UID: uid, Side: sd, Pos: ps, Type: engine.Limit, TIF: engine.GTC, Qty: w.qty(qty)}
	if price == "" {
		c.Type = engine.Market
	} else {
		c.Price = w.price(price)
	}
	return c
}

// wallet checks uid's futures USDT available and frozen.
func (w *ctWorld) wallet(uid int64, avail, frozen string) {
	w.t.Helper()
	a, f := w.acc.Balance(w.user(uid), ctUSDT|engine.Futures)
	if a != usd(w.t, avail) || f != usd(w.t, frozen) {
		w.t.Fatalf("uid %d futures USDT: available %s frozen %s, want %s %s", uid,
			engine.AppendFixed(nil, int64(a), 6), engine.AppendFixed(nil, int64(f), 6), avail, frozen)
	}
}

func (w *ctWorld) position(uid int64, ps engine.PosSide) engine.PositionView {
	for _, p := range w.e.Positions(w.user(uid), engine.AllMarkets, nil) {
		if p.Side == ps {
			return p
		}
	}
	return engine.PositionView{}
}

func TestContractOpenClose(t *testing.T) {
	w := newCtWorld(t)
	w.deposit(10, "10000")
	w.deposit(11, "10000")
	w.deposit(12, "10000")
	w.ok(engine.Cmd{Kind: engine.CmdLeverage, UID: 10, Amount: 10})

	// B opens a SHORT of 1 at 30000 (leverage 20): it reserves the margin
	// 1500 and the taker fee 18.
	w.ok(w.order(11, engine.Sell, engine.Short, "30000", "1"))
	w.wallet(11, "8482", "1518")

	// A opens a LONG of 0.4 against it (leverage 10): margin 1200, taker fee 7.2.
	w.ok(w.order(10, engine.Buy, engine.Long, "30000", "0.4"))
	if len(w.out.Trades) != 1 || w.out.Trades[0].TakerFee != usd(t, "7.2") || w.out.Trades[0].MakerFee != usd(t, "2.4") {
		t.Fatalf("trades %+v", w.out.Trades)
	}
	w.wallet(10, "8792.8", "1200")
	// B's maker fill: 607.2 of its reservation was for 0.4; margin 600,
	// fee 2.4, 4.8 released (its reservation held the taker fee).
	w.wallet(11, "8486.8", "1510.8")
	w.wallet(1, "9.6", "0")
	if p := w.position(10, engine.Long); p.Size != w.qty("0.4") || p.OpenValue != usd(t, "12000") || p.Margin != usd(t, "1200") || p.Leverage != 10 {
		t.Fatalf("A's long %+v", p)
	}
	if p := w.position(11, engine.Short); p.Size != w.qty("0.4") || p.Margin != usd(t, "600") || p.Leverage != 20 {
		t.Fatalf("B's short %+v", p)
	}

	// closes: over the position, without a position, and the working
	// closes count against the position.
	w.reject(engine.RejectReduceOnly, w.order(10, engine.Sell, engine.Long, "31000", "0.5"))
	w.reject(engine.RejectNoPosition, w.order(10, engine.Buy, engine.Short, "29000", "0.1"))
	w.ok(w.order(10, engine.Sell, engine.Long, "31000", "0.3"))
	w.reject(engine.RejectReduceOnly, w.order(10, engine.Sell, engine.Long, "31000", "0.2"))
	w.ok(w.order(10, engine.Sell, engine.Long, "31000", "0.1"))
	w.wallet(10, "8792.8", "1200") // closes reserve nothing

	// settings do not change under a position or orders
	w.reject(engine.RejectPositionExists, engine.Cmd{Kind: engine.CmdLeverage, UID: 10, Amount: 5})
	w.reject(engine.RejectPositionExists, engine.Cmd{Kind: engine.CmdMarginMode, UID: 10, Mode: engine.Isolated})
	w.reject(engine.RejectInvalidLeverage, engine.Cmd{Kind: engine.CmdLeverage, UID: 12, Amount: 101})
	w.reject(engine.RejectInvalidLeverage, engine.Cmd{Kind: engine.CmdLeverage, UID: 12, Amount: 0})

	// B cancels the rest of its short (0.6): 910.8 back.
	w.ok(engine.Cmd{Kind: engine.CmdCancelAll, UID: 11})
	w.wallet(11, "9397.6", "600")

	// C buys 0.4 at 31000, opening a LONG: A's two closes fill as makers.
	// A realizes (31000-30000)*0.4 = 400, pays maker fees 2.48, and its
	// margin of 1200 comes back.
	w.ok(w.order(12, engine.Buy, engine.Long, "31000", "0.4"))
	if len(w.out.Trades) != 2 || w.out.Trades[0].MakerPnl != usd(t, "300") || w.out.Trades[1].MakerPnl != usd(t, "100") {
		t.Fatalf("trades %+v", w.out.Trades)
	}
	w.wallet(10, "10390.32", "0")
	if p := w.position(10, engine.Long); p.Size != 0 {
		t.Fatalf("A still has %+v", p)
	}
	// C: margin 31000*0.4/20 = 620, taker fee 7.44
	w.wallet(12, "9372.56", "620")
	w.wallet(1, "19.52", "0")

	// B closes its short at a loss against C's close... C must close its
	// long: C sells LONG 0.4 at 30500 (rests), B buys SHORT 0.4 (a close).
	w.ok(w.order(12, engine.Sell, engine.Long, "30500", "0.4"))
	w.ok(w.order(11, engine.Buy, engine.Short, "30500", "0.4"))
	// B: pnl (30000-30500)*0.4 = -200, taker fee 7.32, margin 600 back.
	w.wallet(11, "9790.28", "0")
	// C: pnl (30500-31000)*0.4 = -200, maker fee 2.44, margin 620 back.
	w.wallet(12, "9790.12", "0")
	if w.e.BadDebt(w.ct.ID) != 0 {
		t.Fatal("bad debt")
	}
	// now leverage and mode may change
	w.ok(engine.Cmd{Kind: engine.CmdLeverage, UID: 10, Amount: 5})
	w.ok(engine.Cmd{Kind: engine.CmdMarginMode, UID: 10, Mode: engine.Isolated})
	if mode, l, s, ok := w.e.Settings(w.user(10), w.ct.ID); !ok || mode != engine.Isolated || l != 5 || s != 5 {
		t.Fatalf("settings %v %d %d %v", mode, l, s, ok)
	}
}

func TestContractTransfer(t *testing.T) {
	w := newCtWorld(t)
	w.ok(engine.Cmd{Kind: engine.CmdDeposit, UID: 10, Coin: ctUSDT, Amount: usd(t, "500")})
	w.ok(engine.Cmd{Kind: engine.CmdTransfer, UID: 10, Coin: ctUSDT | engine.Futures, Amount: usd(t, "200")})
	if len(w.out.Bills) != 2 || w.out.Bills[0].Biz != engine.BizTransferOut || w.out.Bills[1].Biz != engine.BizTransferIn ||
		w.out.Bills[0].After != usd(t, "300") || w.out.Bills[1].After != usd(t, "200") {
		t.Fatalf("bills %+v", w.out.Bills)
	}
	w.wallet(10, "200", "0")
	w.reject(engine.RejectInsufficientBalance, engine.Cmd{Kind: engine.CmdTransfer, UID: 10, Coin: ctUSDT, Amount: usd(t, "200.000001")})
	w.reject(engine.RejectInvalidAmount, engine.Cmd{Kind: engine.CmdTransfer, UID: 10, Coin: ctUSDT, Amount: 0})
	w.reject(engine.RejectUnknownCoin, engine.Cmd{Kind: engine.CmdTransfer, UID: 10, Coin: 7 | engine.Futures, Amount: 1})
	w.ok(engine.Cmd{Kind: engine.CmdTransfer, UID: 10, Coin: ctUSDT, Amount: usd(t, "50")})
	w.wallet(10, "150", "0")
	if a, _ := w.acc.Balance(w.user(10), ctUSDT); a != usd(t, "350") {
		t.Fatalf("spot %d", a)
	}
	// a spot order cannot use futures money, nor an open spot money
	w.deposit(11, "0.000001")
	w.reject(engine.RejectInsufficientBalance, w.order(11, engine.Buy, engine.Long, "30000", "0.1"))
}

// TestContractIsolatedLoss: an isolated position's loss beyond its margin
// is paid by the insurance account, and what it cannot pay is bad debt;
// a cross position's comes from the wallet.
func TestContractIsolatedLoss(t *testing.T) {
	w := newCtWorld(t)
	w.deposit(10, "1000")
	w.deposit(11, "1000")
	w.deposit(12, "1000")
	w.deposit(2, "5") // the insurance fund
	w.ok(engine.Cmd{Kind: engine.CmdMarginMode, UID: 10, Mode: engine.Isolated})
	w.ok(engine.Cmd{Kind: engine.CmdLeverage, UID: 10, Amount: 100})
	// A: LONG 0.1 at 30000 with leverage 100: margin 30, taker fee 1.8.
	w.ok(w.order(11, engine.Sell, engine.Short, "30000", "0.1"))
	w.ok(w.order(10, engine.Buy, engine.Long, "30000", "0.1"))
	w.wallet(10, "968.2", "30")
	// A adds 2 to its isolated margin, then takes 3 back (refused: below
	// the initial margin of 30), then 2.
	w.ok(engine.Cmd{Kind: engine.CmdPositionMargin, UID: 10, Pos: engine.Long, Amount: usd(t, "2")})
	w.wallet(10, "966.2", "32")
	w.reject(engine.RejectInsufficientBalance, engine.Cmd{Kind: engine.CmdPositionMargin, UID: 10, Pos: engine.Long, Amount: -usd(t, "3")})
	w.ok(engine.Cmd{Kind: engine.CmdPositionMargin, UID: 10, Pos: engine.Long, Amount: -usd(t, "2")})
	w.reject(engine.RejectInvalidMarginMode, engine.Cmd{Kind: engine.CmdPositionMargin, UID: 11, Pos: engine.Short, Amount: usd(t, "1")})

	// A closes at 28500 (5% down, the band's edge): pnl -150 on a margin
	// of 30; maker fee 0.57 (C takes). Loss and fee beyond the margin:
	// 120.57, of which insurance pays 5 and 115.57 is bad debt. A keeps
	// its wallet (isolated).
	w.ok(w.order(10, engine.Sell, engine.Long, "28500", "0.1"))
	w.ok(w.order(12, engine.Buy, engine.Long, "28500", "0.1"))
	w.wallet(10, "968.2", "0")
	w.wallet(2, "0", "0")
	if d := w.e.BadDebt(w.ct.ID); d != usd(t, "115.57") {
		t.Fatalf("bad debt %d", d)
	}

	// a cross LONG's loss beyond its margin comes from the wallet: C holds
	// LONG 0.1 at 28500 (margin 142.5 at leverage 20); B closes its short
	// first, then C sells at 27075.
	w.ok(w.order(12, engine.Sell, engine.Long, "27075", "0.1"))
	w.ok(w.order(11, engine.Buy, engine.Short, "27075", "0.1"))
	// C: pnl -142.5 (margin 142.5 back), maker fee 0.5415 -> 0.541500
	if p := w.position(12, engine.Long); p.Size != 0 {
		t.Fatalf("C %+v", p)
	}
	if w.e.BadDebt(w.ct.ID) != usd(t, "115.57") {
		t.Fatal("cross loss became bad debt")
	}
}

func TestContractRejects(t *testing.T) {
	cfg := ctConfig()
	cfg.MaxPositionSize = "0.15"
	w := newCtWorldWith(t, cfg)
	w.deposit(10, "100")
	w.deposit(11, "100")
	c := w.order(10, engine.Buy, engine.Long, "30000", "0.1")
	c.Pos = 0
	w.reject(engine.RejectInvalidPositionSide, c)
	c.Pos = 3
	w.reject(engine.RejectInvalidPositionSide, c)
	// 0.1 at 30000 with leverage 20: 150 + 1.8 > 100
	w.reject(engine.RejectInsufficientBalance, w.order(10, engine.Buy, engine.Long, "30000", "0.1"))
	w.ok(w.order(11, engine.Buy, engine.Long, "1000", "0.1"))
	w.ok(w.order(10, engine.Sell, engine.Short, "1000", "0.1"))
	w.reject(engine.RejectPositionTooLarge, w.order(11, engine.Buy, engine.Long, "1000", "0.0501"))
	w.ok(w.order(11, engine.Buy, engine.Long, "1000", "0.05"))
	w.ok(engine.Cmd{Kind: engine.CmdCancelAll, UID: 11})
	w.reject(engine.RejectInvalidMarginMode, engine.Cmd{Kind: engine.CmdMarginMode, UID: 10, Mode: 3})
	w.reject(engine.RejectUnknownMarket, engine.Cmd{Kind: engine.CmdLeverage, UID: 10, Market: 3, Amount: 5})
	w.reject(engine.RejectNoPosition, engine.Cmd{Kind: engine.CmdPositionMargin, UID: 10, Pos: engine.Long, Amount: 5})
	// a market order on an empty book expires, reserving nothing
	w2 := newCtWorld(t)
	w2.deposit(10, "100")
	w2.ok(w2.order(10, engine.Buy, engine.Long, "", "0.001"))
	if o := w2.out.Order(); o == nil || o.Status != engine.StatusExpired {
		t.Fatalf("market order %+v", o)
	}
	w2.wallet(10, "100", "0")
}

// TestContractPresets: an open's take-profit and stop-loss presets are
// kept while it works (journaled, in snapshots and the state hash), and
// refused on a close or on the wrong side of the order's price.
func TestContractPresets(t *testing.T) {
	w := newCtWorld(t)
	w.deposit(10, "10000")
	w.deposit(11, "10000")
	c := w.order(10, engine.Buy, engine.Long, "30000", "0.1")
	c.TP, c.SL, c.TrigMark = w.price("31000"), w.price("29000"), 2
	w.ok(c)
	id := w.out.Order().OrderID
	if tp, sl, mark := w.e.Preset(w.ct.ID, id); tp != c.TP || sl != c.SL || mark != 2 {
		t.Fatalf("preset %d %d %d", tp, sl, mark)
	}
	bad := w.order(10, engine.Buy, engine.Long, "30000", "0.1")
	bad.TP = w.price("29999.9") // a LONG's take-profit below its price
	w.reject(engine.RejectInvalidTPSL, bad)
	bad = w.order(11, engine.Sell, engine.Short, "30100", "0.1")
	bad.SL = w.price("30000") // a SHORT's stop-loss below its price
	w.reject(engine.RejectInvalidTPSL, bad)
	bad.SL, bad.TrigMark = 0, 4
	w.reject(engine.RejectInvalidTPSL, bad)
	// a SHORT with presets fills the LONG: both orders finish, presets go
	sh := w.order(11, engine.Sell, engine.Short, "30000", "0.1")
	sh.TP, sh.SL = w.price("28000"), w.price("32000")
	w.ok(sh)
	if tp, sl, _ := w.e.Preset(w.ct.ID, id); tp != 0 || sl != 0 {
		t.Fatalf("a filled order keeps its preset %d %d", tp, sl)
	}
	// the fill made both orders' presets plans of the whole position, at market
	ps := w.e.Plans(w.user(10), w.ct.ID, nil)
	if len(ps) != 2 || ps[0].Kind != engine.PlanTakeProfit || ps[0].Trigger != w.price("31000") || ps[0].Mark ||
		ps[1].Kind != engine.PlanStopLoss || ps[1].Trigger != w.price("29000") || !ps[1].Mark || ps[1].Qty != 0 || ps[1].Exec != 0 {
		t.Fatalf("A's plans from its presets: %+v", ps)
	}
	if ps := w.e.Plans(w.user(11), w.ct.ID, nil); len(ps) != 2 || ps[0].Pos != engine.Short {
		t.Fatalf("B's plans from its presets: %+v", ps)
	}
	// a close has none
	cl := w.order(10, engine.Sell, engine.Long, "31000", "0.1")
	cl.TP = w.price("30000")
	w.reject(engine.RejectInvalidTPSL, cl)
	// a cancelled open's preset goes with it
	c = w.order(10, engine.Buy, engine.Long, "29500", "0.1")
	c.SL = w.price("29000")
	w.ok(c)
	id = w.out.Order().OrderID
	w.ok(engine.Cmd{Kind: engine.CmdCancel, UID: 10, OrderID: id})
	if _, sl, _ := w.e.Preset(w.ct.ID, id); sl != 0 {
		t.Fatal("a cancelled order keeps its preset")
	}
}

// TestContractFunding: the mark price is the median of bid, ask and last;
// the recorded average premium sets the rate, clamped by maxFundingRate;
// longs pay shorts rate × size × mark, to the unit; a time is settled once.
func TestContractFunding(t *testing.T) {
	w := newCtWorld(t)
	for _, uid := range []int64{10, 11, 12} {
		w.deposit(uid, "100000")
	}
	w.ok(w.order(10, engine.Buy, engine.Long, "30000", "1"))
	w.ok(w.order(11, engine.Sell, engine.Short, "30000", "1"))
	if m := w.e.MarkPrice(w.ct.ID); m != w.price("30000") {
		t.Fatalf("mark %d: the last trade with an empty book", m)
	}
	w.ok(w.order(12, engine.Buy, engine.Long, "30300", "0.1"))
	w.ok(w.order(12, engine.Sell, engine.Short, "30600", "0.1"))
	mark := w.e.MarkPrice(w.ct.ID)
	if mark != w.price("30300") {
		t.Fatalf("mark %d, want the median 30300 of 30300, 30600, 30000", mark)
	}
	idx := w.price("30000")
	avg := engine.Premium(mark, idx)
	if avg != engine.RateOne/100 {
		t.Fatalf("premium %d, want 1%%", avg)
	}
	a0, _ := w.acc.Balance(w.user(10), ctUSDT|engine.Futures)
	b0, _ := w.acc.Balance(w.user(11), ctUSDT|engine.Futures)
	// rate = clamp(0.01 + clamp(0.0001 - 0.01, ±0.0005), ±0.0075) = 0.0075:
	// the long pays 0.0075 × 1 × 30300 = 227.25 to the short.
	w.ok(engine.Cmd{Kind: engine.CmdFunding, UID: 10, OrderID: 8 * 3_600_000, Amount: engine.Amount(avg), Price: idx})
	if f := w.out.Funding; f.Rate != 750_000 || f.Mark != mark || f.TimeMs != 8*3_600_000 || f.Index != idx {
		t.Fatalf("funding record %+v", f)
	}
	a1, _ := w.acc.Balance(w.user(10), ctUSDT|engine.Futures)
	b1, _ := w.acc.Balance(w.user(11), ctUSDT|engine.Futures)
	if a0-a1 != usd(t, "227.25") || b1-b0 != usd(t, "227.25") {
		t.Fatalf("funding: long paid %d, short got %d", a0-a1, b1-b0)
	}
	if p := w.position(10, engine.Long); p.Funding != -usd(t, "227.25") {
		t.Fatalf("long's cumulative funding %d", p.Funding)
	}
	w.reject(engine.RejectAlreadySettled, engine.Cmd{Kind: engine.CmdFunding, UID: 10, OrderID: 8 * 3_600_000})
	if f := w.e.Funding(w.ct.ID); f.LastRate != 750_000 || f.LastFundingMs != 8*3_600_000 || f.Index != idx {
		t.Fatalf("after settling: %+v", f)
	}
	// no samples: the rate is the interest rate (0.01%), paid by the long
	// to the short on 1 at the mark 30300: 3.03
	w.ok(engine.Cmd{Kind: engine.CmdFunding, UID: 10, OrderID: 16 * 3_600_000})
	a2, _ := w.acc.Balance(w.user(10), ctUSDT|engine.Futures)
	if a1-a2 != usd(t, "3.03") || w.out.Funding.Rate != 10_000 {
		t.Fatalf("interest-only funding: paid %d at %d", a1-a2, w.out.Funding.Rate)
	}
	// a negative premium below the cap: shorts pay longs
	if r := engine.FundingRate(w.ct, -engine.RateOne/500); r != -200_000+50_000 {
		t.Fatalf("rate for -0.2%%: %d", r)
	}
}

// TestContractPlans: take-profit and stop-loss plans fire inside the
// command that moved the price (last or mark), place reduce-only closes
// cut to what is left of the position, and go with their position.
func TestContractPlans(t *testing.T) {
	w := newCtWorld(t)
	w.ok(engine.Cmd{Kind: engine.CmdAddUser, UID: 13})
	for _, uid := range []int64{10, 11, 12, 13} {
		w.deposit(uid, "100000")
	}
	plan := func(uid int64, ps engine.PosSide, kind uint8, trigger, exec, qty string, mark bool) engine.Cmd {
		c := engine.Cmd{Kind: engine.CmdPlan, UID: uid, Pos: ps, PlanKind: kind, Price: w.price(trigger)}
		if exec != "" {
			c.Exec = w.price(exec)
		}
		if qty != "" {
			c.Qty = w.qty(qty)
		}
		if mark {
			c.TrigMark = 1
		}
		return c
	}
	fired := func() (n int) {
		for _, p := range w.out.Plans {
			if p.Fired {
				n++
			}
		}
		return n
	}
	w.reject(engine.RejectNoPosition, plan(10, engine.Long, engine.PlanTakeProfit, "30500", "", "", false))
	// A LONG 1 and B SHORT 1 at 30000
	w.ok(w.order(10, engine.Buy, engine.Long, "30000", "1"))
	w.ok(w.order(11, engine.Sell, engine.Short, "30000", "1"))
	w.reject(engine.RejectInvalidTPSL, plan(10, engine.Long, 3, "30500", "", "", false))
	// A: take-profit of 0.4 at 30500 (market, on the last trade) and a
	// stop-loss of the whole at 29500 on the mark; B: a stop-loss at 30500
	// closing with a limit at 30600.
	w.ok(plan(10, engine.Long, engine.PlanTakeProfit, "30500", "", "0.4", false))
	tpID := w.out.Plans[0].ID
	w.ok(plan(10, engine.Long, engine.PlanStopLoss, "29500", "", "", true))
	w.ok(plan(11, engine.Short, engine.PlanStopLoss, "30500", "30600", "", false))
	if ps := w.e.Plans(w.user(10), w.ct.ID, nil); len(ps) != 2 || ps[0].ID != tpID || ps[1].Kind != engine.PlanStopLoss {
		t.Fatalf("A's plans %+v", ps)
	}
	// C bids 0.5 at 30500; D sells 0.1 into it: the last trade is 30500.
	// A's take-profit sells 0.4 at market into the rest of C's bid; B's
	// stop-loss places its limit close, which rests (no ask left).
	w.ok(w.order(12, engine.Buy, engine.Long, "30500", "0.5"))
	w.ok(w.order(13, engine.Sell, engine.Short, "30500", "0.1"))
	if n := fired(); n != 2 {
		t.Fatalf("plans fired %d, want A's take-profit and B's stop-loss: %+v", n, w.out.Plans)
	}
	if p := w.position(10, engine.Long); p.Size != w.qty("0.6") || p.Realized != usd(t, "200") {
		t.Fatalf("A's long after the take-profit: %+v", p)
	}
	if p := w.position(11, engine.Short); p.Closing != w.qty("1") {
		t.Fatalf("B's short: its limit close of the whole should work: %+v", p)
	}
	// A's stop-loss on the mark: with a bid at 29400 and an ask at 29450
	// the mark is median(29400, 29450, 30500) = 29450 <= 29500: it fires
	// when the ask comes, selling the whole 0.6 at market: 0.1 fills at
	// C's bid, the rest expires (the protection stops at 27930, no bid).
	w.ok(engine.Cmd{Kind: engine.CmdCancelAll, UID: 11})
	w.ok(w.order(12, engine.Buy, engine.Long, "29400", "0.1"))
	if n := fired(); n != 0 {
		t.Fatalf("fired on a one-sided book: %+v", w.out.Plans)
	}
	w.ok(w.order(13, engine.Sell, engine.Short, "29450", "0.1"))
	if n := fired(); n != 1 {
		t.Fatalf("A's stop-loss did not fire on the mark: %+v", w.out.Plans)
	}
	if p := w.position(10, engine.Long); p.Size != w.qty("0.5") {
		t.Fatalf("A's long after the stop-loss: %+v", p)
	}
	if ps := w.e.Plans(w.user(10), w.ct.ID, nil); len(ps) != 0 {
		t.Fatalf("A's plans after firing: %+v", ps)
	}
	// cancelling; a plan goes with its position
	w.ok(plan(11, engine.Short, engine.PlanTakeProfit, "20000", "", "", false))
	w.ok(engine.Cmd{Kind: engine.CmdPlanCancel, UID: 11, OrderID: w.out.Plans[0].ID})
	w.reject(engine.RejectUnknownOrder, engine.Cmd{Kind: engine.CmdPlanCancel, UID: 11, OrderID: 12345})
	w.ok(plan(11, engine.Short, engine.PlanTakeProfit, "20000", "", "", false))
	w.ok(w.order(13, engine.Sell, engine.Short, "29500", "1"))
	w.ok(w.order(11, engine.Buy, engine.Short, "", "1")) // B closes everything at market
	if p := w.position(11, engine.Short); p.Size != 0 {
		t.Fatalf("B's short: %+v", p)
	}
	if ps := w.e.Plans(w.user(11), w.ct.ID, nil); len(ps) != 0 {
		t.Fatalf("B's plans outlived its position: %+v", ps)
	}
}

// TestContractPlanSplit: a plan's close of a position larger than
// maxOrderSize goes out in orders of at most maxOrderSize.
func TestContractPlanSplit(t *testing.T) {
	w := newCtWorld(t)
	w.ok(engine.Cmd{Kind: engine.CmdAddUser, UID: 13})
	for _, uid := range []int64{10, 11, 12, 13} {
		w.deposit(uid, "1000000")
	}
	for i := 0; i < 2; i++ { // A LONG 150 against B, in two orders of at most 100
		w.ok(w.order(10, engine.Buy, engine.Long, "30000", "75"))
		w.ok(w.order(11, engine.Sell, engine.Short, "30000", "75"))
	}
	w.ok(engine.Cmd{Kind: engine.CmdPlan, UID: 10, Pos: engine.Long, PlanKind: engine.PlanTakeProfit, Price: w.price("30100")})
	w.ok(w.order(12, engine.Buy, engine.Long, "30100", "100"))
	w.ok(w.order(12, engine.Buy, engine.Long, "30100", "100"))
	w.ok(w.order(13, engine.Sell, engine.Short, "30100", "1")) // the last trade reaches 30100: A sells 150 in 100 + 50
	if p := w.position(10, engine.Long); p.Size != 0 {
		t.Fatalf("A's long after the split close: %+v", p)
	}
}

// TestConvertPrice: a spot price in the contract's ticks, rounded down.
func TestConvertPrice(t *testing.T) {
	coins := ctCoins()
	spot := enginetestSpot(t, coins)
	ct, _ := engine.NewContractSpec(engine.ContractBase, ctConfig(), coins[1], coins[0])
	for _, c := range []struct{ in, want engine.Price }{
		{3_000_000, 300_000}, // 30000.00 -> 30000.0
		{3_000_009, 300_000}, // 30000.09 -> 30000.0 (down)
		{3_000_010, 300_001},
		{0, 0},
	} {
		if got := engine.ConvertPrice(c.in, spot, ct); got != c.want {
			t.Errorf("ConvertPrice(%d) = %d, want %d", c.in, got, c.want)
		}
	}
	if got := engine.ConvertPrice(300_001, ct, spot); got != 3_000_010 { // the other way: finer ticks
		t.Errorf("back: %d", got)
	}
}

func enginetestSpot(t *testing.T, coins []engine.Coin) *engine.MarketSpec {
	s, err := engine.NewMarketSpec(0, engine.SpotConfig{Symbol: "BTCUSDT", BaseAsset: "BTC", QuoteAsset: "USDT", TickSize: "0.01",
		StepSize: "0.0001", MinTradeAmount: "0.0001", MaxTradeAmount: "100", TakerFeeRate: "0.001", MakerFeeRate: "0.001",
		BuyLimitPriceRatio: "0.1", SellLimitPriceRatio: "0.1", MarketBuyLimitSize: "10", MarketSellLimitSize: "10",
		MarketFallbackPriceRatio: "0.05", EnableTrade: true}, coins[1], coins[0])
	if err != nil {
		t.Fatal(err)
	}
	return s
}
