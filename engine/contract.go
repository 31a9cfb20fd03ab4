package engine

import (
	"fmt"
	"slices"
)

// Perpetual contracts (docs/DESIGN.md, "Contracts"). A contract market is
// a market like a spot one (same book, matching, bands, self-trade
// prevention) with its own settlement: a fill moves no coins between the
// two sides, it opens or closes positions and moves margin, PnL and fees
// in the margin coin's futures wallets.
//
// Every contract market belongs to the ledger shard, which alone writes
// futures wallets: so a margin decision (a reservation, a loss taken from
// the wallet, a transfer out) reads only state of its own shard and
// replays as it was taken, and cross margin needs no state of another
// shard.
//
// Money. A futures cell's total is the wallet; its frozen part (total -
// available) is the reservations of working open orders plus the margin
// of the user's positions in that coin. Positions are linear: quantity in
// the base coin, value in the margin coin (the quote coin, same scale).
// Realized PnL is not paid by one counterparty: per margin coin,
//
//	sum of wallets + sum over positions (short openValue - long openValue) - bad debt
//
// equals deposits minus withdrawals into both wallets (total long size
// equals total short size, so the sum is what all positions would settle
// to at any common price). Bad debt is a loss no one could pay: beyond
// the position's margin, the wallet's available balance (cross only) and
// the insurance account. Liquidation, which closes positions before their
// margin runs out, is not built yet; until then bad debt is counted, not
// hidden.

// PosSide is a contract order's or position's side (hedge mode: a user
// holds at most one LONG and one SHORT position per contract).
type PosSide uint8

const (
	Long  PosSide = 1
	Short PosSide = 2
)

// MarginMode is how a user's positions in one contract are margined.
type MarginMode uint8

const (
	Cross    MarginMode = 1
	Isolated MarginMode = 2
)

// ContractBase is the first contract market id: spot markets take ids
// below it in config order, contracts ContractBase + their config index,
// so adding either kind never renumbers the other.
const ContractBase MarketID = 512

// MaxLeverage bounds a contract's maxLeverage (it is kept in a byte per order).
const MaxLeverage = 200

// ContractConfig is a perpetual contract as the config file gives it
// (docs/API.md, "Configuration").
type ContractConfig struct {
	Symbol                   string `json:"symbol"`
	V2Symbol                 string `json:"v2Symbol"`
	ContractID               int64  `json:"contractId"`
	BaseAsset                string `json:"baseAsset"`
	QuoteAsset               string `json:"quoteAsset"`
	MarginAsset              string `json:"marginAsset"`
	ContractVal              string `json:"contractVal"`
	TickSize                 string `json:"tickSize"`
	StepSize                 string `json:"stepSize"`
	MinOrderSize             string `json:"minOrderSize"`
	MaxOrderSize             string `json:"maxOrderSize"`
	MaxPositionSize          string `json:"maxPositionSize"`
	MakerFeeRate             string `json:"makerFeeRate"`
	TakerFeeRate             string `json:"takerFeeRate"`
	MinLeverage              int    `json:"minLeverage"`
	MaxLeverage              int    `json:"maxLeverage"`
	DefaultLeverage          int    `json:"defaultLeverage"`
	MaintenanceMarginRate    string `json:"maintenanceMarginRate"`
	BuyLimitPriceRatio       string `json:"buyLimitPriceRatio"`
	SellLimitPriceRatio      string `json:"sellLimitPriceRatio"`
	MarketFallbackPriceRatio string `json:"marketFallbackPriceRatio"`
	IndexSymbol              string `json:"indexSymbol"`
	FundingIntervalHours     int    `json:"fundingIntervalHours"`
	InterestRate             string `json:"interestRate"`
	MaxFundingRate           string `json:"maxFundingRate"`
	EnableTrade              bool   `json:"enableTrade"`
}

// NewContractSpec checks c and converts it. The spec's Symbol is the V2
// name (unique across both kinds); V3Symbol is the V3 name. The margin
// coin must be the quote coin (linear contracts).
func NewContractSpec(id MarketID, c ContractConfig, base, quote Coin) (*MarketSpec, error) {
	if id < ContractBase || id >= MaxMarkets {
		return nil, fmt.Errorf("engine: contract %s: id %d outside [%d, %d)", c.Symbol, id, ContractBase, MaxMarkets)
	}
	if c.MarginAsset != c.QuoteAsset {
		return nil, fmt.Errorf("engine: contract %s: marginAsset %q must be the quote asset %q (linear contracts only)", c.Symbol, c.MarginAsset, c.QuoteAsset)
	}
	if c.ContractVal != "1" {
		return nil, fmt.Errorf("engine: contract %s: contractVal %q must be 1 (quantities are in the base coin)", c.Symbol, c.ContractVal)
	}
	if c.V2Symbol == "" || c.Symbol == "" {
		return nil, fmt.Errorf("engine: contract %q: symbol and v2Symbol are required", c.Symbol)
	}
	if c.MinLeverage < 1 || c.MaxLeverage < c.MinLeverage || c.MaxLeverage > MaxLeverage ||
		c.DefaultLeverage < c.MinLeverage || c.DefaultLeverage > c.MaxLeverage {
		return nil, fmt.Errorf("engine: contract %s: leverage must satisfy 1 <= minLeverage <= defaultLeverage <= maxLeverage <= %d", c.Symbol, MaxLeverage)
	}
	if c.FundingIntervalHours < 1 || 24%c.FundingIntervalHours != 0 {
		return nil, fmt.Errorf("engine: contract %s: fundingIntervalHours %d must divide 24", c.Symbol, c.FundingIntervalHours)
	}
	s, err := NewMarketSpec(id, SpotConfig{Symbol: c.V2Symbol, BaseAsset: c.BaseAsset, QuoteAsset: c.QuoteAsset,
		TickSize: c.TickSize, StepSize: c.StepSize, MinTradeAmount: c.MinOrderSize, MaxTradeAmount: c.MaxOrderSize,
		TakerFeeRate: c.TakerFeeRate, MakerFeeRate: c.MakerFeeRate,
		BuyLimitPriceRatio: c.BuyLimitPriceRatio, SellLimitPriceRatio: c.SellLimitPriceRatio,
		MarketBuyLimitSize: c.MaxOrderSize, MarketSellLimitSize: c.MaxOrderSize,
		MarketFallbackPriceRatio: c.MarketFallbackPriceRatio, EnableTrade: c.EnableTrade}, base, quote)
	if err != nil {
		return nil, err
	}
	s.Contract, s.V3Symbol, s.ContractID, s.Margin = true, c.Symbol, c.ContractID, quote.ID|Futures
	s.MinLev, s.MaxLev, s.DefLev = int32(c.MinLeverage), int32(c.MaxLeverage), int32(c.DefaultLeverage)
	s.IndexSymbol, s.FundingHours = c.IndexSymbol, int32(c.FundingIntervalHours)
	if s.MaxPosQty, err = s.ParseQty([]byte(c.MaxPositionSize)); err != nil || s.MaxPosQty < s.MinQty {
		return nil, fmt.Errorf("engine: contract %s: maxPositionSize %q must be a multiple of stepSize, at least minOrderSize", c.Symbol, c.MaxPositionSize)
	}
	rate := func(name, v string) int64 {
		r, e := ParseFixed([]byte(v), RateDecimals)
		if e != nil || r < 0 || r > RateOne {
			err = fmt.Errorf("engine: contract %s: %s %q must be a decimal in [0, 1] with at most %d decimals", c.Symbol, name, v, RateDecimals)
		}
		return r
	}
	s.MaintRate = rate("maintenanceMarginRate", c.MaintenanceMarginRate)
	s.InterestRate = rate("interestRate", c.InterestRate)
	s.MaxFundingRate = rate("maxFundingRate", c.MaxFundingRate)
	if err != nil {
		return nil, err
	}
	if s.MaintRate == 0 || s.MaintRate*int64(s.MaxLev) >= RateOne {
		return nil, fmt.Errorf("engine: contract %s: maintenanceMarginRate must be above 0 and below 1/maxLeverage", c.Symbol)
	}
	return s, nil
}

// ctState is a contract market's positions and settings, by user, kept
// in pages of user indexes like the markets' order lists (no hashing on
// the fill path; iteration in user order for the canonical encoding).
type ctState struct {
	pages   []*acctPage
	n       int    // accounts
	open    int    // positions with a size (both sides count)
	longQty Qty    // the LONG positions' sizes (open interest; the SHORTs' sum is equal)
	badDebt Amount // losses no one could pay (see the package comment above)
	// presets holds the take-profit and stop-loss prices of working opens
	// placed with them, by order id: the plans that attach them to the
	// position when the order fills come with the risk work.
	presets map[int64]preset

	// funding (funding.go): the last funding time, rate and index
	lastFundingMs int64
	lastRate      int64
	lastIndex     Price

	plans planLists  // take-profit and stop-loss plans (plan.go)
	liq   [2]liqHeap // liquidation triggers: falling, rising (liquidate.go)
}

// preset is an open's take-profit and stop-loss trigger prices (0: none)
// and which trigger on the mark price (bit 0 TP, bit 1 SL).
type preset struct {
	tp, sl Price
	mark   uint8
}

type acctPage [listPageSize]*ctAcct

func (ct *ctState) get(u UserIdx) *ctAcct {
	if i := int(u >> listPageBits); i < len(ct.pages) && ct.pages[i] != nil {
		return ct.pages[i][u&(listPageSize-1)]
	}
	return nil
}

func (ct *ctState) put(u UserIdx, a *ctAcct) {
	i := int(u >> listPageBits)
	if i >= len(ct.pages) {
		ct.pages = append(ct.pages, make([]*acctPage, i+1-len(ct.pages))...)
	}
	if ct.pages[i] == nil {
		ct.pages[i] = new(acctPage)
	}
	if ct.pages[i][u&(listPageSize-1)] == nil {
		ct.n++
	}
	ct.pages[i][u&(listPageSize-1)] = a
}

// each calls f for every account, in user order.
func (ct *ctState) each(f func(UserIdx, *ctAcct)) {
	for pi, p := range ct.pages {
		if p == nil {
			continue
		}
		for i, a := range p {
			if a != nil {
				f(UserIdx(pi<<listPageBits|i), a)
			}
		}
	}
}

// ctAcct is one user's settings and positions in one contract. It exists
// once a command of the user succeeded in the market.
type ctAcct struct {
	mode  MarginMode
	lev   [2]int32 // leverage of new LONG and SHORT opens (cross: equal)
	pos   [2]position
	plans int         // the user's plans in the contract
	liq   [3]liqEntry // triggers: cross account, isolated LONG, SHORT (liquidate.go)
}

// position is one side of a user's holding in a contract.
type position struct {
	size      Qty
	openValue Amount // entry value of size (entry price = openValue / size)
	margin    Amount // frozen in the futures wallet for this position
	closing   Qty    // remaining quantity of the user's working closes on it
	opening   Qty    // remaining quantity of the user's working opens on this side
	funding   Amount // cumulative funding received (negative: paid)
	openQty   Qty    // cumulative
	closeQty  Qty
	openVal   Amount // cumulative entry value opened
	closeVal  Amount // cumulative exit value closed
	fees      Amount // cumulative fees paid on it
	realized  Amount // cumulative realized PnL
	createdMs int64  // when the current position (size > 0) was opened
	updatedMs int64
}

// PositionView is a position as clients see it. Entry price is
// OpenValue/Size; the edge works out what depends on the mark price.
type PositionView struct {
	Market    MarketID
	User      UserIdx
	UID       int64
	Side      PosSide
	Mode      MarginMode
	Leverage  int32
	Size      Qty
	OpenValue Amount
	Margin    Amount
	Closing   Qty
	OpenQty   Qty
	CloseQty  Qty
	OpenVal   Amount
	CloseVal  Amount
	Fees      Amount
	Realized  Amount
	Funding   Amount // cumulative funding received (negative: paid)
	CreatedMs int64
	UpdatedMs int64
	// LiqPrice is the mark at which the position's unit is liquidated
	// (docs/DESIGN.md, "Liquidation"; for a cross account in several
	// contracts, with the other marks as they are); 0: none.
	LiqPrice Price
}

// opens reports whether o opens (or adds to) a position: BUY LONG, SELL SHORT.
func (o *order) opens() bool { return (o.side == Buy) == (o.pos == Long) }

func opens(sd Side, p PosSide) bool { return (sd == Buy) == (p == Long) }

// acct returns u's account in contract market m, or nil.
func (m *market) acct(u UserIdx) *ctAcct { return m.ct.get(u) }

// acctFor returns u's account in m, making it with the defaults.
func (m *market) acctFor(u UserIdx) *ctAcct {
	a := m.ct.get(u)
	if a == nil {
		l := m.spec.DefLev
		a = &ctAcct{mode: Cross, lev: [2]int32{l, l}}
		m.ct.put(u, a)
	}
	return a
}

// settings returns u's margin mode and leverages in m (the defaults when
// u has no account there).
func (m *market) settings(u UserIdx) (MarginMode, [2]int32) {
	if a := m.acct(u); a != nil {
		return a.mode, a.lev
	}
	return Cross, [2]int32{m.spec.DefLev, m.spec.DefLev}
}

// openHold returns what an open of q at price p reserves with leverage
// lev: the initial margin ceil(p*q/lev) plus the taker fee on p*q.
func openHold(s *MarketSpec, p Price, q Qty, lev int32) (Amount, bool) {
	n, ok := s.Notional(p, q)
	if !ok {
		return 0, false
	}
	im, fee := ceilDiv(n, Amount(lev)), Fee(n, s.TakerRate)
	if im > maxAmount-fee {
		return 0, false
	}
	return im + fee, true
}

const maxAmount = Amount(1<<63 - 1)

// ceilDiv is ceil(a/b) for a >= 0, b > 0, without overflow.
func ceilDiv(a, b Amount) Amount {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// contractHold validates the contract part of a CmdPlace and returns what
// it reserves (opens) in the margin wallet. It changes nothing.
func (e *Engine) contractHold(c *Cmd, m *market, limit Price) (Amount, Reject) {
	s := m.spec
	if c.Pos != Long && c.Pos != Short {
		return 0, RejectInvalidPositionSide
	}
	if r := checkPreset(c, limit); r != OK {
		return 0, r
	}
	_, lev := m.settings(c.User)
	if !opens(c.Side, c.Pos) {
		a := m.acct(c.User)
		if a == nil || a.pos[c.Pos-1].size == 0 {
			return 0, RejectNoPosition
		}
		if p := &a.pos[c.Pos-1]; c.Qty > p.size-p.closing {
			return 0, RejectReduceOnly
		}
		return 0, OK
	}
	var size Qty // the position and the user's working opens on its side
	if a := m.acct(c.User); a != nil {
		size = a.pos[c.Pos-1].size + a.pos[c.Pos-1].opening
	}
	if c.Qty > s.MaxPosQty-size {
		return 0, RejectPositionTooLarge
	}
	if limit == 0 {
		return 0, OK // a market order facing an empty book expires unfilled
	}
	res, ok := openHold(s, limit, c.Qty, lev[c.Pos-1])
	if !ok {
		return 0, RejectOverflow
	}
	return res, OK
}

// checkPreset checks c's presets: only an open has them, none negative,
// and a limit open's take-profit lies beyond its price in the position's
// favour (above it for a LONG), its stop-loss on the other side.
func checkPreset(c *Cmd, limit Price) Reject {
	if c.TP == 0 && c.SL == 0 && c.TrigMark == 0 {
		return OK
	}
	if !opens(c.Side, c.Pos) || c.TP < 0 || c.SL < 0 || c.TrigMark > 3 {
		return RejectInvalidTPSL
	}
	if c.Type == Limit {
		up, down := c.TP, c.SL // LONG: TP above the price, SL below
		if c.Pos == Short {
			up, down = c.SL, c.TP
		}
		if up != 0 && up <= limit || down != 0 && down >= limit {
			return RejectInvalidTPSL
		}
	}
	return OK
}

// contractPlaced sets the contract fields of order o, just placed by c.
func (e *Engine) contractPlaced(m *market, c *Cmd, o *order) {
	a := m.acctFor(c.User)
	o.pos = c.Pos
	o.lev = uint8(a.lev[c.Pos-1])
	if o.opens() {
		a.pos[c.Pos-1].opening += c.Qty
	} else {
		a.pos[c.Pos-1].closing += c.Qty
	}
	if c.TP != 0 || c.SL != 0 {
		if m.ct.presets == nil {
			m.ct.presets = make(map[int64]preset)
		}
		m.ct.presets[o.id] = preset{c.TP, c.SL, c.TrigMark}
	}
}

// Preset returns working order id's preset take-profit and stop-loss
// prices in contract market m (0: none) and their mark-price bits.
func (e *Engine) Preset(m MarketID, id int64) (tp, sl Price, mark uint8) {
	if mk := e.market(m); mk != nil && mk.ct != nil {
		p := mk.ct.presets[id]
		return p.tp, p.sl, p.mark
	}
	return 0, 0, 0
}

// release gives back what working order o still holds: a spot order's or
// an open's reservation, a close's claim on its position.
func (e *Engine) release(m *market, o *order) {
	s := m.spec
	switch {
	case !s.Contract:
		coin := s.Quote
		if o.side == Sell {
			coin = s.Base
		}
		e.credit(o.user, coin, o.reserved)
	case o.opens():
		e.credit(o.user, s.Margin, o.reserved)
		m.acct(o.user).pos[o.pos-1].opening -= o.qty - o.filled
		delete(m.ct.presets, o.id) // a no-op on a nil or empty map
	default:
		m.acct(o.user).pos[o.pos-1].closing -= o.qty - o.filled
	}
	o.reserved = 0
}

// fillContract settles a fill of q at p between taker t and maker mk in
// contract market m: each side opens or closes its position and pays its
// fee to the fee account.
func (e *Engine) fillContract(m *market, t *order, mh handle, mk *order, p Price, q Qty) {
	tr := m.spec.TakerRate
	if t.kind == KindLiquidation { // the liquidated side pays no fee
		tr = 0
	}
	e.trade(m, t, mk, p, q, tr, m.spec.MakerRate)
	m.last = p
	if mk.status != StatusFilled {
		e.update(mh, mk)
	}
}

// trade settles a contract fill of q at p between taker t and maker mk
// at fee rates tr and mr, and reports it.
func (e *Engine) trade(m *market, t, mk *order, p Price, q Qty, tr, mr int64) {
	s := m.spec
	notional := Amount(int64(p) * int64(q) * int64(s.QuotePerTickStep)) // fits: see fill
	tf, tpnl := e.settle(m, t, q, notional, tr)
	mf, mpnl := e.settle(m, mk, q, notional, mr)
	e.fees.quote += tf + mf
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
	m.nextTrade++
	buyer, seller := t.user, mk.user
	if t.side == Sell {
		buyer, seller = seller, buyer
	}
	e.out.Trades = append(e.out.Trades, Trade{TradeID: m.nextTrade<<10 | int64(s.ID), Market: s.ID, TimeMs: e.timeMs,
		Price: p, Qty: q, Quote: notional, TakerSide: t.side, MakerOrder: mk.id, TakerOrder: t.id,
		MakerUID: mk.uid, TakerUID: t.uid, TakerFee: tf, MakerFee: mf, BuyerUser: buyer, SellerUser: seller,
		BaseCoin: s.Margin, QuoteCoin: s.Margin, TakerPos: t.pos, MakerPos: mk.pos, TakerPnl: tpnl, MakerPnl: mpnl})
}

// settle applies one side's part of a contract fill of q worth notional:
// the position changes, the fee is paid, a close realizes its PnL. It
// writes the side's bill and returns the fee and the realized PnL.
func (e *Engine) settle(m *market, o *order, q Qty, notional Amount, rate int64) (fee, pnl Amount) {
	s := m.spec
	a := m.acct(o.user)
	ps := &a.pos[o.pos-1]
	fee = Fee(notional, rate)
	cl := e.acc.cell(o.user, s.Margin)
	biz := BizOpenLong
	if o.pos == Short {
		biz = BizOpenShort
	}
	var delta, toIns Amount // change of the wallet's total; a liquidation's rest to the insurance account
	if o.opens() {
		// the part of the reservation that was for q; a fill at a better
		// price than the limit needs less margin, and what is left over is
		// released. A SHORT filled above its limit keeps the margin it
		// reserved (a little below price/leverage: never less safe).
		rest, _ := openHold(s, o.price, o.qty-o.filled-q, int32(o.lev))
		portion := o.reserved - rest
		o.reserved = rest
		fee = min(fee, portion) // only by rounding: the reservation held the taker fee
		margin := min(ceilDiv(notional, Amount(o.lev)), portion-fee)
		if ps.size == 0 {
			ps.createdMs = e.timeMs
			m.ct.open++
		}
		ps.size += q
		ps.opening -= q
		if o.pos == Long {
			m.ct.longQty += q
		}
		ps.openValue += notional
		ps.margin += margin
		ps.openQty += q
		ps.openVal += notional
		delta = -fee
		cl.avail.Add(int64(portion - fee - margin))
		if pr, ok := m.ct.presets[o.id]; ok { // the first fill attaches the open's presets
			delete(m.ct.presets, o.id)
			e.attachPresets(m, a, o, pr)
		}
	} else {
		biz += 2 // the close of the same side
		closed, margin := ps.openValue, ps.margin
		if q < ps.size {
			closed, _ = mulDivAmount(ps.openValue, q, ps.size)
			margin, _ = mulDivAmount(ps.margin, q, ps.size)
		}
		pnl = notional - closed
		if o.pos == Short {
			pnl = -pnl
		}
		ps.size -= q
		if o.pos == Long {
			m.ct.longQty -= q
		}
		if ps.size == 0 {
			m.ct.open--
			if a.plans > 0 { // the plans of a gone position are cancelled
				e.cancelPlansOf(m, o.user, o.pos)
			}
		}
		ps.openValue -= closed
		ps.margin -= margin
		ps.closing -= q
		ps.closeQty += q
		ps.closeVal += notional
		ps.realized += pnl
		delta = pnl - fee
		if net := margin + pnl - fee; net >= 0 {
			if o.kind == KindLiquidation && a.mode == Isolated { // what is left of a liquidated position's margin
				if ins, ok := e.insuranceUser(); ok && ins != o.user && net > 0 {
					delta -= net
					toIns, net = net, 0
				}
			}
			cl.avail.Add(int64(net))
		} else {
			delta += e.cover(m, a, ps, o.user, -net)
		}
		if ps.size == 0 && ps.margin > 0 { // rounding leftovers of the proportional shares
			cl.avail.Add(int64(ps.margin))
			ps.margin = 0
		}
	}
	ps.fees += fee
	ps.updatedMs = e.timeMs
	e.bill(o.user, s.Margin, biz, delta, fee, s.ID, q, notional)
	if toIns > 0 {
		ins, _ := e.insuranceUser()
		e.bill(ins, s.Margin, BizLiquidationIncome, toIns, 0, s.ID, q, notional)
		e.credit(ins, s.Margin, toIns)
	}
	return fee, pnl
}

// cover pays d, the part of a close's loss and fee that the margin
// released by the close did not cover: from the wallet's available
// balance (cross only), the position's remaining margin, the insurance
// account, and what is still missing is bad debt. It returns what the
// user did not pay (added back to the user's wallet change).
func (e *Engine) cover(m *market, a *ctAcct, ps *position, u UserIdx, d Amount) Amount {
	s := m.spec
	cl := e.acc.cell(u, s.Margin)
	if a.mode == Cross {
		x := min(d, Amount(cl.avail.Load()))
		cl.avail.Add(-int64(x))
		d -= x
	}
	x := min(d, ps.margin)
	ps.margin -= x
	d -= x
	unpaid := d
	if ins, ok := e.insuranceUser(); ok && d > 0 && ins != u {
		ic := e.acc.cell(ins, s.Margin)
		x = min(d, Amount(ic.avail.Load()))
		if x > 0 {
			ic.avail.Add(-int64(x))
			e.bill(ins, s.Margin, BizInsurance, -x, 0, s.ID, 0, 0)
			d -= x
		}
	}
	m.ct.badDebt += d
	return unpaid
}

func mulDivAmount(a Amount, q, d Qty) (Amount, bool) {
	v, ok := mulDiv(int64(a), int64(q), int64(d))
	return Amount(v), ok
}

// setLeverage applies a CmdLeverage: Amount is the leverage, Pos the side
// (0: both; cross mode always sets both). Refused while the side holds a
// position: its margin was taken at the old leverage.
func (e *Engine) setLeverage(c *Cmd) Reject {
	m, r := e.contractMarket(c)
	if r != OK {
		return r
	}
	s := m.spec
	lev := c.Amount
	if lev < Amount(s.MinLev) || lev > Amount(s.MaxLev) {
		return RejectInvalidLeverage
	}
	if c.Pos > Short {
		return RejectInvalidPositionSide
	}
	mode, _ := m.settings(c.User)
	sides := []PosSide{Long, Short}
	if c.Pos != 0 && mode == Isolated {
		sides = sides[c.Pos-1 : c.Pos]
	}
	if a := m.acct(c.User); a != nil {
		for _, p := range sides {
			if a.pos[p-1].size > 0 {
				return RejectPositionExists
			}
		}
	}
	a := m.acctFor(c.User)
	for _, p := range sides {
		a.lev[p-1] = int32(lev)
	}
	return OK
}

// setMarginMode applies a CmdMarginMode. Refused while the user has a
// position or a working order in the market.
func (e *Engine) setMarginMode(c *Cmd) Reject {
	m, r := e.contractMarket(c)
	if r != OK {
		return r
	}
	if c.Mode != Cross && c.Mode != Isolated {
		return RejectInvalidMarginMode
	}
	if a := m.acct(c.User); a != nil && (a.pos[0].size > 0 || a.pos[1].size > 0) {
		return RejectPositionExists
	}
	if ul := m.list(c.User); ul != nil && ul.n > 0 {
		return RejectPositionExists
	}
	a := m.acctFor(c.User)
	if a.mode != c.Mode && c.Mode == Cross {
		a.lev[1] = a.lev[0] // cross: one leverage for both sides
	}
	a.mode = c.Mode
	return OK
}

// positionMargin applies a CmdPositionMargin: Amount > 0 moves that much
// of the wallet's available balance into an isolated position's margin,
// Amount < 0 takes it back, keeping at least the position's initial
// margin at its leverage (openValue / leverage).
func (e *Engine) positionMargin(c *Cmd) Reject {
	m, r := e.contractMarket(c)
	if r != OK {
		return r
	}
	if c.Pos != Long && c.Pos != Short {
		return RejectInvalidPositionSide
	}
	a := m.acct(c.User)
	if a == nil || a.pos[c.Pos-1].size == 0 {
		return RejectNoPosition
	}
	if a.mode != Isolated {
		return RejectInvalidMarginMode
	}
	if c.Amount == 0 {
		return RejectInvalidAmount
	}
	ps := &a.pos[c.Pos-1]
	if c.Amount > 0 {
		if !e.reserve(c, c.User, m.spec.Margin, c.Amount) {
			return RejectInsufficientBalance
		}
		ps.margin += c.Amount
	} else {
		x := -c.Amount
		if ps.margin-x < ceilDiv(ps.openValue, Amount(a.lev[c.Pos-1])) {
			return RejectInsufficientBalance
		}
		ps.margin -= x
		e.credit(c.User, m.spec.Margin, x)
	}
	ps.updatedMs = e.timeMs
	e.touch(c.User)
	return OK
}

// contractMarket checks the market and user of a contract settings command.
func (e *Engine) contractMarket(c *Cmd) (*market, Reject) {
	m := e.market(c.Market)
	if m == nil || !m.spec.Contract {
		return nil, RejectUnknownMarket
	}
	if !e.acc.Valid(c.User, c.UID) {
		return nil, RejectUnknownUser
	}
	return m, OK
}

// transfer applies a CmdTransfer: Amount of the coin moves into wallet
// Coin from the coin's other wallet (spot to futures or back), if that
// much is available there. It runs on the ledger shard.
func (e *Engine) transfer(c *Cmd) Reject {
	if r := e.checkCoin(c); r != OK {
		return r
	}
	from := c.Coin ^ Futures
	if !e.reserve(c, c.User, from, c.Amount) {
		return RejectInsufficientBalance
	}
	e.out.BillID = BillID(e.seq, e.nbills, e.shard)
	e.bill(c.User, from, BizTransferOut, -c.Amount, 0, 0, 0, 0)
	e.bill(c.User, c.Coin, BizTransferIn, c.Amount, 0, 0, 0, 0)
	e.credit(c.User, c.Coin, c.Amount)
	return OK
}

// Positions appends user u's positions (size > 0) in contract market id,
// or in every contract market this engine owns (AllMarkets), in market
// then side order.
func (e *Engine) Positions(u UserIdx, id MarketID, dst []PositionView) []PositionView {
	for _, m := range e.owned {
		if m.ct == nil || id != AllMarkets && id != AllContracts && m.spec.ID != id {
			continue
		}
		a := m.acct(u)
		if a == nil {
			continue
		}
		for i := range a.pos {
			if a.pos[i].size > 0 {
				v := a.view(m, u, e.acc.UID(u), PosSide(i+1))
				v.LiqPrice = e.liqPrice(m, u, a, PosSide(i+1))
				dst = append(dst, v)
			}
		}
	}
	return dst
}

func (a *ctAcct) view(m *market, u UserIdx, uid int64, sd PosSide) PositionView {
	p := &a.pos[sd-1]
	return PositionView{Market: m.spec.ID, User: u, UID: uid, Side: sd, Mode: a.mode, Leverage: a.lev[sd-1],
		Size: p.size, OpenValue: p.openValue, Margin: p.margin, Closing: p.closing,
		OpenQty: p.openQty, CloseQty: p.closeQty, OpenVal: p.openVal, CloseVal: p.closeVal,
		Fees: p.fees, Realized: p.realized, Funding: p.funding, CreatedMs: p.createdMs, UpdatedMs: p.updatedMs}
}

// Settings returns u's margin mode and LONG and SHORT leverages in
// contract market id; ok is false when id is not a contract of this engine.
func (e *Engine) Settings(u UserIdx, id MarketID) (mode MarginMode, long, short int32, ok bool) {
	m := e.market(id)
	if m == nil || m.ct == nil {
		return 0, 0, 0, false
	}
	mode, lev := m.settings(u)
	return mode, lev[0], lev[1], true
}

// OpenInterest returns the sum of contract market id's LONG positions
// (equal to the SHORTs').
func (e *Engine) OpenInterest(id MarketID) Qty {
	if m := e.market(id); m != nil && m.ct != nil {
		return m.ct.longQty
	}
	return 0
}

// BadDebt returns contract market id's unpaid losses.
func (e *Engine) BadDebt(id MarketID) Amount {
	if m := e.market(id); m != nil && m.ct != nil {
		return m.ct.badDebt
	}
	return 0
}

// appendContract appends m's positions and settings to the canonical
// encoding (after its book): i64 badDebt | u32 n | n x (u32 user | u8
// mode | i32 levLong | i32 levShort | 2 x position), users ascending;
// position: 10 x i64 (size, openValue, margin, closing, openQty,
// closeQty, openVal, closeVal, fees, realized) | i64 createdMs | i64
// updatedMs | i64 opening | i64 funding; then u32 k | k x (i64 order id | i64 tp | i64 sl | u8 mark),
// the working opens' presets by ascending id; then the funding state:
// i64 lastFundingMs | i64 lastRate | i64 lastIndex; then the plans
// (appendPlans).
func appendContract(dst []byte, ct *ctState) []byte {
	dst = le.AppendUint64(dst, uint64(ct.badDebt))
	dst = le.AppendUint32(dst, uint32(ct.n))
	ct.each(func(u UserIdx, a *ctAcct) {
		dst = le.AppendUint32(dst, uint32(u))
		dst = append(dst, byte(a.mode))
		dst = le.AppendUint32(dst, uint32(a.lev[0]))
		dst = le.AppendUint32(dst, uint32(a.lev[1]))
		for i := range a.pos {
			p := &a.pos[i]
			for _, v := range [...]int64{int64(p.size), int64(p.openValue), int64(p.margin), int64(p.closing),
				int64(p.openQty), int64(p.closeQty), int64(p.openVal), int64(p.closeVal), int64(p.fees), int64(p.realized),
				p.createdMs, p.updatedMs, int64(p.opening), int64(p.funding)} {
				dst = le.AppendUint64(dst, uint64(v))
			}
		}
	})
	ids := make([]int64, 0, len(ct.presets))
	for id := range ct.presets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dst = le.AppendUint32(dst, uint32(len(ids)))
	for _, id := range ids {
		p := ct.presets[id]
		dst = le.AppendUint64(dst, uint64(id))
		dst = le.AppendUint64(dst, uint64(p.tp))
		dst = le.AppendUint64(dst, uint64(p.sl))
		dst = append(dst, p.mark)
	}
	for _, v := range [...]int64{ct.lastFundingMs, ct.lastRate, int64(ct.lastIndex)} {
		dst = le.AppendUint64(dst, uint64(v))
	}
	return appendPlans(dst, &ct.plans)
}

func (e *Engine) loadContract(r *reader, m *market) error {
	m.ct.badDebt = Amount(r.i64())
	n := int(r.u32())
	var prev UserIdx
	for i := 0; i < n && r.err == nil; i++ {
		u := UserIdx(r.u32())
		if int(u) >= e.acc.NumUsers() {
			return fmt.Errorf("engine: snapshot position of unknown user %d", u)
		}
		a := &ctAcct{mode: MarginMode(r.u8())}
		a.lev[0], a.lev[1] = int32(r.u32()), int32(r.u32())
		for j := range a.pos {
			p := &a.pos[j]
			p.size, p.openValue, p.margin, p.closing = Qty(r.i64()), Amount(r.i64()), Amount(r.i64()), Qty(r.i64())
			p.openQty, p.closeQty, p.openVal, p.closeVal = Qty(r.i64()), Qty(r.i64()), Amount(r.i64()), Amount(r.i64())
			p.fees, p.realized, p.createdMs, p.updatedMs = Amount(r.i64()), Amount(r.i64()), r.i64(), r.i64()
			p.opening, p.funding = Qty(r.i64()), Amount(r.i64())
			if p.size > 0 {
				m.ct.open++
			}
			if j == 0 {
				m.ct.longQty += p.size
			}
		}
		if m.ct.get(u) != nil || i > 0 && u <= prev {
			return fmt.Errorf("engine: snapshot positions out of user order at %d", u)
		}
		prev = u
		m.ct.put(u, a)
	}
	k := int(r.u32())
	for i := 0; i < k && r.err == nil; i++ {
		id := r.i64()
		p := preset{Price(r.i64()), Price(r.i64()), r.u8()}
		if m.ids.get(&e.pool, id) == 0 {
			return fmt.Errorf("engine: snapshot preset of order %d, which is not working", id)
		}
		if m.ct.presets == nil {
			m.ct.presets = make(map[int64]preset)
		}
		m.ct.presets[id] = p
	}
	ct := m.ct
	ct.lastFundingMs, ct.lastRate, ct.lastIndex = r.i64(), r.i64(), Price(r.i64())
	if r.err != nil {
		return r.err
	}
	return e.loadPlans(r, m)
}

// checkContract checks m's positions against its working orders: every
// close's claim is within its position, margins are not negative; it adds
// each user's position margins to frozen (by futures wallet) and returns
// m's long and short open value and sizes.
func (e *Engine) checkContract(m *market, frozen func(UserIdx, CoinID, Amount)) (longVal, shortVal Amount, err error) {
	s := m.spec
	closing, opening := make(map[[2]uint32]Qty), make(map[[2]uint32]Qty)
	for _, sd := range [2]*side{&m.bids, &m.asks} {
		for _, lh := range sd.lvls {
			for h := e.lvls.get(lh).head; h != 0; h = e.pool.ln(h).next {
				o := e.pool.get(h)
				if o.pos != Long && o.pos != Short || o.lev == 0 {
					return 0, 0, fmt.Errorf("engine: %s: order %d has no position side or leverage", s.Symbol, o.id)
				}
				if o.opens() {
					opening[[2]uint32{uint32(o.user), uint32(o.pos)}] += o.qty - o.filled
				} else {
					closing[[2]uint32{uint32(o.user), uint32(o.pos)}] += o.qty - o.filled
				}
			}
		}
	}
	var longQty, shortQty Qty
	m.ct.each(func(u UserIdx, a *ctAcct) {
		for i := range a.pos {
			p := &a.pos[i]
			if want := closing[[2]uint32{uint32(u), uint32(i + 1)}]; p.closing != want && err == nil {
				err = fmt.Errorf("engine: %s: user %d side %d: closing %d, working closes %d", s.Symbol, u, i+1, p.closing, want)
			}
			if want := opening[[2]uint32{uint32(u), uint32(i + 1)}]; p.opening != want && err == nil {
				err = fmt.Errorf("engine: %s: user %d side %d: opening %d, working opens %d", s.Symbol, u, i+1, p.opening, want)
			}
			if (p.size < 0 || p.closing > p.size || p.margin < 0 || p.openValue < 0 || p.size == 0 && (p.openValue != 0 || p.margin != 0)) && err == nil {
				err = fmt.Errorf("engine: %s: user %d side %d: bad position %+v", s.Symbol, u, i+1, *p)
			}
			frozen(u, s.Margin, p.margin)
			if i == 0 {
				longVal += p.openValue
				longQty += p.size
			} else {
				shortVal += p.openValue
				shortQty += p.size
			}
		}
	})
	if err != nil {
		return 0, 0, err
	}
	open := 0
	m.ct.each(func(_ UserIdx, a *ctAcct) {
		for i := range a.pos {
			if a.pos[i].size > 0 {
				open++
			}
		}
	})
	if open != m.ct.open {
		return 0, 0, fmt.Errorf("engine: %s: %d positions open, counted %d", s.Symbol, open, m.ct.open)
	}
	if err := m.checkPlans(); err != nil {
		return 0, 0, err
	}
	for id := range m.ct.presets {
		if h := m.ids.get(&e.pool, id); h == 0 || !e.pool.get(h).opens() {
			return 0, 0, fmt.Errorf("engine: %s: preset of order %d, which is not a working open", s.Symbol, id)
		}
	}
	if longQty != shortQty || longQty != m.ct.longQty {
		return 0, 0, fmt.Errorf("engine: %s: long size %d, short size %d, open interest %d", s.Symbol, longQty, shortQty, m.ct.longQty)
	}
	return longVal, shortVal, nil
}

// OpenPositions returns how many positions (sides with a size) e's
// contract markets hold.
func (e *Engine) OpenPositions() int {
	n := 0
	for _, m := range e.owned {
		if m.ct != nil {
			n += m.ct.open
		}
	}
	return n
}

// hasContracts reports whether e owns a contract market.
func (e *Engine) hasContracts() bool {
	for _, m := range e.owned {
		if m.ct != nil {
			return true
		}
	}
	return false
}
