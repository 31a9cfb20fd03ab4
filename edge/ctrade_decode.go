package edge

import (
	"fmt"

	"github.com/weexcore/exchange/engine"
)

// Contract order bodies (docs/API.md, "Perpetual contracts", "Orders"):
// the V2 placeOrder body (snake_case, direction and execution as codes)
// and the V3 order (camelCase, side + positionSide, ccxt's createOrder).
// Both decode into a ctBody and validate into an engine.Cmd; nothing is
// submitted until the whole order is valid.

// ctField is one raw field of a body: its text (a string's content, a
// number's or a literal's text) and its JSON kind ('s', 'n' or 'b').
type ctField struct {
	raw  []byte
	kind byte
	has  bool
}

// maxCtFields bounds the fields of one contract body.
const maxCtFields = 14

// ctBody is a decoded contract order object, its fields by their index in
// the field table it was decoded with.
type ctBody struct {
	f   [maxCtFields]ctField
	bad *verr // the first unknown field or value of a wrong kind
}

// decodeRequest decodes a whole request body, one object whose keys must
// be in names: invalid JSON is errJSON, an unknown key or a value of the
// wrong kind its own error.
func (b *ctBody) decodeRequest(d *scanner, body []byte, names []string) *apiError {
	d.reset(body)
	if d.kind() != '{' {
		return errJSON
	}
	b.decode(d, names)
	if !d.end() {
		return errJSON
	}
	if b.bad != nil {
		return b.bad.e
	}
	return nil
}

// decode reads an object whose keys must be in names (null counts as
// absent). Syntax errors are left in d (d.end reports them).
func (b *ctBody) decode(d *scanner, names []string) {
	*b = ctBody{}
	if !d.objectStart() {
		return
	}
	for d.nextKey() {
		i := -1
		for j, n := range names {
			if n == string(d.key) {
				i = j
				break
			}
		}
		if i < 0 {
			if b.bad == nil {
				b.bad = ve("INVALID_PARAMETER", 400, codeParam, fmt.Sprintf("unknown parameter %q", d.key))
			}
			d.skip()
			continue
		}
		f := &b.f[i]
		switch d.kind() {
		case 'z':
			d.literal()
		case 's':
			f.raw, _ = d.str()
			f.kind, f.has = 's', true
		case 'n':
			f.raw, _ = d.number()
			f.kind, f.has = 'n', true
		case 'b':
			l, _ := d.literal()
			f.raw = litFalse
			if l == 't' {
				f.raw = litTrue
			}
			f.kind, f.has = 'b', true
		default:
			if b.bad == nil {
				b.bad = ve("INVALID_PARAMETER", 400, codeParam, fmt.Sprintf("parameter %s must be a string, not an object or array", d.key))
			}
			d.skip()
		}
	}
}

var (
	litTrue  = []byte("true")
	litFalse = []byte("false")
)

// V3 order fields: ccxt's createOrder (weex.js createContractOrderRequest)
// and the seed's batch element.
const (
	v3Symbol = iota
	v3Side
	v3PosSide
	v3Type
	v3TIF
	v3Qty
	v3Price
	v3CID
	v3Reduce
	v3TP
	v3SL
	v3TPType
	v3SLType
)

var v3Fields = []string{v3Symbol: "symbol", v3Side: "side", v3PosSide: "positionSide", v3Type: "type",
	v3TIF: "timeInForce", v3Qty: "quantity", v3Price: "price", v3CID: "newClientOrderId", v3Reduce: "reduceOnly",
	v3TP: "tpTriggerPrice", v3SL: "slTriggerPrice", v3TPType: "TpWorkingType", v3SLType: "SlWorkingType"}

// V2 placeOrder fields (the seed's 4.8).
const (
	v2Symbol = iota
	v2CID
	v2Size
	v2Type
	v2OrderType
	v2Match
	v2Price
	v2TP
	v2SL
	v2Margin
)

var v2Fields = []string{v2Symbol: "symbol", v2CID: "client_oid", v2Size: "size", v2Type: "type",
	v2OrderType: "order_type", v2Match: "match_price", v2Price: "price",
	v2TP: "presetTakeProfitPrice", v2SL: "presetStopLossPrice", v2Margin: "marginMode"}

// decErrs are the answers to a bad decimal field.
type decErrs struct{ missing, kind, syntax, prec, rng, zero *verr }

func newDecErrs(name, field, unit string) *decErrs {
	return &decErrs{
		missing: ve(name, 400, codeParamMissing, "parameter "+field+" is required"),
		kind:    ve(name, 400, codeParam, field+" must be a decimal string"),
		syntax:  ve(name, 400, codeParam, field+" must be a plain positive decimal string"),
		prec:    ve(name, 400, codePrecision, field+" is not a multiple of the contract's "+unit),
		rng:     ve(name, 400, codeParam, field+" out of range"),
		zero:    ve(name, 400, codeParam, field+" must be positive"),
	}
}

var (
	dQuantity = newDecErrs("INVALID_QUANTITY", "quantity", "stepSize")
	dSize     = newDecErrs("INVALID_QUANTITY", "size", "stepSize")
	dPrice    = newDecErrs("INVALID_PRICE", "price", "tickSize")
	dTP       = newDecErrs("INVALID_PRICE", "tpTriggerPrice", "tickSize")
	dSL       = newDecErrs("INVALID_PRICE", "slTriggerPrice", "tickSize")
	dPresetTP = newDecErrs("INVALID_PRICE", "presetTakeProfitPrice", "tickSize")
	dPresetSL = newDecErrs("INVALID_PRICE", "presetStopLossPrice", "tickSize")

	vcSymMissing  = ve("INVALID_SYMBOL", 400, codeParamMissing, "parameter symbol is required")
	vcSymV3       = ve("INVALID_SYMBOL", 400, codeSymbol, "invalid symbol: /capi/v3 takes a contract's V3 name (BTCUSDT)")
	vcSymV2       = ve("INVALID_SYMBOL", 400, codeSymbol, "invalid symbol: /capi/v2 takes a contract's V2 name (cmt_btcusdt)")
	vcSymKind     = ve("INVALID_SYMBOL", 400, codeParam, "parameter symbol must be a string")
	vcSideMissing = ve("INVALID_SIDE", 400, codeParamMissing, "parameter side is required")
	vcSide        = ve("INVALID_SIDE", 400, codeSide, "invalid side: must be BUY or SELL")
	vcPosMissing  = ve("INVALID_POSITION_SIDE", 400, codeParamMissing, "parameter positionSide is required")
	vcPos         = ve("INVALID_POSITION_SIDE", 400, codeParam, "invalid positionSide: must be LONG or SHORT")
	vcTypeMissing = ve("INVALID_TYPE", 400, codeParamMissing, "parameter type is required")
	vcType        = ve("INVALID_TYPE", 400, codeType, "invalid type: must be LIMIT or MARKET (trigger orders: POST /capi/v3/algoOrder)")
	vcTIF         = ve("INVALID_TIME_IN_FORCE", 400, codeTIF, "invalid timeInForce: must be GTC, IOC, FOK or POST_ONLY")
	vcCID         = ve("INVALID_CLIENT_ORDER_ID", 400, codeClientID, "newClientOrderId must be 1 to 40 characters of [A-Za-z0-9._:/-]")
	vcReduceKind  = ve("INVALID_PARAMETER", 400, codeParam, "reduceOnly must be true or false")
	vcReduce      = ve("INVALID_PARAMETER", 400, codeParamCombination, "reduceOnly contradicts side and positionSide: BUY LONG and SELL SHORT open, SELL LONG and BUY SHORT close (reduce-only)")
	vcWorking     = ve("INVALID_PARAMETER", 400, codeParam, "TpWorkingType and SlWorkingType must be CONTRACT_PRICE or MARK_PRICE")
	vcStrKind     = ve("INVALID_PARAMETER", 400, codeParam, "side, positionSide, type, timeInForce, newClientOrderId and the working types must be strings")

	vc2CIDMissing   = ve("INVALID_CLIENT_ORDER_ID", 400, codeParamMissing, "parameter client_oid is required")
	vc2CID          = ve("INVALID_CLIENT_ORDER_ID", 400, codeClientID, "client_oid must be 1 to 40 characters of [A-Za-z0-9._:/-]")
	vc2TypeMissing  = ve("INVALID_TYPE", 400, codeParamMissing, "parameter type is required")
	vc2Type         = ve("INVALID_TYPE", 400, codeType, "invalid type: must be 1 (open long), 2 (open short), 3 (close long) or 4 (close short); 5 to 10 appear only in query results")
	vc2OTMissing    = ve("INVALID_TIME_IN_FORCE", 400, codeParamMissing, "parameter order_type is required")
	vc2OT           = ve("INVALID_TIME_IN_FORCE", 400, codeTIF, "invalid order_type: must be 0 (normal), 1 (post only), 2 (fill or kill) or 3 (immediate or cancel)")
	vc2MatchMissing = ve("INVALID_TYPE", 400, codeParamMissing, "parameter match_price is required")
	vc2Match        = ve("INVALID_TYPE", 400, codeType, "invalid match_price: must be 0 (limit) or 1 (market)")
	vc2MarketOT     = ve("INVALID_TIME_IN_FORCE", 400, codeParamCombination, "match_price 1 (market) takes order_type 0 or 3: a market order fills what it can at once and the rest expires")
	vc2Margin       = ve("INVALID_PARAMETER", 400, codeParam, "invalid marginMode: must be 1 (cross) or 3 (isolated)")
	vc2CIDKind      = ve("INVALID_CLIENT_ORDER_ID", 400, codeParam, "client_oid must be a string")
)

// validCtCID reports whether b is a contract client order id: 1 to 40
// characters of spot's set.
func validCtCID(b []byte) bool {
	if len(b) == 0 || len(b) > engine.ClientIDMax {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '.', c == '_', c == ':', c == '/', c == '-':
		default:
			return false
		}
	}
	return true
}

// ctQty parses a quantity field (a decimal string).
func ctQty(sp *engine.MarketSpec, f *ctField, de *decErrs) (engine.Qty, *verr) {
	switch {
	case !f.has:
		return 0, de.missing
	case f.kind != 's':
		return 0, de.kind
	}
	q, err := sp.ParseQty(f.raw)
	if e := decErr(err, de.syntax, de.prec, de.rng); e != nil {
		return 0, e
	}
	if q <= 0 {
		return 0, de.zero
	}
	return q, nil
}

// ctPrice parses a price field; numbers lets a JSON number stand for the
// decimal (the seed's BigDecimal presets).
func ctPrice(sp *engine.MarketSpec, f *ctField, de *decErrs, numbers bool) (engine.Price, *verr) {
	switch {
	case !f.has:
		return 0, de.missing
	case f.kind != 's' && !(numbers && f.kind == 'n'):
		return 0, de.kind
	}
	p, err := sp.ParsePrice(f.raw)
	if e := decErr(err, de.syntax, de.prec, de.rng); e != nil {
		return 0, e
	}
	if p <= 0 {
		return 0, de.zero
	}
	return p, nil
}

// ctCode reads a small integer code given as a string ("1") or a number.
func ctCode(f *ctField) (int64, bool) {
	if f.kind != 's' && f.kind != 'n' {
		return 0, false
	}
	return parseInt(f.raw)
}

// strField returns a string field's value; bad when it is not a string.
func strField(f *ctField) (v []byte, has, bad bool) {
	if !f.has {
		return nil, false, false
	}
	return f.raw, true, f.kind != 's'
}

// buildV3 validates V3 order b and fills cmd for contract k (already
// resolved from b's symbol).
func buildV3(k *contract, b *ctBody, c *cred, cmd *engine.Cmd) *verr {
	if b.bad != nil {
		return b.bad
	}
	sp := k.spec
	*cmd = engine.Cmd{Kind: engine.CmdPlace, Market: sp.ID, User: c.user, UID: c.uid}
	for _, i := range [...]int{v3Side, v3PosSide, v3Type, v3TIF, v3CID, v3TPType, v3SLType} {
		if b.f[i].has && b.f[i].kind != 's' {
			return vcStrKind
		}
	}
	side, pos, typ := b.f[v3Side], b.f[v3PosSide], b.f[v3Type]
	switch {
	case !side.has:
		return vcSideMissing
	case string(side.raw) == "BUY":
		cmd.Side = engine.Buy
	case string(side.raw) == "SELL":
		cmd.Side = engine.Sell
	default:
		return vcSide
	}
	switch {
	case !pos.has:
		return vcPosMissing
	case string(pos.raw) == "LONG":
		cmd.Pos = engine.Long
	case string(pos.raw) == "SHORT":
		cmd.Pos = engine.Short
	default:
		return vcPos
	}
	switch {
	case !typ.has:
		return vcTypeMissing
	case string(typ.raw) == "LIMIT":
		cmd.Type = engine.Limit
	case string(typ.raw) == "MARKET":
		cmd.Type = engine.Market
	default:
		return vcType
	}
	if cmd.Type == engine.Limit {
		tif := b.f[v3TIF]
		switch {
		case !tif.has, string(tif.raw) == "GTC":
			cmd.TIF = engine.GTC
		case string(tif.raw) == "IOC":
			cmd.TIF = engine.IOC
		case string(tif.raw) == "FOK":
			cmd.TIF = engine.FOK
		case string(tif.raw) == "POST_ONLY", string(tif.raw) == "GTX":
			cmd.TIF = engine.PostOnly
		default:
			return vcTIF
		}
	} else {
		cmd.TIF = engine.IOC // as on spot: timeInForce and price are ignored on MARKET orders
	}
	q, e := ctQty(sp, &b.f[v3Qty], dQuantity)
	if e != nil {
		return e
	}
	cmd.Qty = q
	if cmd.Type == engine.Limit {
		p, e := ctPrice(sp, &b.f[v3Price], dPrice, false)
		if e != nil {
			return e
		}
		cmd.Price = p
	}
	if cid := b.f[v3CID]; cid.has {
		if !validCtCID(cid.raw) {
			return vcCID
		}
		cmd.Text.Set(cid.raw)
	}
	if r := b.f[v3Reduce]; r.has {
		var ro bool
		switch {
		case r.kind == 'b' || r.kind == 's' && (string(r.raw) == "true" || string(r.raw) == "false"):
			ro = string(r.raw) == "true"
		default:
			return vcReduceKind
		}
		closes := (cmd.Side == engine.Buy) != (cmd.Pos == engine.Long)
		if ro != closes {
			return vcReduce
		}
	}
	// Take-profit and stop-loss presets are stored with the order (the
	// engine refuses them on a close or on the wrong side of the price);
	// the plans that attach them when it fills come with the risk work.
	if b.f[v3TP].has {
		p, e := ctPrice(sp, &b.f[v3TP], dTP, false)
		if e != nil {
			return e
		}
		cmd.TP = p
	}
	if b.f[v3SL].has {
		p, e := ctPrice(sp, &b.f[v3SL], dSL, false)
		if e != nil {
			return e
		}
		cmd.SL = p
	}
	for bit, i := range [...]int{v3TPType, v3SLType} {
		f := b.f[i]
		switch {
		case !f.has || string(f.raw) == "CONTRACT_PRICE":
		case string(f.raw) == "MARK_PRICE":
			cmd.TrigMark |= 1 << bit
		default:
			return vcWorking
		}
	}
	return nil
}

// v2Dirs maps a V2 type code (1-4) to side and position side.
var v2Dirs = [5]struct {
	side engine.Side
	pos  engine.PosSide
}{1: {engine.Buy, engine.Long}, 2: {engine.Sell, engine.Short}, 3: {engine.Sell, engine.Long}, 4: {engine.Buy, engine.Short}}

// v2TIFs maps a V2 order_type code (0-3) to a time in force.
var v2TIFs = [4]engine.TIF{engine.GTC, engine.PostOnly, engine.FOK, engine.IOC}

// buildV2 validates V2 placeOrder b and fills cmd for contract k. It
// returns the requested marginMode (0: none; else engine.Cross or
// engine.Isolated), which the handler checks against the user's setting.
func buildV2(k *contract, b *ctBody, c *cred, cmd *engine.Cmd) (engine.MarginMode, *verr) {
	if b.bad != nil {
		return 0, b.bad
	}
	sp := k.spec
	*cmd = engine.Cmd{Kind: engine.CmdPlace, Market: sp.ID, User: c.user, UID: c.uid}
	cid, has, bad := strField(&b.f[v2CID])
	switch {
	case !has:
		return 0, vc2CIDMissing
	case bad:
		return 0, vc2CIDKind
	case !validCtCID(cid):
		return 0, vc2CID
	}
	cmd.Text.Set(cid)
	q, e := ctQty(sp, &b.f[v2Size], dSize)
	if e != nil {
		return 0, e
	}
	cmd.Qty = q
	if !b.f[v2Type].has {
		return 0, vc2TypeMissing
	}
	t, ok := ctCode(&b.f[v2Type])
	if !ok || t < 1 || t > 4 {
		return 0, vc2Type
	}
	cmd.Side, cmd.Pos = v2Dirs[t].side, v2Dirs[t].pos
	if !b.f[v2OrderType].has {
		return 0, vc2OTMissing
	}
	ot, ok := ctCode(&b.f[v2OrderType])
	if !ok || ot > 3 {
		return 0, vc2OT
	}
	if !b.f[v2Match].has {
		return 0, vc2MatchMissing
	}
	mp, ok := ctCode(&b.f[v2Match])
	if !ok || mp > 1 {
		return 0, vc2Match
	}
	if mp == 1 {
		if ot == 1 || ot == 2 {
			return 0, vc2MarketOT
		}
		cmd.Type, cmd.TIF = engine.Market, engine.IOC // price is ignored
	} else {
		cmd.Type, cmd.TIF = engine.Limit, v2TIFs[ot]
		p, e := ctPrice(sp, &b.f[v2Price], dPrice, false)
		if e != nil {
			return 0, e
		}
		cmd.Price = p
	}
	// presets: stored with the order (see the V3 decoder)
	if b.f[v2TP].has {
		p, e := ctPrice(sp, &b.f[v2TP], dPresetTP, true)
		if e != nil {
			return 0, e
		}
		cmd.TP = p
	}
	if b.f[v2SL].has {
		p, e := ctPrice(sp, &b.f[v2SL], dPresetSL, true)
		if e != nil {
			return 0, e
		}
		cmd.SL = p
	}
	var mode engine.MarginMode
	if f := &b.f[v2Margin]; f.has {
		switch v, ok := ctCode(f); {
		case ok && v == 1:
			mode = engine.Cross
		case ok && v == 3:
			mode = engine.Isolated
		default:
			return 0, vc2Margin
		}
	}
	return mode, nil
}
