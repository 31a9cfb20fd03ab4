package engine_test

import (
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

// TestSetRules: CmdSetRules installs the staged spec at its sequence
// number: a trade after it pays the new fee, and trading can be switched
// off; without a staged spec, with a changed tick size, or on another
// shard's market it is rejected and nothing changes.
func TestSetRules(t *testing.T) {
	cl := enginetest.NewCluster(2)
	var out engine.Out
	seq := uint64(0)
	apply := func(c engine.Cmd) engine.Reject {
		seq++
		e := cl.Route(&c)
		e.Apply(&c, seq, int64(seq), &out)
		e.Flush()
		return out.Reject
	}
	for _, uid := range []int64{enginetest.FeeUID, 10, 11} {
		apply(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
	}
	apply(engine.Cmd{Kind: engine.CmdDeposit, UID: 10, User: 1, Coin: 0, Amount: 1_000_000_000})
	apply(engine.Cmd{Kind: engine.CmdDeposit, UID: 11, User: 2, Coin: 1, Amount: 100_000_000})
	configs := enginetest.MarketConfigs()
	respec := func(f func(c *engine.SpotConfig)) *engine.MarketSpec {
		c := configs[0]
		f(&c)
		return enginetest.Specs(enginetest.Coins(), []engine.SpotConfig{c})[0]
	}
	m := engine.MarketID(0)
	owner := cl.Route(&engine.Cmd{Kind: engine.CmdSetRules, Market: m})
	old := owner.Spec(m)

	if r := apply(engine.Cmd{Kind: engine.CmdSetRules, Market: m}); r != engine.RejectInvalidRules {
		t.Fatalf("without a staged spec: got %v, want INVALID_RULES", r)
	}
	owner.StageRules(respec(func(c *engine.SpotConfig) { c.TickSize = "0.1" }))
	if r := apply(engine.Cmd{Kind: engine.CmdSetRules, Market: m}); r != engine.RejectInvalidRules || owner.Spec(m) != old {
		t.Fatalf("a changed tick size: got %v, want INVALID_RULES and the old rules kept", r)
	}
	for _, e := range cl.Engines {
		if e != owner {
			e.StageRules(respec(func(*engine.SpotConfig) {}))
			c := engine.Cmd{Kind: engine.CmdSetRules, Market: m}
			seq++
			if e.Apply(&c, seq, int64(seq), &out); out.Reject != engine.RejectUnknownMarket {
				t.Fatalf("on another shard: got %v, want INVALID_SYMBOL", out.Reject)
			}
		}
	}

	cheap := respec(func(c *engine.SpotConfig) { c.TakerFeeRate, c.MakerFeeRate = "0", "0" })
	owner.StageRules(cheap)
	if r := apply(engine.Cmd{Kind: engine.CmdSetRules, Market: m}); r != engine.OK || out.Rules != cheap || owner.Spec(m) != cheap {
		t.Fatalf("new fees: got %v (rules %p), want OK and the staged spec installed", r, out.Rules)
	}
	apply(engine.Cmd{Kind: engine.CmdPlace, UID: 11, User: 2, Market: m, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 10000})
	apply(engine.Cmd{Kind: engine.CmdPlace, UID: 10, User: 1, Market: m, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 10000})
	if len(out.Trades) != 1 || out.Trades[0].TakerFee != 0 || out.Trades[0].MakerFee != 0 {
		t.Fatalf("a trade under zero fees: %+v", out.Trades)
	}
	owner.StageRules(respec(func(c *engine.SpotConfig) { c.EnableTrade = false }))
	apply(engine.Cmd{Kind: engine.CmdSetRules, Market: m})
	if r := apply(engine.Cmd{Kind: engine.CmdPlace, UID: 10, User: 1, Market: m, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 10000}); r != engine.RejectTradingDisabled {
		t.Fatalf("placing after trading was switched off: got %v, want TRADING_DISABLED", r)
	}
	if err := engine.CheckInvariants(cl.Acc, cl.All); err != nil {
		t.Fatal(err)
	}
}
