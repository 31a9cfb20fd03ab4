package engine_test

import (
	"math"
	"testing"

	"github.com/weexcore/exchange/engine"
)

// Engine bugs the contract reference model found, each kept as a minimal
// regression test.

// bugWorld is one engine owning the contract of ctConfig and a BTCUSDT
// spot market (id 1), with users 1 (fees), 2 (insurance), 10, 11, 12 funded in
// both USDT wallets and spot BTC.
func bugWorld(t *testing.T, cfg engine.ContractConfig) (*bugW, *engine.MarketSpec) {
	t.Helper()
	coins := ctCoins()
	ct, err := engine.NewContractSpec(engine.ContractBase, cfg, coins[1], coins[0])
	if err != nil {
		t.Fatal(err)
	}
	spot, err := engine.NewMarketSpec(1, engine.SpotConfig{Symbol: "BTCUSDT", BaseAsset: "BTC", QuoteAsset: "USDT",
		TickSize: "0.1", StepSize: "0.0001", MinTradeAmount: "0.0001", MaxTradeAmount: "100", TakerFeeRate: "0.002",
		MakerFeeRate: "0.001", BuyLimitPriceRatio: "0.1", SellLimitPriceRatio: "0.1", MarketBuyLimitSize: "100",
		MarketSellLimitSize: "100", MarketFallbackPriceRatio: "0.05", EnableTrade: true}, coins[1], coins[0])
	if err != nil {
		t.Fatal(err)
	}
	w := &bugW{ctWorld{t: t, acc: engine.NewAccounts(coins), ct: ct}}
	w.e = engine.New(0, w.acc, []*engine.MarketSpec{spot, ct}, 1)
	w.e.SetInsuranceUID(2)
	for _, uid := range []int64{1, 2, 10, 11, 12} {
		w.ok(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
	}
	for _, uid := range []int64{10, 11, 12} {
		w.ok(engine.Cmd{Kind: engine.CmdDeposit, UID: uid, Coin: ctUSDT | engine.Futures, Amount: usd(t, "100000")})
		w.ok(engine.Cmd{Kind: engine.CmdDeposit, UID: uid, Coin: ctUSDT, Amount: usd(t, "100000")})
		w.ok(engine.Cmd{Kind: engine.CmdDeposit, UID: uid, Coin: 1, Amount: 10 * 100_000_000})
	}
	return w, spot
}

// bugW is ctWorld without its snapshot round trips (which know only the
// contract market).
type bugW struct{ ctWorld }

func (w *bugW) apply(c engine.Cmd) engine.Reject {
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
	return w.out.Reject
}

func (w *bugW) ok(c engine.Cmd) {
	w.t.Helper()
	if r := w.apply(c); r != engine.OK {
		w.t.Fatalf("command %d %+v: %v", w.seq, c, r)
	}
}

func (w *bugW) reject(want engine.Reject, c engine.Cmd) {
	w.t.Helper()
	if r := w.apply(c); r != want {
		w.t.Errorf("command %d %+v: got %v, want %v", w.seq, c, r, want)
	}
}

// TestBugSpotTradeKeepsContractFields: Engine.fill (spot) writes a trade
// field by field into Out.Trades' reused buffer and never clears the
// contract fields (TakerPos, MakerPos, TakerPnl, MakerPnl). When the Out
// held a contract fill before (one engine owning a spot and a contract
// market, or any Out reused across engines), the spot trade keeps
// TakerPos != 0: Trade.NumBills and AppendBills then treat it as a
// contract fill and its four trade_in/trade_out bills are lost from the
// command's finance records (their totals did change).
func TestBugSpotTradeKeepsContractFields(t *testing.T) {
	w, spot := bugWorld(t, ctConfig())
	w.ok(w.order(11, engine.Sell, engine.Short, "30000", "0.1"))
	w.ok(w.order(10, engine.Buy, engine.Long, "30000", "0.1"))
	if len(w.out.Trades) != 1 || w.out.Trades[0].TakerPos != engine.Long {
		t.Fatalf("contract fill: %+v", w.out.Trades)
	}
	w.ok(engine.Cmd{Kind: engine.CmdPlace, UID: 11, Market: spot.ID, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC,
		Price: 300_000, Qty: 1000})
	w.ok(engine.Cmd{Kind: engine.CmdPlace, UID: 12, Market: spot.ID, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC,
		Price: 300_000, Qty: 1000})
	if len(w.out.Trades) != 1 {
		t.Fatalf("spot fill: %d trades", len(w.out.Trades))
	}
	tr := w.out.Trades[0]
	if tr.TakerPos != 0 || tr.MakerPos != 0 || tr.TakerPnl != 0 || tr.MakerPnl != 0 {
		t.Errorf("spot trade has contract fields: TakerPos %d MakerPos %d TakerPnl %d MakerPnl %d", tr.TakerPos, tr.MakerPos, tr.TakerPnl, tr.MakerPnl)
	}
	if n := tr.NumBills(); n != 4 {
		t.Errorf("spot trade makes %d bills, want 4 (trade_out and trade_in for each side)", n)
	}
}

// TestBugFirstOpenBeyondMaxPosition: contractHold checks maxPositionSize
// only when the user already has an account in the contract (a != nil),
// so a user's first open of more than maxPositionSize (possible whenever
// maxPositionSize < maxOrderSize) is accepted, while the same open by a
// user who merely changed a setting before is refused.
func TestBugFirstOpenBeyondMaxPosition(t *testing.T) {
	cfg := ctConfig()
	cfg.MaxPositionSize = "0.5" // below maxOrderSize 100
	w, _ := bugWorld(t, cfg)
	// user 11 has an account (a leverage change): refused
	w.ok(engine.Cmd{Kind: engine.CmdLeverage, UID: 11, Amount: 20})
	w.reject(engine.RejectPositionTooLarge, w.order(11, engine.Buy, engine.Long, "30000", "0.6"))
	// user 10 has none: the same order must be refused too
	w.reject(engine.RejectPositionTooLarge, w.order(10, engine.Buy, engine.Long, "30000", "0.6"))
}

// TestBugOpenHoldOverflow: openHold adds ceil(notional/lev) and the taker
// fee without an overflow check (and ceilDiv's a+b-1 can overflow too).
// Before a contract's first trade there is no price band, so an open at a
// price whose notional fits an int64 but whose hold does not gets a
// negative reservation: the reserve "succeeds" and raises the user's
// available balance, creating money.
func TestBugOpenHoldOverflow(t *testing.T) {
	w, _ := bugWorld(t, ctConfig())
	w.ok(engine.Cmd{Kind: engine.CmdLeverage, UID: 10, Amount: 1})
	// notional = price * qty * QuotePerTickStep; qty 1 step, so the price
	// (in ticks) is the largest with notional <= MaxInt64
	p := engine.Price(math.MaxInt64 / int64(w.ct.QuotePerTickStep))
	c := engine.Cmd{Kind: engine.CmdPlace, UID: 10, Side: engine.Buy, Pos: engine.Long, Type: engine.Limit, TIF: engine.GTC, Price: p, Qty: 1}
	before, _ := w.acc.Balance(w.user(10), ctUSDT|engine.Futures)
	c.User, c.Market = w.user(10), w.ct.ID
	w.seq++
	w.e.Apply(&c, w.seq, int64(w.seq)*1000, &w.out)
	w.e.Flush()
	after, _ := w.acc.Balance(w.user(10), ctUSDT|engine.Futures)
	if w.out.Reject != engine.RejectOverflow && w.out.Reject != engine.RejectInsufficientBalance {
		t.Errorf("an open whose hold overflows: got %v, want AMOUNT_OVERFLOW (available %d -> %d)", w.out.Reject, before, after)
	}
	if after > before {
		t.Errorf("available futures USDT rose from %d to %d by placing an order", before, after)
	}
	if err := engine.CheckInvariants(w.acc, []*engine.Engine{w.e}); err != nil {
		t.Error(err)
	}
}
