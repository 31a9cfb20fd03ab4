package engine

import (
	"cmp"
	"slices"
)

// Broker rebates. A broker (a user registered with Broker and a rebate
// rate) earns part of the fees its referred users pay. What they pay is
// tallied outside the engine (the journal's history rows); a day's
// commission for one (broker, market, product) is paid by one CmdRebate on
// the ledger shard, which carries what to pay (its amounts come from
// history, so the command records them: replay applies them as recorded):
//
//	User, UID  the broker
//	Market     the market whose fees it is paid on
//	Coin       the coin it is paid in (the market's quote coin)
//	Amount     the commission (>= 0)
//	OrderID    the UTC day (days since 1970-01-01) << 1 | product (0 spot, 1 futures)
//
// It moves Amount from the fee account's available balance to the broker's
// spot wallet (a rebate bill on each side); futures fees were paid into
// the fee account's futures wallet, so a futures commission comes out of
// that and marks the (day, broker, market,
// product) settled: a second CmdRebate for it is RejectAlreadySettled and
// pays nothing. Not enough available in the fee account (withdrawn by an
// operator) is RejectInsufficientBalance, and nothing is marked.

// SettleKey names one commission payment.
type SettleKey struct {
	Day     int32 // days since 1970-01-01, UTC
	Broker  UserIdx
	Market  MarketID
	Product uint8 // 0 spot, 1 futures
}

// RebateDay returns the CmdRebate OrderID field for day and product.
func RebateDay(day int32, product uint8) int64 { return int64(day)<<1 | int64(product&1) }

// rebate applies a CmdRebate.
func (e *Engine) rebate(c *Cmd) Reject {
	if int(c.Coin) >= len(e.acc.coins) {
		return RejectUnknownCoin
	}
	if !e.acc.Valid(c.User, c.UID) {
		return RejectUnknownUser
	}
	if c.Amount < 0 || c.OrderID < 0 || c.Market >= MaxMarkets {
		return RejectInvalidAmount
	}
	k := SettleKey{Day: int32(c.OrderID >> 1), Broker: c.User, Market: c.Market, Product: uint8(c.OrderID & 1)}
	if _, paid := e.acc.settled[k]; paid {
		return RejectAlreadySettled
	}
	if c.Amount > 0 {
		fee, from := e.feeUser(), c.Coin
		if k.Product == 1 {
			from |= Futures
		}
		if !e.reserve(c, fee, from, c.Amount) {
			return RejectInsufficientBalance
		}
		e.out.BillID = BillID(e.seq, e.nbills, e.shard)
		e.bill(fee, from, BizRebate, -c.Amount, 0, c.Market, 0, 0)
		e.bill(c.User, c.Coin, BizRebate, c.Amount, 0, c.Market, 0, 0)
		e.credit(c.User, c.Coin, c.Amount)
	}
	e.acc.settled[k] = struct{}{}
	return OK
}

// Settled reports whether k's commission was paid. Call it while the
// ledger is quiet (a barrier) or on the ledger's goroutine.
func (a *Accounts) Settled(k SettleKey) bool {
	_, ok := a.settled[k]
	return ok
}

// settledMagic starts the settled section of the accounts encoding; an
// empty set writes nothing, so a table without rebates encodes (and
// hashes) as before rebates existed.
const settledMagic = "RBT1"

func (a *Accounts) appendSettled(dst []byte) []byte {
	if len(a.settled) == 0 {
		return dst
	}
	keys := make([]SettleKey, 0, len(a.settled))
	for k := range a.settled {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y SettleKey) int {
		return cmp.Or(cmp.Compare(x.Day, y.Day), cmp.Compare(x.Broker, y.Broker), cmp.Compare(x.Market, y.Market), cmp.Compare(x.Product, y.Product))
	})
	dst = le.AppendUint32(append(dst, settledMagic...), uint32(len(keys)))
	for _, k := range keys {
		dst = le.AppendUint32(dst, uint32(k.Day))
		dst = le.AppendUint32(dst, uint32(k.Broker))
		dst = le.AppendUint16(dst, uint16(k.Market))
		dst = append(dst, k.Product)
	}
	return dst
}

func (a *Accounts) loadSettled(r *reader) {
	if string(r.take(len(settledMagic))) != settledMagic {
		r.err = errBadSettled
		return
	}
	n := int(r.u32())
	for i := 0; i < n && r.err == nil; i++ {
		k := SettleKey{Day: int32(r.u32()), Broker: UserIdx(r.u32()), Market: MarketID(r.u16()), Product: r.u8()}
		a.settled[k] = struct{}{}
	}
}
