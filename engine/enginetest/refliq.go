package enginetest

// Liquidation in the reference model, written from docs/DESIGN.md
// ("Liquidation"), not from engine/liquidate.go: after every command every
// risk unit is scanned with exact big.Int arithmetic, the underwater one
// with the smallest key is liquidated, and the scan starts again.
//
// Choices where the text leaves a detail open:
//   - a user's cross accounts come by margin coin id, before the user's
//     isolated positions;
//   - Out.Updates: the unit's cancels, then per position the book makers'
//     changes, each takeover or ADL counterparty's cancelled closes and its
//     FILLED order, then the liquidation order (FILLED);
//   - bills: a liquidation fill's liquidation_income comes after the
//     liquidated side's close bill; that close
//     bill's delta is what left the wallet (-margin share); the fee income
//     is billed after the whole liquidation order, the takeover and ADL
//     fills (no fee) counting in its quantity and value;
//   - after each unit, the plans its fills reached fire, in every contract
//     of its margin coin by id (the engine does so; the text is silent);
//   - takeover and ADL orders are LIMIT IOC at P; their fills bill the
//     liquidated side first; an insurance account being liquidated keeps
//     its own result (a plain close);
//   - LiqPrice: the trigger found by bisection on the exact rule; 0 when no
//     mark in [1, 2^62/(size*QPTS)] makes the unit underwater.

import (
	"cmp"
	"math/big"
	"slices"

	"github.com/weexcore/exchange/engine"
)

// liqUnit is a risk unit: u's cross account in futures wallet Coin, or u's
// isolated position Pos in M.
type liqUnit struct {
	User  engine.UserIdx
	Cross bool
	Coin  engine.CoinID
	M     *RefMarket
	Pos   engine.PosSide
}

func bi(x int64) *big.Int { return big.NewInt(x) }

// bigN is N(p, q) = p*q*QuotePerTickStep.
func (m *RefMarket) bigN(p, q int64) *big.Int {
	x := new(big.Int).Mul(bi(p), bi(q))
	return x.Mul(x, m.quotePerTS)
}

// mm is floor(N(p, q) * maintenanceMarginRate).
func (m *RefMarket) mm(p, q int64) *big.Int {
	return floorRat(new(big.Rat).Mul(new(big.Rat).SetInt(m.bigN(p, q)), m.mmr))
}

// upnl is position ps's (side sd) unrealized PnL at mark.
func (m *RefMarket) upnl(ps *RefPosition, sd engine.PosSide, mark int64) *big.Int {
	n := m.bigN(mark, ps.Size)
	if sd == engine.Long {
		return n.Sub(n, bi(ps.OpenValue))
	}
	return n.Sub(bi(ps.OpenValue), n)
}

// markOf is m's mark, or at when m is over (a trial mark for one contract).
func markOf(m, over *RefMarket, at int64) int64 {
	if m == over {
		return at
	}
	return m.mark()
}

// isoExcess is equity minus maintenance of u's isolated position sd in m
// at mark.
func (m *RefMarket) isoExcess(u engine.UserIdx, sd engine.PosSide, mark int64) *big.Int {
	ps := &m.Accts[u].Pos[sd-1]
	e := m.upnl(ps, sd, mark)
	e.Add(e, bi(ps.Margin))
	return e.Sub(e, m.mm(mark, ps.Size))
}

// crossD is D: u's futures wallet total less u's isolated margins in the
// contracts of coin.
func (r *Ref) crossD(u engine.UserIdx, coin engine.CoinID) *big.Int {
	d := bi(r.cell(u, coin).Total)
	for _, m := range r.Contracts {
		if a := m.Accts[u]; m.Margin == coin && a != nil && a.Mode == engine.Isolated {
			d.Sub(d, bi(a.Pos[0].Margin+a.Pos[1].Margin))
		}
	}
	return d
}

// crossAccts returns u's cross-mode accounts in the contracts of coin, by
// contract id.
func (r *Ref) crossAccts(u engine.UserIdx, coin engine.CoinID) []*RefMarket {
	var ms []*RefMarket
	for _, m := range r.Contracts {
		if a := m.Accts[u]; m.Margin == coin && a != nil && a.Mode == engine.Cross {
			ms = append(ms, m)
		}
	}
	return ms
}

// hasCross reports whether u holds a cross position in a contract of coin.
func (r *Ref) hasCross(u engine.UserIdx, coin engine.CoinID) bool {
	for _, m := range r.crossAccts(u, coin) {
		if a := m.Accts[u]; a.Pos[0].Size > 0 || a.Pos[1].Size > 0 {
			return true
		}
	}
	return false
}

// crossExcess is equity minus maintenance of u's cross account in coin,
// contract over at mark at (over nil: every contract at its mark).
func (r *Ref) crossExcess(u engine.UserIdx, coin engine.CoinID, over *RefMarket, at int64) *big.Int {
	e := r.crossD(u, coin)
	for _, m := range r.crossAccts(u, coin) {
		a := m.Accts[u]
		if a.Pos[0].Size == 0 && a.Pos[1].Size == 0 {
			continue
		}
		mark := markOf(m, over, at)
		for i := range a.Pos {
			if a.Pos[i].Size > 0 {
				e.Add(e, m.upnl(&a.Pos[i], engine.PosSide(i+1), mark))
			}
		}
		e.Sub(e, m.mm(mark, a.Pos[0].Size+a.Pos[1].Size))
	}
	return e
}

// marginCoins returns the futures wallets contracts margin in, ascending.
func (r *Ref) marginCoins() []engine.CoinID {
	var cs []engine.CoinID
	for _, m := range r.Contracts {
		if !slices.Contains(cs, m.Margin) {
			cs = append(cs, m.Margin)
		}
	}
	slices.Sort(cs)
	return cs
}

// underwater returns the underwater unit with the smallest key, or false.
func (r *Ref) underwater() (liqUnit, bool) {
	coins := r.marginCoins()
	for i := range r.Users {
		u := engine.UserIdx(i)
		for _, c := range coins {
			if r.hasCross(u, c) && r.crossExcess(u, c, nil, 0).Sign() <= 0 {
				return liqUnit{User: u, Cross: true, Coin: c}, true
			}
		}
		for _, m := range r.Contracts {
			a := m.Accts[u]
			if a == nil || a.Mode != engine.Isolated {
				continue
			}
			for _, sd := range []engine.PosSide{engine.Long, engine.Short} {
				if a.Pos[sd-1].Size > 0 && m.isoExcess(u, sd, m.mark()).Sign() <= 0 {
					return liqUnit{User: u, M: m, Pos: sd}, true
				}
			}
		}
	}
	return liqUnit{}, false
}

// liquidateAll liquidates underwater units until none is left.
func (r *Ref) liquidateAll() {
	for n := 0; ; n++ {
		un, ok := r.underwater()
		if !ok {
			return
		}
		if n == 10_000 {
			panic("enginetest: liquidations do not end")
		}
		r.liquidate(un)
	}
}

type posRef struct {
	m  *RefMarket
	sd engine.PosSide
}

// liquidate cancels the unit's orders and closes its positions.
func (r *Ref) liquidate(un liqUnit) {
	u := un.User
	ms := []*RefMarket{un.M}
	if un.Cross {
		ms = r.crossAccts(u, un.Coin)
	}
	for _, m := range ms { // by contract id, then order id
		var ids []int64
		for _, o := range m.Orders {
			if o.User == u {
				ids = append(ids, o.ID)
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			r.removeID(m, id, engine.StatusCanceled)
		}
	}
	ps := []posRef{{un.M, un.Pos}}
	if un.Cross {
		// the account's margins back to its wallet; its positions by uPnL
		// at the marks now, highest first (then contract id, LONG first)
		ps = nil
		w := r.cell(u, un.Coin)
		var upnl []*big.Int
		for _, m := range ms {
			for i := range m.Accts[u].Pos {
				p := &m.Accts[u].Pos[i]
				w.Avail += p.Margin
				p.Margin = 0
				if p.Size > 0 {
					ps = append(ps, posRef{m, engine.PosSide(i + 1)})
					upnl = append(upnl, m.upnl(p, engine.PosSide(i+1), m.mark()))
				}
			}
		}
		idx := make([]int, len(ps))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return upnl[b].Cmp(upnl[a]) })
		sorted := make([]posRef, len(ps))
		for i, k := range idx {
			sorted[i] = ps[k]
		}
		ps = sorted
	}
	for _, p := range ps {
		if p.m.Accts[u].Pos[p.sd-1].Size > 0 { // an earlier ADL may have closed it
			r.liquidatePosition(un, p.m, p.sd)
		}
	}
	coin := un.Coin
	if !un.Cross {
		coin = un.M.Margin
	}
	for _, m := range r.Contracts { // the plans the fills reached
		if m.Margin == coin && len(m.Plans) > 0 {
			r.firePlans(m)
		}
	}
}

// removeID removes m's working order id with status st.
func (r *Ref) removeID(m *RefMarket, id int64, st engine.Status) {
	for i, o := range m.Orders {
		if o.ID == id {
			r.remove(m, i, st)
			return
		}
	}
	panic("enginetest: no such order")
}

// floorDiv is floor(a/b) for b > 0; ceilDiv2 is ceil(a/b).
func floorDiv(a, b *big.Int) *big.Int {
	q, m := new(big.Int).QuoRem(a, b, new(big.Int))
	if m.Sign() < 0 {
		q.Sub(q, bi(1))
	}
	return q
}

func ceilDiv2(a, b *big.Int) *big.Int {
	q, m := new(big.Int).QuoRem(a, b, new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, bi(1))
	}
	return q
}

// bankruptcy returns the bankruptcy price of u's position sd in m (at
// least one tick).
func (r *Ref) bankruptcy(un liqUnit, m *RefMarket, sd engine.PosSide) int64 {
	u := un.User
	ps := &m.Accts[u].Pos[sd-1]
	margin := bi(ps.Margin)
	if un.Cross { // E: D and the losses (not gains) of u's other cross positions in the coin
		margin = r.crossD(u, un.Coin)
		for _, x := range r.crossAccts(u, un.Coin) {
			for i := range x.Accts[u].Pos {
				o := &x.Accts[u].Pos[i]
				if o.Size > 0 && (x != m || engine.PosSide(i+1) != sd) {
					if l := x.upnl(o, engine.PosSide(i+1), x.mark()); l.Sign() < 0 {
						margin.Add(margin, l)
					}
				}
			}
		}
	}
	den := new(big.Int).Mul(bi(ps.Size), m.quotePerTS)
	var p *big.Int
	if sd == engine.Long {
		p = ceilDiv2(new(big.Int).Sub(bi(ps.OpenValue), margin), den)
	} else {
		p = floorDiv(new(big.Int).Add(bi(ps.OpenValue), margin), den)
	}
	if p.Sign() <= 0 {
		return 1
	}
	if !p.IsInt64() {
		panic("enginetest: bankruptcy price overflows")
	}
	return p.Int64()
}

// closeSide is the side of an order closing position side sd.
func closeSide(sd engine.PosSide) engine.Side {
	if sd == engine.Long {
		return engine.Sell
	}
	return engine.Buy
}

// newOrder creates an order of the engine's own, numbered like a placed one.
func (r *Ref) newOrder(m *RefMarket, u engine.UserIdx, sd engine.Side, pos engine.PosSide, p, q int64, k engine.OrderKind) *RefOrder {
	m.NextOrder++
	id := m.NextOrder<<10 | int64(m.ID)
	a := m.acct(u)
	o := &RefOrder{ID: id, User: u, Side: sd, Type: engine.Limit, TIF: engine.IOC, Status: engine.StatusNew,
		Price: p, Qty: q, TimeMs: r.timeMs, UpdateMs: r.timeMs, CID: generatedCID(id), Kind: k}
	r.contractPlaced(m, o, pos, a.Lev[pos-1])
	return o
}

// liquidatePosition closes u's position sd in m: the liquidation order
// against the book at the bankruptcy price, the rest by takeover or ADL.
func (r *Ref) liquidatePosition(un liqUnit, m *RefMarket, sd engine.PosSide) {
	u := un.User
	p := r.bankruptcy(un, m, sd)
	at := r.out.OrderAt
	o := r.newOrder(m, u, closeSide(sd), sd, p, m.Accts[u].Pos[sd-1].Size, engine.KindLiquidation)
	r.match(m, o)
	if rest := o.Qty - o.Filled; rest > 0 {
		if ins, ok := r.Lookup(r.InsUID); ok && r.InsUID != 0 && ins != u && r.canTakeOver(m, ins, sd, p, rest) {
			c := r.newOrder(m, ins, engine.Buy+engine.Sell-o.Side, sd, p, rest, engine.KindLiquidation)
			r.fillRest(m, o, c, p, rest)
		} else {
			r.adl(m, o, sd, p, rest)
		}
	}
	if o.Filled < o.Qty {
		panic("enginetest: a liquidation order left a position")
	}
	r.billFees(m)
	r.release(m, o)
	r.out.Updates = append(r.out.Updates, r.view(m, o))
	r.out.OrderAt = at
}

// canTakeOver: ins's futures available covers ceil(N(p, q)/L), L its
// leverage of side sd in m.
func (r *Ref) canTakeOver(m *RefMarket, ins engine.UserIdx, sd engine.PosSide, p, q int64) bool {
	_, lev := m.settings(ins)
	need := ceilDiv(m.bigN(p, q), int64(lev[sd-1]))
	return need.Cmp(bi(r.cell(ins, m.Margin).Avail)) <= 0
}

// adl closes rest of liquidation order o (position side sd) at p against
// the opposite positions, the most profitable first.
func (r *Ref) adl(m *RefMarket, o *RefOrder, sd engine.PosSide, p, rest int64) {
	opp := engine.PosSide(3 - sd)
	var us []engine.UserIdx
	for u, a := range m.Accts {
		if a.Pos[opp-1].Size > 0 {
			us = append(us, u)
		}
	}
	entry := func(u engine.UserIdx) (ov, size int64) {
		ps := &m.Accts[u].Pos[opp-1]
		return ps.OpenValue, ps.Size
	}
	slices.SortFunc(us, func(x, y engine.UserIdx) int {
		ox, sx := entry(x)
		oy, sy := entry(y)
		c := new(big.Int).Mul(bi(ox), bi(sy)).Cmp(new(big.Int).Mul(bi(oy), bi(sx))) // entry x vs entry y
		if opp == engine.Short {
			c = -c // highest first
		}
		return cmp.Or(c, cmp.Compare(x, y))
	})
	for _, v := range us {
		if rest == 0 {
			break
		}
		ps := &m.Accts[v].Pos[opp-1]
		q := min(rest, ps.Size)
		if ps.Closing > ps.Size-q {
			var ids []int64
			for _, w := range m.Orders {
				if w.User == v && w.Pos == opp && !opens(w.Side, w.Pos) {
					ids = append(ids, w.ID)
				}
			}
			slices.Sort(ids)
			for _, id := range ids {
				r.removeID(m, id, engine.StatusCanceled)
			}
		}
		c := r.newOrder(m, v, closeSide(opp), opp, p, q, engine.KindADL)
		r.fillRest(m, o, c, p, q)
		rest -= q
	}
	if rest > 0 {
		panic("enginetest: ADL found too few opposite positions")
	}
}

// fillRest fills q of liquidation order t against takeover or ADL order
// mk at p: no fees, the last price stays.
func (r *Ref) fillRest(m *RefMarket, t, mk *RefOrder, p, q int64) {
	n, ok := m.notional(p, q)
	if !ok {
		panic("enginetest: a liquidation fill overflows")
	}
	zero := new(big.Rat)
	_, tp := r.settle(m, t, q, n, zero)
	var mp int64
	if opens(mk.Side, mk.Pos) {
		r.takeOver(m, mk, q, n)
	} else {
		_, mp = r.settle(m, mk, q, n, zero)
	}
	r.recordFill(m, t, mk, p, q, n, [2]int64{}, [2]int64{tp, mp}, true) // the order's fill totals count them
	r.out.Updates = append(r.out.Updates, r.view(m, mk))
}

// takeOver opens q worth n for the insurance account's order o: margin
// ceil(n/L) from its available, no fee, no position limit.
func (r *Ref) takeOver(m *RefMarket, o *RefOrder, q, n int64) {
	ps := &m.Accts[o.User].Pos[o.Pos-1]
	margin := ceilDiv(bi(n), int64(o.Lev)).Int64()
	w := r.cell(o.User, m.Margin)
	w.Avail -= margin
	if w.Avail < 0 {
		panic("enginetest: a takeover's margin exceeds the insurance account's available")
	}
	ps.open(q, n, margin, r.timeMs) // contractPlaced counted the order as a working open
	ps.UpdatedMs = r.timeMs
}

// liqIncome returns who gets a liquidation fill's non-negative result when
// o is a liquidation order's close of an isolated position in m: the
// insurance account, unless it is the liquidated user or there is none.
func (r *Ref) liqIncome(m *RefMarket, o *RefOrder) (engine.UserIdx, bool) {
	if o.Kind != engine.KindLiquidation || opens(o.Side, o.Pos) || m.Accts[o.User].Mode != engine.Isolated {
		return 0, false
	}
	ins, ok := r.Lookup(r.InsUID)
	if !ok || r.InsUID == 0 || ins == o.User {
		return 0, false
	}
	return ins, true
}

// liqPrice returns the trigger of the unit u's position sd in m belongs
// to: the highest underwater mark when equity less maintenance rises
// with the mark, else the lowest; 0 when there is none.
func (r *Ref) liqPrice(m *RefMarket, u engine.UserIdx, sd engine.PosSide) int64 {
	a := m.Accts[u]
	var excess func(mark int64) *big.Int
	var long, short int64
	if a.Mode == engine.Isolated {
		excess = func(mark int64) *big.Int { return m.isoExcess(u, sd, mark) }
		if sd == engine.Long {
			long = a.Pos[0].Size
		} else {
			short = a.Pos[1].Size
		}
	} else {
		excess = func(mark int64) *big.Int { return r.crossExcess(u, m.Margin, m, mark) }
		long, short = a.Pos[0].Size, a.Pos[1].Size
	}
	// per tick, equity moves by (long-short)*QPTS exactly, maintenance by
	// floor or ceil of (long+short)*QPTS*mmr
	slope := new(big.Int).Mul(bi(long-short), m.quotePerTS)
	mmStep := ceilRat(new(big.Rat).Mul(new(big.Rat).SetInt(new(big.Int).Mul(bi(long+short), m.quotePerTS)), m.mmr))
	falling := slope.Cmp(mmStep) >= 0 // equity less maintenance does not fall with the mark
	top := new(big.Int).Quo(bi(1<<62), new(big.Int).Mul(bi(max(long+short, 1)), m.quotePerTS)).Int64()
	under := func(mark int64) bool { return excess(mark).Sign() <= 0 }
	// the mark now is not underwater: the liquidations are done
	mark := min(max(m.mark(), 1), top)
	if falling { // the highest underwater mark
		if !under(1) {
			return 0
		}
		lo, hi := int64(1), mark
		if under(hi) {
			if hi = top; under(hi) {
				return hi
			}
		}
		return lastTrue(lo, hi, under)
	}
	// the lowest underwater mark
	lo := mark
	if under(lo) {
		if lo = 1; under(lo) {
			return lo
		}
	}
	hi := lo
	for !under(hi) { // !under(lo)
		if hi == top {
			return 0
		}
		lo, hi = hi, min(top, 2*hi)
	}
	return lastTrue(lo, hi, func(x int64) bool { return !under(x) }) + 1
}

// lastTrue returns the largest x in [lo, hi) with f(x), given f(lo) and
// not f(hi), and f true up to a point and false after it.
func lastTrue(lo, hi int64, f func(int64) bool) int64 {
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; f(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
