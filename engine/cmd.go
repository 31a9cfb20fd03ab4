package engine

// CmdKind says what a command does.
type CmdKind uint8

const (
	CmdPlace     CmdKind = 1 // place an order in Market
	CmdCancel    CmdKind = 2 // cancel by OrderID, or by ClientID when OrderID is 0
	CmdCancelAll CmdKind = 3 // cancel all of User's working orders in Market
	CmdDeposit   CmdKind = 4 // credit Amount of Coin (ledger shard)
	CmdWithdraw  CmdKind = 5 // debit Amount of Coin if available (ledger shard)
	CmdAddUser   CmdKind = 6 // register UID (ledger shard); Text holds a key seed, Amount a broker's rebate rate
	CmdSetRules  CmdKind = 7 // replace Market's rules by the spec staged with StageRules
	CmdRebate    CmdKind = 8 // pay a broker's commission (ledger shard): see rebate.go
	// contracts (contract.go)
	CmdTransfer       CmdKind = 9  // move Amount into wallet Coin from the coin's other wallet (ledger shard)
	CmdLeverage       CmdKind = 10 // set User's leverage (Amount) in Market for side Pos (0: both)
	CmdMarginMode     CmdKind = 11 // set User's margin mode (Mode) in Market
	CmdPositionMargin CmdKind = 12 // move Amount (signed) into User's isolated position Pos in Market
	CmdFunding        CmdKind = 13 // pay Market's funding for the interval ending at OrderID (ms) (funding.go)
	CmdPlan           CmdKind = 14 // place a take-profit or stop-loss plan (plan.go)
	CmdPlanCancel     CmdKind = 15 // cancel plan OrderID, or all of User's in Market (plan.go)
	cmdKindCount
)

// Cmd is one command. It is a plain value with no pointers so that rings and
// journal batches hold it without allocation or GC scanning.
//
// The journal rule (docs/DESIGN.md): Apply in live mode records in Dec every
// decision it took from state its shard does not own; the journal stores the
// command with Dec, and replay applies Dec instead of deciding again.
type Cmd struct {
	Kind   CmdKind
	Side   Side
	Type   OrderType
	TIF    TIF
	Market MarketID
	Coin   CoinID
	User   UserIdx // resolved by the edge from the API key; checked against UID
	UID    int64   // the user's external uid (for the audit trail)
	Price  Price
	Qty    Qty
	// OrderID addresses an order for CmdCancel (0: use ClientID).
	OrderID int64
	Amount  Amount
	// Text is the client order id (CmdPlace, CmdCancel) or, for CmdAddUser,
	// the seed the edge derives the user's API credentials from.
	Text ClientID
	// Broker and Referrer describe the user CmdAddUser registers.
	Broker   bool
	Referrer int64
	// Pos is a contract order's position side (an open: BUY LONG or SELL
	// SHORT; a close: SELL LONG or BUY SHORT), or the side a contract
	// setting applies to; Mode a CmdMarginMode's mode.
	Pos  PosSide
	Mode MarginMode
	// TP and SL are a contract open's preset take-profit and stop-loss
	// trigger prices (ticks; 0: none), TrigMark says which of them trigger
	// on the mark price (bit 0 TP, bit 1 SL) rather than the last trade.
	TP, SL   Price
	TrigMark uint8
	// PlanKind (PlanTakeProfit, PlanStopLoss) and Exec (the execute price;
	// 0: market) describe the plan a CmdPlan places.
	PlanKind uint8
	Exec     Price
	Dec      Decision
}

// Decision is what a live Apply decided from state shared across shards.
type Decision struct {
	// Recorded is set by a live Apply; a command arriving with Recorded set
	// is replayed: its outcome below is applied, not re-decided.
	Recorded bool
	// Reserved reports that the balance reservation (place) or debit
	// (withdraw) succeeded.
	Reserved bool
}

// Replaying reports whether Apply will replay c's recorded decisions.
func (c *Cmd) Replaying() bool { return c.Dec.Recorded }
