package engine_test

import (
	"runtime"
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

// The mixed stream with contracts (issue #45: "the engine's mixed stream
// with 30% contract commands costs at most 1.3x the spot-only stream per
// command, 0 allocations"): BenchmarkMixed's stream where each command is,
// with probability ctShare%, a command of the same shape on the BTCUSDT
// perpetual (60% limit orders near the touch, 10% crossing IOC or market
// orders, 30% cancels of tracked resting orders) over a contract book of
// about 3000 orders. A contract order closes the user's opposite position
// when it can (a BUY closes a SHORT with enough left to close), else opens.

const ctShare = 30

const ctBenchMid = 60_000 // 30000 at tick 0.5

// mixedCt drives the mixed stream with contracts.
type mixedCt struct {
	mx      *mixed // the spot part, on bn.e
	bn      *bench
	rnd     xorshift
	target  int
	ids     []int64
	own     []int
	alive   []bool
	pos     []engine.PositionView
	hits    int
	cancels int
}

func mixedCtOn(bn *bench, spotTarget, ctTarget int) *mixedCt {
	mc := &mixedCt{mx: mixedOn(bn, spotTarget), bn: bn, rnd: 2463534242, target: ctTarget,
		ids: make([]int64, 0, 4*ctTarget), own: make([]int, 0, 4*ctTarget), alive: make([]bool, 1, 1<<22)}
	for bn.cl.Ledger.WorkingOrders() < ctTarget {
		mc.limit(mc.rnd.next(), false)
		mc.track()
	}
	return mc
}

// posSide returns the position side of user u's order of side sd and q:
// a close of the opposite position if it has q free to close, else an open.
func (mc *mixedCt) posSide(u int, sd engine.Side, q engine.Qty) engine.PosSide {
	ui, _ := mc.bn.user(u)
	want := engine.Short // a BUY closes a SHORT
	if sd == engine.Sell {
		want = engine.Long
	}
	mc.pos = mc.bn.cl.Ledger.Positions(ui, engine.ContractBase, mc.pos[:0])
	for _, p := range mc.pos {
		if p.Side == want && p.Size-p.Closing >= q {
			return want
		}
	}
	return 3 - want
}

func (mc *mixedCt) place(u int, sd engine.Side, typ engine.OrderType, tif engine.TIF, p engine.Price, q engine.Qty) {
	ui, uid := mc.bn.user(u)
	mc.bn.apply(mc.bn.cl.Ledger, engine.Cmd{Kind: engine.CmdPlace, User: ui, UID: uid, Market: engine.ContractBase,
		Side: sd, Pos: mc.posSide(u, sd, q), Type: typ, TIF: tif, Price: p, Qty: q})
}

func (mc *mixedCt) limit(r uint64, cross bool) {
	bn := mc.bn
	u := int(r>>32) % 1000
	q := engine.Qty(10 + r>>40%90)
	off := engine.Price(1 + r>>8%64)
	if cross {
		off = -30
	}
	if r&(1<<20) == 0 {
		mc.place(u, engine.Buy, engine.Limit, engine.GTC, ctBenchMid-off, q)
	} else {
		mc.place(u, engine.Sell, engine.Limit, engine.GTC, ctBenchMid+off, q)
	}
	if v := bn.ctOut.Order(); v != nil && v.Status.Working() && len(mc.ids) < cap(mc.ids) {
		mc.ids = append(mc.ids, v.OrderID)
		mc.own = append(mc.own, u)
	}
}

func (mc *mixedCt) track() {
	for i := range mc.bn.ctOut.Updates {
		v := &mc.bn.ctOut.Updates[i]
		n := int(v.OrderID >> 10)
		for len(mc.alive) <= n {
			mc.alive = append(mc.alive, false)
		}
		mc.alive[n] = v.Status.Working()
	}
}

func (mc *mixedCt) step() {
	if mc.rnd.next()%100 >= ctShare {
		mc.mx.step()
		return
	}
	defer mc.track()
	bn, led := mc.bn, mc.bn.cl.Ledger
	r := mc.rnd.next()
	u := int(r>>32) % 1000
	switch k := r % 100; {
	case k < 60:
		mc.limit(r, led.WorkingOrders() > mc.target)
	case k < 70: // crossing IOC or market
		side := engine.Side(1 + r>>16&1)
		q := engine.Qty(10 + r>>40%200)
		if k < 65 {
			p := engine.Price(ctBenchMid + 40)
			if side == engine.Sell {
				p = ctBenchMid - 40
			}
			mc.place(u, side, engine.Limit, engine.IOC, p, q)
		} else {
			mc.place(u, side, engine.Market, 0, 0, q)
		}
	default:
		for try := 0; try < 8 && len(mc.ids) > 0; try++ {
			i := int(r>>24+uint64(try)*7919) % len(mc.ids)
			id, ui := mc.ids[i], mc.own[i]
			last := len(mc.ids) - 1
			mc.ids[i], mc.own[i] = mc.ids[last], mc.own[last]
			mc.ids, mc.own = mc.ids[:last], mc.own[:last]
			u, uid := bn.user(ui)
			if !mc.alive[id>>10] {
				continue
			}
			bn.apply(led, engine.Cmd{Kind: engine.CmdCancel, User: u, UID: uid, Market: engine.ContractBase, OrderID: id})
			mc.cancels++
			if bn.ctOut.Reject == engine.OK {
				mc.hits++
			}
			return
		}
		u, uid := bn.user(ui0(r))
		bn.apply(led, engine.Cmd{Kind: engine.CmdCancel, User: u, UID: uid, Market: engine.ContractBase, OrderID: 1 << 40})
		mc.cancels++
	}
}

// replayCt is bench.replay over the contract world: each command goes to
// its engine (contract markets: the ledger) with its own Out.
//
//go:noinline
func (bn *bench) replayCt(cmds []engine.Cmd) (trades int) {
	led := bn.cl.Ledger
	for i := range cmds {
		if i+1 < len(cmds) {
			ne := bn.e
			if cmds[i+1].Market >= engine.ContractBase {
				ne = led
			}
			ne.PrefetchAhead(cmds, i)
		}
		e, out := bn.e, &bn.out
		if cmds[i].Market >= engine.ContractBase {
			e, out = led, &bn.ctOut
		}
		bn.seq++
		e.Apply(&cmds[i], bn.seq, int64(bn.seq), out)
		e.Flush()
		trades += len(out.Trades)
	}
	return trades
}

// BenchmarkMixedContracts: one command of the mixed stream with 30%
// contract commands per op, as BenchmarkMixed measures it (the stream
// generated ahead by a second, identical world, in chunks, untimed).
func BenchmarkMixedContracts(b *testing.B) { benchMixedCt(b, false) }

// BenchmarkMixedContractsRisk: BenchmarkMixedContracts's stream over an
// engine that also holds riskPositions open positions and riskPlans
// resting take-profit and stop-loss plans in the stream's contract (issue
// #46: "checking plans and liquidations costs the engine's mixed stream
// (with 10,000 resting plans and 10,000 open positions) at most 1.2x the
// contract stream without them per command"). Compare the two with
//
//	go test -run '^$' -bench 'MixedContracts' -benchmem -count 6 ./engine/
//
// The positions belong to riskPositions more users, leveraged 2x-10x,
// cross and isolated, opened in pairs at the stream's price, funded so
// that their liquidation prices lie 9% or more away (cross ones too:
// every unit has a trigger in the contract's heaps); each has one plan,
// a take-profit or stop-loss on the last or the mark price, at market or
// a limit, triggering 15% or more away. Neither fires during the stream:
// the benchmark checks that every position is still there, untouched.
func BenchmarkMixedContractsRisk(b *testing.B) { benchMixedCt(b, true) }

const (
	riskPositions = 10_000
	riskPlans     = 10_000 // one per position
)

// riskSetup opens bn's riskPositions positions and their plans in
// ContractBase, and returns their users.
func riskSetup(tb testing.TB, bn *bench) []engine.UserIdx {
	led := bn.cl.Ledger
	must := func(c engine.Cmd) {
		bn.apply(led, c)
		out := &bn.out
		if c.Market >= engine.ContractBase {
			out = &bn.ctOut
		}
		if out.Reject != engine.OK {
			tb.Fatalf("risk setup: %s: %v", fmtCmd(&c), out.Reject)
		}
	}
	spec := led.Markets()[0]
	users := make([]engine.UserIdx, riskPositions)
	levs := [...]int64{2, 3, 5, 10}
	for i := range users {
		uid := int64(1_000_000 + i)
		users[i] = engine.UserIdx(bn.cl.Acc.NumUsers())
		must(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
		u := users[i]
		lev := levs[i/2%len(levs)]
		q := engine.Qty(10 + i/2*7919%990) // 0.001-0.1 BTC, the same for both of a pair
		n := engine.Amount(int64(ctBenchMid) * int64(q) * int64(spec.QuotePerTickStep))
		// margin, fee and a tenth of the notional: a cross account's
		// liquidation is about 11% away, an isolated position's 9.5% (10x)
		// or more
		must(engine.Cmd{Kind: engine.CmdDeposit, UID: uid, User: u, Coin: engine.CoinID(0) | engine.Futures, Amount: n/engine.Amount(lev) + n/10 + n/100})
		if i%4 >= 2 {
			must(engine.Cmd{Kind: engine.CmdMarginMode, UID: uid, User: u, Market: engine.ContractBase, Mode: engine.Isolated})
		}
		must(engine.Cmd{Kind: engine.CmdLeverage, UID: uid, User: u, Market: engine.ContractBase, Amount: engine.Amount(lev)})
		c := engine.Cmd{Kind: engine.CmdPlace, UID: uid, User: u, Market: engine.ContractBase, Type: engine.Limit, Price: ctBenchMid, Qty: q}
		if i%2 == 0 { // the first of a pair rests a LONG open, the second takes it with a SHORT
			c.Side, c.Pos, c.TIF = engine.Buy, engine.Long, engine.GTC
		} else {
			c.Side, c.Pos, c.TIF = engine.Sell, engine.Short, engine.IOC
		}
		must(c)
		if i%2 == 1 && (len(bn.ctOut.Trades) != 1 || bn.ctOut.Trades[0].Qty != q) {
			tb.Fatalf("risk setup: pair %d did not trade: %+v", i/2, bn.ctOut.Trades)
		}
	}
	for i, u := range users {
		pos := engine.Long + engine.PosSide(i%2)
		// LONG: take-profit 15% or more above, stop-loss 15% or more
		// below (beyond its liquidation price: never reached); a SHORT the
		// other way round
		kind := engine.PlanTakeProfit + uint8(i/2%2)
		up := (kind == engine.PlanTakeProfit) == (pos == engine.Long)
		far := engine.Price(ctBenchMid*15/100 + i%1000)
		trigger := ctBenchMid - far
		if up {
			trigger = ctBenchMid + far
		}
		c := engine.Cmd{Kind: engine.CmdPlan, UID: 1_000_000 + int64(i), User: u, Market: engine.ContractBase, Pos: pos, PlanKind: kind,
			Price: trigger, TrigMark: uint8(i / 4 % 2)}
		if i/8%2 == 1 {
			c.Exec = trigger // a limit close at the trigger
		}
		must(c)
	}
	return users
}

// checkRiskSetup checks that the stream left riskSetup's positions alone:
// none liquidated, none closed by a plan (a limit close would be working).
func checkRiskSetup(tb testing.TB, bn *bench, users []engine.UserIdx) {
	var ps []engine.PositionView
	for i, u := range users {
		ps = bn.cl.Ledger.Positions(u, engine.ContractBase, ps[:0])
		if len(ps) != 1 || ps[0].Side != engine.Long+engine.PosSide(i%2) || ps[0].Closing != 0 {
			tb.Fatalf("risk user %d's position changed during the stream: %+v", i, ps)
		}
	}
}

func benchMixedCt(b *testing.B, risk bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	room := max(mixedWarmChunk, min(b.N, mixedChunk))
	var cmds []engine.Cmd
	cmds = make([]engine.Cmd, 0, room)
	gen, run := newCtBench(b, 1000), newCtBench(b, 1000)
	var riskUsers []engine.UserIdx
	if risk { // the same on both, before the stream is recorded
		riskUsers = riskSetup(b, gen)
		riskSetup(b, run)
	}
	gen.rec = &cmds
	mc := mixedCtOn(gen, 10_000, 3_000)
	run.replayCt(cmds)
	next := func(n int) {
		cmds = cmds[:0]
		for range n {
			mc.step()
		}
	}
	for range 4 { // warm-up: 200k commands
		next(mixedWarmChunk)
		run.replayCt(cmds)
	}
	ctCmds, trades := 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += len(cmds) {
		b.StopTimer()
		next(min(mixedChunk, b.N-done))
		for i := range cmds {
			if cmds[i].Market >= engine.ContractBase {
				ctCmds++
			}
		}
		b.StartTimer()
		trades += run.replayCt(cmds)
	}
	b.StopTimer()
	if got, want := engine.StateHash(run.cl.Acc, run.cl.All), engine.StateHash(gen.cl.Acc, gen.cl.All); got != want {
		b.Fatalf("measured engines' state hash %x differs from the generator's %x", got, want)
	}
	b.ReportMetric(float64(ctCmds)/float64(b.N), "contract/op")
	b.ReportMetric(float64(run.e.WorkingOrders()), "resting")
	b.ReportMetric(float64(run.cl.Ledger.WorkingOrders()), "ct-resting")
	b.ReportMetric(float64(trades)/float64(b.N), "trades/op")
	b.ReportMetric(float64(mc.hits+mc.mx.hits)/float64(max(mc.cancels+mc.mx.cancels, 1)), "cancel-hit-rate")
	if risk {
		checkRiskSetup(b, run, riskUsers)
		b.ReportMetric(float64(run.cl.Ledger.OpenPositions()), "positions")
	}
}

// TestMixedContractsStreamInvariants runs the benchmark's stream for a
// while and checks the whole-state invariants, so that the benchmark
// measures a stream that works (opens, closes, fills on both worlds).
func TestMixedContractsStreamInvariants(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	bn := newCtBench(t, 1000)
	mc := mixedCtOn(bn, 10_000, 3_000)
	closes := 0
	for i := 0; i < n; i++ {
		mc.step()
		for k := range bn.ctOut.Trades {
			if tr := &bn.ctOut.Trades[k]; tr.TakerSide == engine.Buy && tr.TakerPos == engine.Short || tr.TakerSide == engine.Sell && tr.TakerPos == engine.Long {
				closes++
			}
		}
	}
	if err := engine.CheckInvariants(bn.cl.Acc, bn.cl.All); err != nil {
		t.Fatal(err)
	}
	if closes == 0 || bn.cl.Ledger.WorkingOrders() < 1000 {
		t.Fatalf("stream too tame: %d closing takers, %d contract orders resting", closes, bn.cl.Ledger.WorkingOrders())
	}
	_ = enginetest.ContractShare
}
