package journal

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
	"github.com/weexcore/exchange/engine"
)

// History reads go straight to Pebble. Every row is written in the same
// synced batch as the journal record of the command that produced it, so a
// row is visible only once its command is durable (and acknowledged).

// scan iterates [lower, upper) forwards (or backwards) and calls f with
// each value until f returns false.
func (s *Store) scan(lower, upper []byte, reverse bool, f func(k, v []byte) bool) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return wrapPebble("read", err)
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
			return wrapPebble("read", err)
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
		return wrapPebble("read", err)
	}
	return nil
}

func step(it *pebble.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

func (s *Store) get(key []byte, f func(v []byte)) (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return false, ErrClosed
	}
	v, c, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, wrapPebble("read", err)
	}
	f(v)
	c.Close()
	return true, nil
}

const maxTime = int64(^uint64(0) >> 1)

// viewIter runs f with a read lock held and a fresh iterator over
// [lower, upper); f may also read s.db directly.
func (s *Store) viewIter(lower, upper []byte, f func(it *pebble.Iterator) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return wrapPebble("read", err)
	}
	err = f(it)
	if ierr := it.Error(); err == nil && ierr != nil {
		err = wrapPebble("read", ierr)
	}
	if cerr := it.Close(); err == nil && cerr != nil {
		err = wrapPebble("read", cerr)
	}
	return err
}

// orderBlockEach decodes the "o" block or "l" row k/v, calling f with each
// order in id order until f returns false; it reports the block's time.
func orderBlockEach(k, v []byte, f func(o *engine.OrderView) bool) (int64, error) {
	first, ok := orderBlockFirst(k)
	r, u, t, ok2 := orderBlockHeader(v)
	if !ok || !ok2 {
		return 0, fmt.Errorf("%w: order block %x", ErrCorrupt, k)
	}
	uid := int64(be.Uint64(k[1:]) ^ 1<<63)
	m := engine.MarketID(be.Uint16(k[9:]))
	for len(r.b) > 0 {
		var o engine.OrderView
		r.order(&o, uid, u, m, first, t)
		if r.bad {
			return 0, fmt.Errorf("%w: order block %x", ErrCorrupt, k)
		}
		if !f(&o) {
			break
		}
	}
	return t, nil
}

// FinishedOrders calls f with uid's finished orders in m in id order, from
// the first created at or after startMs to the last created at or before
// endMs (and maybe a few before and after), until f returns false. They
// are in two key ranges: "o" blocks of the orders a batch created and
// finished, and "l" rows of orders finished in a later batch, whose ids
// fall between those of the blocks (within the range of the batch that
// created them). Every order of a key has an id at or above the key's, so
// an order read is passed on once a key above its id is reached.
func (s *Store) FinishedOrders(uid int64, m engine.MarketID, startMs, endMs int64, f func(o *engine.OrderView) bool) (err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	pfx := [2]byte{pfxOrder, pfxLater}
	var its [2]*pebble.Iterator
	var valid [2]bool
	for i := range its {
		lower := userOrderKey(nil, pfx[i], uid, m, -1<<63)
		upper := be.AppendUint16(be.AppendUint64([]byte{pfx[i]}, s64(uid)), uint16(m)+1)
		if its[i], err = s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper}); err != nil {
			err = wrapPebble("read", err)
			break
		}
		defer func(it *pebble.Iterator) {
			if ierr := it.Error(); err == nil && ierr != nil {
				err = wrapPebble("read", ierr)
			}
			if cerr := it.Close(); err == nil && cerr != nil {
				err = wrapPebble("read", cerr)
			}
		}(its[i])
		if valid[i], err = seekTime(its[i], pfx[i], uid, m, startMs); err != nil {
			break
		}
	}
	var pend, blk []engine.OrderView // read, not passed on yet; the key's orders
	pass := func(below int64) bool { // passes on the orders in pend with ids below below
		n := 0
		for n < len(pend) && pend[n].OrderID < below {
			if !f(&pend[n]) {
				return false
			}
			n++
		}
		pend = pend[:copy(pend, pend[n:])]
		return true
	}
	for err == nil {
		i := -1 // the iterator at the lower id (ids compare as the keys' last 8 bytes)
		for j := range its {
			if valid[j] && (i < 0 || string(its[j].Key()[11:]) < string(its[i].Key()[11:])) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		blk = blk[:0]
		var t int64
		if t, err = orderBlockEach(its[i].Key(), its[i].Value(), func(o *engine.OrderView) bool {
			blk = append(blk, *o)
			return true
		}); err != nil || t > endMs {
			break
		}
		if len(blk) == 0 {
			return fmt.Errorf("%w: order block %x: no orders", ErrCorrupt, its[i].Key())
		}
		if !pass(blk[0].OrderID) {
			return err
		}
		pend = append(pend, blk...)
		engine.SortOrders(pend) // creation time, then id: id order here
		valid[i] = its[i].Next()
	}
	if err == nil {
		pass(math.MaxInt64)
	}
	return err
}

// seekTime positions it, over one of uid's order key ranges in m, at the
// first key created at or after startMs: the smallest id x such that the
// first key at or after x was (or there is none), found by binary search.
func seekTime(it *pebble.Iterator, pfx byte, uid int64, m engine.MarketID, startMs int64) (bool, error) {
	var k [19]byte
	lo, hi := int64(0), int64(1)<<62
	for lo < hi {
		mid := lo + (hi-lo)/2
		if !it.SeekGE(userOrderKey(k[:0], pfx, uid, m, mid)) {
			hi = mid
			continue
		}
		_, _, t, ok := orderBlockHeader(it.Value())
		if !ok {
			return false, fmt.Errorf("%w: order block %x", ErrCorrupt, it.Key())
		}
		if t >= startMs {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return it.SeekGE(userOrderKey(k[:0], pfx, uid, m, lo)), nil
}

// Order finds a finished order in history by id, or by client id when id is
// 0 (the latest order of uid in m with that client id).
func (s *Store) Order(uid int64, m engine.MarketID, id int64, cid []byte) (engine.OrderView, bool, error) {
	if id != 0 {
		return s.orderByID(uid, m, id)
	}
	if len(cid) == 0 {
		return engine.OrderView{}, false, nil
	}
	// A finished order's client-supplied id has a "c" row; a generated one
	// ("x-<id>") names its order. Both can exist (a client may send a generated-looking id):
	// the later order wins.
	var best engine.OrderView
	var found bool
	try := func(id int64) error {
		o, ok, err := s.orderByID(uid, m, id)
		var buf [engine.ClientIDMax + 2]byte
		if err != nil || !ok || string(o.AppendClientID(buf[:0])) != string(cid) {
			return err
		}
		if !found || o.OrderID > best.OrderID {
			best, found = o, true
		}
		return nil
	}
	var cidOrder int64
	if _, err := s.get(clientIDKey(nil, uid, m, cid), func(v []byte) {
		if len(v) == 8 {
			cidOrder = int64(be.Uint64(v) ^ 1<<63)
		}
	}); err != nil {
		return engine.OrderView{}, false, err
	}
	if cidOrder != 0 {
		if err := try(cidOrder); err != nil {
			return engine.OrderView{}, false, err
		}
	}
	if len(cid) > 2 && cid[0] == 'x' && cid[1] == '-' {
		if n, err := strconv.ParseInt(string(cid[2:]), 10, 64); err == nil && n > 0 {
			if err := try(n); err != nil {
				return engine.OrderView{}, false, err
			}
		}
	}
	return best, found, nil
}

// orderByID reads uid's finished order id in m: its "l" row if it has
// one, else its entry in the "o" block of the batch that created it (the
// last block whose first id is <= id).
func (s *Store) orderByID(uid int64, m engine.MarketID, id int64) (engine.OrderView, bool, error) {
	var o engine.OrderView
	var found bool
	find := func(k, v []byte) error {
		_, err := orderBlockEach(k, v, func(e *engine.OrderView) bool {
			if e.OrderID == id {
				o, found = *e, true
			}
			return e.OrderID < id
		})
		return err
	}
	// A Get for the "l" row first: no iterator unless there is none.
	k := laterKey(nil, uid, m, id)
	var ferr error
	row, err := s.get(k, func(v []byte) { ferr = find(k, v) })
	if err == nil && !row {
		err = s.viewIter(orderBlockKey(nil, uid, m, -1<<63), orderBlockKey(nil, uid, m, id+1), func(it *pebble.Iterator) error {
			if !it.Last() {
				return nil
			}
			return find(it.Key(), it.Value())
		})
	}
	if err == nil {
		err = ferr
	}
	if err != nil || !found {
		return engine.OrderView{}, false, err
	}
	return o, true, nil
}

// eachUserBlock walks uid's "h" blocks with time in [startMs, endMs),
// forwards or backwards; within a block entries go forwards. f returns
// false to stop.
func (s *Store) eachUserBlock(uid, startMs, endMs int64, reverse bool, f func(d *userBlockDecoder) (bool, error)) error {
	lower, upper := userBlockRange(uid, startMs, endMs)
	var d userBlockDecoder
	var ferr error
	err := s.scan(lower, upper, reverse, func(k, v []byte) bool {
		if !d.init(k, v) {
			ferr = fmt.Errorf("%w: history block %x", ErrCorrupt, k)
			return false
		}
		var more bool
		more, ferr = f(&d)
		return more && ferr == nil
	})
	if err == nil {
		err = ferr
	}
	return err
}

var errCorruptBlock = fmt.Errorf("%w: history block", ErrCorrupt)

// CoinAll asks Bills for every coin's spot wallet, CoinAllFutures for
// every futures wallet; a single wallet is asked for by its CoinID.
const (
	CoinAll        = -1
	CoinAllFutures = -3
)

func coinMatch(want int, c engine.CoinID) bool {
	switch want {
	case CoinAll:
		return !c.IsFutures()
	case CoinAllFutures:
		return c.IsFutures()
	}
	return int(c) == want
}

// BizSet is a set of bill types (Biz); 0 is every type.
type BizSet uint32

// Biz returns the set of the types bs; type 0 adds nothing, so Biz(0) is
// 0, every type.
func Biz(bs ...engine.BizType) BizSet {
	var set BizSet
	for _, b := range bs {
		if b != 0 {
			set |= 1 << (b & 31)
		}
	}
	return set
}

// Bills returns uid's finance records with time in [startMs, endMs), newest
// first, filtered by coin (CoinAll for any) and biz (0 for any), skipping
// offset and returning at most limit. History does not keep Bill.User (it
// is 0); UID identifies the user.
func (s *Store) Bills(uid int64, coin int, biz BizSet, startMs, endMs int64, offset, limit int, dst []engine.Bill) ([]engine.Bill, error) {
	if limit <= 0 || endMs <= startMs {
		return dst, nil
	}
	var block []engine.Bill
	err := s.eachUserBlock(uid, startMs, endMs, true, func(d *userBlockDecoder) (bool, error) {
		block = block[:0]
		var t engine.Trade
		var b engine.Bill
		for {
			fill, ok := d.next(&t, &b)
			if !ok {
				break
			}
			if !fill {
				block = append(block, b)
			}
		}
		if d.r.bad {
			return false, errCorruptBlock
		}
		for i := len(block) - 1; i >= 0; i-- { // newest first
			b := &block[i]
			if !coinMatch(coin, b.Coin) || biz != 0 && biz&Biz(b.Biz) == 0 {
				continue
			}
			if offset > 0 {
				offset--
				continue
			}
			dst = append(dst, *b)
			if limit--; limit == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	return dst, err
}

// Trades returns uid's fills in m; a user's trade carries only that user's
// side (its order, uid and fee); the other side's are zero.
func (s *Store) Trades(uid int64, m engine.MarketID, startMs, endMs int64, limit int, dst []engine.Trade) ([]engine.Trade, error) {
	if limit <= 0 || endMs < startMs {
		return dst, nil
	}
	if endMs < maxTime {
		endMs++
	}
	err := s.eachUserBlock(uid, startMs, endMs, false, func(d *userBlockDecoder) (bool, error) {
		var t engine.Trade
		var b engine.Bill
		for {
			fill, ok := d.next(&t, &b)
			if !ok {
				break
			}
			if fill && t.Market == m {
				dst = append(dst, t)
				if limit--; limit == 0 {
					return false, nil
				}
			}
		}
		if d.r.bad {
			return false, errCorruptBlock
		}
		return true, nil
	})
	return dst, err
}

// MarketTrades returns m's most recent public trades, newest first.
func (s *Store) MarketTrades(m engine.MarketID, limit int, dst []engine.Trade) ([]engine.Trade, error) {
	if limit <= 0 {
		return dst, nil
	}
	lower := be.AppendUint16([]byte{pfxPublic}, uint16(m))
	upper := be.AppendUint16([]byte{pfxPublic}, uint16(m)+1)
	var block []engine.Trade
	var bad error
	err := s.scan(lower, upper, true, func(k, v []byte) bool {
		block = block[:0]
		if !decodePublic(k, v, func(t *engine.Trade) bool { block = append(block, *t); return true }) {
			bad = fmt.Errorf("%w: trade block %x", ErrCorrupt, k)
			return false
		}
		for i := len(block) - 1; i >= 0; i-- { // newest first
			if block[i].Off { // a liquidation's takeover or ADL fill
				continue
			}
			dst = append(dst, block[i])
			if limit--; limit == 0 {
				return false
			}
		}
		return true
	})
	if err == nil {
		err = bad
	}
	return dst, err
}

// Export calls trade for every public trade (market id order, then trade
// id) and bill for every finance record (uid, then time, shard and seq
// order). For the audit tool.
func (s *Store) Export(trade func(*engine.Trade) error, bill func(*engine.Bill) error) error {
	var ferr error
	if trade != nil {
		err := s.scan([]byte{pfxPublic}, []byte{pfxPublic + 1}, false, func(k, v []byte) bool {
			if !decodePublic(k, v, func(t *engine.Trade) bool { ferr = trade(t); return ferr == nil }) && ferr == nil {
				ferr = fmt.Errorf("%w: trade block %x", ErrCorrupt, k)
			}
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
		var d userBlockDecoder
		err := s.scan([]byte{pfxHistory}, []byte{pfxHistory + 1}, false, func(k, v []byte) bool {
			if !d.init(k, v) {
				ferr = fmt.Errorf("%w: history block %x", ErrCorrupt, k)
				return false
			}
			var t engine.Trade
			var b engine.Bill
			for {
				fill, ok := d.next(&t, &b)
				if !ok {
					break
				}
				if !fill {
					if ferr = bill(&b); ferr != nil {
						return false
					}
				}
			}
			if d.r.bad {
				ferr = fmt.Errorf("%w: history block %x", ErrCorrupt, k)
			}
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
