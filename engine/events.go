package engine

// Out collects everything one Apply produced. It is reused across commands
// (Reset keeps the capacity), so the steady state allocates nothing.
type Out struct {
	// Reject is OK when the command was accepted.
	Reject Reject
	// OrderAt is 1 + the index in Updates of the state, after the command,
	// of the order the command placed or cancelled (0: none). See Order.
	OrderAt int
	// BillID is the id of the bill a deposit or withdrawal wrote.
	BillID uint64
	// Updates holds one entry per order whose state the command changed
	// (the taker, makers that traded, orders cancelled or expired), in the
	// order the changes happened.
	Updates []OrderView
	Trades  []Trade
	// Bills holds the command's finance records other than its fills'
	// (fee income, deposits, withdrawals), which follow the fills' in
	// order and numbering; AppendBills writes them all.
	Bills []Bill
	// Rules is the spec a CmdSetRules installed (the journal keeps it).
	Rules *MarketSpec
	// Funding is what a CmdFunding settled (its Market is 0 otherwise).
	Funding FundingRecord
	// Plans holds the plans the command placed, fired or cancelled.
	Plans []PlanView
}

// FundingRecord is one funding settlement of a contract.
type FundingRecord struct {
	Market MarketID
	TimeMs int64 // the interval's end (the funding time)
	Rate   int64 // RateOne = 100%; positive: longs pay shorts
	Mark   Price // the mark price the payments were valued at
	Index  Price // the last index price sampled
}

// Reset empties o, keeping its buffers.
func (o *Out) Reset() {
	o.Reject = OK
	o.Rules = nil
	o.Funding.Market = 0
	o.Plans = o.Plans[:0]
	o.OrderAt = 0
	o.BillID = 0
	o.Updates = o.Updates[:0]
	o.Trades = o.Trades[:0]
	o.Bills = o.Bills[:0]
}

// Order returns the state, after the command, of the order the command
// placed or cancelled (one of Updates), or nil.
func (o *Out) Order() *OrderView {
	if o.OrderAt == 0 {
		return nil
	}
	return &o.Updates[o.OrderAt-1]
}

// OrderView is an order's full state as clients see it.
type OrderView struct { // the small fields after the large ones, none padded (120 bytes)
	OrderID      int64
	UID          int64
	Price        Price // limit price; for market orders the protection price
	OrigQty      Qty
	ExecutedQty  Qty
	CumQuote     Amount // executed amount in the quote coin
	TimeMs       int64  // creation
	UpdateTimeMs int64
	User         UserIdx
	Market       MarketID
	Side         Side
	Type         OrderType
	TIF          TIF
	Status       Status
	Pos          PosSide // contract orders: the position side (0 on spot)
	Kind         OrderKind
	// ClientID is the client order id the order was placed with; it is
	// empty when the order has the generated one, "x-<OrderID>" (placed
	// without one, or with exactly that). AppendClientID writes either.
	ClientID ClientID
}

// AppendClientID appends the order's client order id to dst: the client's
// own, or the generated "x-<OrderID>".
func (v *OrderView) AppendClientID(dst []byte) []byte {
	if v.ClientID.N != 0 {
		return append(dst, v.ClientID.Bytes()...)
	}
	return appendGeneratedID(dst, v.OrderID)
}

// Trade is one fill between a resting (maker) and an incoming (taker) order.
type Trade struct { // the small fields together: less padding (152 bytes)
	TradeID    int64
	TimeMs     int64
	Price      Price
	Qty        Qty
	Quote      Amount // price * qty in the quote coin
	MakerOrder int64
	TakerOrder int64
	MakerUID   int64
	TakerUID   int64
	MakerFee   Amount // in the coin the maker received
	TakerFee   Amount // in the coin the taker received
	Market     MarketID
	TakerSide  Side

	// The fill's changes of balances, from which Out.AppendBills writes
	// its finance records (a fill's bills are not in Out.Bills: writing
	// four full records per fill cost ~6 ns of a ~110 ns command).
	BaseCoin, QuoteCoin   CoinID
	BuyerUser, SellerUser UserIdx
	Base                  Amount // Qty in the base coin
	// After holds the four totals after the fill: the buyer's quote and
	// base, then the seller's base and quote.
	After [4]Amount
	// BillID is the id of the fill's first bill; the others follow it.
	BillID uint64

	// Contract fills: the two orders' position sides (0 on spot) and
	// realized PnL. A contract fill's bills are in Out.Bills.
	TakerPos, MakerPos PosSide
	TakerPnl, MakerPnl Amount
	// Off marks a liquidation's takeover or auto-deleveraging fill: not a
	// market trade (no public trade, candle or last price).
	Off bool
}

// buyerSeller returns the buyer's and the seller's uid and fee.
func (t *Trade) buyerSeller() (buid, suid int64, bf, sf Amount) {
	if t.TakerSide == Buy {
		return t.TakerUID, t.MakerUID, t.TakerFee, t.MakerFee
	}
	return t.MakerUID, t.TakerUID, t.MakerFee, t.TakerFee
}

// NumBills returns how many finance records the fill makes.
func (t *Trade) NumBills() int {
	if t.TakerPos != 0 {
		return 0
	}
	_, _, bf, sf := t.buyerSeller()
	return fillBills(t.Base, bf, t.Quote, sf)
}

// fillBills returns how many finance records a fill of base for quote
// makes when the buyer's fee is bf and the seller's sf: four, less a
// trade_in that the fee took whole (a 100% fee rate).
func fillBills(base, bf, quote, sf Amount) int {
	n := 4
	if base == bf {
		n--
	}
	if quote == sf {
		n--
	}
	return n
}

// AppendBills appends the fill's finance records, in their documented
// order: the buyer's trade_out of quote and trade_in of base, then the
// seller's trade_out of base and trade_in of quote (a trade_in is left out
// when zero).
func (t *Trade) AppendBills(dst []Bill) []Bill {
	if t.TakerPos != 0 {
		return dst
	}
	buid, suid, bf, sf := t.buyerSeller()
	id := t.BillID
	b := Bill{BillID: id, UID: buid, User: t.BuyerUser, Coin: t.QuoteCoin, Biz: BizTradeOut, Market: t.Market,
		FillQty: t.Qty, FillQuote: t.Quote, Delta: -t.Quote, After: t.After[0], TimeMs: t.TimeMs}
	dst = append(dst, b)
	if d := t.Base - bf; d != 0 {
		id += 1 << billIndexShift
		b.BillID, b.Coin, b.Biz, b.Delta, b.After, b.Fee = id, t.BaseCoin, BizTradeIn, d, t.After[1], bf
		dst = append(dst, b)
	}
	id += 1 << billIndexShift
	b.BillID, b.UID, b.User, b.Coin, b.Biz, b.Delta, b.After, b.Fee = id, suid, t.SellerUser, t.BaseCoin, BizTradeOut, -t.Base, t.After[2], 0
	dst = append(dst, b)
	if d := t.Quote - sf; d != 0 {
		id += 1 << billIndexShift
		b.BillID, b.Coin, b.Biz, b.Delta, b.After, b.Fee = id, t.QuoteCoin, BizTradeIn, d, t.After[3], sf
		dst = append(dst, b)
	}
	return dst
}

// NumBills returns how many finance records the command made.
func (o *Out) NumBills() int {
	n := len(o.Bills)
	for i := range o.Trades {
		n += o.Trades[i].NumBills()
	}
	return n
}

// AppendBills appends every finance record the command made, in order:
// its fills' (Trade.AppendBills), then Bills.
func (o *Out) AppendBills(dst []Bill) []Bill {
	for i := range o.Trades {
		dst = o.Trades[i].AppendBills(dst)
	}
	return append(dst, o.Bills...)
}

// BizType of a finance record (docs/API.md, "POST /api/v3/tax/income").
type BizType uint8

const (
	BizDeposit     BizType = 1
	BizWithdraw    BizType = 2
	BizTradeIn     BizType = 3
	BizTradeOut    BizType = 4
	BizRebate      BizType = 5
	BizTransferIn  BizType = 6
	BizTransferOut BizType = 7
	BizFee         BizType = 8 // fee income credited to the fee account
	// futures wallets (contract.go)
	BizOpenLong   BizType = 9 // a fill opening a LONG: the fee
	BizOpenShort  BizType = 10
	BizCloseLong  BizType = 11 // a fill closing a LONG: realized PnL less the fee
	BizCloseShort BizType = 12
	BizFillFee    BizType = 13 // contract fee income credited to the fee account
	BizInsurance  BizType = 14 // the insurance account paying a loss no one else could
	BizFunding    BizType = 15 // a position's funding payment (paid or received)
	// what a liquidation order's fills left of the position's margin,
	// credited to the insurance account
	BizLiquidationIncome BizType = 16
)

var bizNames = [...]string{"", "deposit", "withdraw", "trade_in", "trade_out", "rebate", "transfer_in", "transfer_out", "fee_income",
	"position_open_long", "position_open_short", "position_close_long", "position_close_short", "order_fill_fee_income", "insurance_payout",
	"position_funding", "liquidation_income"}

// String returns the bizType clients see.
func (b BizType) String() string {
	if int(b) < len(bizNames) {
		return bizNames[b]
	}
	return "unknown"
}

// ParseBizType returns the BizType named s, or 0.
func ParseBizType(s []byte) BizType {
	for i := 1; i < len(bizNames); i++ {
		if string(s) == bizNames[i] {
			return BizType(i)
		}
	}
	return 0
}

// Bill is one finance record: one change of one balance's total.
type Bill struct {
	BillID    uint64
	UID       int64
	User      UserIdx
	Coin      CoinID
	Biz       BizType
	Market    MarketID // for trade bills
	FillQty   Qty      // trade bills: the fill's base quantity (steps); fee_income: the command's
	FillQuote Amount   // trade bills: the fill's value in the quote coin; fee_income: the command's
	Delta     Amount   // signed change of available+frozen
	After     Amount   // available+frozen after the change
	Fee       Amount   // trade_in: fee taken from what was received
	TimeMs    int64
}

// BillID packs (seq, index within the command, shard) so bill ids are
// unique across shards and deterministic on replay.
func BillID(seq uint64, k int, shard int) uint64 {
	return seq<<22 | uint64(k)<<billIndexShift | uint64(shard)
}

// billIndexShift places a bill's index within its command in its id:
// the next bill of a command has the id 1<<billIndexShift higher.
const billIndexShift = 6
