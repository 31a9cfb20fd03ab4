package edge

import (
	"math/big"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// Positions and the money that depends on the mark price.

// parsePositionID inverts positionID (ctrade_encode.go: uid<<12 |
// market<<1 | side-1, shared with closePositions' positionId); ok is false
// when id is not one of uid's positions' ids.
func (s *Server) parsePositionID(uid, id int64) (*contract, engine.PosSide, bool) {
	if id < 0 || id>>12 != uid {
		return nil, 0, false
	}
	k := s.contractOf(engine.MarketID(id & 4095 >> 1))
	return k, engine.PosSide(id&1 + 1), k != nil
}

// unrealized is p's unrealized PnL at price mark (0 without a mark):
// mark*size - openValue for a LONG, the reverse for a SHORT.
func unrealized(sp *engine.MarketSpec, p *engine.PositionView, mark engine.Price) engine.Amount {
	if mark == 0 {
		return 0
	}
	v, ok := sp.Notional(mark, p.Size)
	if !ok {
		return 0
	}
	if p.Side == engine.Long {
		return v - p.OpenValue
	}
	return p.OpenValue - v
}

// marks maps contract market ids to their mark prices.
func marks(cs []core.ContractState) map[engine.MarketID]engine.Price {
	m := make(map[engine.MarketID]engine.Price, len(cs))
	for i := range cs {
		m[cs[i].Market] = markPrice(&cs[i])
	}
	return m
}

var marginTypeNames = [...]string{engine.Cross: "CROSSED", engine.Isolated: "ISOLATED"}

func marginTypeName(m engine.MarginMode) string {
	if int(m) < len(marginTypeNames) && marginTypeNames[m] != "" {
		return marginTypeNames[m]
	}
	return "CROSSED"
}

// entryPrice appends openValue/size as a price with the quote coin's
// scale, rounded down.
func entryPrice(b []byte, sp *engine.MarketSpec, p *engine.PositionView) []byte {
	if p.Size == 0 {
		return engine.AppendFixed(b, 0, sp.QuoteScale)
	}
	// openValue (10^-QuoteScale units) / (size * StepUnits * 10^-QtyDecimals base)
	num := new(big.Int).Mul(big.NewInt(int64(p.OpenValue)), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(sp.QtyDecimals)), nil))
	den := new(big.Int).Mul(big.NewInt(int64(p.Size)), big.NewInt(sp.StepUnits))
	return engine.AppendFixed(b, num.Quo(num, den).Int64(), sp.QuoteScale)
}

// appendPosition appends position p of contract k as WEEX's position
// record (every field ccxt's parsePosition reads), valued at mark.
func (s *Server) appendPosition(b []byte, k *contract, p *engine.PositionView, mark engine.Price) []byte {
	sp := k.spec
	co := s.margin(k)
	amt := func(key string, v engine.Amount) {
		b = append(b, `,"`...)
		b = append(b, key...)
		b = append(b, `":"`...)
		b = appendAmount(b, co, v)
		b = append(b, '"')
	}
	qty := func(key string, q engine.Qty) {
		b = append(b, `,"`...)
		b = append(b, key...)
		b = append(b, `":"`...)
		b = sp.AppendQty(b, q)
		b = append(b, '"')
	}
	b = append(b, `{"id":`...)
	b = appendInt(b, positionID(p.UID, p.Market, p.Side))
	b = append(b, `,"asset":`...)
	b = appendStr(b, co.Name)
	b = append(b, `,"symbol":`...)
	b = appendStr(b, sp.V3Symbol)
	b = append(b, `,"side":"`...)
	b = append(b, name(posSideNames[:], int(p.Side))...)
	b = append(b, `","marginType":"`...)
	b = append(b, marginTypeName(p.Mode)...)
	b = append(b, `","separatedMode":"COMBINED","separatedOpenOrderId":0,"leverage":"`...)
	b = appendInt(b, int64(p.Leverage))
	b = append(b, '"')
	qty("size", p.Size)
	amt("openValue", p.OpenValue)
	b = append(b, `,"entryPrice":"`...)
	b = entryPrice(b, sp, p)
	b = append(b, '"')
	amt("marginSize", p.Margin)
	isolated := engine.Amount(0)
	if p.Mode == engine.Isolated {
		isolated = p.Margin
	}
	amt("isolatedMargin", isolated)
	b = append(b, `,"isAutoAppendIsolatedMargin":false`...)
	qty("cumOpenSize", p.OpenQty)
	amt("cumOpenValue", p.OpenVal)
	qty("cumCloseSize", p.CloseQty)
	amt("cumCloseValue", p.CloseVal)
	amt("cumFee", p.Fees)
	amt("realizePnl", p.Realized)
	// funding received since the position opened (negative: paid), as
	// the position_funding bills show it: the position has one life
	amt("fundingFee", p.Funding)
	amt("cumFundingFee", p.Funding)
	b = append(b, `,"cumLiquidateFee":"0","createdTime":`...)
	b = appendInt(b, p.CreatedMs)
	b = append(b, `,"updatedTime":`...)
	b = appendInt(b, p.UpdatedMs)
	b = append(b, `,"markPrice":"`...)
	b = sp.AppendPrice(b, mark)
	b = append(b, '"')
	amt("unrealizePnl", unrealized(sp, p, mark))
	b = append(b, `,"liquidatePrice":"`...)
	b = sp.AppendPrice(b, p.LiqPrice)
	return append(b, `"}`...)
}
