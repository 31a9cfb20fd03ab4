package edge

import (
	"fmt"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// Contract account endpoints (signed): the futures wallets, positions and
// settings of the caller only.

// userContracts reads every contract (k nil) or k with the caller's
// settings and positions, in one in-shard query.
func (s *Server) userContracts(c *cred, k *contract) ([]core.ContractState, []engine.PositionView, *apiError) {
	id := engine.AllContracts
	if k != nil {
		id = k.spec.ID
	}
	cs, pos, _, err := s.node.Contracts(c.user, c.uid, id, false, s.deadline(), nil, nil)
	if err != nil {
		return nil, nil, s.queryErr(err)
	}
	return cs, pos, nil
}

// handleContractBalance: GET /capi/v3/account/balance: one row per margin
// coin (and any other coin the futures wallets hold): balance = the
// wallet (available + frozen), without unrealized PnL; availableBalance =
// available + min(0, cross unrealized PnL at mark); frozen = order
// reservations + position margins; unrealizePnl of every position.
func handleContractBalance(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx); e != nil {
		return e
	}
	cs, pos, e := s.userContracts(c, nil)
	if e != nil {
		return e
	}
	bals, err := s.node.FuturesBalances(c.user, s.deadline(), st.bals[:0])
	st.bals = bals
	if err != nil {
		return s.queryErr(err)
	}
	mk := marks(cs)
	upnl := make([]engine.Amount, len(s.coins))
	cross := make([]engine.Amount, len(s.coins))
	for i := range pos {
		k := s.contractOf(pos[i].Market)
		u := unrealized(k.spec, &pos[i], mk[pos[i].Market])
		co := k.spec.Margin.Spot()
		upnl[co] += u
		if pos[i].Mode == engine.Cross {
			cross[co] += u
		}
	}
	isMargin := make([]bool, len(s.coins))
	for _, k := range s.contracts {
		isMargin[k.spec.Margin.Spot()] = true
	}
	b := append(st.buf, '[')
	n := 0
	for i := range bals {
		co := bals[i].Coin.Spot()
		if !isMargin[co] && bals[i].Avail == 0 && bals[i].Frozen == 0 {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		coin := &s.coins[co]
		b = append(b, `{"asset":`...)
		b = appendStr(b, coin.Name)
		b = append(b, `,"balance":"`...)
		b = appendAmount(b, coin, bals[i].Avail+bals[i].Frozen)
		b = append(b, `","availableBalance":"`...)
		b = appendAmount(b, coin, bals[i].Avail+min(0, cross[co]))
		b = append(b, `","frozen":"`...)
		b = appendAmount(b, coin, bals[i].Frozen)
		b = append(b, `","unrealizePnl":"`...)
		b = appendAmount(b, coin, upnl[co])
		b = append(b, `"}`...)
	}
	st.buf = append(b, ']')
	return nil
}

// handleCommissionRate: GET /capi/v3/account/commissionRate?symbol=.
func handleCommissionRate(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return e
	}
	k, e := s.argContract(ctx, true)
	if e != nil {
		return e
	}
	b := append(st.buf, `{"symbol":`...)
	b = appendStr(b, k.spec.V3Symbol)
	b = append(b, `,"makerCommissionRate":`...)
	b = appendStr(b, k.cfg.MakerFeeRate)
	b = append(b, `,"takerCommissionRate":`...)
	b = appendStr(b, k.cfg.TakerFeeRate)
	st.buf = append(b, '}')
	return nil
}

// appendSymbolConfig appends the caller's settings in one contract. The
// engine keeps one leverage per side: crossLeverage is the LONG one (in
// cross mode both are equal).
func appendSymbolConfig(b []byte, k *contract, cs *core.ContractState) []byte {
	b = append(b, `{"symbol":`...)
	b = appendStr(b, k.spec.V3Symbol)
	b = append(b, `,"marginType":"`...)
	b = append(b, marginTypeName(cs.Mode)...)
	b = append(b, `","separatedType":"COMBINED","crossLeverage":"`...)
	b = appendInt(b, int64(cs.Lev[0]))
	b = append(b, `","isolatedLongLeverage":"`...)
	b = appendInt(b, int64(cs.Lev[0]))
	b = append(b, `","isolatedShortLeverage":"`...)
	b = appendInt(b, int64(cs.Lev[1]))
	return append(b, `"}`...)
}

// handleSymbolConfig: GET /capi/v3/account/symbolConfig[?symbol=]: an array
// of the caller's settings, one contract or all.
func handleSymbolConfig(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return e
	}
	k, e := s.argContract(ctx, false)
	if e != nil {
		return e
	}
	cs, _, e := s.userContracts(c, k)
	if e != nil {
		return e
	}
	b := append(st.buf, '[')
	for i := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendSymbolConfig(b, s.contractOf(cs[i].Market), &cs[i])
	}
	st.buf = append(b, ']')
	return nil
}

// positions answers the position endpoints: the caller's positions in k
// (nil: every contract), by contract then LONG before SHORT.
func (s *Server) positions(ctx *fasthttp.RequestCtx, st *reqState, c *cred, k *contract) *apiError {
	cs, pos, e := s.userContracts(c, k)
	if e != nil {
		return e
	}
	mk := marks(cs)
	b := append(st.buf, '[')
	for i := range pos {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendPosition(b, s.contractOf(pos[i].Market), &pos[i], mk[pos[i].Market])
	}
	st.buf = append(b, ']')
	return nil
}

// handleAllPositions: GET /capi/v3/account/position/allPosition.
func handleAllPositions(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx); e != nil {
		return e
	}
	return s.positions(ctx, st, c, nil)
}

// handleSinglePosition: GET /capi/v3/account/position/singlePosition?symbol=.
func handleSinglePosition(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return e
	}
	k, e := s.argContract(ctx, true)
	if e != nil {
		return e
	}
	return s.positions(ctx, st, c, k)
}

// bodyContract resolves a body's required symbol field (index i).
func (s *Server) bodyContract(a *bodyArgs, i int) (*contract, *apiError) {
	if !a.has[i] {
		return nil, errSymbolMissing
	}
	k := s.contractV3(a.str[i])
	if k == nil {
		return nil, errSymbolInvalid
	}
	return k, nil
}

// parseMarginType reads CROSSED or ISOLATED.
func parseMarginType(v []byte) (engine.MarginMode, *apiError) {
	switch string(v) {
	case "CROSSED":
		return engine.Cross, nil
	case "ISOLATED":
		return engine.Isolated, nil
	}
	return 0, newErr(400, codeParam, "marginType must be CROSSED or ISOLATED")
}

// settingCmd runs one contract settings command for the caller.
func (s *Server) settingCmd(c *cred, cmd engine.Cmd) (engine.Reject, *apiError) {
	cmd.User, cmd.UID = c.user, c.uid
	r := core.AcquireRequest()
	r.Cmd = cmd
	if e := s.run(r); e != nil {
		return 0, e
	}
	rej := r.Out.Reject
	core.ReleaseRequest(r)
	return rej, nil
}

// answerSymbolConfig answers a settings change with the caller's settings
// in k after it, and the time.
func (s *Server) answerSymbolConfig(st *reqState, c *cred, k *contract) *apiError {
	cs, _, e := s.userContracts(c, k)
	if e != nil {
		return e
	}
	b := appendSymbolConfig(st.buf, k, &cs[0])
	b = append(b[:len(b)-1], `,"requestTime":`...)
	b = appendInt(b, st.nowMs)
	st.buf = append(b, '}')
	return nil
}

var leverageFields = []bodyField{{"symbol", false}, {"marginType", false}, {"crossLeverage", true},
	{"isolatedLongLeverage", true}, {"isolatedShortLeverage", true}}

// handleSetLeverage: POST /capi/v3/account/leverage {symbol, marginType?,
// crossLeverage | isolatedLongLeverage/isolatedShortLeverage}: crossLeverage
// in cross mode (both sides), the isolated ones in isolated mode (one side
// or both); marginType, when sent, must be the contract's current mode.
// Refused while a side it sets holds a position.
func handleSetLeverage(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var a bodyArgs
	if e := a.decode(&st.sc, ctx.Request.Body(), leverageFields); e != nil {
		return e
	}
	k, e := s.bodyContract(&a, 0)
	if e != nil {
		return e
	}
	var want engine.MarginMode
	if a.has[1] {
		if want, e = parseMarginType(a.str[1]); e != nil {
			return e
		}
	}
	crossSet, isoSet := a.has[2], a.has[3] || a.has[4]
	switch {
	case crossSet && isoSet:
		return newErr(400, codeParamCombination, "crossLeverage cannot be sent with isolatedLongLeverage or isolatedShortLeverage")
	case !crossSet && !isoSet:
		return newErr(400, codeParamMissing, "crossLeverage, or isolatedLongLeverage and/or isolatedShortLeverage, is required")
	}
	for i := 2; i <= 4; i++ {
		if a.has[i] && (a.num[i] < int64(k.spec.MinLev) || a.num[i] > int64(k.spec.MaxLev)) {
			return newErr(400, codeParam, fmt.Sprintf("%s must be between %d and %d", leverageFields[i].name, k.spec.MinLev, k.spec.MaxLev))
		}
	}
	cs, pos, e := s.userContracts(c, k)
	if e != nil {
		return e
	}
	mode := cs[0].Mode
	if want != 0 && want != mode {
		return newErr(400, codeParam, "marginType "+marginTypeName(want)+" is not the symbol's margin mode ("+marginTypeName(mode)+"): change it with /capi/v3/account/marginType first")
	}
	if crossSet != (mode == engine.Cross) {
		if crossSet {
			return newErr(400, codeParam, "crossLeverage: the symbol's margin mode is ISOLATED: send isolatedLongLeverage/isolatedShortLeverage")
		}
		return newErr(400, codeParam, "isolatedLongLeverage/isolatedShortLeverage: the symbol's margin mode is CROSSED: send crossLeverage")
	}
	cmd := engine.Cmd{Kind: engine.CmdLeverage, Market: k.spec.ID}
	var cmds []engine.Cmd
	switch {
	case crossSet:
		cmd.Amount = engine.Amount(a.num[2])
		cmds = append(cmds, cmd)
	case a.has[3] && a.has[4] && a.num[3] == a.num[4]:
		cmd.Amount = engine.Amount(a.num[3])
		cmds = append(cmds, cmd)
	default:
		// One side at a time: check both first, so that one is not
		// changed when the other is refused (the engine checks again).
		for i, side := range [2]engine.PosSide{engine.Long, engine.Short} {
			if !a.has[3+i] {
				continue
			}
			for j := range pos {
				if pos[j].Side == side {
					return rejectErr(engine.RejectPositionExists)
				}
			}
			cmd.Pos, cmd.Amount = side, engine.Amount(a.num[3+i])
			cmds = append(cmds, cmd)
		}
	}
	for _, cmd := range cmds {
		rej, e := s.settingCmd(c, cmd)
		if e != nil {
			return e
		}
		if rej != engine.OK {
			return rejectErr(rej)
		}
	}
	return s.answerSymbolConfig(st, c, k)
}

var marginTypeFields = []bodyField{{"symbol", false}, {"marginType", false}, {"separatedType", false}}

// handleSetMarginType: POST /capi/v3/account/marginType {symbol, marginType,
// separatedType?}: only with no position and no open order in the contract
// (setting the current mode again is a success that changes nothing).
func handleSetMarginType(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var a bodyArgs
	if e := a.decode(&st.sc, ctx.Request.Body(), marginTypeFields); e != nil {
		return e
	}
	k, e := s.bodyContract(&a, 0)
	if e != nil {
		return e
	}
	if !a.has[1] {
		return newErr(400, codeParamMissing, "parameter marginType is required")
	}
	mode, e := parseMarginType(a.str[1])
	if e != nil {
		return e
	}
	if a.has[2] && string(a.str[2]) != "COMBINED" {
		return newErr(400, codeParam, "separatedType: only COMBINED is supported")
	}
	cs, _, e := s.userContracts(c, k)
	if e != nil {
		return e
	}
	if cs[0].Mode != mode {
		rej, e := s.settingCmd(c, engine.Cmd{Kind: engine.CmdMarginMode, Market: k.spec.ID, Mode: mode})
		if e != nil {
			return e
		}
		if rej != engine.OK {
			return rejectErr(rej)
		}
	}
	return s.answerSymbolConfig(st, c, k)
}

var positionMarginFields = []bodyField{{"isolatedPositionId", true}, {"amount", false}, {"type", true}}

// handlePositionMargin: POST /capi/v3/account/positionMargin
// {isolatedPositionId, amount, type: 1 add | 2 reduce}: moves amount of the
// margin coin between the futures wallet's available balance and an
// isolated position's margin; a reduce keeps at least openValue/leverage.
func handlePositionMargin(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var a bodyArgs
	if e := a.decode(&st.sc, ctx.Request.Body(), positionMarginFields); e != nil {
		return e
	}
	for i, f := range positionMarginFields {
		if !a.has[i] {
			return newErr(400, codeParamMissing, "parameter "+f.name+" is required")
		}
	}
	if a.num[2] != 1 && a.num[2] != 2 {
		return newErr(400, codeParam, "type must be 1 (add) or 2 (reduce)")
	}
	k, side, ok := s.parsePositionID(c.uid, a.num[0])
	if !ok {
		return errNoPosition
	}
	co := s.margin(k)
	v, err := engine.ParseFixed(a.str[1], co.Scale)
	if err != nil || v <= 0 {
		return newErr(400, codeParam, fmt.Sprintf("amount must be a positive decimal with at most %d decimals", co.Scale))
	}
	if a.num[2] == 2 {
		v = -v
	}
	rej, e := s.settingCmd(c, engine.Cmd{Kind: engine.CmdPositionMargin, Market: k.spec.ID, Pos: side, Amount: engine.Amount(v)})
	if e != nil {
		return e
	}
	switch rej {
	case engine.OK:
	case engine.RejectNoPosition:
		return errNoPosition
	case engine.RejectInvalidMarginMode:
		return newErr(400, codeParam, "the position is not isolated: cross positions have no margin of their own to adjust")
	case engine.RejectInsufficientBalance:
		if v < 0 {
			return newErr(400, codeOrderRejected, "margin removable amount not enough: isolated margin must stay at least openValue/leverage")
		}
		return rejectErr(rej)
	default:
		return rejectErr(rej)
	}
	b := append(st.buf, `{"code":"200","requestTime":`...)
	b = appendInt(b, st.nowMs)
	st.buf = append(b, '}')
	return nil
}

var errNoPosition = newErr(400, codeParam, "position does not exist: isolatedPositionId is not one of your open positions")

var incomeFieldsC = []bodyField{{"symbol", false}, {"currency", false}, {"incomeType", false},
	{"startTime", true}, {"endTime", true}, {"limit", true}}

// handleContractIncome: POST /capi/v3/account/income {symbol, currency,
// incomeType, startTime, endTime, limit}: the futures wallets' finance
// records, newest first, in WEEX's contract bill shape.
func handleContractIncome(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var a bodyArgs
	if e := a.decode(&st.sc, ctx.Request.Body(), incomeFieldsC); e != nil {
		return e
	}
	var k *contract
	if a.has[0] {
		if k = s.contractV3(a.str[0]); k == nil {
			return errSymbolInvalid
		}
	}
	coin := journal.CoinAllFutures
	if a.has[1] {
		coin = -2
		for i := range s.coins {
			if s.coins[i].Name == string(a.str[1]) {
				coin = int(engine.CoinID(i) | engine.Futures)
			}
		}
		if coin == -2 {
			return newErr(400, codeParam, "unknown currency")
		}
	}
	var biz engine.BizType
	if a.has[2] {
		if biz = engine.ParseBizType(a.str[2]); biz == 0 {
			return newErr(400, codeParam, "unknown incomeType")
		}
	}
	from, to := a.intOr(3, 0), min(a.intOr(4, maxTimeMs), maxTimeMs-1)
	if from > to {
		return errStartAfterEnd
	}
	limit := a.intOr(5, 20)
	if limit < 1 || limit > 100 {
		return limitErr("limit", 1, 100)
	}
	// One more than asked, for hasNextPage; with a symbol, bills of other
	// markets are skipped, so read in pages.
	want := int(limit) + 1
	var bills []engine.Bill
	for off := 0; ; {
		const page = 512
		n := want
		if k != nil {
			n = page
		}
		got, err := s.store.Bills(c.uid, coin, journal.Biz(biz), from, to+1, off, n, st.bills[:0])
		st.bills = got
		if err != nil {
			return s.queryErr(err)
		}
		for i := range got {
			if k == nil || got[i].Market == k.spec.ID {
				bills = append(bills, got[i])
			}
		}
		off += len(got)
		if len(bills) >= want || len(got) < n {
			break
		}
	}
	more := len(bills) > int(limit)
	bills = bills[:min(len(bills), int(limit))]
	b := append(st.buf, `{"hasNextPage":`...)
	b = appendBool(b, more)
	b = append(b, `,"nextKey":null,"items":[`...)
	for i := range bills {
		bl := &bills[i]
		if i > 0 {
			b = append(b, ',')
		}
		co := &s.coins[bl.Coin.Spot()]
		b = append(b, `{"billId":"`...)
		b = strconv.AppendUint(b, bl.BillID, 10)
		b = append(b, `","asset":`...)
		b = appendStr(b, co.Name)
		b = append(b, `,"symbol":`...)
		if bk := s.contractOf(bl.Market); bk != nil && bl.Market != 0 {
			b = appendStr(b, bk.spec.V3Symbol)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"income":"`...)
		b = appendAmount(b, co, bl.Delta)
		b = append(b, `","incomeType":`...)
		b = appendStr(b, bl.Biz.String())
		b = append(b, `,"balance":"`...)
		b = appendAmount(b, co, bl.After)
		b = append(b, `","fillFee":"`...)
		b = appendAmount(b, co, bl.Fee)
		b = append(b, `","time":`...)
		b = appendInt(b, bl.TimeMs)
		b = append(b, `,"transferReason":"UNKNOWN_TRANSFER_REASON"}`...)
	}
	st.buf = append(b, "]}"...)
	return nil
}
