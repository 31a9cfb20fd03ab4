package edge

import (
	"github.com/weexcore/exchange/engine"
)

var statusNames = [...]string{"", "NEW", "PARTIALLY_FILLED", "FILLED", "CANCELED", "EXPIRED"}
var tifNames = [...]string{"", "GTC", "IOC", "FOK", "POST_ONLY"}
var typeNames = [...]string{"", "LIMIT", "MARKET"}
var sideNames = [...]string{"", "BUY", "SELL"}

func name(tab []string, i int) string {
	if i >= 0 && i < len(tab) {
		return tab[i]
	}
	return "UNKNOWN"
}

// appendClientOrderID appends v's client order id as a JSON string (the
// generated "x-<orderId>" when the client gave none).
func appendClientOrderID(dst []byte, v *engine.OrderView) []byte {
	var cid [engine.ClientIDMax + 2]byte
	return appendString(dst, v.AppendClientID(cid[:0]))
}

// appendOrder appends the spot order record (docs/API.md, "Spot trading").
func appendOrder(dst []byte, m *market, v *engine.OrderView) []byte {
	sp := m.spec
	dst = append(dst, `{"symbol":`...)
	dst = appendStr(dst, sp.Symbol)
	dst = append(dst, `,"orderId":`...)
	dst = appendInt(dst, v.OrderID)
	dst = append(dst, `,"clientOrderId":`...)
	dst = appendClientOrderID(dst, v)
	dst = append(dst, `,"price":"`...)
	dst = sp.AppendPrice(dst, v.Price)
	dst = append(dst, `","origQty":"`...)
	dst = sp.AppendQty(dst, v.OrigQty)
	dst = append(dst, `","executedQty":"`...)
	dst = sp.AppendQty(dst, v.ExecutedQty)
	dst = append(dst, `","cummulativeQuoteQty":"`...)
	dst = engine.AppendFixed(dst, int64(v.CumQuote), sp.QuoteScale)
	dst = append(dst, `","status":"`...)
	dst = append(dst, name(statusNames[:], int(v.Status))...)
	dst = append(dst, `","timeInForce":"`...)
	dst = append(dst, name(tifNames[:], int(v.TIF))...)
	dst = append(dst, `","type":"`...)
	dst = append(dst, name(typeNames[:], int(v.Type))...)
	dst = append(dst, `","side":"`...)
	dst = append(dst, name(sideNames[:], int(v.Side))...)
	dst = append(dst, `","time":`...)
	dst = appendInt(dst, v.TimeMs)
	dst = append(dst, `,"updateTime":`...)
	dst = appendInt(dst, v.UpdateTimeMs)
	dst = append(dst, `,"isWorking":`...)
	if v.Status.Working() {
		dst = append(dst, "true}"...)
	} else {
		dst = append(dst, "false}"...)
	}
	return dst
}

// appendPlaced appends POST /api/v3/order's answer: the batch success shape
// plus the order's state after matching.
func appendPlaced(dst []byte, m *market, v *engine.OrderView, t int64) []byte {
	dst = appendOrder(dst, m, v)
	dst = dst[:len(dst)-1]
	dst = append(dst, `,"transactTime":`...)
	dst = appendInt(dst, t)
	return append(dst, '}')
}

func appendAmount(dst []byte, c *engine.Coin, a engine.Amount) []byte {
	return engine.AppendFixed(dst, int64(a), c.Scale)
}
