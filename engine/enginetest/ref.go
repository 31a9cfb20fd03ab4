// Package enginetest holds test helpers for the engine: a slow, obviously
// correct reference model of the spot matching core (Ref), a seeded random
// command stream (Gen) and a printer for engine events (Printer).
//
// Ref is written from docs/API.md ("Spot trading", "Decisions SPEC left to
// us", "POST /api/v3/tax/income") and the event conventions documented in
// engine/events.go, not from the engine's code: plain slices scanned
// linearly instead of indexes, math/big for every product, immediate
// balance changes instead of deferred credits (tests call Engine.Flush after
// every Apply, which makes the two equivalent).
//
// Event conventions Ref reproduces (the engine documents or fixes them):
//   - place: Out.Updates lists every maker change in the order it happened
//     (a maker expired by self-trade prevention, a maker that traded), then
//     the taker's final state, which is also Out.Order(). A market order's view
//     shows price 0 and time in force IOC.
//   - one fill writes, in this order and skipping zero changes: buyer
//     trade_out quote, buyer trade_in base (fee in base), seller trade_out
//     base, seller trade_in quote (fee in quote). After the command's last
//     fill, the fee account gets one fee_income base and one fee_income quote
//     (skipping zero) holding the sum of the command's fees, with fill
//     quantity and value the command's total. Bill ids are
//     engine.BillID(seq, k, shard) with k counting the command's bills from 0.
//   - order ids are (n<<10 | market) with n counting accepted orders of the
//     market from 1; trade ids likewise per market. An order without a client
//     id gets "x-" and its order id.
//   - an incoming order meets at most engine.MaxFillsPerOrder resting orders
//     (traded or expired by self-trade prevention); what is left then
//     expires, also for GTC. A FOK order is all-or-nothing within that bound.
package enginetest

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/weexcore/exchange/engine"
)

// Ref is the reference model of every market and the balance table.
type Ref struct {
	Coins   []engine.Coin
	Markets []*RefMarket // spot markets, indexed by MarketID
	FeeUID  int64
	// Contracts are the contract markets (AddContract), by ascending id;
	// InsUID is their insurance account (0: none). See refct.go.
	Contracts []*RefMarket
	InsUID    int64

	Users   []RefUser
	Bal     [][]RefCell // [user][wallet]: the spot wallets by CoinID, then the futures wallets
	Net     []int64     // deposits minus withdrawals per coin (both wallets)
	Settled map[engine.SettleKey]bool

	// per command
	seq    uint64
	timeMs int64
	shard  int
	k      int
	out    *engine.Out
	// the command's fills so far, for the fee account's bills
	feeBase, feeQuote, feeQty, feeNotional int64
}

// RefUser is a registered user.
type RefUser struct {
	UID      int64
	Broker   bool
	Referrer int64
	Rate     int64 // a broker's rebate rate
}

// RefCell is one balance: Avail plus frozen is Total.
type RefCell struct{ Avail, Total int64 }

// RefMarket is one market's rules and working orders.
type RefMarket struct {
	ID            engine.MarketID
	Symbol        string
	Base, Quote   engine.CoinID
	Enable        bool
	quotePerTS    *big.Int // quote units per tick*step
	basePerStep   *big.Int // base units per step
	MinQty        int64
	MaxQty        int64
	BuyCap        int64
	SellCap       int64
	taker, maker  *big.Rat
	buyBand       *big.Rat
	sellBand      *big.Rat
	fallback      *big.Rat
	Last          int64
	NextOrder     int64
	NextTrade     int64
	Orders        []*RefOrder // working orders in arrival (time priority) order
	priceDecimals int
	tick          *big.Rat
	step          *big.Rat

	// contract markets only (refct.go)
	Contract       bool
	Margin         engine.CoinID // the futures wallet of the quote coin
	MinLev, MaxLev int32
	DefLev         int32
	MaxPos         int64                         // steps per position side
	Accts          map[engine.UserIdx]*RefCtAcct // by user, once a command of theirs made one
	BadDebt        int64
	Plans          []*RefPlan // refplan.go
	NextPlan       int64
	mmr            *big.Rat // the maintenance margin rate (refliq.go)
}

// RefOrder is a working order (or the incoming order while it matches).
type RefOrder struct {
	ID       int64
	User     engine.UserIdx
	Side     engine.Side
	Type     engine.OrderType
	TIF      engine.TIF
	Status   engine.Status
	Price    int64
	Qty      int64
	Filled   int64
	CumQuote int64
	Reserved int64
	TimeMs   int64
	UpdateMs int64
	CID      string
	Pos      engine.PosSide   // contract orders: the position side
	Lev      int32            // contract orders: the leverage at placement
	TP, SL   int64            // contract opens: preset take-profit and stop-loss prices (0: none)
	Mark     uint8            // which presets trigger on the mark price
	Kind     engine.OrderKind // liquidation, takeover and ADL orders (refliq.go)
}

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		panic(fmt.Sprintf("enginetest: bad decimal %q in config", s))
	}
	return r
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// ratInt returns r, which must be a whole number, as a big.Int.
func ratInt(r *big.Rat, what string) *big.Int {
	if !r.IsInt() {
		panic("enginetest: " + what + " is not a whole number of units")
	}
	return new(big.Int).Set(r.Num())
}

// floorDiv returns floor(a/b) for a >= 0, b > 0 given as a rational.
func floorRat(r *big.Rat) *big.Int { return new(big.Int).Quo(r.Num(), r.Denom()) }

func ceilRat(r *big.Rat) *big.Int {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// NewRef builds the model of markets (market i has MarketID i) over coins
// (indexed by CoinID), with fees credited to feeUID.
func NewRef(coins []engine.Coin, markets []engine.SpotConfig, feeUID int64) *Ref {
	r := &Ref{Coins: coins, FeeUID: feeUID, Net: make([]int64, len(coins)), Settled: map[engine.SettleKey]bool{}}
	for i, c := range markets {
		r.Markets = append(r.Markets, r.newMarket(engine.MarketID(i), c))
	}
	return r
}

func (r *Ref) coin(name string) engine.Coin {
	for _, c := range r.Coins {
		if c.Name == name {
			return c
		}
	}
	panic("enginetest: unknown coin " + name)
}

// newMarket builds the model of market id from its rules.
func (r *Ref) newMarket(id engine.MarketID, c engine.SpotConfig) *RefMarket {
	coin := r.coin
	{
		base, quote := coin(c.BaseAsset), coin(c.QuoteAsset)
		m := &RefMarket{ID: id, Symbol: c.Symbol, Base: base.ID, Quote: quote.ID, Enable: c.EnableTrade,
			tick: rat(c.TickSize), step: rat(c.StepSize)}
		// one tick times one step, in quote units; one step in base units
		qts := new(big.Rat).Mul(m.tick, m.step)
		qts.Mul(qts, new(big.Rat).SetInt(pow10(quote.Scale)))
		m.quotePerTS = ratInt(qts, c.Symbol+" tick*step")
		m.basePerStep = ratInt(new(big.Rat).Mul(m.step, new(big.Rat).SetInt(pow10(base.Scale))), c.Symbol+" step")
		steps := func(s string, up bool) int64 {
			q := new(big.Rat).Quo(rat(s), m.step)
			if up {
				return ceilRat(q).Int64()
			}
			return floorRat(q).Int64()
		}
		m.MinQty = max(1, steps(c.MinTradeAmount, true))
		m.MaxQty = steps(c.MaxTradeAmount, false)
		m.BuyCap = steps(c.MarketBuyLimitSize, false)
		m.SellCap = steps(c.MarketSellLimitSize, false)
		m.taker, m.maker = rat(c.TakerFeeRate), rat(c.MakerFeeRate)
		m.buyBand, m.sellBand, m.fallback = rat(c.BuyLimitPriceRatio), rat(c.SellLimitPriceRatio), rat(c.MarketFallbackPriceRatio)
		return m
	}
}

// notional is p*q in quote units; ok false if it exceeds int64.
func (m *RefMarket) notional(p, q int64) (int64, bool) {
	x := new(big.Int).Mul(big.NewInt(p), big.NewInt(q))
	x.Mul(x, m.quotePerTS)
	return fits(x)
}

func (m *RefMarket) baseAmount(q int64) (int64, bool) {
	return fits(new(big.Int).Mul(big.NewInt(q), m.basePerStep))
}

func fits(x *big.Int) (int64, bool) {
	if !x.IsInt64() {
		return 0, false
	}
	return x.Int64(), true
}

// fee is floor(amount*rate).
func fee(amount int64, rate *big.Rat) int64 {
	x := new(big.Rat).Mul(new(big.Rat).SetInt64(amount), rate)
	return floorRat(x).Int64()
}

// inBand: BUY p <= last*(1+band), SELL p >= last*(1-band), exactly.
func (m *RefMarket) inBand(sd engine.Side, p int64) bool {
	last := new(big.Rat).SetInt64(m.Last)
	P := new(big.Rat).SetInt64(p)
	one := big.NewRat(1, 1)
	if sd == engine.Buy {
		lim := new(big.Rat).Mul(last, new(big.Rat).Add(one, m.buyBand))
		return P.Cmp(lim) <= 0
	}
	lim := new(big.Rat).Mul(last, new(big.Rat).Sub(one, m.sellBand))
	return P.Cmp(lim) >= 0
}

// protection is ref*(1±fallback) rounded to a whole tick inside the range
// (down for a buy, up for a sell), and at least one tick.
func (m *RefMarket) protection(sd engine.Side, ref int64) int64 {
	R := new(big.Rat).SetInt64(ref)
	one := big.NewRat(1, 1)
	if sd == engine.Buy {
		x := floorRat(new(big.Rat).Mul(R, new(big.Rat).Add(one, m.fallback)))
		if !x.IsInt64() {
			return math.MaxInt64
		}
		return x.Int64()
	}
	x := ceilRat(new(big.Rat).Mul(R, new(big.Rat).Sub(one, m.fallback))).Int64()
	return max(x, 1)
}

// crosses: would an incoming order of side sd with limit lim trade at p?
func crosses(sd engine.Side, lim, p int64) bool {
	if sd == engine.Buy {
		return p <= lim
	}
	return p >= lim
}

// better reports whether resting order a has priority over b (same side).
func better(a, b *RefOrder) bool {
	if a.Price != b.Price {
		if a.Side == engine.Buy {
			return a.Price > b.Price
		}
		return a.Price < b.Price
	}
	return false // equal price: earlier in Orders wins (callers scan in order)
}

// bestOpp returns the index of the best resting order on the side opposite
// sd, or -1.
func (m *RefMarket) bestOpp(sd engine.Side) int {
	best := -1
	for i, o := range m.Orders {
		if o.Side == sd {
			continue
		}
		if best < 0 || better(o, m.Orders[best]) {
			best = i
		}
	}
	return best
}

// priority returns the indexes of the resting orders opposite sd in
// matching order: best price first, then arrival.
func (m *RefMarket) priority(sd engine.Side) []int {
	var idx []int
	for i, o := range m.Orders {
		if o.Side != sd {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		pa, pb := m.Orders[a].Price, m.Orders[b].Price
		if sd == engine.Sell { // resting bids: highest first
			return cmp.Compare(pb, pa)
		}
		return cmp.Compare(pa, pb)
	})
	return idx
}

// Market returns market id (spot or contract), or nil.
func (r *Ref) Market(id engine.MarketID) *RefMarket {
	if int(id) < len(r.Markets) {
		return r.Markets[id]
	}
	for _, m := range r.Contracts {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// AllMarkets returns the spot markets then the contract markets, by id.
func (r *Ref) AllMarkets() []*RefMarket {
	return append(append([]*RefMarket(nil), r.Markets...), r.Contracts...)
}

// validCoin reports whether c names a wallet (spot or futures) of a coin.
func (r *Ref) validCoin(c engine.CoinID) bool { return int(c.Spot()) < len(r.Coins) }

// cell returns u's wallet c (spot or futures).
func (r *Ref) cell(u engine.UserIdx, c engine.CoinID) *RefCell {
	i := int(c.Spot())
	if c.IsFutures() {
		i += len(r.Coins)
	}
	return &r.Bal[u][i]
}

func (r *Ref) valid(u engine.UserIdx, uid int64) bool {
	return int(u) < len(r.Users) && r.Users[u].UID == uid
}

// Lookup returns the index of uid.
func (r *Ref) Lookup(uid int64) (engine.UserIdx, bool) {
	for i, u := range r.Users {
		if u.UID == uid {
			return engine.UserIdx(i), true
		}
	}
	return 0, false
}

// Balance returns u's available and frozen c.
func (r *Ref) Balance(u engine.UserIdx, c engine.CoinID) (avail, frozen int64) {
	cl := r.cell(u, c)
	return cl.Avail, cl.Total - cl.Avail
}

// Apply applies c like engine.Engine.Apply on shard shard (which only
// appears in bill ids) and writes the events to out.
func (r *Ref) Apply(c engine.Cmd, seq uint64, timeMs int64, shard int, out *engine.Out) {
	out.Reset()
	r.seq, r.timeMs, r.shard, r.k, r.out = seq, timeMs, shard, 0, out
	switch c.Kind {
	case engine.CmdPlace:
		out.Reject = r.place(&c)
	case engine.CmdCancel:
		out.Reject = r.cancel(&c)
	case engine.CmdCancelAll:
		out.Reject = r.cancelAll(&c)
	case engine.CmdDeposit:
		out.Reject = r.deposit(&c)
	case engine.CmdWithdraw:
		out.Reject = r.withdraw(&c)
	case engine.CmdAddUser:
		out.Reject = r.addUser(&c)
	case engine.CmdRebate:
		out.Reject = r.rebate(&c)
	case engine.CmdSetRules: // streams stage no rules
		out.Reject = engine.RejectInvalidRules
		if r.Market(c.Market) == nil {
			out.Reject = engine.RejectUnknownMarket
		}
	case engine.CmdTransfer:
		out.Reject = r.transfer(&c)
	case engine.CmdLeverage:
		out.Reject = r.setLeverage(&c)
	case engine.CmdMarginMode:
		out.Reject = r.setMarginMode(&c)
	case engine.CmdPositionMargin:
		out.Reject = r.positionMargin(&c)
	default:
		out.Reject = engine.RejectInvalidType
	}
	if m := r.Market(c.Market); m != nil && m.Contract && len(m.Plans) > 0 {
		r.firePlans(m)
	}
	if len(r.Contracts) > 0 {
		r.liquidateAll()
	}
}

func (r *Ref) addUser(c *engine.Cmd) engine.Reject {
	if c.UID <= 0 {
		return engine.RejectUnknownUser
	}
	if c.Amount < 0 || int64(c.Amount) > engine.RateOne || c.Amount != 0 && !c.Broker {
		return engine.RejectInvalidAmount
	}
	if _, dup := r.Lookup(c.UID); dup {
		return engine.RejectUserExists
	}
	r.Users = append(r.Users, RefUser{UID: c.UID, Broker: c.Broker, Referrer: c.Referrer, Rate: int64(c.Amount)})
	r.Bal = append(r.Bal, make([]RefCell, 2*len(r.Coins)))
	return engine.OK
}

func (r *Ref) ledgerCheck(c *engine.Cmd) engine.Reject {
	if !r.validCoin(c.Coin) {
		return engine.RejectUnknownCoin
	}
	if !r.valid(c.User, c.UID) {
		return engine.RejectUnknownUser
	}
	if c.Amount <= 0 {
		return engine.RejectInvalidAmount
	}
	return engine.OK
}

func (r *Ref) deposit(c *engine.Cmd) engine.Reject {
	if rj := r.ledgerCheck(c); rj != engine.OK {
		return rj
	}
	// a coin's supply (deposits minus withdrawals) is capped at 2^62 units,
	// which keeps every balance far from int64 overflow
	if int64(c.Amount) > 1<<62-r.Net[c.Coin.Spot()] {
		return engine.RejectOverflow
	}
	r.out.BillID = engine.BillID(r.seq, r.k, r.shard)
	r.cell(c.User, c.Coin).Avail += int64(c.Amount)
	r.bill(c.User, c.Coin, engine.BizDeposit, int64(c.Amount), 0, 0, 0, 0)
	r.Net[c.Coin.Spot()] += int64(c.Amount)
	return engine.OK
}

func (r *Ref) withdraw(c *engine.Cmd) engine.Reject {
	if rj := r.ledgerCheck(c); rj != engine.OK {
		return rj
	}
	if r.cell(c.User, c.Coin).Avail < int64(c.Amount) {
		return engine.RejectInsufficientBalance
	}
	r.out.BillID = engine.BillID(r.seq, r.k, r.shard)
	r.cell(c.User, c.Coin).Avail -= int64(c.Amount)
	r.bill(c.User, c.Coin, engine.BizWithdraw, -int64(c.Amount), 0, 0, 0, 0)
	r.Net[c.Coin.Spot()] -= int64(c.Amount)
	return engine.OK
}

// rebate pays a broker's commission from the fee account (its futures
// wallet for product 1, futures), once per (day, broker, market, product).
func (r *Ref) rebate(c *engine.Cmd) engine.Reject {
	if int(c.Coin) >= len(r.Coins) {
		return engine.RejectUnknownCoin
	}
	if !r.valid(c.User, c.UID) {
		return engine.RejectUnknownUser
	}
	if c.Amount < 0 || c.OrderID < 0 || c.Market >= engine.MaxMarkets {
		return engine.RejectInvalidAmount
	}
	k := engine.SettleKey{Day: int32(c.OrderID >> 1), Broker: c.User, Market: c.Market, Product: uint8(c.OrderID & 1)}
	if r.Settled[k] {
		return engine.RejectAlreadySettled
	}
	if c.Amount > 0 {
		// a futures commission comes out of the fee account's futures
		// wallet, where contract fees are paid; it goes to the broker's
		// spot wallet either way
		from := c.Coin
		if k.Product == 1 {
			from |= engine.Futures
		}
		fee, ok := r.Lookup(r.FeeUID)
		if !ok || r.cell(fee, from).Avail < int64(c.Amount) {
			return engine.RejectInsufficientBalance
		}
		r.out.BillID = engine.BillID(r.seq, r.k, r.shard)
		r.cell(fee, from).Avail -= int64(c.Amount)
		r.bill(fee, from, engine.BizRebate, -int64(c.Amount), 0, c.Market, 0, 0)
		r.Bal[c.User][c.Coin].Avail += int64(c.Amount)
		r.bill(c.User, c.Coin, engine.BizRebate, int64(c.Amount), 0, c.Market, 0, 0)
	}
	r.Settled[k] = true
	return engine.OK
}

// bill changes u's total of c by delta (available was already adjusted by
// the caller) and records it.
func (r *Ref) bill(u engine.UserIdx, c engine.CoinID, biz engine.BizType, delta, fee int64, m engine.MarketID, q, quote int64) {
	if delta == 0 {
		return
	}
	cl := r.cell(u, c)
	cl.Total += delta
	r.out.Bills = append(r.out.Bills, engine.Bill{BillID: engine.BillID(r.seq, r.k, r.shard), UID: r.Users[u].UID,
		User: u, Coin: c, Biz: biz, Market: m, FillQty: engine.Qty(q), FillQuote: engine.Amount(quote),
		Delta: engine.Amount(delta), After: engine.Amount(cl.Total), Fee: engine.Amount(fee), TimeMs: r.timeMs})
	r.k++
}

// generatedCID is the client id of an order placed without one.
func generatedCID(id int64) string { return "x-" + strconv.FormatInt(id, 10) }

func (r *Ref) view(m *RefMarket, o *RefOrder) engine.OrderView {
	v := engine.OrderView{OrderID: o.ID, UID: r.Users[o.User].UID, User: o.User, Market: m.ID, Side: o.Side,
		Type: o.Type, TIF: o.TIF, Status: o.Status, Price: engine.Price(o.Price), OrigQty: engine.Qty(o.Qty),
		ExecutedQty: engine.Qty(o.Filled), CumQuote: engine.Amount(o.CumQuote), TimeMs: o.TimeMs, UpdateTimeMs: o.UpdateMs,
		Pos: o.Pos, Kind: o.Kind}
	if o.CID != generatedCID(o.ID) { // a generated id is shown, not stored
		v.ClientID.Set([]byte(o.CID))
	}
	return v
}

func (r *Ref) place(c *engine.Cmd) engine.Reject {
	m := r.Market(c.Market)
	if m == nil {
		return engine.RejectUnknownMarket
	}
	if !r.valid(c.User, c.UID) {
		return engine.RejectUnknownUser
	}
	if !m.Enable {
		return engine.RejectTradingDisabled
	}
	if c.Side != engine.Buy && c.Side != engine.Sell {
		return engine.RejectInvalidSide
	}
	qty := int64(c.Qty)
	switch {
	case qty <= 0:
		return engine.RejectInvalidQuantity
	case qty < m.MinQty:
		return engine.RejectQuantityTooSmall
	case qty > m.MaxQty:
		return engine.RejectQuantityTooLarge
	}
	lim := int64(c.Price)
	tif := c.TIF
	switch c.Type {
	case engine.Limit:
		if tif != engine.GTC && tif != engine.IOC && tif != engine.FOK && tif != engine.PostOnly {
			return engine.RejectInvalidTimeInForce
		}
		if lim <= 0 {
			return engine.RejectInvalidPrice
		}
		if m.Last > 0 && !m.inBand(c.Side, lim) {
			return engine.RejectPriceOutOfRange
		}
		if tif == engine.PostOnly {
			if b := m.bestOpp(c.Side); b >= 0 && crosses(c.Side, lim, m.Orders[b].Price) {
				return engine.RejectPostOnlyWouldTake
			}
		}
	case engine.Market:
		if c.Side == engine.Buy && qty > m.BuyCap || c.Side == engine.Sell && qty > m.SellCap {
			return engine.RejectQuantityTooLarge
		}
		tif = engine.IOC
		lim = 0 // empty opposite book: nothing to trade, the order expires
		if b := m.bestOpp(c.Side); b >= 0 {
			lim = m.protection(c.Side, m.Orders[b].Price)
		}
	default:
		return engine.RejectInvalidType
	}
	id := (m.NextOrder+1)<<10 | int64(m.ID)
	cid := string(c.Text.B[:c.Text.N])
	if cid == "" {
		cid = generatedCID(id)
	}
	for _, o := range m.Orders {
		if o.User == c.User && o.CID == cid {
			return engine.RejectDuplicateClientOrderID
		}
	}
	var res int64
	var coin engine.CoinID
	ok := true
	var lev int32
	switch {
	case m.Contract:
		var rj engine.Reject
		if res, lev, rj = r.contractHold(m, c, lim); rj != engine.OK {
			return rj
		}
		coin = m.Margin
	case c.Side == engine.Buy:
		coin = m.Quote
		res, ok = m.notional(lim, qty)
	default:
		coin = m.Base
		res, ok = m.baseAmount(qty)
	}
	if !ok {
		return engine.RejectOverflow
	}
	if !m.Contract && c.Type == engine.Market && lim == 0 && c.Side == engine.Buy {
		// a market buy facing an empty book has no protection price to
		// reserve at; it expires at once. A market sell reserves its base
		// like any sell (docs/API.md: "the quantity of base"), so a user
		// without it is refused even when the book is empty.
		res = 0
	}
	cell := r.cell(c.User, coin)
	if cell.Avail < res {
		return engine.RejectInsufficientBalance
	}
	cell.Avail -= res

	m.NextOrder++
	o := &RefOrder{ID: id, User: c.User, Side: c.Side, Type: c.Type, TIF: tif, Status: engine.StatusNew,
		Price: lim, Qty: qty, Reserved: res, TimeMs: r.timeMs, UpdateMs: r.timeMs, CID: cid}
	if m.Contract {
		r.contractPlaced(m, o, c.Pos, lev)
		o.TP, o.SL, o.Mark = int64(c.TP), int64(c.SL), c.TrigMark
	}
	bounded := false
	if lim > 0 && (tif != engine.FOK || r.fillable(m, o)) {
		bounded = r.match(m, o)
		r.billFees(m)
	}
	if o.Filled < o.Qty && (tif == engine.GTC || tif == engine.PostOnly) && !bounded {
		m.Orders = append(m.Orders, o)
	} else {
		if o.Filled < o.Qty {
			o.Status = engine.StatusExpired
		}
		r.release(m, o)
	}
	v := r.view(m, o)
	if c.Type == engine.Market {
		v.Price = 0
	}
	r.out.Updates = append(r.out.Updates, v)
	r.out.OrderAt = len(r.out.Updates)
	return engine.OK
}

// fillable reports whether o can be filled entirely now, meeting at most
// MaxFillsPerOrder resting orders, its own user's not counting as liquidity.
func (r *Ref) fillable(m *RefMarket, o *RefOrder) bool {
	need, met := o.Qty, 0
	for _, i := range m.priority(o.Side) {
		mk := m.Orders[i]
		if !crosses(o.Side, o.Price, mk.Price) {
			return false
		}
		if met == engine.MaxFillsPerOrder {
			return false
		}
		met++
		if mk.User == o.User {
			continue
		}
		if need -= mk.Qty - mk.Filled; need <= 0 {
			return true
		}
	}
	return false
}

// match trades o against the opposite side; true if it stopped at the bound.
func (r *Ref) match(m *RefMarket, o *RefOrder) bool {
	for met := 0; o.Filled < o.Qty; met++ {
		b := m.bestOpp(o.Side)
		if b < 0 || !crosses(o.Side, o.Price, m.Orders[b].Price) {
			return false
		}
		if met == engine.MaxFillsPerOrder {
			return true
		}
		mk := m.Orders[b]
		if mk.User == o.User {
			r.remove(m, b, engine.StatusExpired)
			continue
		}
		q := min(o.Qty-o.Filled, mk.Qty-mk.Filled)
		r.fill(m, o, mk, mk.Price, q)
		if mk.Filled == mk.Qty {
			r.remove(m, b, engine.StatusFilled)
		} else {
			r.out.Updates = append(r.out.Updates, r.view(m, mk))
		}
	}
	return false
}

func (r *Ref) fill(m *RefMarket, t, mk *RefOrder, p, q int64) {
	if m.Contract {
		r.fillContract(m, t, mk, p, q)
		return
	}
	notional, ok1 := m.notional(p, q)
	base, ok2 := m.baseAmount(q)
	if !ok1 || !ok2 {
		panic("enginetest: fill overflows")
	}
	buyer, seller := t, mk
	buyRate, sellRate := m.taker, m.maker
	if t.Side == engine.Sell {
		buyer, seller = mk, t
		buyRate, sellRate = m.maker, m.taker
	}
	// The fill's four changes of totals (its bills, which the trade
	// carries: engine.Trade.AppendBills); a zero trade_in is no bill.
	billID := engine.BillID(r.seq, r.k, r.shard)
	var after [4]engine.Amount
	change := func(i int, u engine.UserIdx, c engine.CoinID, delta int64) {
		r.Bal[u][c].Total += delta
		after[i] = engine.Amount(r.Bal[u][c].Total)
		if delta != 0 {
			r.k++
		}
	}
	// buyer: its reservation for q at its own limit is used; what the trade
	// price saves goes back to available.
	held, _ := m.notional(buyer.Price, q)
	buyer.Reserved -= held
	r.Bal[buyer.User][m.Quote].Avail += held - notional
	change(0, buyer.User, m.Quote, -notional)
	bf := fee(base, buyRate)
	r.Bal[buyer.User][m.Base].Avail += base - bf
	change(1, buyer.User, m.Base, base-bf)

	seller.Reserved -= base
	change(2, seller.User, m.Base, -base)
	sf := fee(notional, sellRate)
	r.Bal[seller.User][m.Quote].Avail += notional - sf
	change(3, seller.User, m.Quote, notional-sf)

	r.feeBase += bf
	r.feeQuote += sf
	r.feeQty += q
	r.feeNotional += notional
	if buyer.Reserved < 0 || seller.Reserved < 0 {
		panic("enginetest: reservation below zero")
	}

	for _, o := range []*RefOrder{t, mk} {
		o.Filled += q
		o.CumQuote += notional
		o.UpdateMs = r.timeMs
		o.Status = engine.StatusPartiallyFilled
		if o.Filled == o.Qty {
			o.Status = engine.StatusFilled
		}
	}
	m.Last = p
	m.NextTrade++
	tr := engine.Trade{TradeID: m.NextTrade<<10 | int64(m.ID), Market: m.ID, TimeMs: r.timeMs,
		Price: engine.Price(p), Qty: engine.Qty(q), Quote: engine.Amount(notional), TakerSide: t.Side,
		MakerOrder: mk.ID, TakerOrder: t.ID, MakerUID: r.Users[mk.User].UID, TakerUID: r.Users[t.User].UID,
		BuyerUser: buyer.User, SellerUser: seller.User, BaseCoin: m.Base, QuoteCoin: m.Quote,
		Base: engine.Amount(base), After: after, BillID: billID}
	if t.Side == engine.Buy {
		tr.TakerFee, tr.MakerFee = engine.Amount(bf), engine.Amount(sf)
	} else {
		tr.TakerFee, tr.MakerFee = engine.Amount(sf), engine.Amount(bf)
	}
	r.out.Trades = append(r.out.Trades, tr)
}

// billFees credits the fee account with the fees of the command's fills.
func (r *Ref) billFees(m *RefMarket) {
	if r.feeQty == 0 {
		return
	}
	feeU, ok := r.Lookup(r.FeeUID)
	if !ok {
		panic("enginetest: fee account not registered")
	}
	if m.Contract { // one order_fill_fee_income in the margin coin's futures wallet
		r.cell(feeU, m.Margin).Avail += r.feeQuote
		r.bill(feeU, m.Margin, engine.BizFillFee, r.feeQuote, 0, m.ID, r.feeQty, r.feeNotional)
		r.feeBase, r.feeQuote, r.feeQty, r.feeNotional = 0, 0, 0, 0
		return
	}
	r.Bal[feeU][m.Base].Avail += r.feeBase
	r.bill(feeU, m.Base, engine.BizFee, r.feeBase, 0, m.ID, r.feeQty, r.feeNotional)
	r.Bal[feeU][m.Quote].Avail += r.feeQuote
	r.bill(feeU, m.Quote, engine.BizFee, r.feeQuote, 0, m.ID, r.feeQty, r.feeNotional)
	r.feeBase, r.feeQuote, r.feeQty, r.feeNotional = 0, 0, 0, 0
}

// remove takes working order m.Orders[i] out, releases its reservation and
// reports it with status st (a filled order keeps its fill's state).
func (r *Ref) remove(m *RefMarket, i int, st engine.Status) {
	o := m.Orders[i]
	m.Orders = slices.Delete(m.Orders, i, i+1)
	r.release(m, o)
	if st != engine.StatusFilled {
		o.Status = st
		o.UpdateMs = r.timeMs
	}
	r.out.Updates = append(r.out.Updates, r.view(m, o))
}

func (r *Ref) cancel(c *engine.Cmd) engine.Reject {
	m := r.Market(c.Market)
	if m == nil {
		return engine.RejectUnknownMarket
	}
	cid := string(c.Text.B[:c.Text.N])
	for i, o := range m.Orders {
		if o.User != c.User {
			continue
		}
		if c.OrderID != 0 && o.ID == c.OrderID || c.OrderID == 0 && cid != "" && o.CID == cid {
			r.remove(m, i, engine.StatusCanceled)
			r.out.OrderAt = len(r.out.Updates)
			return engine.OK
		}
	}
	return engine.RejectUnknownOrder
}

func (r *Ref) cancelAll(c *engine.Cmd) engine.Reject {
	m := r.Market(c.Market)
	if m == nil {
		return engine.RejectUnknownMarket
	}
	for i := 0; i < len(m.Orders); {
		if m.Orders[i].User == c.User {
			r.remove(m, i, engine.StatusCanceled)
			continue
		}
		i++
	}
	return engine.OK
}

// release gives back what working (or just expired) order o holds: a
// spot order's or a contract open's reservation, a contract close's claim
// on its position.
func (r *Ref) release(m *RefMarket, o *RefOrder) {
	switch {
	case m.Contract && !opens(o.Side, o.Pos):
		m.Accts[o.User].Pos[o.Pos-1].Closing -= o.Qty - o.Filled
	case m.Contract:
		r.cell(o.User, m.Margin).Avail += o.Reserved
		m.Accts[o.User].Pos[o.Pos-1].Opening -= o.Qty - o.Filled
	case o.Side == engine.Buy:
		r.cell(o.User, m.Quote).Avail += o.Reserved
	default:
		r.cell(o.User, m.Base).Avail += o.Reserved
	}
	o.Reserved = 0
}

// OpenOrders returns u's working orders in market id, oldest first.
func (r *Ref) OpenOrders(u engine.UserIdx, id engine.MarketID) []engine.OrderView {
	m := r.Market(id)
	var vs []engine.OrderView
	for _, o := range m.Orders {
		if o.User == u {
			vs = append(vs, r.view(m, o))
		}
	}
	return vs
}

// Depth returns every aggregated level of market id, best first.
func (r *Ref) Depth(id engine.MarketID) (bids, asks []engine.Level) {
	m := r.Market(id)
	agg := func(sd engine.Side) []engine.Level {
		var lv []engine.Level
		for _, i := range m.priority(sd) { // orders opposite sd: sd's takers' view
			o := m.Orders[i]
			if n := len(lv); n > 0 && lv[n-1].Price == engine.Price(o.Price) {
				lv[n-1].Qty += engine.Qty(o.Qty - o.Filled)
				lv[n-1].Count++
				continue
			}
			lv = append(lv, engine.Level{Price: engine.Price(o.Price), Qty: engine.Qty(o.Qty - o.Filled), Count: 1})
		}
		return lv
	}
	return agg(engine.Sell), agg(engine.Buy)
}

// StateHash computes the canonical state hash documented in
// engine/snapshot.go from the model's state.
func (r *Ref) StateHash() [32]byte {
	le := binary.LittleEndian
	b := []byte("STATE1")
	u64 := func(v int64) { b = le.AppendUint64(b, uint64(v)) }
	for _, m := range r.AllMarkets() {
		b = le.AppendUint16(b, uint16(m.ID))
		u64(m.Last)
		u64(m.NextOrder)
		u64(m.NextTrade)
		b = le.AppendUint32(b, uint32(len(m.Orders)))
		for _, sd := range []engine.Side{engine.Sell, engine.Buy} { // bids (seen by sellers) first
			for _, i := range m.priority(sd) {
				o := m.Orders[i]
				u64(o.ID)
				b = le.AppendUint32(b, uint32(o.User))
				b = append(b, byte(o.Side), byte(o.Type), byte(o.TIF), byte(o.Status))
				if m.Contract {
					b = append(b, byte(o.Pos), byte(o.Lev))
				}
				for _, v := range []int64{o.Price, o.Qty, o.Filled, o.CumQuote, o.Reserved, o.TimeMs, o.UpdateMs} {
					u64(v)
				}
				b = append(b, byte(len(o.CID)))
				b = append(b, o.CID...)
			}
		}
		if m.Contract {
			b = m.appendContract(b)
		}
	}
	b = le.AppendUint32(b, uint32(len(r.Coins)))
	b = le.AppendUint32(b, uint32(len(r.Users)))
	for i, u := range r.Users {
		u64(u.UID)
		switch {
		case u.Rate != 0:
			b = append(b, 2)
			u64(u.Rate)
		case u.Broker:
			b = append(b, 1)
		default:
			b = append(b, 0)
		}
		u64(u.Referrer)
		for _, cl := range r.Bal[i][:len(r.Coins)] {
			u64(cl.Avail)
			u64(cl.Total)
		}
	}
	for _, n := range r.Net {
		u64(n)
	}
	if len(r.Settled) > 0 { // as engine.Accounts encodes them: sorted, after a magic
		keys := make([]engine.SettleKey, 0, len(r.Settled))
		for k := range r.Settled {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(x, y engine.SettleKey) int {
			return cmp.Or(cmp.Compare(x.Day, y.Day), cmp.Compare(x.Broker, y.Broker), cmp.Compare(x.Market, y.Market), cmp.Compare(x.Product, y.Product))
		})
		b = binary.LittleEndian.AppendUint32(append(b, "RBT1"...), uint32(len(keys)))
		for _, k := range keys {
			b = binary.LittleEndian.AppendUint32(b, uint32(k.Day))
			b = binary.LittleEndian.AppendUint32(b, uint32(k.Broker))
			b = binary.LittleEndian.AppendUint16(b, uint16(k.Market))
			b = append(b, k.Product)
		}
	}
	b = r.appendFutures(b)
	return sha256.Sum256(b)
}

// Reserved returns what u's working orders reserve of coin c.
func (r *Ref) Reserved(u engine.UserIdx, c engine.CoinID) int64 {
	var s int64
	for _, m := range r.AllMarkets() {
		for _, o := range m.Orders {
			if o.User != u {
				continue
			}
			if m.Contract && m.Margin == c || !m.Contract && (o.Side == engine.Buy && m.Quote == c || o.Side == engine.Sell && m.Base == c) {
				s += o.Reserved
			}
		}
	}
	return s
}
