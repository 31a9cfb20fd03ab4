package engine

import (
	"slices"
	"strconv"
	"unsafe"
)

// inBand reports whether limit price p on side sd is within the band
// around the last trade price (> 0). The band's bounds are worked out once
// per last price: most orders arrive between trades.
func (m *market) inBand(sd Side, p Price) bool {
	if m.bandAt != m.last {
		up, _ := mulRate(int64(m.last), m.spec.BuyBand)
		dn, _ := mulRate(int64(m.last), m.spec.SellBand)
		m.bandAt, m.bandHi, m.bandLo = m.last, m.last+Price(up), m.last-Price(dn)
	}
	if sd == Buy {
		return p <= m.bandHi // floor(last*(1+band))
	}
	return p >= m.bandLo // ceil(last*(1-band))
}

// protection returns a market order's worst acceptable price, ref moved by
// the fallback ratio against the taker, rounded to a tick inside the range.
func protection(s *MarketSpec, sd Side, ref Price) Price {
	d, _ := mulRate(int64(ref), s.FallbackRatio)
	if sd == Buy {
		return ref + Price(d)
	}
	if p := ref - Price(d); p > 0 {
		return p
	}
	return 1
}

// fillable reports whether o could be filled entirely now (FOK). Resting
// orders of o's own user do not count: they would be expired, not traded.
// It visits orders exactly as match would, under the same bound, so a FOK
// that match could not finish within MaxFillsPerOrder steps is not fillable.
func (e *Engine) fillable(m *market, opp *side, o *order) bool {
	need := o.qty
	n := 0
	for i := len(opp.lvls) - 1; i >= 0; i-- {
		lv := e.lvls.get(opp.lvls[i])
		if !crosses(o.side, o.price, lv.price) {
			return false
		}
		for h := lv.head; h != 0; h = e.pool.ln(h).next {
			r := e.pool.get(h)
			if n++; n > MaxFillsPerOrder {
				return false
			}
			if r.user == o.user {
				continue
			}
			if need -= r.qty - r.filled; need <= 0 {
				return true
			}
		}
	}
	return false
}

// match trades o against opp from the best level while prices cross. It
// reports true if it stopped at MaxFillsPerOrder with o still unfilled.
func (e *Engine) match(m *market, opp *side, o *order) bool {
	for steps := 0; o.filled < o.qty; steps++ {
		lh := opp.best()
		if lh == 0 {
			return false
		}
		lv := e.lvls.get(lh)
		if !crosses(o.side, o.price, lv.price) {
			return false
		}
		if steps == MaxFillsPerOrder {
			return true
		}
		mh := lv.head
		mk := e.pool.get(mh)
		// the maker after this one is an order that has rested a while,
		// likely out of cache: ask for it now, so that it arrives while
		// this fill is worked out (it is the next fill's maker, in this
		// command or a later one).
		if nx := e.pool.ln(mh).next; nx != 0 {
			prefetchOrder(unsafe.Pointer(e.pool.get(nx)), unsafe.Pointer(e.pool.ln(nx)))
		}
		if mk.user == o.user { // self-trade prevention: expire the maker
			e.remove(m, mh, mk, StatusExpired)
			continue
		}
		q := min(o.qty-o.filled, mk.qty-mk.filled)
		lv.qty -= q
		e.fill(m, o, mh, mk, lv.price, q)
		if mk.filled == mk.qty {
			e.remove(m, mh, mk, StatusFilled)
		}
	}
	return false
}

// fill trades q at price p between taker t and maker mk (handle mh): money
// moves from the payers' frozen funds to the receivers, less fees to the
// fee account.
func (e *Engine) fill(m *market, t *order, mh handle, mk *order, p Price, q Qty) {
	s := m.spec
	if s.Contract {
		e.fillContract(m, t, mh, mk, p, q)
		return
	}
	// No overflow checks: the buyer's reservation, price*qty at its limit
	// >= p, and the seller's, its qty in base, were computed with them, and
	// q is at most either's quantity.
	notional := Amount(int64(p) * int64(q) * int64(s.QuotePerTickStep))
	base := Amount(int64(q) * int64(s.BasePerStep))
	buyer, seller := t, mk
	buyRate, sellRate := s.TakerRate, s.MakerRate
	if t.side == Sell {
		buyer, seller = mk, t
		buyRate, sellRate = s.MakerRate, s.TakerRate
	}
	bf := Fee(base, buyRate)
	sf := Fee(notional, sellRate)

	// buyer: pays notional from frozen quote; the reservation made at its
	// own (higher or equal) price for q is released, the difference credited.
	// seller: pays base from frozen, receives notional less its fee.
	held := Amount(int64(buyer.price) * int64(q) * int64(s.QuotePerTickStep))
	buyer.reserved -= held
	seller.reserved -= base
	if buyer.reserved < 0 || seller.reserved < 0 {
		panic("engine: reservation underflow")
	}
	bc, buid := e.acc.row(buyer.user)
	sc, suid := e.acc.row(seller.user)
	pc := append(slices.Grow(e.pending, 3), credit{&bc[s.Base], base - bf}, credit{&sc[s.Quote], notional - sf})
	if held != notional { // a maker buyer pays its own price
		pc = append(pc, credit{&bc[s.Quote], held - notional})
	}
	e.pending = pc // a zero credit (a 100% fee) is harmless
	// the fee account's income is billed once per command (billFees)
	e.fees.base += bf
	e.fees.quote += sf
	e.fees.qty += q
	e.fees.notional += notional

	for _, o := range [2]*order{t, mk} {
		o.filled += q
		o.cumQuote += notional
		o.updateMs = e.timeMs
		o.status = StatusPartiallyFilled
		if o.filled == o.qty {
			o.status = StatusFilled
		}
	}
	m.last = p
	m.nextTrade++
	ts := e.out.Trades
	if len(ts) == cap(ts) {
		ts = slices.Grow(ts, 1)
	}
	ts = ts[:len(ts)+1]
	e.out.Trades = ts
	tr := &ts[len(ts)-1]
	tr.TradeID, tr.Market, tr.TimeMs, tr.Price, tr.Qty, tr.Quote = m.nextTrade<<10|int64(s.ID), s.ID, e.timeMs, p, q, notional
	tr.TakerSide, tr.MakerOrder, tr.TakerOrder = t.side, mk.id, t.id
	tr.TakerPos, tr.MakerPos, tr.TakerPnl, tr.MakerPnl, tr.Off = 0, 0, 0, 0, false // the slot may have held a contract fill
	if t.side == Buy {
		tr.MakerUID, tr.TakerUID, tr.TakerFee, tr.MakerFee = suid, buid, bf, sf
	} else {
		tr.MakerUID, tr.TakerUID, tr.TakerFee, tr.MakerFee = buid, suid, sf, bf
	}
	// The totals change by the fill's bills (Trade.AppendBills writes
	// them); a trade_in of zero (a 100% fee) adds nothing and is no bill.
	tr.BuyerUser, tr.SellerUser, tr.BaseCoin, tr.QuoteCoin, tr.Base = buyer.user, seller.user, s.Base, s.Quote, base
	tr.BillID = BillID(e.seq, e.nbills, e.shard)
	tr.After[0] = Amount(bc[s.Quote].total.Add(int64(-notional)))
	tr.After[1] = Amount(bc[s.Base].total.Add(int64(base - bf)))
	tr.After[2] = Amount(sc[s.Base].total.Add(int64(-base)))
	tr.After[3] = Amount(sc[s.Quote].total.Add(int64(notional - sf)))
	e.nbills += fillBills(base, bf, notional, sf)
	if mk.status != StatusFilled { // a filled maker reports from remove
		e.update(mh, mk)
	}
}

// billFees credits the fee account with the fees of the command's fills
// in m: one fee_income bill per coin (base, then quote; none when zero),
// whose FillQty and FillQuote are the command's traded quantity and value.
// One bill per command instead of one per fill: the fee account is in
// every fill, and each bill is an atomic add on its shared cells.
func (e *Engine) billFees(m *market) {
	f := e.fees
	e.fees = feeIncome{}
	s := m.spec
	fee := e.feeUser()
	if s.Contract {
		e.bill(fee, s.Margin, BizFillFee, f.quote, 0, s.ID, f.qty, f.notional)
		e.credit(fee, s.Margin, f.quote)
		return
	}
	fc, uid := e.acc.row(fee)
	n := len(e.out.Bills)
	bs := slices.Grow(e.out.Bills, 2)[:n+2]
	pc := slices.Grow(e.pending, 2)
	if f.base != 0 {
		cl := &fc[s.Base]
		bs[n].set(BillID(e.seq, e.nbills, e.shard), uid, fee, s.Base, BizFee, s.ID, f.qty, f.notional, f.base, Amount(cl.total.Add(int64(f.base))), 0, e.timeMs)
		n++
		e.nbills++
		pc = append(pc, credit{cl, f.base})
	}
	if f.quote != 0 {
		cl := &fc[s.Quote]
		bs[n].set(BillID(e.seq, e.nbills, e.shard), uid, fee, s.Quote, BizFee, s.ID, f.qty, f.notional, f.quote, Amount(cl.total.Add(int64(f.quote))), 0, e.timeMs)
		n++
		e.nbills++
		pc = append(pc, credit{cl, f.quote})
	}
	e.out.Bills, e.pending = bs[:n], pc
}

// feeUser returns the fee account's index. It must exist before any fill.
func (e *Engine) feeUser() UserIdx {
	if e.fee == 0 {
		u, ok := e.acc.Lookup(e.feeUID)
		if !ok {
			panic("engine: fee account not registered")
		}
		e.fee = u + 1
	}
	return e.fee - 1
}

// SetInsuranceUID names the account that pays contract losses beyond a
// bankrupt position's margin (0: none). It must be registered before the
// first such loss.
func (e *Engine) SetInsuranceUID(uid int64) { e.insUID, e.ins = uid, 0 }

// insuranceUser returns the insurance account's index, if there is one.
func (e *Engine) insuranceUser() (UserIdx, bool) {
	if e.ins == 0 {
		if e.insUID == 0 {
			return 0, false
		}
		u, ok := e.acc.Lookup(e.insUID)
		if !ok {
			return 0, false
		}
		e.ins = u + 1
	}
	return e.ins - 1, true
}

// rest puts o (already allocated as h) into its book, its user's list and
// the client id index.
func (e *Engine) rest(m *market, h handle, o *order) {
	sd := &m.bids
	if o.side == Sell {
		sd = &m.asks
	}
	e.link(sd, h, o)
	e.index(m, h, o)
}

// link appends o (handle h) to its price level's queue on sd, creating the
// level if needed.
func (e *Engine) link(sd *side, h handle, o *order) {
	lh := sd.joinable(&e.lvls, o.price)
	if lh == 0 {
		i, ok := sd.find(o.price)
		if ok {
			lh = sd.lvls[i]
		} else {
			lh = e.lvls.alloc(o.price)
			sd.insert(i, o.price, lh)
		}
		sd.remember(o.price, lh)
	}
	o.lvl = lh
	lv := e.lvls.get(lh)
	l := e.pool.ln(h)
	l.prev, l.next = lv.tail, 0
	if lv.tail != 0 {
		e.pool.ln(lv.tail).next = h
	} else {
		lv.head = h
	}
	lv.tail = h
	lv.qty += o.qty - o.filled
	lv.count++
}

// index links resting order o into its user's list, the client id index
// and the order id index.
func (e *Engine) index(m *market, h handle, o *order) {
	ul := m.listFor(o.user)
	l := e.pool.ln(h)
	l.uprev, l.unext = ul.tail, 0
	if ul.tail != 0 {
		e.pool.ln(ul.tail).unext = h
	} else {
		ul.head = h
	}
	ul.tail = h
	ul.n++

	if !o.cidGen {
		cid := e.pool.cid(h).Bytes()
		ch := cidHash(o.user, cid)
		head, _ := m.cids.get(ch)
		o.cnext = handle(head)
		m.cids.put(ch, int32(h))
		if _, x := generatedForm(cid); x {
			m.xForm++
		}
	}
	m.ids.put(&e.pool, o.id, h)
}

// remove takes working order o (handle h) out of the book and every index,
// releases what it still reserves, reports it with status st, and frees it.
func (e *Engine) remove(m *market, h handle, o *order, st Status) {
	sd := &m.bids
	if o.side == Sell {
		sd = &m.asks
	}
	lv := e.lvls.get(o.lvl)
	l := e.pool.ln(h)
	if l.prev != 0 {
		e.pool.ln(l.prev).next = l.next
	} else {
		lv.head = l.next
	}
	if l.next != 0 {
		e.pool.ln(l.next).prev = l.prev
	} else {
		lv.tail = l.prev
	}
	lv.qty -= o.qty - o.filled
	lv.count--
	if lv.count == 0 {
		sd.delete(o.price)
		sd.forget(o.price, o.lvl)
		e.lvls.release(o.lvl)
	}

	ul := m.list(o.user)
	if l.uprev != 0 {
		e.pool.ln(l.uprev).unext = l.unext
	} else {
		ul.head = l.unext
	}
	if l.unext != 0 {
		e.pool.ln(l.unext).uprev = l.uprev
	} else {
		ul.tail = l.uprev
	}
	ul.n--

	if !o.cidGen {
		e.unindexCID(m, h, o)
	}
	m.ids.del(o.id, h)

	e.release(m, o)
	if st != StatusFilled {
		o.status = st
		o.updateMs = e.timeMs
	}
	e.update(h, o)
	e.pool.release(h)
}

// findCID returns the working order of user u in m with client id cid, or 0.
func (m *market) findCID(p *pool, ch uint64, u UserIdx, cid []byte) handle {
	head, _ := m.cids.get(ch)
	for h := handle(head); h != 0; {
		o := p.get(h)
		if o.user == u && string(p.cid(h).Bytes()) == string(cid) {
			return h
		}
		h = o.cnext
	}
	return 0
}

// cidHash is FNV-1a over the client id, mixed with the user.
func cidHash(u UserIdx, cid []byte) uint64 {
	h := uint64(14695981039346656037) ^ uint64(u)*0x9E3779B97F4A7C15
	for _, b := range cid {
		h ^= uint64(b)
		h *= 1099511628211
	}
	if h == 0 {
		h = 1 // 0 marks an empty idmap slot
	}
	return h
}

// appendGeneratedID appends the client id of an order placed without one:
// "x-" and the order id. A client may not reuse it while that order works.
func appendGeneratedID(dst []byte, id int64) []byte {
	return strconv.AppendInt(append(dst, "x-"...), id, 10)
}

// generatedClientID is appendGeneratedID's text as a ClientID.
func generatedClientID(id int64) ClientID {
	var c ClientID
	c.N = uint8(len(appendGeneratedID(c.B[:0], id)))
	return c
}

// view returns working order h's view.
func (e *Engine) view(h handle) OrderView {
	var v OrderView
	e.setView(&v, h, e.pool.get(h))
	return v
}

// setView writes o's view to v, field by field (a composite literal
// assigned through a pointer is built on the stack and copied).
func (e *Engine) setView(v *OrderView, h handle, o *order) {
	v.OrderID, v.UID, v.User, v.Market = o.id, o.uid, o.user, o.market
	v.Side, v.Type, v.TIF, v.Status, v.Pos, v.Kind = o.side, o.typ, o.tif, o.status, o.pos, o.kind
	v.Price, v.OrigQty, v.ExecutedQty, v.CumQuote = o.price, o.qty, o.filled, o.cumQuote
	v.TimeMs, v.UpdateTimeMs = o.timeMs, o.updateMs
	if o.cidGen {
		v.ClientID = ClientID{} // generated: not stored (see OrderView)
	} else {
		v.ClientID = *e.pool.cid(h)
	}
}

// update appends the view of o (handle h) to out.Updates and returns it.
func (e *Engine) update(h handle, o *order) *OrderView {
	u := e.out.Updates
	if len(u) == cap(u) {
		u = slices.Grow(u, 1)
	}
	u = u[:len(u)+1]
	e.out.Updates = u
	v := &u[len(u)-1]
	e.setView(v, h, o)
	return v
}

// unindexCID takes o out of m's client id index.
func (e *Engine) unindexCID(m *market, h handle, o *order) {
	cid := e.pool.cid(h).Bytes()
	if _, x := generatedForm(cid); x {
		m.xForm--
	}
	ch := cidHash(o.user, cid)
	if head, _ := m.cids.get(ch); handle(head) == h {
		if o.cnext != 0 {
			m.cids.put(ch, int32(o.cnext))
		} else {
			m.cids.del(ch)
		}
		return
	}
	head, _ := m.cids.get(ch)
	for p := handle(head); p != 0; p = e.pool.get(p).cnext {
		if po := e.pool.get(p); po.cnext == h {
			po.cnext = o.cnext
			return
		}
	}
	panic("engine: working order missing from the client id index")
}

// generatedForm reports whether cid reads "x-<id>" exactly as
// generatedClientID writes it, and the id.
func generatedForm(cid []byte) (int64, bool) {
	if len(cid) < 3 || cid[0] != 'x' || cid[1] != '-' || cid[2] == '0' {
		return 0, false
	}
	id, err := ParseFixed(cid[2:], 0)
	if err != nil || len(cid) > 2+19 {
		return 0, false
	}
	for _, b := range cid[2:] {
		if b == '.' {
			return 0, false
		}
	}
	return id, true
}
