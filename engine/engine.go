package engine

import "slices"

// Engine is one shard's deterministic state machine: the books and working
// orders of the markets it owns, applied one command at a time. Balances
// live in the shared Accounts.
//
// Invariants of the matching loop (checked in full by CheckInvariants):
//   - a book is never crossed: after every command best bid < best ask;
//   - every level's qty and count equal the sum over its orders;
//   - a working order's reserved amount is exactly what its remainder needs
//     (BUY: price*remaining in quote; SELL: remaining in base), so for each
//     (user, coin) frozen = sum of reserved over working orders once credits
//     are flushed;
//   - fills never exceed either order's remainder, and trade at the resting
//     order's price;
//   - nothing is mutated before a command is fully validated and its
//     reservation taken.
type Engine struct {
	shard  int
	acc    *Accounts
	feeUID int64
	fee    UserIdx // feeUID's index, once looked up (fee+1; 0: not yet)
	insUID int64   // the insurance account (contracts), 0: none
	ins    UserIdx // insUID's index, once looked up (ins+1; 0: not yet)

	markets [MaxMarkets]*market // nil where another shard owns the market
	owned   []*market           // owned markets in id order

	pool pool
	lvls levels

	// pending credits to available balances, applied by Flush once the
	// batch is durable (see Accounts).
	pending []credit

	// staged is the spec the next CmdSetRules installs (StageRules)
	staged *MarketSpec

	risk *riskState // liquidation index of the contracts (liquidate.go); nil without any

	// per-command context
	seq    uint64
	timeMs int64
	out    *Out
	fees   feeIncome // of this command's fills so far, billed by billFees
	nbills int       // bills numbered so far in this command (fills' included: Out.AppendBills)
}

// feeIncome sums a command's fills for the fee account's bills.
type feeIncome struct {
	base, quote Amount // fees in the base and quote coin
	qty         Qty    // traded quantity
	notional    Amount // traded value in the quote coin
}

// credit is an amount to add to a balance's available part: the cell is
// found when the credit is made (a fill has it at hand), so Flush only adds.
type credit struct {
	to *cell
	x  Amount
}

type market struct {
	spec *MarketSpec
	bids side
	asks side
	last Price // last trade price, 0 before the first trade
	// the price band around bandAt (the last price it was worked out for)
	bandAt, bandLo, bandHi Price
	nextOrder              int64 // order sequence: ids are nextOrder<<10 | id
	nextTrade              int64
	ids                    ordIndex    // order id -> handle of working orders
	cids                   idmap       // client id hash -> chain of orders (via cnext)
	lists                  []*listPage // each user's working orders, oldest first, by user index
	// xForm counts working orders whose client-supplied id has the form of
	// a generated one ("x-<digits>"). While it is 0, a generated id cannot
	// clash with a working order's id, and placing needs no index lookup.
	xForm int
	ct    *ctState // contract markets: positions and settings (else nil)
}

// User lists are kept by user index, in pages of listPageSize users that
// are made when a user of the page first rests an order in the market: no
// hashing on the matching path (a hash map from user to list cost ~2.4 ns
// of a ~110 ns command), and memory in proportion to the pages of users
// who traded the market, 12 bytes per user in them.
const (
	listPageBits = 10
	listPageSize = 1 << listPageBits
)

type listPage [listPageSize]userList

// list returns u's working-order list in m, or nil if u's page has none.
func (m *market) list(u UserIdx) *userList {
	if i := int(u >> listPageBits); i < len(m.lists) && m.lists[i] != nil {
		return &m.lists[i][u&(listPageSize-1)]
	}
	return nil
}

// listFor returns u's list, making its page if needed.
func (m *market) listFor(u UserIdx) *userList {
	i := int(u >> listPageBits)
	if i >= len(m.lists) {
		m.lists = append(m.lists, make([]*listPage, i+1-len(m.lists))...)
	}
	p := m.lists[i]
	if p == nil {
		p = new(listPage)
		m.lists[i] = p
	}
	return &p[u&(listPageSize-1)]
}

type userList struct {
	head, tail handle
	n          int32
}

// New makes the engine of shard number shard, owning markets. feeUID is the
// account fees are credited to; it must be registered before the first fill.
func New(shard int, acc *Accounts, markets []*MarketSpec, feeUID int64) *Engine {
	e := &Engine{shard: shard, acc: acc, feeUID: feeUID}
	for _, s := range markets {
		m := &market{spec: s, asks: newSide(true)}
		if s.Contract {
			m.ct = &ctState{}
		}
		e.markets[s.ID] = m
	}
	for _, m := range e.markets {
		if m != nil {
			e.owned = append(e.owned, m)
		}
	}
	e.risk = newRisk(e)
	return e
}

// Shard returns the engine's shard number.
func (e *Engine) Shard() int { return e.shard }

// Accounts returns the shared balance table.
func (e *Engine) Accounts() *Accounts { return e.acc }

// Markets returns the specs of the markets this engine owns, in id order.
func (e *Engine) Markets() []*MarketSpec {
	s := make([]*MarketSpec, len(e.owned))
	for i, m := range e.owned {
		s[i] = m.spec
	}
	return s
}

// Owns reports whether this engine owns market id.
func (e *Engine) Owns(id MarketID) bool { return id < MaxMarkets && e.markets[id] != nil }

// WorkingOrders returns how many orders rest in this engine's books.
func (e *Engine) WorkingOrders() int { return e.pool.live }

// Apply applies c as command number seq at timeMs and writes what happened
// to out. A live command (c.Dec.Recorded false) gets its cross-shard
// decisions recorded in c.Dec; a replayed one has them applied. Client input
// never panics: every problem is a Reject in out.
func (e *Engine) Apply(c *Cmd, seq uint64, timeMs int64, out *Out) {
	out.Reset()
	e.seq, e.timeMs, e.out, e.nbills = seq, timeMs, out, 0
	switch c.Kind {
	case CmdPlace:
		out.Reject = e.place(c)
	case CmdCancel:
		out.Reject = e.cancel(c)
	case CmdCancelAll:
		out.Reject = e.cancelAll(c)
	case CmdDeposit:
		out.Reject = e.deposit(c)
	case CmdWithdraw:
		out.Reject = e.withdraw(c)
	case CmdAddUser:
		out.Reject = e.addUser(c)
	case CmdSetRules:
		out.Reject = e.setRules(c)
	case CmdRebate:
		out.Reject = e.rebate(c)
	case CmdTransfer:
		out.Reject = e.transfer(c)
	case CmdLeverage:
		out.Reject = e.setLeverage(c)
	case CmdMarginMode:
		out.Reject = e.setMarginMode(c)
	case CmdPositionMargin:
		out.Reject = e.positionMargin(c)
	case CmdFunding:
		out.Reject = e.payFunding(c)
	case CmdPlan:
		out.Reject = e.placePlan(c)
	case CmdPlanCancel:
		out.Reject = e.cancelPlan(c)
	default:
		out.Reject = RejectInvalidType
	}
	// plans fire inside the command that moved the price (plan.go)
	if m := e.market(c.Market); m != nil && m.ct != nil && len(m.ct.plans.byID) > 0 {
		e.firePlans(m)
	}
	// only a contract's command moves a mark, only a touched futures
	// wallet or position moves a trigger
	if rs := e.risk; rs != nil && (len(rs.dirty) > 0 || rs.rebuild || c.Market >= ContractBase) {
		e.checkRisk()
	}
	c.Dec.Recorded = true
}

// Flush applies the credits queued by the commands applied since the last
// Flush. The shard runtime calls it after the batch is durable and before
// any reply for it is sent.
func (e *Engine) Flush() {
	for _, cr := range e.pending {
		cr.to.avail.Add(int64(cr.x))
	}
	e.pending = e.pending[:0]
}

// PendingLen returns how many credits await Flush: a mark for FlushTo.
func (e *Engine) PendingLen() int { return len(e.pending) }

// FlushTo applies the first n pending credits (those queued before
// PendingLen returned n, less any flushed since) and keeps the rest: the
// shard runtime applies the next batch while the previous one is synced.
func (e *Engine) FlushTo(n int) {
	for _, cr := range e.pending[:n] {
		cr.to.avail.Add(int64(cr.x))
	}
	e.pending = e.pending[:copy(e.pending, e.pending[n:])]
}

// Pending reports whether credits await Flush.
func (e *Engine) Pending() bool { return len(e.pending) > 0 }

// credit adds x to u's available c. A spot credit waits for Flush (see
// Accounts); a futures wallet's is applied at once: futures wallets are
// read and written by the ledger shard only (docs/DESIGN.md, "Contracts"),
// so a decision on one rests only on commands journaled before it in the
// same shard, which a crash cannot keep while losing the credit.
func (e *Engine) credit(u UserIdx, c CoinID, x Amount) {
	if x == 0 {
		return
	}
	if c.IsFutures() {
		e.acc.cell(u, c).avail.Add(int64(x))
		return
	}
	e.pending = append(e.pending, credit{e.acc.cell(u, c), x})
}

// bill changes u's total of c by delta and writes the finance record.
func (e *Engine) bill(u UserIdx, c CoinID, biz BizType, delta, fee Amount, m MarketID, q Qty, quote Amount) {
	if c.IsFutures() { // a contract fill bills each side, a zero change included
		e.touch(u)
	}
	if delta == 0 {
		return
	}
	after := e.acc.addTotal(u, c, delta)
	bs := e.out.Bills
	if len(bs) == cap(bs) {
		bs = slices.Grow(bs, 1)
	}
	n := len(bs)
	bs = bs[:n+1]
	bs[n].set(BillID(e.seq, e.nbills, e.shard), e.acc.UID(u), u, c, biz, m, q, quote, delta, after, fee, e.timeMs)
	e.out.Bills = bs
	e.nbills++
}

// set writes every field of b (field by field: see setView).
func (b *Bill) set(id uint64, uid int64, u UserIdx, c CoinID, biz BizType, m MarketID, q Qty, quote, delta, after, fee Amount, timeMs int64) {
	b.BillID, b.UID, b.User, b.Coin, b.Biz, b.Market = id, uid, u, c, biz, m
	b.FillQty, b.FillQuote, b.Delta, b.After, b.Fee, b.TimeMs = q, quote, delta, after, fee, timeMs
}

// reserve takes x of c from u: decided live, replayed from c.Dec otherwise.
func (e *Engine) reserve(c *Cmd, u UserIdx, coin CoinID, x Amount) bool {
	if c.Dec.Recorded {
		if c.Dec.Reserved {
			e.acc.debitAvail(u, coin, x)
		}
		return c.Dec.Reserved
	}
	c.Dec.Reserved = e.acc.reserve(u, coin, x)
	return c.Dec.Reserved
}

func (e *Engine) market(id MarketID) *market {
	if id >= MaxMarkets {
		return nil
	}
	return e.markets[id]
}

// place validates and places an order. Nothing changes unless it returns OK.
func (e *Engine) place(c *Cmd) Reject {
	m := e.market(c.Market)
	if m == nil {
		return RejectUnknownMarket
	}
	if !e.acc.Valid(c.User, c.UID) {
		return RejectUnknownUser
	}
	s := m.spec
	if !s.EnableTrade {
		return RejectTradingDisabled
	}
	var opp *side
	switch c.Side {
	case Buy:
		opp = &m.asks
	case Sell:
		opp = &m.bids
	default:
		return RejectInvalidSide
	}
	if c.Qty <= 0 {
		return RejectInvalidQuantity
	}
	if c.Qty < s.MinQty {
		return RejectQuantityTooSmall
	}
	if c.Qty > s.MaxQty {
		return RejectQuantityTooLarge
	}
	limit := c.Price
	switch c.Type {
	case Limit:
		if c.TIF < GTC || c.TIF > PostOnly {
			return RejectInvalidTimeInForce
		}
		if c.Price <= 0 {
			return RejectInvalidPrice
		}
		if m.last > 0 && !m.inBand(c.Side, c.Price) {
			return RejectPriceOutOfRange
		}
		if c.TIF == PostOnly {
			if b, ok := opp.bestPrice(); ok && crosses(c.Side, c.Price, b) {
				return RejectPostOnlyWouldTake
			}
		}
	case Market:
		if c.Side == Buy && c.Qty > s.MarketBuyMax || c.Side == Sell && c.Qty > s.MarketSellMax {
			return RejectQuantityTooLarge
		}
		limit = 0 // no liquidity: the order expires unfilled
		if b, ok := opp.bestPrice(); ok {
			limit = protection(s, c.Side, b)
		}
	default:
		return RejectInvalidType
	}

	// An order without a client id gets the generated "x-<id>", which is
	// built only when shown (cidGen); a client id equal to it is the same.
	id := (m.nextOrder+1)<<10 | int64(s.ID)
	cidGen := c.Text.N == 0
	if !cidGen {
		gid, x := generatedForm(c.Text.Bytes())
		cidGen = x && gid == id
	}
	if !cidGen || m.xForm > 0 {
		var buf [ClientIDMax + 2]byte
		cid := c.Text.Bytes()
		if cidGen {
			cid = appendGeneratedID(buf[:0], id)
		}
		if e.lookup(m, c.User, 0, cid) != 0 {
			return RejectDuplicateClientOrderID
		}
	}

	var res Amount
	var coin CoinID
	if s.Contract {
		var r Reject
		if res, r = e.contractHold(c, m, limit); r != OK {
			return r
		}
		coin = s.Margin
	} else {
		var ok bool
		if c.Side == Buy {
			coin = s.Quote
			res, ok = s.Notional(limit, c.Qty)
		} else {
			coin = s.Base
			res, ok = s.BaseAmount(c.Qty)
		}
		if !ok {
			return RejectOverflow
		}
		if c.Side == Buy && limit == 0 {
			res = 0 // a market buy facing an empty book has no price to reserve at; it expires
		}
	}
	if !e.reserve(c, c.User, coin, res) {
		return RejectInsufficientBalance
	}

	// Validated and reserved: from here on the command takes effect.
	m.nextOrder++
	h := e.pool.alloc()
	o := e.pool.get(h)
	// Field by field: a composite literal would be built on the stack and
	// copied. Links are set by rest.
	o.id, o.price, o.qty, o.filled, o.cumQuote, o.reserved = id, limit, c.Qty, 0, 0, res
	o.timeMs, o.updateMs, o.uid = e.timeMs, e.timeMs, c.UID // c.UID is u's: checked above
	o.cnext, o.lvl = 0, 0
	o.user, o.market, o.side, o.typ, o.tif, o.status, o.cidGen = c.User, s.ID, c.Side, c.Type, c.TIF, StatusNew, cidGen
	if !cidGen { // a generated id is made when shown (OrderView.AppendClientID)
		e.pool.setCID(h, c.Text.Bytes())
	}
	if c.Type == Market {
		o.tif = IOC
	}
	o.pos, o.lev, o.kind = 0, 0, KindNormal
	if s.Contract {
		e.contractPlaced(m, c, o)
	}

	bounded := false
	if limit > 0 && (o.tif != FOK || e.fillable(m, opp, o)) {
		bounded = e.match(m, opp, o)
		if e.fees.qty != 0 {
			e.billFees(m)
		}
	}
	if o.filled < o.qty && (o.tif == GTC || o.tif == PostOnly) && !bounded {
		e.rest(m, h, o)
	} else {
		if o.filled < o.qty {
			o.status = StatusExpired
		}
		e.release(m, o)
	}
	v := e.update(h, o)
	if c.Type == Market {
		v.Price = 0
	}
	e.out.OrderAt = len(e.out.Updates)
	if !o.status.Working() {
		e.pool.release(h)
	}
	return OK
}
