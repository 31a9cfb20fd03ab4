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
	Bills   []Bill
}

// Reset empties o, keeping its buffers.
func (o *Out) Reset() {
	o.Reject = OK
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
type OrderView struct {
	OrderID      int64
	UID          int64
	User         UserIdx
	Market       MarketID
	Side         Side
	Type         OrderType
	TIF          TIF
	Status       Status
	Price        Price // limit price; for market orders the protection price
	OrigQty      Qty
	ExecutedQty  Qty
	CumQuote     Amount // executed amount in the quote coin
	TimeMs       int64  // creation
	UpdateTimeMs int64
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
type Trade struct {
	TradeID    int64
	Market     MarketID
	TimeMs     int64
	Price      Price
	Qty        Qty
	Quote      Amount // price * qty in the quote coin
	TakerSide  Side
	MakerOrder int64
	TakerOrder int64
	MakerUID   int64
	TakerUID   int64
	MakerFee   Amount // in the coin the maker received
	TakerFee   Amount // in the coin the taker received
}

// BizType of a finance record (SPEC §6).
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
)

var bizNames = [...]string{"", "deposit", "withdraw", "trade_in", "trade_out", "rebate", "transfer_in", "transfer_out", "fee_income"}

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
	return seq<<22 | uint64(k)<<6 | uint64(shard)
}
