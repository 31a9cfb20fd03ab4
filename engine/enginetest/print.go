package enginetest

import (
	"strconv"

	"github.com/weexcore/exchange/engine"
)

// Printer formats engine events as readable text with every price,
// quantity and amount in its market's or coin's precision.
type Printer struct {
	Coins []engine.Coin
	Specs []*engine.MarketSpec // indexed by MarketID
	// Contracts are contract markets' specs (any order).
	Contracts []*engine.MarketSpec
}

var sideNames = map[engine.Side]string{engine.Buy: "BUY", engine.Sell: "SELL"}
var typeNames = map[engine.OrderType]string{engine.Limit: "LIMIT", engine.Market: "MARKET"}
var tifNames = map[engine.TIF]string{engine.GTC: "GTC", engine.IOC: "IOC", engine.FOK: "FOK", engine.PostOnly: "POST_ONLY"}
var statusNames = map[engine.Status]string{engine.StatusNew: "NEW", engine.StatusPartiallyFilled: "PARTIALLY_FILLED",
	engine.StatusFilled: "FILLED", engine.StatusCanceled: "CANCELED", engine.StatusExpired: "EXPIRED"}

func name[K comparable](m map[K]string, k K) string {
	if s, ok := m[k]; ok {
		return s
	}
	return "?"
}

// Amount appends x in coin c's precision.
func (p *Printer) Amount(b []byte, c engine.CoinID, x engine.Amount) []byte {
	if int(c.Spot()) >= len(p.Coins) {
		return strconv.AppendInt(append(b, "units:"...), int64(x), 10)
	}
	return engine.AppendFixed(b, int64(x), p.Coins[c.Spot()].Scale)
}

func (p *Printer) spec(m engine.MarketID) *engine.MarketSpec {
	if int(m) < len(p.Specs) {
		return p.Specs[m]
	}
	for _, s := range p.Contracts {
		if s.ID == m {
			return s
		}
	}
	return nil
}

// View appends one order view.
func (p *Printer) View(b []byte, v *engine.OrderView) []byte {
	s := p.spec(v.Market)
	b = strconv.AppendInt(b, v.OrderID, 10)
	b = append(b, " uid="...)
	b = strconv.AppendInt(b, v.UID, 10)
	b = append(b, ' ')
	b = append(b, name(sideNames, v.Side)...)
	b = append(b, ' ')
	b = append(b, name(typeNames, v.Type)...)
	b = append(b, ' ')
	b = append(b, name(tifNames, v.TIF)...)
	b = append(b, ' ')
	b = append(b, name(statusNames, v.Status)...)
	switch v.Kind {
	case engine.KindLiquidation:
		b = append(b, " LIQUIDATION"...)
	case engine.KindADL:
		b = append(b, " ADL"...)
	}
	b = append(b, " price="...)
	b = s.AppendPrice(b, v.Price)
	b = append(b, " qty="...)
	b = s.AppendQty(b, v.OrigQty)
	b = append(b, " exec="...)
	b = s.AppendQty(b, v.ExecutedQty)
	b = append(b, " quote="...)
	b = p.Amount(b, s.Quote, v.CumQuote)
	b = append(b, " t="...)
	b = strconv.AppendInt(b, v.TimeMs, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, v.UpdateTimeMs, 10)
	b = append(b, " cid="...)
	return v.AppendClientID(b)
}

// Out appends every event of out, one per line.
func (p *Printer) Out(b []byte, out *engine.Out) []byte {
	if out.Reject != engine.OK {
		b = append(b, "rejected "...)
		b = append(b, out.Reject.String()...)
	} else {
		b = append(b, "accepted"...)
		if v := out.Order(); v != nil {
			b = append(b, " order="...)
			b = strconv.AppendInt(b, v.OrderID, 10)
		}
		if out.BillID != 0 {
			b = append(b, " bill="...)
			b = BillName(b, out.BillID)
		}
	}
	b = append(b, '\n')
	for i := range out.Updates {
		b = append(b, "  update "...)
		b = p.View(b, &out.Updates[i])
		b = append(b, '\n')
	}
	for i := range out.Trades {
		b = p.Trade(append(b, "  trade "...), &out.Trades[i])
		b = append(b, '\n')
	}
	for _, bill := range out.AppendBills(nil) {
		b = p.Bill(append(b, "  bill "...), &bill)
		b = append(b, '\n')
	}
	return b
}

// BillName appends a bill id as seq.k.shard.
func BillName(b []byte, id uint64) []byte {
	b = strconv.AppendUint(b, id>>22, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, id>>6&(1<<16-1), 10)
	b = append(b, '.')
	return strconv.AppendUint(b, id&63, 10)
}

// Trade appends one trade.
func (p *Printer) Trade(b []byte, t *engine.Trade) []byte {
	s := p.spec(t.Market)
	b = strconv.AppendInt(b, t.TradeID, 10)
	b = append(b, ' ')
	b = append(b, s.Symbol...)
	b = append(b, " price="...)
	b = s.AppendPrice(b, t.Price)
	b = append(b, " qty="...)
	b = s.AppendQty(b, t.Qty)
	b = append(b, " quote="...)
	b = p.Amount(b, s.Quote, t.Quote)
	b = append(b, " taker="...)
	b = append(b, name(sideNames, t.TakerSide)...)
	b = append(b, " maker="...)
	b = strconv.AppendInt(b, t.MakerOrder, 10)
	b = append(b, "/uid"...)
	b = strconv.AppendInt(b, t.MakerUID, 10)
	b = append(b, " taker="...)
	b = strconv.AppendInt(b, t.TakerOrder, 10)
	b = append(b, "/uid"...)
	b = strconv.AppendInt(b, t.TakerUID, 10)
	// each side's fee is in the coin it received
	takerCoin, makerCoin := s.Base, s.Quote
	if t.TakerSide == engine.Sell {
		takerCoin, makerCoin = s.Quote, s.Base
	}
	if t.TakerPos != 0 { // a contract fill: fees and PnL in the margin coin
		b = append(b, " takerPos="...)
		b = strconv.AppendInt(b, int64(t.TakerPos), 10)
		b = append(b, " makerPos="...)
		b = strconv.AppendInt(b, int64(t.MakerPos), 10)
		takerCoin, makerCoin = s.Margin, s.Margin
		b = append(b, " takerPnl="...)
		b = p.Amount(b, s.Margin, t.TakerPnl)
		b = append(b, " makerPnl="...)
		b = p.Amount(b, s.Margin, t.MakerPnl)
	}
	b = append(b, " makerFee="...)
	b = p.Amount(b, makerCoin, t.MakerFee)
	b = append(b, p.Coins[makerCoin.Spot()].Name...)
	b = append(b, " takerFee="...)
	b = p.Amount(b, takerCoin, t.TakerFee)
	return append(b, p.Coins[takerCoin.Spot()].Name...)
}

// Bill appends one finance record.
func (p *Printer) Bill(b []byte, bl *engine.Bill) []byte {
	b = BillName(b, bl.BillID)
	b = append(b, " uid="...)
	b = strconv.AppendInt(b, bl.UID, 10)
	b = append(b, ' ')
	if int(bl.Coin.Spot()) < len(p.Coins) {
		b = append(b, p.Coins[bl.Coin.Spot()].Name...)
		if bl.Coin.IsFutures() {
			b = append(b, "(futures)"...)
		}
	}
	b = append(b, ' ')
	b = append(b, bl.Biz.String()...)
	b = append(b, " delta="...)
	b = p.Amount(b, bl.Coin, bl.Delta)
	b = append(b, " after="...)
	b = p.Amount(b, bl.Coin, bl.After)
	if bl.Fee != 0 {
		b = append(b, " fee="...)
		b = p.Amount(b, bl.Coin, bl.Fee)
	}
	switch bl.Biz {
	case engine.BizTradeIn, engine.BizTradeOut, engine.BizFee, engine.BizFillFee,
		engine.BizOpenLong, engine.BizOpenShort, engine.BizCloseLong, engine.BizCloseShort:
		if s := p.spec(bl.Market); s != nil {
			b = append(b, " fill="...)
			b = s.AppendQty(b, bl.FillQty)
			b = append(b, '/')
			b = p.Amount(b, s.Quote, bl.FillQuote)
			b = append(b, ' ')
			b = append(b, s.Symbol...)
		}
	}
	return b
}
