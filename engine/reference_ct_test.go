package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

// The differential test of contracts: the contract world (the standard
// spot markets on shards, three perpetuals on the ledger) runs a mixed
// stream, about 30% contract commands, through the engines and the
// reference model (enginetest/refct.go). After every command the events
// and rejects are compared, and every user's positions, settings in each
// contract and both wallets of every coin, and each contract's bad debt;
// periodically the whole state (books, orders, the state hash with the
// positions' encoding) and the invariants.

// ctStats counts what the contract part of a stream exercised.
type ctStats struct {
	cmds, fills, opens, closes, insurance, badDebt, crossCover int
	transfers, levOK, modeOK, marginOK                         int
	liquidations, takeovers, adlFills, liqIncome, liqCmds      int
}

func (s *ctStats) count(c *engine.Cmd, o *engine.Out) {
	if c.Market >= engine.ContractBase || c.Kind >= engine.CmdTransfer {
		s.cmds++
	}
	liq := false
	for i := range o.Updates {
		v := &o.Updates[i]
		if v.Status != engine.StatusFilled {
			continue
		}
		switch opens := v.Side == engine.Buy == (v.Pos == engine.Long); {
		case v.Kind == engine.KindLiquidation && !opens:
			s.liquidations++
			liq = true
		case v.Kind == engine.KindLiquidation:
			s.takeovers++
		case v.Kind == engine.KindADL:
			s.adlFills++
		}
	}
	if liq {
		s.liqCmds++
	}
	for i := range o.Trades {
		if o.Trades[i].TakerPos != 0 {
			s.fills++
		}
	}
	for i := range o.Bills {
		switch o.Bills[i].Biz {
		case engine.BizOpenLong, engine.BizOpenShort:
			s.opens++
		case engine.BizCloseLong, engine.BizCloseShort:
			s.closes++
		case engine.BizInsurance:
			s.insurance++
		case engine.BizLiquidationIncome:
			s.liqIncome++
		}
	}
	if o.Reject != engine.OK {
		return
	}
	switch c.Kind {
	case engine.CmdTransfer:
		s.transfers++
	case engine.CmdLeverage:
		s.levOK++
	case engine.CmdMarginMode:
		s.modeOK++
	case engine.CmdPositionMargin:
		s.marginOK++
	}
}

func newCtHarness(t testing.TB, shards int) *harness {
	coins := enginetest.Coins()
	specs := enginetest.Specs(coins, enginetest.MarketConfigs())
	cts := enginetest.ContractSpecs(coins, enginetest.WorldContractConfigs())
	ref := enginetest.NewRef(coins, enginetest.MarketConfigs(), enginetest.FeeUID)
	for i, c := range enginetest.WorldContractConfigs() {
		ref.AddContract(engine.ContractBase+engine.MarketID(i), c)
	}
	ref.InsUID = enginetest.InsuranceUID
	return &harness{t: t, cl: enginetest.NewContractCluster(shards), specs: specs, ref: ref, ct: true,
		pr: &enginetest.Printer{Coins: coins, Specs: specs, Contracts: cts}, ts: 1_700_000_000_000}
}

// diffContracts compares what a command may change in contracts: every
// user's positions, settings and wallets, and each contract's bad debt.
func (h *harness) diffContracts() string {
	var sb strings.Builder
	acc, led := h.cl.Acc, h.cl.Ledger
	var got []engine.PositionView
	for i := range h.ref.Users {
		u := engine.UserIdx(i)
		got = led.Positions(u, engine.AllMarkets, got[:0])
		// liquidation prices (a bisection each in the reference) every
		// 32nd command: the triggers themselves are checked after every
		// one, by the liquidations both sides make
		liq := h.seq%32 == 0
		want := h.ref.Positions(u, liq)
		for k := range got {
			if !liq {
				got[k].LiqPrice = 0
			}
		}
		if len(got) != len(want) {
			fmt.Fprintf(&sb, "uid %d: got %d positions %+v, want %d %+v\n", h.ref.Users[i].UID, len(got), got, len(want), want)
		} else {
			for k := range got {
				if got[k] != want[k] {
					fmt.Fprintf(&sb, "uid %d position %d:\n got  %+v\n want %+v\n", h.ref.Users[i].UID, k, got[k], want[k])
				}
			}
		}
		for _, m := range h.ref.Contracts {
			gm, gl, gs, ok := led.Settings(u, m.ID)
			wm, wl, ws := h.ref.Settings(u, m.ID)
			if !ok || gm != wm || gl != wl || gs != ws {
				fmt.Fprintf(&sb, "uid %d %s settings: got %v %d/%d (%v), want %v %d/%d\n", h.ref.Users[i].UID, m.Symbol, gm, gl, gs, ok, wm, wl, ws)
			}
		}
		for c := range h.ref.Coins {
			for _, w := range []engine.CoinID{engine.CoinID(c), engine.CoinID(c) | engine.Futures} {
				ga, gf := acc.Balance(u, w)
				wa, wf := h.ref.Balance(u, w)
				if int64(ga) != wa || int64(gf) != wf {
					fmt.Fprintf(&sb, "uid %d %s wallet %d: got avail %d frozen %d, want avail %d frozen %d\n",
						h.ref.Users[i].UID, h.ref.Coins[c].Name, w>>15, ga, gf, wa, wf)
				}
			}
		}
	}
	for _, m := range h.ref.Contracts {
		if got, want := led.BadDebt(m.ID), m.BadDebt; int64(got) != want {
			fmt.Fprintf(&sb, "%s bad debt: got %d, want %d\n", m.Symbol, got, want)
		}
		if b := m.PnLBalance(); b != 0 {
			fmt.Fprintf(&sb, "%s: the reference's realized PnL plus short minus long open value is %d, want 0\n", m.Symbol, b)
		}
	}
	return sb.String()
}

// runCtStream runs n commands of the contract world's stream of seed over
// shards market shards, restoring from snapshots every snapEvery commands
// (0: never).
func runCtStream(t *testing.T, seed uint64, n, shards, snapEvery int) *harness {
	h := newCtHarness(t, shards)
	g := enginetest.NewContractGen(seed, h.ref, 40)
	for _, c := range g.Setup() {
		if !h.step(c) {
			t.FailNow()
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
		if engine.Invariants || i%1000 == 999 {
			if err := h.checkInvariants(); err != nil {
				t.Fatalf("after command seq %d %s: %v", h.seq, fmtCmd(&c), err)
			}
		}
		if i%5000 == 4999 || i == n-1 {
			if d := h.diffState(); d != "" {
				t.Fatalf("state after command seq %d (seed %d) differs:\n%s", h.seq, seed, d)
			}
		}
		for _, m := range h.ref.AllMarkets() {
			h.maxBook = max(h.maxBook, len(m.Orders))
		}
		for _, m := range h.ref.Contracts {
			if m.BadDebt > 0 {
				h.ctSt.badDebt++
			}
		}
		if snapEvery > 0 && i%snapEvery == snapEvery-1 {
			h.restore()
		}
	}
	return h
}

// ctStreamLen is each contract stream's length: four streams make >= 100k
// commands in the normal build.
func ctStreamLen(t *testing.T) int {
	switch {
	case testing.Short():
		return 5_000
	case engine.Invariants:
		return 8_000
	}
	return 27_000
}

// TestReferenceStreamContracts runs four seeds of the contract world's
// mixed stream (one engine; two market shards; two shards restored from
// snapshots every 4000 commands; more users over one shard) against the
// reference model.
func TestReferenceStreamContracts(t *testing.T) {
	n := ctStreamLen(t)
	for _, tc := range []struct {
		seed             uint64
		shards, snapshot int
	}{{11, 1, 0}, {12, 2, 0}, {13, 2, 4000}, {14, 1, 0}} {
		t.Run(fmt.Sprintf("seed%d", tc.seed), func(t *testing.T) {
			h := runCtStream(t, tc.seed, n, tc.shards, tc.snapshot)
			h.reportCt(t)
		})
	}
}

// reportCt logs what a contract stream exercised and fails if it was too
// tame to prove anything.
func (h *harness) reportCt(t *testing.T) {
	h.report(t)
	if t.Failed() {
		return
	}
	s := &h.ctSt
	t.Logf("contracts: %d commands, %d fills (%d open and %d close sides), %d transfers, %d leverage, %d margin-mode and %d position-margin changes accepted, %d insurance payouts, bad debt standing after %d commands",
		s.cmds, s.fills, s.opens, s.closes, s.transfers, s.levOK, s.modeOK, s.marginOK, s.insurance, s.badDebt)
	t.Logf("liquidations: %d positions after %d commands, %d insurance takeovers, %d ADL fills, %d liquidation_income bills",
		s.liquidations, s.liqCmds, s.takeovers, s.adlFills, s.liqIncome)
	if testing.Short() {
		return
	}
	for _, r := range []engine.Reject{engine.RejectInvalidPositionSide, engine.RejectNoPosition, engine.RejectReduceOnly,
		engine.RejectPositionTooLarge, engine.RejectInvalidLeverage, engine.RejectPositionExists, engine.RejectInvalidMarginMode,
		engine.RejectInvalidRules} {
		if h.rejects[r] == 0 {
			t.Errorf("the stream never produced %v; it proves less than it should", r)
		}
	}
	if int(h.seq) > 0 && s.cmds < int(h.seq)/5 || s.fills < s.cmds/10 || s.closes < s.fills/5 || s.transfers == 0 || s.levOK == 0 || s.modeOK == 0 || s.marginOK == 0 {
		t.Errorf("the contract part of the stream is too tame")
	}
	if s.liquidations < 20 || s.takeovers == 0 || s.adlFills == 0 || s.liqIncome == 0 {
		t.Errorf("the stream liquidates too little: %d positions, %d takeovers, %d ADL fills, %d liquidation_income bills",
			s.liquidations, s.takeovers, s.adlFills, s.liqIncome)
	}
}
