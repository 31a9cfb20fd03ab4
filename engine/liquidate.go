package engine

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
)

// Liquidation (docs/DESIGN.md, "Liquidation", has the rule exact to the
// unit). A risk unit is an isolated position or a user's cross account in
// a margin coin. After every command of the ledger shard, the underwater
// unit with the smallest key is liquidated until none is: its user's
// orders are cancelled and its positions closed by a liquidation order
// (types 9/10) at the bankruptcy price, the rest taken over by the
// insurance account or closed against the most profitable opposite
// positions (auto-deleveraging, types 7/8).
//
// Index. Equity minus maintenance of a unit whose positions are in one
// contract is f(p) = k0 + N(p, long - short) - mm(p, long + short), which
// is monotone in the mark p: so "underwater" is "mark at or below a
// trigger" (falling) or "at or above" (rising), and the triggers of a
// contract sit in two heaps whose heads are all a command looks at. A
// user's triggers are worked out again only after a command touched the
// user's futures wallet or positions (touch). A cross account with
// positions in several contracts has no single trigger (it moves with the
// other contracts' marks): those accounts, kept per margin coin, are
// checked exactly after every command.

// OrderKind marks the orders the engine places itself.
type OrderKind uint8

const (
	KindNormal      OrderKind = 0
	KindLiquidation OrderKind = 1 // closes: types 9/10; the insurance account's takeover open
	KindADL         OrderKind = 2 // auto-deleveraging closes: types 7/8
)

// Unit kinds, in key order within a user.
const (
	unitCross = 0
	unitLong  = 1 // isolated LONG
	unitShort = 2 // isolated SHORT
)

// liqEntry is one unit's trigger in a contract's heaps.
type liqEntry struct {
	trigger Price
	u       UserIdx
	kind    uint8
	rising  bool
	at      int32 // 1 + its index in its heap; 0: in none
}

// liqHeap holds a contract's triggers of one direction: falling, the
// highest trigger first; rising, the lowest first.
type liqHeap struct {
	rising bool
	h      []*liqEntry
}

func (q *liqHeap) less(i, j int) bool {
	a, b := q.h[i], q.h[j]
	if a.trigger != b.trigger {
		return (a.trigger < b.trigger) == q.rising
	}
	if a.u != b.u {
		return a.u < b.u
	}
	return a.kind < b.kind
}

func (q *liqHeap) swap(i, j int) {
	q.h[i], q.h[j] = q.h[j], q.h[i]
	q.h[i].at, q.h[j].at = int32(i+1), int32(j+1)
}

func (q *liqHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *liqHeap) down(i int) {
	n := len(q.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && q.less(r, l) {
			c = r
		}
		if !q.less(c, i) {
			return
		}
		q.swap(i, c)
		i = c
	}
}

func (q *liqHeap) push(x *liqEntry) {
	x.at = int32(len(q.h) + 1)
	q.h = append(q.h, x)
	q.up(len(q.h) - 1)
}

func (q *liqHeap) remove(x *liqEntry) {
	i, n := int(x.at)-1, len(q.h)-1
	if i != n {
		q.swap(i, n)
	}
	q.h[n] = nil
	q.h = q.h[:n]
	if i != n {
		q.down(i)
		q.up(i)
	}
	x.at = 0
}

// fix restores the heap after x's trigger changed.
func (q *liqHeap) fix(x *liqEntry) {
	q.down(int(x.at) - 1)
	q.up(int(x.at) - 1)
}

// riskState is the ledger shard's liquidation index.
type riskState struct {
	groups []*riskGroup // contracts by margin coin
	// users touched since their triggers were last worked out
	dirty   []UserIdx
	stamp   []uint32 // stamp[u] == epoch: u is in dirty
	epoch   uint32
	rebuild bool // work out every user's triggers (after a snapshot load or a rules change)
	cands   []liqCand
	adl     []adlCand
	closes  []posRef
}

// riskGroup is the contracts of one margin coin.
type riskGroup struct {
	coin    CoinID
	markets []*market // by id
	multi   []UserIdx // cross accounts with positions in several of them, ascending
}

// liqCand is an underwater unit (m: the isolated position's contract; nil
// for a cross account).
type liqCand struct {
	u    UserIdx
	kind uint8
	m    *market
	g    *riskGroup
}

func (a liqCand) key(b liqCand) int {
	if c := cmp.Compare(a.u, b.u); c != 0 {
		return c
	}
	if c := cmp.Compare(a.kind, b.kind); c != 0 {
		return c
	}
	if a.m == nil || b.m == nil {
		return cmp.Compare(a.g.coin, b.g.coin)
	}
	return cmp.Compare(a.m.spec.ID, b.m.spec.ID)
}

// newRisk makes the index of e's contract markets (nil without any).
func newRisk(e *Engine) *riskState {
	var rs *riskState
	for _, m := range e.owned {
		if m.ct == nil {
			continue
		}
		if rs == nil {
			rs = &riskState{epoch: 1}
		}
		var g *riskGroup
		for _, x := range rs.groups {
			if x.coin == m.spec.Margin {
				g = x
			}
		}
		if g == nil {
			g = &riskGroup{coin: m.spec.Margin}
			rs.groups = append(rs.groups, g)
		}
		g.markets = append(g.markets, m)
		m.ct.liq = [2]liqHeap{{}, {rising: true}}
	}
	return rs
}

// touch notes that u's futures wallet or positions changed.
func (e *Engine) touch(u UserIdx) {
	rs := e.risk
	if rs == nil {
		return
	}
	if int(u) >= len(rs.stamp) {
		rs.stamp = append(rs.stamp, make([]uint32, int(u)+1-len(rs.stamp)+len(rs.stamp)/2)...)
	}
	if rs.stamp[u] != rs.epoch {
		rs.stamp[u] = rs.epoch
		rs.dirty = append(rs.dirty, u)
	}
}

// rekeyDirty works out the triggers of every touched user.
func (e *Engine) rekeyDirty() {
	rs := e.risk
	if rs.rebuild {
		rs.rebuild = false
		for u := UserIdx(0); int(u) < e.acc.NumUsers(); u++ {
			e.touch(u)
		}
	}
	rs.epoch++ // rekey touches no one
	for _, u := range rs.dirty {
		for _, g := range rs.groups {
			e.rekey(g, u)
		}
	}
	rs.dirty = rs.dirty[:0]
}

// rekey works out user u's triggers in group g.
func (e *Engine) rekey(g *riskGroup, u UserIdx) {
	var one *market // the one contract of u's cross positions, if one
	n := 0
	var iso Amount // u's isolated margins in g
	for _, m := range g.markets {
		a := m.acct(u)
		if a == nil {
			continue
		}
		if a.mode == Isolated {
			iso += a.pos[0].margin + a.pos[1].margin
		}
		for i := range a.pos {
			x := &a.liq[unitLong+i]
			if p := &a.pos[i]; a.mode == Isolated && p.size > 0 {
				e.setTrigger(m, x, u, unitLong+uint8(i), isoFn(m, p, PosSide(i+1)))
			} else if x.at > 0 {
				m.unindex(x)
			}
		}
		if a.mode == Cross && (a.pos[0].size > 0 || a.pos[1].size > 0) {
			one = m
			n++
		} else if a.liq[unitCross].at > 0 {
			m.unindex(&a.liq[unitCross])
		}
	}
	switch {
	case n == 1:
		a := one.acct(u)
		d := Amount(e.acc.cell(u, g.coin).total.Load()) - iso
		e.setTrigger(one, &a.liq[unitCross], u, unitCross, crossFn(one, a, d))
	case n >= 2: // checked exactly after every command instead
		for _, m := range g.markets {
			if a := m.acct(u); a != nil {
				m.unindex(&a.liq[unitCross])
			}
		}
	}
	if n >= 2 || len(g.multi) > 0 {
		i, found := slices.BinarySearch(g.multi, u)
		switch {
		case n >= 2 && !found:
			g.multi = slices.Insert(g.multi, i, u)
		case n < 2 && found:
			g.multi = slices.Delete(g.multi, i, i+1)
		}
	}
}

// crossBase returns D of u's cross account in g: the futures wallet's
// total less u's isolated margins in g's contracts.
func (e *Engine) crossBase(g *riskGroup, u UserIdx) Amount {
	d := Amount(e.acc.cell(u, g.coin).total.Load())
	for _, m := range g.markets {
		if a := m.acct(u); a != nil && a.mode == Isolated {
			d -= a.pos[0].margin + a.pos[1].margin
		}
	}
	return d
}

func (m *market) unindex(x *liqEntry) {
	if x.at > 0 {
		m.ct.liq[b2i(x.rising)].remove(x)
	}
}

// setTrigger indexes unit x of u in m, whose equity less maintenance is f.
func (e *Engine) setTrigger(m *market, x *liqEntry, u UserIdx, kind uint8, f unitFn) {
	t, rising, ok := f.trigger()
	if !ok {
		m.unindex(x)
		return
	}
	if x.at > 0 && x.rising != rising {
		m.unindex(x)
	}
	x.u, x.kind = u, kind
	q := &m.ct.liq[b2i(rising)]
	if x.at == 0 {
		x.trigger, x.rising = t, rising
		q.push(x)
	} else if x.trigger != t {
		x.trigger = t
		q.fix(x)
	}
}

// unitFn is f(p) = k0 + N(p, sl - ss) - mm(p, sl + ss): a unit's equity
// less its maintenance margin at mark p.
type unitFn struct {
	k0     Amount
	sl, ss Qty
	qpts   Amount
	mmr    int64
}

// isoFn is isolated position p's (side sd of m) unit function: k0 is its
// margin less (LONG) or plus (SHORT) its open value.
func isoFn(m *market, p *position, sd PosSide) unitFn {
	f := unitFn{k0: p.margin - p.openValue, sl: p.size, qpts: m.spec.QuotePerTickStep, mmr: m.spec.MaintRate}
	if sd == Short {
		f.k0, f.sl, f.ss = p.margin+p.openValue, 0, p.size
	}
	return f
}

// crossFn is the unit function of a cross account whose positions in m
// are a's, base being D plus whatever else it holds (equity less
// maintenance of its positions in other contracts).
func crossFn(m *market, a *ctAcct, base Amount) unitFn {
	return unitFn{k0: base - a.pos[0].openValue + a.pos[1].openValue, sl: a.pos[0].size, ss: a.pos[1].size,
		qpts: m.spec.QuotePerTickStep, mmr: m.spec.MaintRate}
}

// triggerSpan bounds the marks triggers are worked out over: N(p, size)
// stays below 2^60 for p up to the span's end.
const triggerSpan = 1 << 60

func (f *unitFn) max() Price {
	hi, lo := bits.Mul64(uint64(f.sl+f.ss), uint64(f.qpts))
	if hi != 0 || lo >= triggerSpan {
		return 1
	}
	return Price(triggerSpan / lo)
}

func (f *unitFn) at(p Price) Amount {
	n := Amount(int64(p) * int64(f.sl+f.ss) * int64(f.qpts))
	mm, _ := mulRate(int64(n), f.mmr)
	return f.k0 + Amount(int64(p)*int64(f.sl-f.ss)*int64(f.qpts)) - Amount(mm)
}

// falling reports whether f does not decrease in p: (sl-ss) >= mmr×(sl+ss).
func (f *unitFn) falling() bool {
	if f.sl < f.ss {
		return false
	}
	h1, l1 := bits.Mul64(uint64(f.sl-f.ss), uint64(RateOne))
	h2, l2 := bits.Mul64(uint64(f.mmr), uint64(f.sl+f.ss))
	return h1 > h2 || h1 == h2 && l1 >= l2
}

// trigger returns the unit's trigger: falling, the highest mark at which
// it is underwater (f <= 0); rising, the lowest. ok is false when no mark
// in [1, max] makes it underwater.
func (f *unitFn) trigger() (t Price, rising, ok bool) {
	if f.sl+f.ss == 0 {
		return 0, false, false
	}
	hi := f.max()
	rising = !f.falling()
	// a first guess: where the line k0 + p × slope crosses zero, the
	// slope per tick rounded (integers only: the engine has no floats);
	// the search from it is exact
	g := Price(1)
	if hi > 1 { // (sl+ss) × qpts < 2^60: no product below overflows
		n := int64(f.sl+f.ss) * int64(f.qpts)
		mm, _ := mulRate(n, f.mmr)
		if slope := int64(f.sl-f.ss)*int64(f.qpts) - mm; slope != 0 {
			if x := -int64(f.k0) / slope; x >= int64(hi) {
				g = hi
			} else if x > 1 {
				g = Price(x)
			}
		}
	}
	// the marks where the predicate holds are a prefix of [1, hi]:
	// falling "underwater", rising "not underwater"
	last := f.lastTrue(g, hi, rising)
	if !rising {
		return last, false, last > 0
	}
	return last + 1, true, last < hi
}

func (f *unitFn) pred(p Price, rising bool) bool { return (f.at(p) <= 0) != rising }

// lastTrue returns the last p in [1, hi] where pred holds (0: none),
// pred holding on a prefix: galloping from guess g, then bisecting.
func (f *unitFn) lastTrue(g, hi Price, rising bool) Price {
	g = max(1, min(g, hi))
	var lo, up Price // pred(lo) or lo == 0; !pred(up) or up == hi+1
	if f.pred(g, rising) {
		lo, up = g, hi+1
		for step := Price(1); lo+step <= hi; step *= 2 {
			if !f.pred(lo+step, rising) {
				up = lo + step
				break
			}
			lo += step
		}
	} else {
		lo, up = 0, g
		for step := Price(1); up-step >= 1; step *= 2 {
			if f.pred(up-step, rising) {
				lo = up - step
				break
			}
			up -= step
		}
	}
	for up-lo > 1 {
		mid := lo + (up-lo)/2
		if f.pred(mid, rising) {
			lo = mid
		} else {
			up = mid
		}
	}
	return lo
}

// checkRisk liquidates underwater units until none is left (see above).
func (e *Engine) checkRisk() {
	rs := e.risk
	for {
		e.rekeyDirty()
		rs.cands = rs.cands[:0]
		for _, g := range rs.groups {
			for _, m := range g.markets {
				p := m.markPrice()
				if p <= 0 {
					continue
				}
				for i := range m.ct.liq {
					q := &m.ct.liq[i]
					for len(q.h) > 0 && (q.rising && q.h[0].trigger <= p || !q.rising && q.h[0].trigger >= p) {
						x := q.h[0]
						q.remove(x)
						e.touch(x.u) // indexed again unless it is liquidated
						c := liqCand{u: x.u, kind: x.kind, g: g}
						if x.kind != unitCross {
							c.m = m
						}
						rs.cands = append(rs.cands, c)
					}
				}
			}
			for _, u := range g.multi {
				if e.crossUnder(g, u) {
					rs.cands = append(rs.cands, liqCand{u: u, kind: unitCross, g: g})
				}
			}
		}
		if len(rs.cands) == 0 {
			return
		}
		c := slices.MinFunc(rs.cands, liqCand.key)
		if !e.underwater(c) { // cannot happen: triggers are exact; never loop on it
			return
		}
		e.liquidate(c)
	}
}

// underwater reports whether unit c is underwater now.
func (e *Engine) underwater(c liqCand) bool {
	if c.kind == unitCross {
		return e.crossUnder(c.g, c.u)
	}
	a := c.m.acct(c.u)
	p := &a.pos[c.kind-unitLong]
	if a.mode != Isolated || p.size == 0 {
		return false
	}
	s := c.m.spec
	mark := c.m.markPrice()
	n := Amount(int64(mark) * int64(p.size) * int64(s.QuotePerTickStep))
	eq := p.margin + n - p.openValue
	if c.kind == unitShort {
		eq = p.margin + p.openValue - n
	}
	return eq <= Fee(n, s.MaintRate)
}

// crossUnder reports whether u's cross account in g is underwater: it has
// a cross position and D + uPnL <= the maintenance margin.
func (e *Engine) crossUnder(g *riskGroup, u UserIdx) bool {
	eq, mm, n := e.crossEquity(g, u, nil, 0)
	return n > 0 && eq <= mm
}

// crossEquity returns D plus the uPnL at mark of u's cross positions in g,
// less the one of (skip, side skipSide) when skip is not nil, the
// maintenance margin of them all and how many contracts they are in.
func (e *Engine) crossEquity(g *riskGroup, u UserIdx, skip *market, skipSide PosSide) (eq, mm Amount, n int) {
	eq = e.crossBase(g, u)
	for _, m := range g.markets {
		a := m.acct(u)
		if a == nil || a.mode != Cross || a.pos[0].size == 0 && a.pos[1].size == 0 {
			continue
		}
		n++
		s := m.spec
		mark := m.markPrice()
		for i := range a.pos {
			p := &a.pos[i]
			if p.size == 0 || m == skip && PosSide(i+1) == skipSide {
				continue
			}
			v := Amount(int64(mark) * int64(p.size) * int64(s.QuotePerTickStep))
			if i == 0 {
				eq += v - p.openValue
			} else {
				eq += p.openValue - v
			}
		}
		mm += Fee(Amount(int64(mark)*int64(a.pos[0].size+a.pos[1].size)*int64(s.QuotePerTickStep)), s.MaintRate)
	}
	return eq, mm, n
}

// liquidate liquidates unit c.
func (e *Engine) liquidate(c liqCand) {
	if c.kind != unitCross {
		e.cancelUser(c.m, c.u)
		e.closeOut(c.g, c.m, c.u, PosSide(c.kind), false)
		e.firePlansOf(c.g)
		return
	}
	// A cross account: its orders go, its positions' margins return to
	// the wallet (all of it now pays its losses), and its positions close
	// the most profitable first (uPnL at the marks now), so that a loss
	// is paid from gains already realized.
	cl := e.acc.cell(c.u, c.g.coin)
	rs := e.risk
	rs.closes = rs.closes[:0]
	for _, m := range c.g.markets {
		a := m.acct(c.u)
		if a == nil || a.mode != Cross {
			continue
		}
		e.cancelUser(m, c.u)
		for sd := Long; sd <= Short; sd++ {
			p := &a.pos[sd-1]
			cl.avail.Add(int64(p.margin))
			p.margin = 0
			if p.size > 0 {
				rs.closes = append(rs.closes, posRef{m, sd, e.upnl(m, p, sd)})
			}
		}
	}
	slices.SortStableFunc(rs.closes, func(x, y posRef) int { return cmp.Compare(y.upnl, x.upnl) })
	for _, x := range rs.closes {
		if x.m.acct(c.u).pos[x.sd-1].size > 0 { // an ADL may have closed it
			e.closeOut(c.g, x.m, c.u, x.sd, true)
		}
	}
	e.firePlansOf(c.g)
}

// posRef is a position to close and its uPnL when the order was set.
type posRef struct {
	m    *market
	sd   PosSide
	upnl Amount
}

// upnl returns position p's (side sd of m) unrealized PnL at the mark.
func (e *Engine) upnl(m *market, p *position, sd PosSide) Amount {
	v := Amount(int64(m.markPrice()) * int64(p.size) * int64(m.spec.QuotePerTickStep))
	if sd == Long {
		return v - p.openValue
	}
	return p.openValue - v
}

// firePlansOf fires the plans a liquidation's fills reached.
func (e *Engine) firePlansOf(g *riskGroup) {
	for _, m := range g.markets {
		if len(m.ct.plans.byID) > 0 {
			e.firePlans(m)
		}
	}
}

// cancelUser cancels u's working orders in m, oldest (lowest id) first.
func (e *Engine) cancelUser(m *market, u UserIdx) {
	ul := m.list(u)
	if ul == nil {
		return
	}
	for h := ul.head; h != 0; {
		next := e.pool.ln(h).unext
		e.remove(m, h, e.pool.get(h), StatusCanceled)
		h = next
	}
}

// bankruptcy returns the price at which closing u's position sd in m
// leaves the unit's equity at zero, clamped to one tick: an isolated
// position's margin; a cross account's D and the losses (not the gains,
// unrealized) of its other positions.
func (e *Engine) bankruptcy(g *riskGroup, m *market, u UserIdx, sd PosSide, cross bool) Price {
	p := &m.acct(u).pos[sd-1]
	eq := p.margin
	if cross {
		eq = e.crossBase(g, u)
		for _, x := range g.markets {
			a := x.acct(u)
			if a == nil || a.mode != Cross {
				continue
			}
			for i := range a.pos {
				if o := &a.pos[i]; o.size > 0 && (x != m || PosSide(i+1) != sd) {
					eq += min(0, e.upnl(x, o, PosSide(i+1)))
				}
			}
		}
	}
	den := int64(p.size) * int64(m.spec.QuotePerTickStep)
	var b int64
	if sd == Long {
		if num := int64(p.openValue - eq); num > 0 {
			b = (num + den - 1) / den
		}
	} else if num := int64(p.openValue + eq); num > 0 {
		b = num / den
	}
	return Price(max(b, 1))
}

// closeOut closes u's position sd in m: a liquidation order at the
// bankruptcy price against the book, the rest taken over by the insurance
// account or auto-deleveraged (absorb).
func (e *Engine) closeOut(g *riskGroup, m *market, u UserIdx, sd PosSide, cross bool) {
	a := m.acct(u)
	ps := &a.pos[sd-1]
	bp := e.bankruptcy(g, m, u, sd, cross)
	side, opp := Sell, &m.bids
	if sd == Short {
		side, opp = Buy, &m.asks
	}
	h, o := e.newOrder(m, u, side, sd, bp, ps.size, KindLiquidation)
	o.lev = uint8(a.lev[sd-1])
	ps.closing += o.qty
	if e.match(m, opp, o); o.filled < o.qty {
		e.absorb(m, o)
	}
	if e.fees.qty != 0 {
		e.billFees(m)
	}
	if o.filled < o.qty { // cannot happen: absorb fills the rest
		o.status = StatusExpired
	}
	e.release(m, o)
	e.update(h, o)
	e.pool.release(h)
}

// newOrder makes an order of the engine's own at price p for q (not in
// the book, not in the user's list).
func (e *Engine) newOrder(m *market, u UserIdx, side Side, sd PosSide, p Price, q Qty, kind OrderKind) (handle, *order) {
	m.nextOrder++
	h := e.pool.alloc()
	o := e.pool.get(h)
	o.id, o.price, o.qty, o.filled, o.cumQuote, o.reserved = m.nextOrder<<10|int64(m.spec.ID), p, q, 0, 0, 0
	o.timeMs, o.updateMs, o.uid = e.timeMs, e.timeMs, e.acc.UID(u)
	o.cnext, o.lvl = 0, 0
	o.user, o.market, o.side, o.typ, o.tif, o.status, o.cidGen = u, m.spec.ID, side, Limit, IOC, StatusNew, true
	o.pos, o.lev, o.kind = sd, 0, kind
	return h, o
}

// absorb fills the rest of liquidation order o at its price: the
// insurance account takes it over if it can pay the margin, else the
// opposite positions are closed against it, the most profitable first.
func (e *Engine) absorb(m *market, o *order) {
	s := m.spec
	rest := o.qty - o.filled
	cside := Buy // the counterparty's side
	if o.side == Buy {
		cside = Sell
	}
	if ins, ok := e.insuranceUser(); ok && ins != o.user {
		_, lev := m.settings(ins)
		l := lev[o.pos-1]
		if n, ok := s.Notional(o.price, rest); ok && e.acc.reserve(ins, s.Margin, ceilDiv(n, Amount(l))) {
			ch, c := e.newOrder(m, ins, cside, o.pos, o.price, rest, KindLiquidation)
			c.reserved, c.lev = ceilDiv(n, Amount(l)), uint8(l)
			m.acctFor(ins).pos[o.pos-1].opening += rest
			e.trade(m, o, c, o.price, rest, 0, 0)
			e.out.Trades[len(e.out.Trades)-1].Off = true
			e.update(ch, c)
			e.pool.release(ch)
			return
		}
	}
	// auto-deleveraging: the opposite positions by entry price
	opp := Long + Short - o.pos
	rs := e.risk
	rs.adl = rs.adl[:0]
	m.ct.each(func(u UserIdx, a *ctAcct) {
		if p := &a.pos[opp-1]; p.size > 0 {
			rs.adl = append(rs.adl, adlCand{u, p.size, p.openValue})
		}
	})
	slices.SortFunc(rs.adl, func(x, y adlCand) int {
		// entry x.v/x.q against y.v/y.q: x.v*y.q against y.v*x.q
		h1, l1 := bits.Mul64(uint64(x.v), uint64(y.q))
		h2, l2 := bits.Mul64(uint64(y.v), uint64(x.q))
		c := cmp.Compare(h1, h2)
		if c == 0 {
			c = cmp.Compare(l1, l2)
		}
		if opp == Short {
			c = -c // SHORTs: the highest entry first
		}
		if c == 0 {
			c = cmp.Compare(x.u, y.u)
		}
		return c
	})
	for _, x := range rs.adl {
		if rest == 0 {
			break
		}
		a := m.acct(x.u)
		p := &a.pos[opp-1]
		q := min(rest, p.size)
		if ul := m.list(x.u); ul != nil && p.size-p.closing < q { // its working closes give way
			for ch := ul.head; ch != 0; {
				next := e.pool.ln(ch).unext
				if c := e.pool.get(ch); c.pos == opp && !c.opens() {
					e.remove(m, ch, c, StatusCanceled)
				}
				ch = next
			}
		}
		ch, c := e.newOrder(m, x.u, cside, opp, o.price, q, KindADL)
		c.lev = uint8(a.lev[opp-1])
		p.closing += q
		e.trade(m, o, c, o.price, q, 0, 0)
		e.out.Trades[len(e.out.Trades)-1].Off = true
		e.update(ch, c)
		e.pool.release(ch)
		rest -= q
	}
}

type adlCand struct {
	u UserIdx
	q Qty
	v Amount
}

// checkRiskState checks the index against the state it is derived from:
// no unit underwater, every trigger what it would be worked out as now,
// the several-contract cross accounts listed. It is O(users × contracts).
func (e *Engine) checkRiskState() error {
	rs := e.risk
	if rs == nil || rs.rebuild || len(rs.dirty) > 0 {
		return nil // between a load and the next command: worked out then
	}
	for _, g := range rs.groups {
		var multi []UserIdx
		for u := UserIdx(0); int(u) < e.acc.NumUsers(); u++ {
			if e.crossUnder(g, u) {
				return fmt.Errorf("engine: user %d: cross account left underwater", e.acc.UID(u))
			}
			_, _, n := e.crossEquity(g, u, nil, 0)
			if n >= 2 {
				multi = append(multi, u)
			}
			d := e.crossBase(g, u)
			for _, m := range g.markets {
				a := m.acct(u)
				if a == nil {
					continue
				}
				for kind := uint8(unitCross); kind <= unitShort; kind++ {
					x := &a.liq[kind]
					var f unitFn
					want := false
					switch {
					case kind == unitCross:
						f = crossFn(m, a, d)
						want = a.mode == Cross && n == 1 && f.sl+f.ss > 0
					default:
						p := &a.pos[kind-unitLong]
						f = isoFn(m, p, PosSide(kind))
						want = a.mode == Isolated && p.size > 0
						if want && e.underwater(liqCand{u: u, kind: kind, m: m, g: g}) {
							return fmt.Errorf("engine: %s: user %d: isolated position %d left underwater", m.spec.Symbol, e.acc.UID(u), kind)
						}
					}
					t, rising, ok := f.trigger()
					if want = want && ok; want != (x.at > 0) || want && (x.trigger != t || x.rising != rising || x.u != u) {
						return fmt.Errorf("engine: %s: user %d unit %d: trigger %d/%v indexed=%v, want %d/%v indexed=%v",
							m.spec.Symbol, e.acc.UID(u), kind, x.trigger, x.rising, x.at > 0, t, rising, want)
					}
					if x.at > 0 && m.ct.liq[b2i(x.rising)].h[x.at-1] != x {
						return fmt.Errorf("engine: %s: user %d unit %d: heap position wrong", m.spec.Symbol, e.acc.UID(u), kind)
					}
				}
			}
		}
		if !slices.Equal(multi, g.multi) {
			return fmt.Errorf("engine: cross accounts in several contracts %v, listed %v", multi, g.multi)
		}
	}
	return nil
}

// liqPrice returns the trigger of the unit u's position sd in m belongs
// to (0: none), worked out from the state (the index may wait for the
// next command after a load). A cross account in several contracts gets
// the trigger in m with the other contracts' uPnL and maintenance as they
// are now.
func (e *Engine) liqPrice(m *market, u UserIdx, a *ctAcct, sd PosSide) Price {
	rs := e.risk
	if rs == nil {
		return 0
	}
	s := m.spec
	var f unitFn
	if a.mode == Isolated {
		f = isoFn(m, &a.pos[sd-1], sd)
	} else {
		for _, g := range rs.groups {
			if g.coin != s.Margin {
				continue
			}
			// the others' equity less maintenance: all of it, less m's part
			eq, mm, _ := e.crossEquity(g, u, nil, 0)
			mark := m.markPrice()
			nl := Amount(int64(mark) * int64(a.pos[0].size) * int64(s.QuotePerTickStep))
			ns := Amount(int64(mark) * int64(a.pos[1].size) * int64(s.QuotePerTickStep))
			eq -= nl - a.pos[0].openValue + a.pos[1].openValue - ns
			mm -= Fee(nl+ns, s.MaintRate)
			f = crossFn(m, a, eq-mm)
		}
	}
	if t, _, ok := f.trigger(); ok {
		return t
	}
	return 0
}
