package journal

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/weexcore/exchange/engine"
)

// History reads go straight to Pebble. Every row is written in the same
// synced batch as the journal record of the command that produced it, so a
// row is visible only once its command is durable (and acknowledged).

// scan iterates [lower, upper) forwards (or backwards) and calls f with
// each value until f returns false.
func (x *impl) scan(lower, upper []byte, reverse bool, f func(k, v []byte) bool) error {
	x.dbMu.RLock()
	defer x.dbMu.RUnlock()
	if x.db == nil {
		return ErrClosed
	}
	it, err := x.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("journal: %v", err)
	}
	var valid bool
	if reverse {
		valid = it.Last()
	} else {
		valid = it.First()
	}
	for ; valid; valid = step(it, reverse) {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("journal: %v", err)
		}
		if !f(it.Key(), v) {
			break
		}
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal: %v", err)
	}
	return nil
}

func step(it *pebble.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

func (x *impl) get(key []byte, f func(v []byte)) (bool, error) {
	x.dbMu.RLock()
	defer x.dbMu.RUnlock()
	if x.db == nil {
		return false, ErrClosed
	}
	v, c, err := x.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("journal: %v", err)
	}
	f(v)
	c.Close()
	return true, nil
}

const maxTime = int64(^uint64(0) >> 1)

func (x *impl) allOrders(uid int64, m engine.MarketID, startMs, endMs int64, offset, limit int, dst []engine.OrderView) ([]engine.OrderView, error) {
	if limit <= 0 || endMs < startMs {
		return dst, nil
	}
	lower := orderKey(nil, uid, m, startMs, -1<<63)
	var upper []byte
	if endMs == maxTime {
		upper = be.AppendUint16(be.AppendUint64([]byte{pfxOrder}, s64(uid)), uint16(m)+1)
	} else {
		upper = orderKey(nil, uid, m, endMs+1, -1<<63)
	}
	var bad error
	err := x.scan(lower, upper, false, func(k, v []byte) bool {
		if offset > 0 {
			offset--
			return true
		}
		var o engine.OrderView
		if !decodeOrderView(v, &o) {
			bad = fmt.Errorf("journal: corrupt order row %x", k)
			return false
		}
		dst = append(dst, o)
		limit--
		return limit > 0
	})
	if err == nil {
		err = bad
	}
	return dst, err
}

// historyOrder finds an order in history by id, or by client id when id is
// 0 (the latest order of uid in m with that client id).
func (x *impl) historyOrder(uid int64, m engine.MarketID, id int64, cid []byte) (engine.OrderView, bool, error) {
	if id == 0 {
		if len(cid) == 0 {
			return engine.OrderView{}, false, nil
		}
		ok, err := x.get(clientIDKey(nil, uid, m, cid), func(v []byte) {
			if len(v) == 8 {
				id = int64(be.Uint64(v) ^ 1<<63)
			}
		})
		if !ok || err != nil || id == 0 {
			return engine.OrderView{}, false, err
		}
	}
	var ok2 bool
	var ref []byte
	ok, err := x.get(orderIDKey(nil, id), func(v []byte) {
		if len(v) == 18 {
			ref = append(ref, v...)
			ok2 = true
		}
	})
	if !ok || !ok2 || err != nil {
		return engine.OrderView{}, false, err
	}
	if int64(be.Uint64(ref)^1<<63) != uid || engine.MarketID(be.Uint16(ref[8:])) != m {
		return engine.OrderView{}, false, nil // another user's or market's order
	}
	var o engine.OrderView
	var good bool
	ok, err = x.get(orderKey(nil, uid, m, int64(be.Uint64(ref[10:])^1<<63), id), func(v []byte) {
		good = decodeOrderView(v, &o)
	})
	if !ok || err != nil {
		return engine.OrderView{}, false, err
	}
	if !good {
		return engine.OrderView{}, false, fmt.Errorf("journal: corrupt order row for order %d", id)
	}
	return o, true, nil
}

func (x *impl) bills(uid int64, coin int, biz engine.BizType, startMs, endMs int64, offset, limit int, dst []engine.Bill) ([]engine.Bill, error) {
	if limit <= 0 || endMs <= startMs {
		return dst, nil
	}
	lower := billKey(nil, uid, startMs, 0)
	upper := billKey(nil, uid, endMs, 0)
	var bad error
	err := x.scan(lower, upper, true, func(k, v []byte) bool {
		var b engine.Bill
		if !decodeBill(v, &b) {
			bad = fmt.Errorf("journal: corrupt bill row %x", k)
			return false
		}
		if coin != CoinAll && int(b.Coin) != coin || biz != 0 && b.Biz != biz {
			return true
		}
		if offset > 0 {
			offset--
			return true
		}
		dst = append(dst, b)
		limit--
		return limit > 0
	})
	if err == nil {
		err = bad
	}
	return dst, err
}

func (x *impl) trades(uid int64, m engine.MarketID, startMs, endMs int64, limit int, dst []engine.Trade) ([]engine.Trade, error) {
	if limit <= 0 || endMs < startMs {
		return dst, nil
	}
	lower := tradeKey(nil, uid, m, startMs, -1<<63, false)
	var upper []byte
	if endMs == maxTime {
		upper = be.AppendUint16(be.AppendUint64([]byte{pfxTrade}, s64(uid)), uint16(m)+1)
	} else {
		upper = tradeKey(nil, uid, m, endMs+1, -1<<63, false)
	}
	return x.scanTrades(lower, upper, false, limit, dst)
}

func (x *impl) marketTrades(m engine.MarketID, limit int, dst []engine.Trade) ([]engine.Trade, error) {
	if limit <= 0 {
		return dst, nil
	}
	lower := be.AppendUint16([]byte{pfxPublic}, uint16(m))
	upper := be.AppendUint16([]byte{pfxPublic}, uint16(m)+1)
	return x.scanTrades(lower, upper, true, limit, dst)
}

// scanTrades appends up to limit trade rows in [lower, upper) to dst.
func (x *impl) scanTrades(lower, upper []byte, reverse bool, limit int, dst []engine.Trade) ([]engine.Trade, error) {
	var bad error
	err := x.scan(lower, upper, reverse, func(k, v []byte) bool {
		var t engine.Trade
		if !decodeTrade(v, &t) {
			bad = fmt.Errorf("journal: corrupt trade row %x", k)
			return false
		}
		dst = append(dst, t)
		limit--
		return limit > 0
	})
	if err == nil {
		err = bad
	}
	return dst, err
}

// Export calls trade for every public trade (market id order, then trade
// id) and bill for every finance record (uid, time, bill id order). For
// the audit tool.
func (n *Node) Export(trade func(*engine.Trade) error, bill func(*engine.Bill) error) error {
	var ferr error
	if trade != nil {
		err := n.scan([]byte{pfxPublic}, []byte{pfxPublic + 1}, false, func(k, v []byte) bool {
			var t engine.Trade
			if !decodeTrade(v, &t) {
				ferr = fmt.Errorf("journal: corrupt trade row %x", k)
				return false
			}
			ferr = trade(&t)
			return ferr == nil
		})
		if err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
	if bill != nil {
		err := n.scan([]byte{pfxBill}, []byte{pfxBill + 1}, false, func(k, v []byte) bool {
			var b engine.Bill
			if !decodeBill(v, &b) {
				ferr = fmt.Errorf("journal: corrupt bill row %x", k)
				return false
			}
			ferr = bill(&b)
			return ferr == nil
		})
		if err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
