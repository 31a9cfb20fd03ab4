package edge

import (
	"strconv"

	"github.com/valyala/fasthttp"
	"github.com/weexcore/exchange/engine"
)

// Error codes (docs/API.md, "Errors").
const (
	codeUnknown          = -1000
	codeTooManyRequests  = -1003
	codeKeyEmpty         = -1040
	codeSignEmpty        = -1041
	codeTimestampEmpty   = -1042
	codeTimestampInvalid = -1043
	codeKeyInvalid       = -1044
	codeContentType      = -1045
	codeTimestampExpired = -1046
	codeSignInvalid      = -1047
	codePassphrase       = -1049
	codeNoPermission     = -1052
	codeBusy             = -1054
	codeTIF              = -1115
	codeType             = -1116
	codeSide             = -1117
	codeSymbol           = -1121
	codeParamCombination = -1128
	codeJSON             = -1135
	codeParam            = -1140
	codeParamMissing     = -1141
	codeMethod           = -1150
	codePrecision        = -1160
	codeRangeTooLarge    = -1170
	codeStartAfterEnd    = -1171
	codeClientID         = -1180
	codeOrderRejected    = -2010
	codeOrderNotFound    = -2200
	codeContractNotFound = -3200 // a contract order (SPEC: "Order not found: -3200")
)

// apiError is a top-level error answer.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func newErr(status, code int, msg string) *apiError { return &apiError{status, code, msg} }

// Fixed errors, allocated once.
var (
	errNotFound      = newErr(404, codeUnknown, "unknown path")
	errMethod        = newErr(405, codeMethod, "request method not supported")
	errJSON          = newErr(400, codeJSON, "invalid JSON request")
	errContentType   = newErr(400, codeContentType, "invalid Content-Type, please use application/json")
	errBodyTooLarge  = newErr(413, codeParam, "request body larger than 65536 bytes")
	errBusy          = newErr(503, codeBusy, "system busy: the engine queue is full, nothing was applied; retry later")
	errClosing       = newErr(503, codeBusy, "system busy: the server is shutting down")
	errTimeout       = newErr(500, codeUnknown, "timed out waiting for the journal: the command may still be applied, query before retrying")
	errInternal      = newErr(500, codeUnknown, "internal error")
	errTooManyFromIP = newErr(429, codeTooManyRequests, "too many connections from this address: close some, or reuse them")
	errTooManyConns  = newErr(503, codeBusy, "too many connections: the server is at its bound; retry")
	errUnavailable   = newErr(503, codeBusy, "service unavailable: the journal cannot be written (a full disk or an I/O error): "+
		"this request was not acknowledged, and writes are refused until the server restarts")
	errKeyEmpty        = newErr(401, codeKeyEmpty, "ACCESS-KEY header is required")
	errSignEmpty       = newErr(401, codeSignEmpty, "ACCESS-SIGN header is required")
	errTimestampEmpty  = newErr(401, codeTimestampEmpty, "ACCESS-TIMESTAMP header is required")
	errPassphraseEmpty = newErr(401, codePassphrase, "ACCESS-PASSPHRASE header is required")
	errTimestampBad    = newErr(401, codeTimestampInvalid, "invalid ACCESS-TIMESTAMP: must be Unix milliseconds")
	errTimestampOld    = newErr(401, codeTimestampExpired, "request timestamp expired: ACCESS-TIMESTAMP is outside the accepted window")
	errKeyInvalid      = newErr(401, codeKeyInvalid, "invalid ACCESS-KEY")
	errPassphrase      = newErr(401, codePassphrase, "API key or passphrase incorrect")
	errSign            = newErr(401, codeSignInvalid, "API authentication failed: signature mismatch")
	errRateLimited     = newErr(429, codeTooManyRequests, "too many requests: request weight over the budget of this 10 s window")
	errOrderNotFound   = newErr(400, codeOrderNotFound, "order does not exist")
	errSymbolMissing   = newErr(400, codeParamMissing, "parameter symbol is required")
	errSymbolInvalid   = newErr(400, codeSymbol, "invalid symbol")
	errStartAfterEnd   = newErr(400, codeStartAfterEnd, "startTime cannot be greater than endTime")
	errAdminToken      = newErr(401, codeKeyInvalid, "admin token missing or wrong: send it as X-Admin-Token or Authorization: Bearer")
	errNotReady        = newErr(503, codeBusy, "not ready: the server is starting (replaying its journal) or stopping")
)

// rejectInfo maps an engine reject to its answer: one table, complete
// (TestRejectTable).
type rejectInfo struct {
	status int
	code   int
	msg    string
}

var rejectTable = [...]rejectInfo{
	engine.OK:                           {200, 0, ""},
	engine.RejectInsufficientBalance:    {400, codeOrderRejected, "order rejected: available amount not enough (insufficient balance)"},
	engine.RejectInvalidPrice:           {400, codeParam, "invalid price: must be a positive multiple of tickSize"},
	engine.RejectInvalidQuantity:        {400, codeParam, "invalid quantity: must be a positive multiple of stepSize"},
	engine.RejectQuantityTooSmall:       {400, codeOrderRejected, "order rejected: quantity below minTradeAmount"},
	engine.RejectQuantityTooLarge:       {400, codeOrderRejected, "order rejected: quantity above maxTradeAmount or the market order limit"},
	engine.RejectPriceOutOfRange:        {400, codeOrderRejected, "order rejected: price outside the allowed band around the last price"},
	engine.RejectDuplicateClientOrderID: {400, codeOrderRejected, "order rejected: duplicate clientOrderId among working orders"},
	engine.RejectUnknownOrder:           {400, codeOrderNotFound, "order does not exist"},
	engine.RejectUnknownMarket:          {400, codeSymbol, "invalid symbol"},
	engine.RejectUnknownUser:            {400, codeParam, "unknown user"},
	engine.RejectUnknownCoin:            {400, codeParam, "unknown coin"},
	engine.RejectTradingDisabled:        {400, codeOrderRejected, "order rejected: trading is disabled for this symbol"},
	engine.RejectInvalidTimeInForce:     {400, codeTIF, "invalid timeInForce"},
	engine.RejectInvalidType:            {400, codeType, "invalid order type"},
	engine.RejectInvalidSide:            {400, codeSide, "invalid side"},
	engine.RejectOverflow:               {400, codeOrderRejected, "order rejected: amount out of range"},
	engine.RejectPostOnlyWouldTake:      {400, codeOrderRejected, "order rejected: post-only order would take liquidity"},
	engine.RejectInvalidAmount:          {400, codeParam, "amount must be positive"},
	engine.RejectUserExists:             {400, codeParam, "uid already exists"},
	// Only the server itself sets rules and pays rebates: never a client's doing.
	engine.RejectInvalidRules:   {500, codeUnknown, "internal error: market rules refused"},
	engine.RejectAlreadySettled: {500, codeUnknown, "internal error: rebate paid before"},
	// contracts
	engine.RejectInvalidPositionSide: {400, codeParam, "invalid positionSide: LONG or SHORT"},
	engine.RejectNoPosition:          {400, codeOrderRejected, "order rejected: no position to close"},
	engine.RejectReduceOnly:          {400, codeOrderRejected, "order rejected: close quantity exceeds the position less its working close orders"},
	engine.RejectPositionTooLarge:    {400, codeOrderRejected, "order rejected: the position would exceed maxPositionSize"},
	engine.RejectInvalidLeverage:     {400, codeParam, "invalid leverage: outside [minLeverage, maxLeverage]"},
	engine.RejectPositionExists:      {400, codeOrderRejected, "rejected: not allowed while a position or open order exists"},
	engine.RejectInvalidMarginMode:   {400, codeParam, "invalid margin mode for this operation"},
	engine.RejectInvalidTPSL:         {400, codeParam, "invalid take-profit/stop-loss: only an open takes them, a LONG's take-profit above its price and stop-loss below (a SHORT's the reverse)"},
	engine.RejectTooManyPlans:        {400, codeOrderRejected, "rejected: at most 100 plans per user and contract"},
}

func rejectOf(r engine.Reject) rejectInfo {
	if int(r) < len(rejectTable) && rejectTable[r].status != 0 {
		return rejectTable[r]
	}
	return rejectInfo{500, codeUnknown, "unexpected engine result " + r.String()}
}

func rejectErr(r engine.Reject) *apiError {
	ri := rejectOf(r)
	return &apiError{ri.status, ri.code, ri.msg}
}

// writeError answers e as {"code":..,"msg":".."}.
func writeError(ctx *fasthttp.RequestCtx, buf []byte, e *apiError) []byte {
	buf = append(buf[:0], `{"code":`...)
	buf = strconv.AppendInt(buf, int64(e.code), 10)
	buf = append(buf, `,"msg":`...)
	buf = appendStr(buf, e.msg)
	buf = append(buf, '}')
	ctx.SetStatusCode(e.status)
	ctx.Response.Header.SetContentType("application/json")
	ctx.SetBody(buf)
	return buf
}
