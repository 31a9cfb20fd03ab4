package enginetest

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/weexcore/exchange/engine"
)

// Plans in the reference model (engine/plan.go's rules, written from its
// doc comment): an open's presets become a take-profit and a stop-loss of
// the whole position, at market, at its first fill; after every command on
// a contract market the plans the last or the mark price reached fire,
// one at a time, in this order: on the last price before the mark price,
// rising (LONG take-profit, SHORT stop-loss: price >= trigger) before
// falling, the lowest rising trigger (the highest falling one) first, then
// the oldest. A fired plan closes at market what is left of the position
// (less working closes), in orders of at most maxOrderSize. A position
// closed to nothing takes its plans with it.

// RefPlan is one plan.
type RefPlan struct {
	ID                 int64
	User               engine.UserIdx
	Pos                engine.PosSide
	Kind               uint8
	Mark               bool
	Trigger, Exec, Qty int64
	TimeMs             int64
}

func (p *RefPlan) rises() bool { return (p.Kind == engine.PlanTakeProfit) == (p.Pos == engine.Long) }

// attach makes o's presets plans, at its first fill.
func (r *Ref) attach(m *RefMarket, o *RefOrder) {
	if o.TP == 0 && o.SL == 0 {
		return
	}
	for _, x := range []struct {
		kind    uint8
		trigger int64
		mark    bool
	}{{engine.PlanTakeProfit, o.TP, o.Mark&1 != 0}, {engine.PlanStopLoss, o.SL, o.Mark&2 != 0}} {
		if x.trigger == 0 || r.planCount(m, o.User) >= engine.MaxPlansPerUser {
			continue
		}
		m.NextPlan++
		m.Plans = append(m.Plans, &RefPlan{ID: m.NextPlan<<10 | int64(m.ID), User: o.User, Pos: o.Pos, Kind: x.kind,
			Mark: x.mark, Trigger: x.trigger, TimeMs: r.timeMs})
	}
	o.TP, o.SL, o.Mark = 0, 0, 0
}

func (r *Ref) planCount(m *RefMarket, u engine.UserIdx) int {
	n := 0
	for _, p := range m.Plans {
		if p.User == u {
			n++
		}
	}
	return n
}

// dropPlans removes u's plans on side ps: the position is gone.
func (r *Ref) dropPlans(m *RefMarket, u engine.UserIdx, ps engine.PosSide) {
	m.Plans = slices.DeleteFunc(m.Plans, func(p *RefPlan) bool { return p.User == u && p.Pos == ps })
}

// mark is median(best bid, best ask, last), the last with a one-sided book.
func (m *RefMarket) mark() int64 {
	var bid, ask int64
	for _, o := range m.Orders {
		if o.Side == engine.Buy && o.Price > bid {
			bid = o.Price
		}
		if o.Side == engine.Sell && (ask == 0 || o.Price < ask) {
			ask = o.Price
		}
	}
	if m.Last == 0 || bid == 0 || ask == 0 {
		return m.Last
	}
	x := []int64{bid, ask, m.Last}
	slices.Sort(x)
	return x[1]
}

// nextFired returns the plan to fire now, or nil.
func (m *RefMarket) nextFired() *RefPlan {
	for _, onMark := range []bool{false, true} {
		price := m.Last
		if onMark {
			price = m.mark()
		}
		if price <= 0 {
			continue
		}
		var best *RefPlan
		for _, p := range m.Plans { // rising first
			if p.Mark == onMark && p.rises() && price >= p.Trigger &&
				(best == nil || p.Trigger < best.Trigger || p.Trigger == best.Trigger && p.ID < best.ID) {
				best = p
			}
		}
		if best != nil {
			return best
		}
		for _, p := range m.Plans {
			if p.Mark == onMark && !p.rises() && price <= p.Trigger &&
				(best == nil || p.Trigger > best.Trigger || p.Trigger == best.Trigger && p.ID < best.ID) {
				best = p
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}

// firePlans fires m's reached plans until none is reached.
func (r *Ref) firePlans(m *RefMarket) {
	for {
		p := m.nextFired()
		if p == nil {
			return
		}
		m.Plans = slices.DeleteFunc(m.Plans, func(x *RefPlan) bool { return x == p })
		ps := &m.Accts[p.User].Pos[p.Pos-1]
		q := ps.Size - ps.Closing
		if p.Qty > 0 {
			q = min(q, p.Qty)
		}
		at := r.out.OrderAt
		for q > 0 {
			c := engine.Cmd{Kind: engine.CmdPlace, Market: m.ID, User: p.User, UID: r.Users[p.User].UID, Pos: p.Pos,
				Side: engine.Sell, Type: engine.Market, TIF: engine.IOC, Qty: engine.Qty(min(q, m.MaxQty))}
			if p.Pos == engine.Short {
				c.Side = engine.Buy
			}
			if p.Exec > 0 {
				c.Type, c.TIF, c.Price = engine.Limit, engine.GTC, engine.Price(p.Exec)
			}
			if r.place(&c) != engine.OK {
				break
			}
			q -= int64(c.Qty)
		}
		r.out.OrderAt = at
	}
}

// appendPlans appends m's plans as the engine's canonical encoding does.
func (m *RefMarket) appendPlans(b []byte) []byte {
	le := binary.LittleEndian
	ps := slices.Clone(m.Plans)
	slices.SortFunc(ps, func(x, y *RefPlan) int { return cmp.Compare(x.ID, y.ID) })
	b = le.AppendUint64(b, uint64(m.NextPlan))
	b = le.AppendUint32(b, uint32(len(ps)))
	for _, p := range ps {
		b = le.AppendUint64(b, uint64(p.ID))
		b = le.AppendUint32(b, uint32(p.User))
		mark := byte(0)
		if p.Mark {
			mark = 1
		}
		b = append(b, byte(p.Pos), p.Kind, mark)
		for _, v := range []int64{p.Trigger, p.Exec, p.Qty, p.TimeMs} {
			b = le.AppendUint64(b, uint64(v))
		}
	}
	return b
}
