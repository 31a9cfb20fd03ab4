package enginetest

// The reference model of perpetual contracts, written from the rules of
// engine/contract.go's doc comments and issue #45, not from its code:
// products and proportional shares in math/big, positions in a plain map,
// every wallet change made where the rule says it happens.
//
// Rules the model follows:
//   - a contract market is a market like a spot one (book, matching, bands,
//     self-trade prevention, market-order protection, FOK, ids) whose fills
//     move no coins between the sides: each side opens or closes its
//     position and pays its fee in the margin coin's futures wallet (the
//     quote coin's, CoinID|engine.Futures);
//   - an open (BUY LONG, SELL SHORT) reserves ceil(notional/lev) +
//     floor(notional*taker) at its limit (a market order: its protection
//     price; none when the book is empty), lev being the user's leverage of
//     that side when it is placed, which the order keeps; it is refused if
//     the position would then exceed maxPositionSize;
//   - a close (SELL LONG, BUY SHORT) reserves nothing; it needs a position
//     and its quantity must be within the position less its working closes;
//   - an open's fill of q uses the part of the reservation that was for q
//     (hold(remaining) - hold(remaining-q) at the order's limit and
//     leverage): the fee (at most that part), the margin (ceil(notional/
//     lev), at most what is left of the part), the rest goes back to
//     available;
//   - a close's fill of q realizes the PnL of q against the position's
//     proportional entry value (floor) and frees the proportional margin
//     (floor; all of it when the position is closed entirely); the user gets
//     margin + pnl - fee, and when that is negative the shortfall is taken
//     from the wallet's available (cross only), then from the position's
//     remaining margin, then from the insurance account's available (not
//     when the insurance account is the user), and what is left is bad
//     debt. A position closed entirely gives its leftover margin back;
//   - bills: one per side per fill, taker first (position_open_*: -fee;
//     position_close_*: pnl - fee + what the user could not pay), an
//     insurance_payout before the close's bill when the insurance account
//     paid, and one order_fill_fee_income to the fee account per command;
//   - settings: a user's account in a contract (cross, both leverages the
//     default) exists once a place, a leverage or a margin-mode command of
//     theirs succeeded there. Leverage changes are refused while an
//     affected side holds a position (cross: both sides), the margin mode
//     while the user has a position or a working order there; going back to
//     cross gives SHORT the LONG leverage. Isolated margin moves in and out
//     of a position, keeping at least ceil(openValue/lev).

import (
	"cmp"
	"encoding/binary"
	"math/big"
	"slices"

	"github.com/weexcore/exchange/engine"
)

// RefCtAcct is one user's settings and positions in one contract.
type RefCtAcct struct {
	Mode engine.MarginMode
	Lev  [2]int32 // LONG, SHORT
	Pos  [2]RefPosition
}

// RefPosition is one side of a user's holding.
type RefPosition struct {
	Size, OpenValue, Margin, Closing int64
	OpenQty, CloseQty                int64
	OpenVal, CloseVal                int64
	Fees, Realized                   int64
	CreatedMs, UpdatedMs             int64
	Opening                          int64 // the working opens' remaining quantity on this side
}

// open adds q worth n with margin to the position, filled from a working
// open order (counted in Opening until it fills).
func (ps *RefPosition) open(q, n, margin, timeMs int64) {
	if ps.Size == 0 {
		ps.CreatedMs = timeMs
	}
	ps.Size += q
	ps.OpenValue += n
	ps.Margin += margin
	ps.OpenQty += q
	ps.OpenVal += n
	ps.Opening -= q
}

// AddContract adds contract market id with config c (ids ascending).
func (r *Ref) AddContract(id engine.MarketID, c engine.ContractConfig) {
	// its book's rules are a spot market's: the order size bounds both
	// market-order caps
	m := r.newMarket(id, engine.SpotConfig{Symbol: c.V2Symbol, BaseAsset: c.BaseAsset, QuoteAsset: c.QuoteAsset,
		TickSize: c.TickSize, StepSize: c.StepSize, MinTradeAmount: c.MinOrderSize, MaxTradeAmount: c.MaxOrderSize,
		TakerFeeRate: c.TakerFeeRate, MakerFeeRate: c.MakerFeeRate, BuyLimitPriceRatio: c.BuyLimitPriceRatio,
		SellLimitPriceRatio: c.SellLimitPriceRatio, MarketBuyLimitSize: c.MaxOrderSize, MarketSellLimitSize: c.MaxOrderSize,
		MarketFallbackPriceRatio: c.MarketFallbackPriceRatio, EnableTrade: c.EnableTrade})
	m.Contract = true
	m.Margin = r.coin(c.MarginAsset).ID | engine.Futures
	m.MinLev, m.MaxLev, m.DefLev = int32(c.MinLeverage), int32(c.MaxLeverage), int32(c.DefaultLeverage)
	mp := new(big.Rat).Quo(rat(c.MaxPositionSize), m.step)
	m.MaxPos = ratInt(mp, c.Symbol+" maxPositionSize").Int64()
	m.Accts = map[engine.UserIdx]*RefCtAcct{}
	m.mmr = rat(c.MaintenanceMarginRate)
	r.Contracts = append(r.Contracts, m)
}

func opens(sd engine.Side, p engine.PosSide) bool {
	return sd == engine.Buy && p == engine.Long || sd == engine.Sell && p == engine.Short
}

// settings returns u's mode and leverages in m (the defaults without an account).
func (m *RefMarket) settings(u engine.UserIdx) (engine.MarginMode, [2]int32) {
	if a := m.Accts[u]; a != nil {
		return a.Mode, a.Lev
	}
	return engine.Cross, [2]int32{m.DefLev, m.DefLev}
}

func (m *RefMarket) acct(u engine.UserIdx) *RefCtAcct {
	a := m.Accts[u]
	if a == nil {
		a = &RefCtAcct{Mode: engine.Cross, Lev: [2]int32{m.DefLev, m.DefLev}}
		m.Accts[u] = a
	}
	return a
}

// position returns u's position on side p in m, or nil.
func (m *RefMarket) position(u engine.UserIdx, p engine.PosSide) *RefPosition {
	if a := m.Accts[u]; a != nil {
		return &a.Pos[p-1]
	}
	return nil
}

// ceilDiv is ceil(a/b) for a >= 0, b > 0, exactly.
func ceilDiv(a *big.Int, b int64) *big.Int {
	return ceilRat(new(big.Rat).SetFrac(a, big.NewInt(b)))
}

// hold is what an open of q at p with leverage lev reserves:
// ceil(notional/lev) + floor(notional*taker); ok false when it does not
// fit an int64.
func (m *RefMarket) hold(p, q int64, lev int32) (int64, bool) {
	n := new(big.Int).Mul(big.NewInt(p), big.NewInt(q))
	n.Mul(n, m.quotePerTS)
	if !n.IsInt64() {
		return 0, false
	}
	h := ceilDiv(n, int64(lev))
	h.Add(h, big.NewInt(fee(n.Int64(), m.taker)))
	return fits(h)
}

// contractHold checks the contract part of a place and returns what it
// reserves and the leverage the order keeps.
func (r *Ref) contractHold(m *RefMarket, c *engine.Cmd, lim int64) (int64, int32, engine.Reject) {
	if c.Pos != engine.Long && c.Pos != engine.Short {
		return 0, 0, engine.RejectInvalidPositionSide
	}
	if c.TP != 0 || c.SL != 0 || c.TrigMark != 0 {
		// presets: an open's only, not negative; a limit LONG's take-profit
		// above its price and stop-loss below (SHORT: the reverse)
		bad := !opens(c.Side, c.Pos) || c.TP < 0 || c.SL < 0 || c.TrigMark > 3
		if c.Type == engine.Limit && !bad {
			p, tp, sl := int64(c.Price), int64(c.TP), int64(c.SL)
			if c.Pos == engine.Long {
				bad = tp != 0 && tp <= p || sl != 0 && sl >= p
			} else {
				bad = tp != 0 && tp >= p || sl != 0 && sl <= p
			}
		}
		if bad {
			return 0, 0, engine.RejectInvalidTPSL
		}
	}
	_, lev := m.settings(c.User)
	ps := m.position(c.User, c.Pos)
	qty := int64(c.Qty)
	if !opens(c.Side, c.Pos) {
		if ps == nil || ps.Size == 0 {
			return 0, 0, engine.RejectNoPosition
		}
		if qty > ps.Size-ps.Closing {
			return 0, 0, engine.RejectReduceOnly
		}
		return 0, lev[c.Pos-1], engine.OK
	}
	size := int64(0) // counting working opens: a position could otherwise pass the limit
	if ps != nil {
		size = ps.Size + ps.Opening
	}
	if size+qty > m.MaxPos {
		return 0, 0, engine.RejectPositionTooLarge
	}
	if lim == 0 { // a market order facing an empty book: it expires
		return 0, lev[c.Pos-1], engine.OK
	}
	h, ok := m.hold(lim, qty, lev[c.Pos-1])
	if !ok {
		return 0, 0, engine.RejectOverflow
	}
	return h, lev[c.Pos-1], engine.OK
}

// contractPlaced records the position side and leverage of o, just placed,
// and a close's claim on its position.
func (r *Ref) contractPlaced(m *RefMarket, o *RefOrder, p engine.PosSide, lev int32) {
	a := m.acct(o.User)
	o.Pos, o.Lev = p, lev
	if !opens(o.Side, p) {
		a.Pos[p-1].Closing += o.Qty
	} else {
		a.Pos[p-1].Opening += o.Qty
	}
}

// recordFill counts a contract fill of q worth n at p in both orders and
// in the fee totals, and reports it (off: a takeover or ADL fill); fees
// and PnL are the taker's then the maker's.
func (r *Ref) recordFill(m *RefMarket, t, mk *RefOrder, p, q, n int64, fee, pnl [2]int64, off bool) {
	r.feeQty += q
	r.feeNotional += n
	for _, o := range []*RefOrder{t, mk} {
		o.Filled += q
		o.CumQuote += n
		o.UpdateMs = r.timeMs
		o.Status = engine.StatusPartiallyFilled
		if o.Filled == o.Qty {
			o.Status = engine.StatusFilled
		}
	}
	m.NextTrade++
	buyer, seller := t.User, mk.User
	if t.Side == engine.Sell {
		buyer, seller = seller, buyer
	}
	r.out.Trades = append(r.out.Trades, engine.Trade{BuyerUser: buyer, SellerUser: seller, TradeID: m.NextTrade<<10 | int64(m.ID), Market: m.ID, TimeMs: r.timeMs,
		Price: engine.Price(p), Qty: engine.Qty(q), Quote: engine.Amount(n), TakerSide: t.Side,
		MakerOrder: mk.ID, TakerOrder: t.ID, MakerUID: r.Users[mk.User].UID, TakerUID: r.Users[t.User].UID,
		TakerFee: engine.Amount(fee[0]), MakerFee: engine.Amount(fee[1]), BaseCoin: m.Margin, QuoteCoin: m.Margin,
		TakerPos: t.Pos, MakerPos: mk.Pos, TakerPnl: engine.Amount(pnl[0]), MakerPnl: engine.Amount(pnl[1]), Off: off})
}

func (r *Ref) fillContract(m *RefMarket, t, mk *RefOrder, p, q int64) {
	n, ok := m.notional(p, q)
	if !ok {
		panic("enginetest: contract fill overflows")
	}
	rate := m.taker
	if t.Kind == engine.KindLiquidation { // the liquidated side pays no fee
		rate = new(big.Rat)
	}
	tf, tp := r.settle(m, t, q, n, rate)
	mf, mp := r.settle(m, mk, q, n, m.maker)
	r.feeQuote += tf + mf
	m.Last = p
	r.recordFill(m, t, mk, p, q, n, [2]int64{tf, mf}, [2]int64{tp, mp}, false)
}

// share is floor(x*q/size).
func share(x, q, size int64) int64 {
	v := new(big.Int).Mul(big.NewInt(x), big.NewInt(q))
	return v.Quo(v, big.NewInt(size)).Int64()
}

// settle is one side's part of a contract fill of q worth n: it returns
// the side's fee and realized PnL and writes its bill.
func (r *Ref) settle(m *RefMarket, o *RefOrder, q, n int64, rate *big.Rat) (f, pnl int64) {
	ps := &m.Accts[o.User].Pos[o.Pos-1]
	w := r.cell(o.User, m.Margin)
	f = fee(n, rate)
	var delta int64
	var biz engine.BizType
	if opens(o.Side, o.Pos) {
		biz = engine.BizOpenLong
		if o.Pos == engine.Short {
			biz = engine.BizOpenShort
		}
		after, ok := m.hold(o.Price, o.Qty-o.Filled-q, o.Lev)
		if !ok {
			panic("enginetest: a smaller hold overflows")
		}
		part := o.Reserved - after
		o.Reserved = after
		f = min(f, part)
		margin := min(ceilDiv(big.NewInt(n), int64(o.Lev)).Int64(), part-f)
		ps.open(q, n, margin, r.timeMs)
		w.Avail += part - f - margin
		delta = -f
		r.attach(m, o)
	} else {
		biz = engine.BizCloseLong
		if o.Pos == engine.Short {
			biz = engine.BizCloseShort
		}
		entry, margin := ps.OpenValue, ps.Margin
		if q != ps.Size {
			entry, margin = share(ps.OpenValue, q, ps.Size), share(ps.Margin, q, ps.Size)
		}
		if o.Pos == engine.Long {
			pnl = n - entry
		} else {
			pnl = entry - n
		}
		ps.Size -= q
		if ps.Size == 0 {
			r.dropPlans(m, o.User, o.Pos)
		}
		ps.OpenValue -= entry
		ps.Margin -= margin
		ps.Closing -= q
		ps.CloseQty += q
		ps.CloseVal += n
		ps.Realized += pnl
		delta = pnl - f
		if got := margin + pnl - f; got >= 0 {
			if ins, ok := r.liqIncome(m, o); ok { // a liquidation's result is the insurance account's
				r.cell(ins, m.Margin).Avail += got
				defer r.bill(ins, m.Margin, engine.BizLiquidationIncome, got, 0, m.ID, q, n) // after the close's bill
				delta -= got
			} else {
				w.Avail += got
			}
		} else {
			delta += r.cover(m, o.User, ps, -got)
		}
		if ps.Size == 0 { // what the floors of the shares left
			w.Avail += ps.Margin
			ps.Margin = 0
		}
	}
	ps.Fees += f
	ps.UpdatedMs = r.timeMs
	r.bill(o.User, m.Margin, biz, delta, f, m.ID, q, n)
	return f, pnl
}

// cover takes d, a close's shortfall, from the user's available (cross),
// the position's margin, the insurance account; the rest is bad debt. It
// returns what the user did not pay.
func (r *Ref) cover(m *RefMarket, u engine.UserIdx, ps *RefPosition, d int64) int64 {
	w := r.cell(u, m.Margin)
	if m.Accts[u].Mode == engine.Cross {
		x := min(d, w.Avail)
		w.Avail -= x
		d -= x
	}
	x := min(d, ps.Margin)
	ps.Margin -= x
	d -= x
	unpaid := d
	if ins, ok := r.Lookup(r.InsUID); ok && r.InsUID != 0 && ins != u && d > 0 {
		ic := r.cell(ins, m.Margin)
		if x := min(d, ic.Avail); x > 0 {
			ic.Avail -= x
			r.bill(ins, m.Margin, engine.BizInsurance, -x, 0, m.ID, 0, 0)
			d -= x
		}
	}
	m.BadDebt += d
	return unpaid
}

// contractMarket checks a settings command's market and user.
func (r *Ref) contractMarket(c *engine.Cmd) (*RefMarket, engine.Reject) {
	m := r.Market(c.Market)
	if m == nil || !m.Contract {
		return nil, engine.RejectUnknownMarket
	}
	if !r.valid(c.User, c.UID) {
		return nil, engine.RejectUnknownUser
	}
	return m, engine.OK
}

// transfer moves Amount into wallet Coin from the coin's other wallet.
func (r *Ref) transfer(c *engine.Cmd) engine.Reject {
	if rj := r.ledgerCheck(c); rj != engine.OK {
		return rj
	}
	from := c.Coin.Spot()
	if !c.Coin.IsFutures() {
		from |= engine.Futures
	}
	x := int64(c.Amount)
	if r.cell(c.User, from).Avail < x {
		return engine.RejectInsufficientBalance
	}
	r.out.BillID = engine.BillID(r.seq, r.k, r.shard)
	r.cell(c.User, from).Avail -= x
	r.bill(c.User, from, engine.BizTransferOut, -x, 0, 0, 0, 0)
	r.cell(c.User, c.Coin).Avail += x
	r.bill(c.User, c.Coin, engine.BizTransferIn, x, 0, 0, 0, 0)
	return engine.OK
}

func (r *Ref) setLeverage(c *engine.Cmd) engine.Reject {
	m, rj := r.contractMarket(c)
	if rj != engine.OK {
		return rj
	}
	if c.Amount < engine.Amount(m.MinLev) || c.Amount > engine.Amount(m.MaxLev) {
		return engine.RejectInvalidLeverage
	}
	if c.Pos != 0 && c.Pos != engine.Long && c.Pos != engine.Short {
		return engine.RejectInvalidPositionSide
	}
	mode, _ := m.settings(c.User)
	sides := []engine.PosSide{engine.Long, engine.Short}
	if mode == engine.Isolated && c.Pos != 0 {
		sides = []engine.PosSide{c.Pos}
	}
	for _, p := range sides {
		if ps := m.position(c.User, p); ps != nil && ps.Size > 0 {
			return engine.RejectPositionExists
		}
	}
	a := m.acct(c.User)
	for _, p := range sides {
		a.Lev[p-1] = int32(c.Amount)
	}
	return engine.OK
}

func (r *Ref) setMarginMode(c *engine.Cmd) engine.Reject {
	m, rj := r.contractMarket(c)
	if rj != engine.OK {
		return rj
	}
	if c.Mode != engine.Cross && c.Mode != engine.Isolated {
		return engine.RejectInvalidMarginMode
	}
	if a := m.Accts[c.User]; a != nil && (a.Pos[0].Size > 0 || a.Pos[1].Size > 0) {
		return engine.RejectPositionExists
	}
	for _, o := range m.Orders {
		if o.User == c.User {
			return engine.RejectPositionExists
		}
	}
	a := m.acct(c.User)
	if c.Mode == engine.Cross && a.Mode == engine.Isolated {
		a.Lev[1] = a.Lev[0]
	}
	a.Mode = c.Mode
	return engine.OK
}

func (r *Ref) positionMargin(c *engine.Cmd) engine.Reject {
	m, rj := r.contractMarket(c)
	if rj != engine.OK {
		return rj
	}
	if c.Pos != engine.Long && c.Pos != engine.Short {
		return engine.RejectInvalidPositionSide
	}
	ps := m.position(c.User, c.Pos)
	if ps == nil || ps.Size == 0 {
		return engine.RejectNoPosition
	}
	a := m.Accts[c.User]
	if a.Mode != engine.Isolated {
		return engine.RejectInvalidMarginMode
	}
	x := int64(c.Amount)
	w := r.cell(c.User, m.Margin)
	switch {
	case x == 0:
		return engine.RejectInvalidAmount
	case x > 0:
		if w.Avail < x {
			return engine.RejectInsufficientBalance
		}
		w.Avail -= x
		ps.Margin += x
	default:
		floor := ceilDiv(big.NewInt(ps.OpenValue), int64(a.Lev[c.Pos-1])).Int64()
		if ps.Margin+x < floor {
			return engine.RejectInsufficientBalance
		}
		ps.Margin += x
		w.Avail -= x
	}
	ps.UpdatedMs = r.timeMs
	return engine.OK
}

// Positions returns u's positions (size > 0) in every contract, by market
// then side, as engine.Engine.Positions shows them; their liquidation
// prices (a bisection each) only when liq.
func (r *Ref) Positions(u engine.UserIdx, liq bool) []engine.PositionView {
	var vs []engine.PositionView
	for _, m := range r.Contracts {
		a := m.Accts[u]
		if a == nil {
			continue
		}
		for i, p := range a.Pos {
			if p.Size == 0 {
				continue
			}
			vs = append(vs, engine.PositionView{Market: m.ID, User: u, UID: r.Users[u].UID, Side: engine.PosSide(i + 1),
				Mode: a.Mode, Leverage: a.Lev[i], Size: engine.Qty(p.Size), OpenValue: engine.Amount(p.OpenValue),
				Margin: engine.Amount(p.Margin), Closing: engine.Qty(p.Closing), OpenQty: engine.Qty(p.OpenQty),
				CloseQty: engine.Qty(p.CloseQty), OpenVal: engine.Amount(p.OpenVal), CloseVal: engine.Amount(p.CloseVal),
				Fees: engine.Amount(p.Fees), Realized: engine.Amount(p.Realized), CreatedMs: p.CreatedMs, UpdatedMs: p.UpdatedMs,
			})
			if liq {
				vs[len(vs)-1].LiqPrice = engine.Price(r.liqPrice(m, u, engine.PosSide(i+1)))
			}
		}
	}
	return vs
}

// Settings returns u's margin mode and leverages in contract id.
func (r *Ref) Settings(u engine.UserIdx, id engine.MarketID) (engine.MarginMode, int32, int32) {
	mode, lev := r.Market(id).settings(u)
	return mode, lev[0], lev[1]
}

// PnLBalance returns, for contract m, the sum over every position ever
// held of realized PnL plus short minus long open value: zero, since a
// fill's PnL is what one side gains and the other loses (before fees).
func (m *RefMarket) PnLBalance() int64 {
	var s int64
	for _, a := range m.Accts {
		s += a.Pos[0].Realized + a.Pos[1].Realized + a.Pos[1].OpenValue - a.Pos[0].OpenValue
	}
	return s
}

// appendContract appends the contract tail of m's canonical encoding
// (engine/contract.go): bad debt, then each account by ascending user.
func (m *RefMarket) appendContract(b []byte) []byte {
	le := binary.LittleEndian
	b = le.AppendUint64(b, uint64(m.BadDebt))
	var users []engine.UserIdx
	for u := range m.Accts {
		users = append(users, u)
	}
	slices.Sort(users)
	b = le.AppendUint32(b, uint32(len(users)))
	for _, u := range users {
		a := m.Accts[u]
		b = le.AppendUint32(b, uint32(u))
		b = append(b, byte(a.Mode))
		b = le.AppendUint32(b, uint32(a.Lev[0]))
		b = le.AppendUint32(b, uint32(a.Lev[1]))
		for _, p := range a.Pos {
			for _, v := range []int64{p.Size, p.OpenValue, p.Margin, p.Closing, p.OpenQty, p.CloseQty,
				p.OpenVal, p.CloseVal, p.Fees, p.Realized, p.CreatedMs, p.UpdatedMs, p.Opening, 0} {
				b = le.AppendUint64(b, uint64(v))
			}
		}
	}
	// the working opens' presets, by ascending order id
	var ps []*RefOrder
	for _, o := range m.Orders {
		if o.TP != 0 || o.SL != 0 {
			ps = append(ps, o)
		}
	}
	slices.SortFunc(ps, func(x, y *RefOrder) int { return cmp.Compare(x.ID, y.ID) })
	b = le.AppendUint32(b, uint32(len(ps)))
	for _, o := range ps {
		b = le.AppendUint64(b, uint64(o.ID))
		b = le.AppendUint64(b, uint64(o.TP))
		b = le.AppendUint64(b, uint64(o.SL))
		b = append(b, o.Mark)
	}
	// the funding state: the reference sends no funding commands
	for range 3 {
		b = le.AppendUint64(b, 0)
	}
	return m.appendPlans(b)
}

// appendFutures appends the futures wallets' section of the accounts
// encoding (engine/snapshot.go): left out when every futures cell is zero.
func (r *Ref) appendFutures(b []byte) []byte {
	nc := len(r.Coins)
	var users []int
	for u := range r.Users {
		for _, cl := range r.Bal[u][nc:] {
			if cl.Avail != 0 || cl.Total != 0 {
				users = append(users, u)
				break
			}
		}
	}
	if len(users) == 0 {
		return b
	}
	le := binary.LittleEndian
	b = le.AppendUint32(append(b, "FUT1"...), uint32(len(users)))
	for _, u := range users {
		b = le.AppendUint32(b, uint32(u))
		for _, cl := range r.Bal[u][nc:] {
			b = le.AppendUint64(b, uint64(cl.Avail))
			b = le.AppendUint64(b, uint64(cl.Total))
		}
	}
	return b
}
