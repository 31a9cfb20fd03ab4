package engine

// Reject is why a command was refused. The list is append-only: values are
// journaled and mapped to HTTP codes by the edge in one table.
type Reject uint8

const (
	OK Reject = iota
	RejectInsufficientBalance
	RejectInvalidPrice     // not positive, or not a whole number of ticks
	RejectInvalidQuantity  // not positive, or not a whole number of steps
	RejectQuantityTooSmall // below minTradeAmount
	RejectQuantityTooLarge // above maxTradeAmount or the market order cap
	RejectPriceOutOfRange  // outside the band around the last price
	RejectDuplicateClientOrderID
	RejectUnknownOrder
	RejectUnknownMarket
	RejectUnknownUser
	RejectUnknownCoin
	RejectTradingDisabled
	RejectInvalidTimeInForce
	RejectInvalidType
	RejectInvalidSide
	RejectOverflow // an amount would not fit in int64
	RejectPostOnlyWouldTake
	RejectInvalidAmount // deposit/withdraw amount not positive
	RejectUserExists
	RejectInvalidRules   // CmdSetRules without a staged spec, for another market, or changing a stored scale
	RejectAlreadySettled // CmdRebate for a (day, broker, market, product) paid before
	RejectInvalidPositionSide
	RejectNoPosition        // a close, or a margin change, without a position
	RejectReduceOnly        // a close beyond the position less its working closes
	RejectPositionTooLarge  // an open beyond maxPositionSize
	RejectInvalidLeverage   // outside [minLeverage, maxLeverage]
	RejectPositionExists    // a setting that cannot change with a position (or orders)
	RejectInvalidMarginMode // not CROSSED/ISOLATED, or an isolated-only change on cross
	RejectInvalidTPSL       // a preset on a close, or on the wrong side of the order's price
	RejectTooManyPlans      // a user's plans in a contract are at MaxPlansPerUser
	rejectCount
)

// NumRejects is the number of Reject values, OK included: every value
// below it has a name and an entry in the edge's code table.
const NumRejects = int(rejectCount)

var rejectNames = [...]string{
	OK:                           "OK",
	RejectInsufficientBalance:    "INSUFFICIENT_BALANCE",
	RejectInvalidPrice:           "INVALID_PRICE",
	RejectInvalidQuantity:        "INVALID_QUANTITY",
	RejectQuantityTooSmall:       "QUANTITY_TOO_SMALL",
	RejectQuantityTooLarge:       "QUANTITY_TOO_LARGE",
	RejectPriceOutOfRange:        "PRICE_OUT_OF_RANGE",
	RejectDuplicateClientOrderID: "DUPLICATE_CLIENT_ORDER_ID",
	RejectUnknownOrder:           "ORDER_NOT_FOUND",
	RejectUnknownMarket:          "INVALID_SYMBOL",
	RejectUnknownUser:            "UNKNOWN_USER",
	RejectUnknownCoin:            "UNKNOWN_COIN",
	RejectTradingDisabled:        "TRADING_DISABLED",
	RejectInvalidTimeInForce:     "INVALID_TIME_IN_FORCE",
	RejectInvalidType:            "INVALID_TYPE",
	RejectInvalidSide:            "INVALID_SIDE",
	RejectOverflow:               "AMOUNT_OVERFLOW",
	RejectPostOnlyWouldTake:      "POST_ONLY_WOULD_TAKE",
	RejectInvalidAmount:          "INVALID_AMOUNT",
	RejectUserExists:             "USER_EXISTS",
	RejectInvalidRules:           "INVALID_RULES",
	RejectAlreadySettled:         "ALREADY_SETTLED",
	RejectInvalidPositionSide:    "INVALID_POSITION_SIDE",
	RejectNoPosition:             "NO_POSITION",
	RejectReduceOnly:             "REDUCE_ONLY_EXCEEDS_POSITION",
	RejectPositionTooLarge:       "POSITION_TOO_LARGE",
	RejectInvalidLeverage:        "INVALID_LEVERAGE",
	RejectPositionExists:         "POSITION_OR_ORDERS_EXIST",
	RejectInvalidMarginMode:      "INVALID_MARGIN_MODE",
	RejectInvalidTPSL:            "INVALID_TP_SL",
	RejectTooManyPlans:           "TOO_MANY_PLANS",
}

// String returns the stable upper-case name clients see as errorCode.
func (r Reject) String() string {
	if int(r) < len(rejectNames) {
		return rejectNames[r]
	}
	return "UNKNOWN"
}
