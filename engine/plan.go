package engine

import (
	"cmp"
	"fmt"
	"slices"
)

// Take-profit and stop-loss plans (docs/API.md, "Perpetual contracts:
// plans"). A plan watches one position side: a LONG's take-profit fires
// when the price rises to its trigger, its stop-loss when the price falls
// to it; a SHORT's the reverse. The price is the last trade's or the mark
// price, per plan. A fired plan places a reduce-only close of its size
// (0: the whole position), cut to the position less its working closes:
// at market, or a limit at its execute price, in orders of at most
// maxOrderSize. A plan whose position has nothing left to close is
// cancelled; a close the engine refuses (a limit outside the price band)
// leaves nothing either: the plan is gone.
//
// Plans fire inside the command that moved the price, with its sequence
// number, so replay fires the same ones: after every command on a
// contract market the engine looks at the head of four lists sorted by
// trigger (rising and falling, on the last and on the mark price), never
// scanning the plans that cannot fire. A close a plan places may move the
// price again; the plans it reaches fire in the same command, each once.
//
// An open's presets (take-profit, stop-loss) become plans of the whole
// position, at market, when the open first fills (attachPresets).
//
// CmdPlan places a plan: Pos the side, PlanKind 1 take-profit or 2
// stop-loss, Price the trigger, Exec the execute price (0: market), Qty
// the size (0: the whole position), TrigMark bit 0 the mark price. The
// position must exist. CmdPlanCancel cancels OrderID (a plan id), or every
// plan of the user in the market when OrderID is 0.

const (
	PlanTakeProfit uint8 = 1
	PlanStopLoss   uint8 = 2
)

// MaxPlansPerUser bounds one user's plans in one contract.
const MaxPlansPerUser = 100

type plan struct {
	id      int64
	user    UserIdx
	uid     int64
	pos     PosSide
	kind    uint8
	mark    bool
	trigger Price
	exec    Price
	qty     Qty
	timeMs  int64
}

// rises reports whether p fires when the price rises to its trigger.
func (p *plan) rises() bool { return (p.kind == PlanTakeProfit) == (p.pos == Long) }

// planLists are a contract's plans by id and in the four trigger orders.
type planLists struct {
	byID map[int64]*plan
	// [mark][rises]: rising lists ascend by trigger (the head fires
	// first), falling lists descend; ties by id
	q        [2][2][]*plan
	nextPlan int64
}

func (pl *planLists) list(p *plan) *[]*plan { return &pl.q[b2i(p.mark)][b2i(p.rises())] }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// before reports whether x fires before y in their list.
func before(x, y *plan) bool {
	if x.trigger != y.trigger {
		return (x.trigger < y.trigger) == x.rises()
	}
	return x.id < y.id
}

func (pl *planLists) add(p *plan) {
	if pl.byID == nil {
		pl.byID = make(map[int64]*plan)
	}
	pl.byID[p.id] = p
	l := pl.list(p)
	i, _ := slices.BinarySearchFunc(*l, p, func(a, b *plan) int {
		if before(a, b) {
			return -1
		}
		return 1
	})
	*l = slices.Insert(*l, i, p)
}

func (pl *planLists) remove(p *plan) {
	delete(pl.byID, p.id)
	l := pl.list(p)
	for i, x := range *l {
		if x == p {
			*l = slices.Delete(*l, i, i+1)
			return
		}
	}
}

// PlanView is a plan as clients see it.
type PlanView struct {
	ID       int64
	Market   MarketID
	User     UserIdx
	UID      int64
	Pos      PosSide
	Kind     uint8 // PlanTakeProfit or PlanStopLoss
	Mark     bool
	Trigger  Price
	Exec     Price // 0: market
	Qty      Qty   // 0: the whole position
	TimeMs   int64
	Canceled bool // in Out.Plans: the plan was cancelled (else placed or fired)
	Fired    bool
}

func (p *plan) view(m MarketID) PlanView {
	return PlanView{ID: p.id, Market: m, User: p.user, UID: p.uid, Pos: p.pos, Kind: p.kind, Mark: p.mark,
		Trigger: p.trigger, Exec: p.exec, Qty: p.qty, TimeMs: p.timeMs}
}

// placePlan applies a CmdPlan.
func (e *Engine) placePlan(c *Cmd) Reject {
	m, r := e.contractMarket(c)
	if r != OK {
		return r
	}
	if c.Pos != Long && c.Pos != Short {
		return RejectInvalidPositionSide
	}
	if c.PlanKind != PlanTakeProfit && c.PlanKind != PlanStopLoss || c.Price <= 0 || c.Exec < 0 || c.Qty < 0 ||
		c.TrigMark > 1 || c.Qty > m.spec.MaxQty {
		return RejectInvalidTPSL
	}
	a := m.acct(c.User)
	if a == nil || a.pos[c.Pos-1].size == 0 {
		return RejectNoPosition
	}
	if a.plans >= MaxPlansPerUser {
		return RejectTooManyPlans
	}
	pl := &m.ct.plans
	pl.nextPlan++
	p := &plan{id: pl.nextPlan<<10 | int64(m.spec.ID), user: c.User, uid: c.UID, pos: c.Pos, kind: c.PlanKind,
		mark: c.TrigMark == 1, trigger: c.Price, exec: c.Exec, qty: c.Qty, timeMs: e.timeMs}
	pl.add(p)
	a.plans++
	v := p.view(m.spec.ID)
	e.out.Plans = append(e.out.Plans, v)
	return OK
}

// cancelPlan applies a CmdPlanCancel.
func (e *Engine) cancelPlan(c *Cmd) Reject {
	m, r := e.contractMarket(c)
	if r != OK {
		return r
	}
	pl := &m.ct.plans
	if c.OrderID != 0 {
		p := pl.byID[c.OrderID]
		if p == nil || p.user != c.User {
			return RejectUnknownOrder
		}
		e.dropPlan(m, p, false)
		return OK
	}
	var mine []*plan
	for _, p := range pl.byID {
		if p.user == c.User {
			mine = append(mine, p)
		}
	}
	slices.SortFunc(mine, func(x, y *plan) int { return cmp.Compare(x.id, y.id) })
	for _, p := range mine {
		e.dropPlan(m, p, false)
	}
	return OK
}

// attachPresets makes open o's presets plans on its position at o's
// first fill: a take-profit and a stop-loss of the whole position, at
// market, on the price the preset names; none beyond MaxPlansPerUser.
func (e *Engine) attachPresets(m *market, a *ctAcct, o *order, pr preset) {
	for _, x := range [2]struct {
		kind    uint8
		trigger Price
		mark    bool
	}{{PlanTakeProfit, pr.tp, pr.mark&1 != 0}, {PlanStopLoss, pr.sl, pr.mark&2 != 0}} {
		if x.trigger == 0 || a.plans >= MaxPlansPerUser {
			continue
		}
		pl := &m.ct.plans
		pl.nextPlan++
		p := &plan{id: pl.nextPlan<<10 | int64(m.spec.ID), user: o.user, uid: o.uid, pos: o.pos, kind: x.kind,
			mark: x.mark, trigger: x.trigger, timeMs: e.timeMs}
		pl.add(p)
		a.plans++
		e.out.Plans = append(e.out.Plans, p.view(m.spec.ID))
	}
}

// dropPlan removes p, fired or cancelled, and reports it.
func (e *Engine) dropPlan(m *market, p *plan, fired bool) {
	m.ct.plans.remove(p)
	m.acct(p.user).plans--
	v := p.view(m.spec.ID)
	v.Canceled, v.Fired = !fired, fired
	e.out.Plans = append(e.out.Plans, v)
}

// firePlans fires m's plans the last and mark prices have reached, until
// none is reached (each fires once: it is removed first).
func (e *Engine) firePlans(m *market) {
	pl := &m.ct.plans
	for len(pl.byID) > 0 {
		p := e.reached(m)
		if p == nil {
			return
		}
		e.dropPlan(m, p, true)
		e.closeFor(m, p)
	}
}

// reached returns a plan whose trigger the price has reached, or nil.
func (e *Engine) reached(m *market) *plan {
	pl := &m.ct.plans
	for mk, price := range [2]Price{m.last, m.markPrice()} {
		if price <= 0 {
			continue
		}
		if l := pl.q[mk][1]; len(l) > 0 && price >= l[0].trigger { // rising
			return l[0]
		}
		if l := pl.q[mk][0]; len(l) > 0 && price <= l[0].trigger { // falling
			return l[0]
		}
	}
	return nil
}

// closeFor places fired plan p's reduce-only close, if the position has
// anything left to close; a refused close leaves nothing (the plan is gone).
func (e *Engine) closeFor(m *market, p *plan) {
	a := m.acct(p.user)
	ps := &a.pos[p.pos-1]
	free := ps.size - ps.closing
	if free <= 0 {
		return
	}
	q := free
	if p.qty > 0 {
		q = min(p.qty, free)
	}
	// in orders of at most maxOrderSize: a position may be larger
	at := e.out.OrderAt
	for q > 0 {
		c := Cmd{Kind: CmdPlace, Market: m.spec.ID, User: p.user, UID: p.uid, Pos: p.pos, Side: Sell, Qty: min(q, m.spec.MaxQty),
			Type: Market, TIF: IOC} // a close reserves nothing: it decides nothing replay must be told
		if p.pos == Short {
			c.Side = Buy
		}
		if p.exec > 0 {
			c.Type, c.TIF, c.Price = Limit, GTC, p.exec
		}
		if e.place(&c) != OK {
			break
		}
		q -= c.Qty
	}
	e.out.OrderAt = at
}

// cancelPlansOf cancels u's plans on side sd of m: its position is gone.
func (e *Engine) cancelPlansOf(m *market, u UserIdx, sd PosSide) {
	var gone []*plan
	for _, p := range m.ct.plans.byID {
		if p.user == u && p.pos == sd {
			gone = append(gone, p)
		}
	}
	slices.SortFunc(gone, func(x, y *plan) int { return cmp.Compare(x.id, y.id) })
	for _, p := range gone {
		e.dropPlan(m, p, false)
	}
}

// Plans appends user u's plans in contract market id (AllContracts: every
// contract this engine owns), by id.
func (e *Engine) Plans(u UserIdx, id MarketID, dst []PlanView) []PlanView {
	start := len(dst)
	for _, m := range e.owned {
		if m.ct == nil || id != AllContracts && id != AllMarkets && m.spec.ID != id {
			continue
		}
		for _, p := range m.ct.plans.byID {
			if p.user == u {
				dst = append(dst, p.view(m.spec.ID))
			}
		}
	}
	slices.SortFunc(dst[start:], func(x, y PlanView) int { return cmp.Compare(x.ID, y.ID) })
	return dst
}

// appendPlans appends m's plans to the canonical encoding: i64 nextPlan |
// u32 n | n x (i64 id | u32 user | u8 pos | u8 kind | u8 mark | i64
// trigger | i64 exec | i64 qty | i64 timeMs), by id.
func appendPlans(dst []byte, pl *planLists) []byte {
	ps := make([]*plan, 0, len(pl.byID))
	for _, p := range pl.byID {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(x, y *plan) int { return cmp.Compare(x.id, y.id) })
	dst = le.AppendUint64(dst, uint64(pl.nextPlan))
	dst = le.AppendUint32(dst, uint32(len(ps)))
	for _, p := range ps {
		dst = le.AppendUint64(dst, uint64(p.id))
		dst = le.AppendUint32(dst, uint32(p.user))
		dst = append(dst, byte(p.pos), p.kind, byte(b2i(p.mark)))
		for _, v := range [...]int64{int64(p.trigger), int64(p.exec), int64(p.qty), p.timeMs} {
			dst = le.AppendUint64(dst, uint64(v))
		}
	}
	return dst
}

func (e *Engine) loadPlans(r *reader, m *market) error {
	pl := &m.ct.plans
	pl.nextPlan = r.i64()
	n := int(r.u32())
	for i := 0; i < n && r.err == nil; i++ {
		p := &plan{id: r.i64(), user: UserIdx(r.u32())}
		p.pos, p.kind, p.mark = PosSide(r.u8()), r.u8(), r.u8() == 1
		p.trigger, p.exec, p.qty, p.timeMs = Price(r.i64()), Price(r.i64()), Qty(r.i64()), r.i64()
		a := m.acct(p.user)
		if r.err == nil && (a == nil || p.pos != Long && p.pos != Short || pl.byID[p.id] != nil) {
			return fmt.Errorf("engine: snapshot plan %d is malformed", p.id)
		}
		if r.err != nil {
			break
		}
		p.uid = e.acc.UID(p.user)
		pl.add(p)
		a.plans++
	}
	return r.err
}

// checkPlans checks m's plans: each in its list in order, by id, on a
// position that has a size, counted in its user's account.
func (m *market) checkPlans() error {
	pl := &m.ct.plans
	count := map[UserIdx]int{}
	n := 0
	for mk := range pl.q {
		for r := range pl.q[mk] {
			l := pl.q[mk][r]
			for i, p := range l {
				if pl.byID[p.id] != p || b2i(p.mark) != mk || b2i(p.rises()) != r || i > 0 && !before(l[i-1], p) {
					return fmt.Errorf("engine: %s: plan %d is out of its list", m.spec.Symbol, p.id)
				}
				if a := m.acct(p.user); a == nil || a.pos[p.pos-1].size == 0 {
					return fmt.Errorf("engine: %s: plan %d of a position that is gone", m.spec.Symbol, p.id)
				}
				count[p.user]++
				n++
			}
		}
	}
	if n != len(pl.byID) {
		return fmt.Errorf("engine: %s: %d plans listed, %d by id", m.spec.Symbol, n, len(pl.byID))
	}
	var err error
	m.ct.each(func(u UserIdx, a *ctAcct) {
		if a.plans != count[u] && err == nil {
			err = fmt.Errorf("engine: %s: user %d counts %d plans, has %d", m.spec.Symbol, u, a.plans, count[u])
		}
	})
	return err
}
