package edge

import (
	"math/bits"

	"github.com/weexcore/exchange/engine"
)

var posSideNames = [...]string{"", "LONG", "SHORT"}

// ctCloses reports whether a contract order closes (reduces) a position:
// SELL LONG, BUY SHORT.
func ctCloses(v *engine.OrderView) bool { return (v.Side == engine.Buy) != (v.Pos == engine.Long) }

// ctTypeCode returns the order's direction code (docs/API.md): 1/2 open
// LONG/SHORT, 3/4 close, 7/8 auto-deleveraging close, 9/10 liquidation.
func ctTypeCode(v *engine.OrderView) int64 {
	c := int64(v.Pos) // 1 LONG, 2 SHORT
	switch {
	case !ctCloses(v):
		return c
	case v.Kind == engine.KindADL:
		return c + 6
	case v.Kind == engine.KindLiquidation:
		return c + 8
	}
	return c + 2
}

// appendAvgPrice appends the average fill price of an order that executed
// q for quote (0 when nothing executed), with the contract's price
// decimals, rounded to the nearest unit of the last one.
func appendAvgPrice(dst []byte, sp *engine.MarketSpec, quote engine.Amount, q engine.Qty) []byte {
	var avg uint64
	if q > 0 && quote > 0 {
		// quote = sum(p*q) * QuotePerTickStep, in price units (10^-PriceDecimals)
		// the average is quote / (q * f) with f = QuotePerTickStep / TickUnits
		f := uint64(sp.QuotePerTickStep) / uint64(sp.TickUnits)
		hi, d := bits.Mul64(uint64(q), f)
		if hi == 0 && d > 0 {
			avg = (uint64(quote) + d/2) / d
		}
	}
	return engine.AppendFixed(dst, int64(avg), sp.PriceDecimals)
}

// appendCtOrder appends the contract order record (docs/API.md,
// "Perpetual contracts", "Orders"): every field ccxt's parseOrder reads,
// in the shape of ccxt's swap samples.
func appendCtOrder(dst []byte, k *contract, v *engine.OrderView) []byte {
	sp := k.spec
	dst = append(dst, `{"symbol":`...)
	dst = appendStr(dst, sp.V3Symbol)
	dst = append(dst, `,"orderId":`...)
	dst = appendInt(dst, v.OrderID)
	dst = append(dst, `,"clientOrderId":`...)
	dst = appendClientOrderID(dst, v)
	dst = append(dst, `,"side":"`...)
	dst = append(dst, name(sideNames[:], int(v.Side))...)
	dst = append(dst, `","positionSide":"`...)
	dst = append(dst, name(posSideNames[:], int(v.Pos))...)
	dst = append(dst, `","type":"`...)
	dst = append(dst, name(typeNames[:], int(v.Type))...)
	dst = append(dst, `","typeCode":"`...)
	dst = appendInt(dst, ctTypeCode(v))
	dst = append(dst, `","timeInForce":"`...)
	dst = append(dst, name(tifNames[:], int(v.TIF))...)
	dst = append(dst, `","price":"`...)
	dst = sp.AppendPrice(dst, v.Price)
	dst = append(dst, `","origQty":"`...)
	dst = sp.AppendQty(dst, v.OrigQty)
	dst = append(dst, `","executedQty":"`...)
	dst = sp.AppendQty(dst, v.ExecutedQty)
	dst = append(dst, `","avgPrice":"`...)
	dst = appendAvgPrice(dst, sp, v.CumQuote, v.ExecutedQty)
	dst = append(dst, `","cumQuote":"`...)
	dst = engine.AppendFixed(dst, int64(v.CumQuote), sp.QuoteScale)
	dst = append(dst, `","status":"`...)
	dst = append(dst, name(statusNames[:], int(v.Status))...)
	dst = append(dst, `","reduceOnly":`...)
	dst = appendBool(dst, ctCloses(v))
	dst = append(dst, `,"closePosition":false,"stopPrice":"0","workingType":"UNKNOWN_PRICE_TYPE","time":`...)
	dst = appendInt(dst, v.TimeMs)
	dst = append(dst, `,"updateTime":`...)
	dst = appendInt(dst, v.UpdateTimeMs)
	return append(dst, '}')
}

// appendCtPlaced appends POST /capi/v3/order's answer: the order record
// after matching, with transactTime.
func appendCtPlaced(dst []byte, k *contract, v *engine.OrderView, t int64) []byte {
	dst = appendCtOrder(dst, k, v)
	dst = append(dst[:len(dst)-1], `,"transactTime":`...)
	dst = appendInt(dst, t)
	return append(dst, '}')
}

// positionID is a position's id (closePositions' positionId): the
// user, the contract and the side, packed below 2^53 (uids below 2^41).
func positionID(uid int64, m engine.MarketID, side engine.PosSide) int64 {
	return uid<<12 | int64(m)<<1 | int64(side-1)
}
