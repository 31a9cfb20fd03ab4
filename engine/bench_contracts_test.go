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
func BenchmarkMixedContracts(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	room := max(mixedWarmChunk, min(b.N, mixedChunk))
	var cmds []engine.Cmd
	cmds = make([]engine.Cmd, 0, room)
	gen, run := newCtBench(b, 1000), newCtBench(b, 1000)
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
