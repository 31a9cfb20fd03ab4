package journal

import (
	"encoding/binary"
	"math/bits"

	"github.com/cockroachdb/pebble/v2"
	"github.com/weexcore/exchange/engine"
)

// History rows are written per batch, grouped, and compact (varints,
// values relative to the block's header), so that a drained batch of
// thousands of commands costs a handful of Pebble keys instead of eight per
// command (doc.go, "History blocks"). histBatch gathers one batch's events
// while the shard applies it and writes the blocks at its end.
type histBatch struct {
	orders []engine.OrderView // orders created in this batch, latest state
	later  []engine.OrderView // orders created before this batch, latest state
	seen   batchIndex         // orderID -> index in orders, or ^index in later
	bills  []engine.Bill      // scratch: the bills of the command add is at

	users    batchIndex // uid -> index in ub
	ub       []userBlock
	nub      int
	lastUser int32 // index in ub of the last block userFor returned

	mkts batchIndex // market -> index in pub
	pub  []pubBlock
	npub int

	ords map[ordGroup]int32 // (uid, market) -> index in ob
	ob   []orderBlock
	nob  int
}

type ordGroup struct {
	uid int64
	m   engine.MarketID
}

// userBlock is one user's fills and bills of a batch ("h" row).
type userBlock struct {
	uid  int64
	buf  []byte
	fill fillRing
	last []coinAfter // the last after of every coin this block billed
}

type coinAfter struct {
	coin  engine.CoinID
	after engine.Amount
}

// fillRing remembers the last (market, qty, quote) tuples of a block, so a
// bill can name the fill it belongs to with one byte.
type fillRing struct {
	t [8]fillTuple
	n int
}

type fillTuple struct {
	m     engine.MarketID
	q     engine.Qty
	quote engine.Amount
}

func (r *fillRing) push(t fillTuple) {
	r.t[r.n%len(r.t)] = t
	r.n++
}

// find returns how far back t was pushed (0: the newest), or -1.
func (r *fillRing) find(t fillTuple) int {
	for back := 0; back < len(r.t) && back < r.n; back++ {
		if r.t[(r.n-1-back)%len(r.t)] == t {
			return back
		}
	}
	return -1
}

func (r *fillRing) at(back int) (fillTuple, bool) {
	if back < 0 || back >= len(r.t) || back >= r.n {
		return fillTuple{}, false
	}
	return r.t[(r.n-1-back)%len(r.t)], true
}

// pubBlock is one market's public trades of a batch ("p" row).
type pubBlock struct {
	m     engine.MarketID
	first int64 // trade id of the first trade
	prev  int64
	buf   []byte
}

// orderBlock is the orders one user created in one market in a batch and
// that finished in it ("o" row).
type orderBlock struct {
	uid    int64
	m      engine.MarketID
	first  int64
	timeMs int64
	buf    []byte
}

const histVersion = 1

// Entry tags in a user block.
const (
	tagFill = 0
	tagBill = 1
	// bill tuple modes (bits 2-3)
	tupNone = 0 // market, qty and quote are zero
	tupOwn  = 1 // given explicitly
	tupRing = 2 // one byte: how far back in the block's fill ring
	// bits 4-5
	billAfterGiven = 1 << 4 // after given in full (else: previous after of the coin + delta + a zigzag correction)
	billHasFee     = 1 << 5
	// fill flags (bits 2-3)
	fillTaker = 1 << 2
	fillSell  = 1 << 3 // the taker sold
	// contract fills: the user's position side (bits 4-5) and, when the
	// fill realized PnL for the user, bit 6 and the PnL after the fee
	fillPosShift = 4
	fillHasPnl   = 1 << 6
)

func newHistBatch() *histBatch {
	return &histBatch{ords: map[ordGroup]int32{}}
}

func (h *histBatch) reset() {
	h.orders, h.later = h.orders[:0], h.later[:0]
	h.seen.reset()
	h.users.reset()
	h.mkts.reset()
	clear(h.ords)
	h.nub, h.npub, h.nob = 0, 0, 0
}

// add records what one command produced; seqOff is its seq minus the
// batch's first seq.
func (h *histBatch) add(c *engine.Cmd, o *engine.Out, seqOff uint64) {
	for i := range o.Updates {
		u := &o.Updates[i]
		k, ok := h.seen.get(u.OrderID)
		switch {
		case ok && k >= 0:
			h.orders[k] = *u
		case ok:
			h.later[^k] = *u
		case c.Kind == engine.CmdPlace && i == o.OrderAt-1:
			// the order this command created
			h.seen.put(u.OrderID, int32(len(h.orders)))
			h.orders = append(h.orders, *u)
		default:
			h.seen.put(u.OrderID, ^int32(len(h.later)))
			h.later = append(h.later, *u)
		}
	}
	for i := range o.Trades {
		t := &o.Trades[i]
		p := h.pubFor(t.Market, t.TradeID)
		p.buf = appendPublic(p.buf, t, p.prev)
		p.prev = t.TradeID
		h.userFor(t.MakerUID).addFill(t, false)
		h.userFor(t.TakerUID).addFill(t, true)
	}
	h.bills = o.AppendBills(h.bills[:0]) // the fills' (carried by the trades), then the others
	for i := range h.bills {
		b := &h.bills[i]
		h.userFor(b.UID).addBill(b, seqOff)
	}
}

func (h *histBatch) userFor(uid int64) *userBlock {
	if h.nub > 0 && h.ub[h.lastUser].uid == uid {
		return &h.ub[h.lastUser]
	}
	if k, ok := h.users.get(uid); ok {
		h.lastUser = k
		return &h.ub[k]
	}
	h.lastUser = int32(h.nub)
	if h.nub == len(h.ub) {
		h.ub = append(h.ub, userBlock{})
	}
	b := &h.ub[h.nub]
	h.users.put(uid, int32(h.nub))
	h.nub++
	b.uid, b.buf, b.fill, b.last = uid, append(b.buf[:0], histVersion), fillRing{}, b.last[:0]
	return b
}

func (h *histBatch) pubFor(m engine.MarketID, first int64) *pubBlock {
	if k, ok := h.mkts.get(int64(m)); ok {
		return &h.pub[k]
	}
	if h.npub == len(h.pub) {
		h.pub = append(h.pub, pubBlock{})
	}
	p := &h.pub[h.npub]
	h.mkts.put(int64(m), int32(h.npub))
	h.npub++
	p.m, p.first, p.prev, p.buf = m, first, first, append(p.buf[:0], histVersion)
	return p
}

func (b *userBlock) addFill(t *engine.Trade, taker bool) {
	tag := byte(tagFill)
	order, fee, pos, pnl := t.MakerOrder, t.MakerFee, t.MakerPos, t.MakerPnl
	if taker {
		tag |= fillTaker
		order, fee, pos, pnl = t.TakerOrder, t.TakerFee, t.TakerPos, t.TakerPnl
	}
	tag |= byte(pos) << fillPosShift
	if pnl != 0 {
		tag |= fillHasPnl
	}
	if t.TakerSide == engine.Sell {
		tag |= fillSell
	}
	d := append(b.buf, tag)
	d = binary.AppendUvarint(d, uint64(t.Market))
	d = binary.AppendVarint(d, t.TradeID)
	d = binary.AppendVarint(d, int64(t.Price))
	d = binary.AppendVarint(d, int64(t.Qty))
	d = binary.AppendVarint(d, int64(t.Quote))
	d = binary.AppendVarint(d, order)
	d = binary.AppendVarint(d, int64(fee))
	if pnl != 0 {
		d = binary.AppendVarint(d, int64(pnl))
	}
	b.buf = d
	b.fill.push(fillTuple{t.Market, t.Qty, t.Quote})
}

func (b *userBlock) addBill(x *engine.Bill, seqOff uint64) {
	tup := fillTuple{x.Market, x.FillQty, x.FillQuote}
	tag := byte(tagBill)
	back := -1
	switch {
	case tup == fillTuple{}:
		tag |= tupNone << 2
	default:
		if back = b.fill.find(tup); back >= 0 {
			tag |= tupRing << 2
		} else {
			tag |= tupOwn << 2
		}
	}
	prev, known := b.lastAfter(x.Coin)
	if !known {
		tag |= billAfterGiven
	}
	if x.Fee != 0 {
		tag |= billHasFee
	}
	d := append(b.buf, tag, byte(x.Biz))
	d = binary.AppendUvarint(d, seqOff)
	d = binary.AppendUvarint(d, x.BillID>>6&(1<<16-1))
	d = binary.AppendUvarint(d, uint64(x.Coin))
	switch {
	case back >= 0:
		d = append(d, byte(back))
	case tup != fillTuple{}:
		d = binary.AppendUvarint(d, uint64(tup.m))
		d = binary.AppendVarint(d, int64(tup.q))
		d = binary.AppendVarint(d, int64(tup.quote))
		b.fill.push(tup)
	}
	d = binary.AppendVarint(d, int64(x.Delta))
	if known {
		d = binary.AppendVarint(d, int64(x.After-(prev+x.Delta)))
	} else {
		d = binary.AppendVarint(d, int64(x.After))
	}
	if x.Fee != 0 {
		d = binary.AppendVarint(d, int64(x.Fee))
	}
	b.buf = d
	b.setAfter(x.Coin, x.After)
}

func (b *userBlock) lastAfter(c engine.CoinID) (engine.Amount, bool) {
	for _, a := range b.last {
		if a.coin == c {
			return a.after, true
		}
	}
	return 0, false
}

func (b *userBlock) setAfter(c engine.CoinID, after engine.Amount) {
	for i := range b.last {
		if b.last[i].coin == c {
			b.last[i].after = after
			return
		}
	}
	b.last = append(b.last, coinAfter{c, after})
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// appendPublic appends trade t, prev being the id of the block's previous
// trade (or of t itself for the first).
func appendPublic(d []byte, t *engine.Trade, prev int64) []byte {
	d = binary.AppendVarint(d, (t.TradeID-prev)>>10)
	d = binary.AppendVarint(d, int64(t.Price))
	d = binary.AppendVarint(d, int64(t.Qty))
	d = binary.AppendVarint(d, int64(t.Quote))
	d = append(d, byte(t.TakerSide)|byte(b2u8(t.Off))<<7) // Off: not a market trade
	d = binary.AppendVarint(d, t.MakerOrder)
	d = binary.AppendVarint(d, t.TakerOrder-t.MakerOrder)
	d = binary.AppendVarint(d, t.MakerUID)
	d = binary.AppendVarint(d, t.TakerUID-t.MakerUID)
	d = binary.AppendVarint(d, int64(t.MakerFee))
	return binary.AppendVarint(d, int64(t.TakerFee))
}

// generatedCID reports whether o has the generated client id "x-<id>"
// (the engine leaves it out of the view).
func generatedCID(o *engine.OrderView) bool { return o.ClientID.N == 0 }

// appendOrder appends o relative to a block's first order id and time.
func appendOrder(d []byte, o *engine.OrderView, first, timeMs int64) []byte {
	d = binary.AppendVarint(d, (o.OrderID-first)>>10)
	d = append(d, byte(o.Side)|byte(o.Pos)<<4|byte(o.Kind)<<6, byte(o.Type), byte(o.TIF), byte(o.Status)) // Pos, Kind: contract orders
	d = binary.AppendVarint(d, int64(o.Price))
	d = binary.AppendVarint(d, int64(o.OrigQty))
	d = binary.AppendVarint(d, int64(o.ExecutedQty))
	d = binary.AppendVarint(d, int64(o.CumQuote))
	d = binary.AppendVarint(d, o.TimeMs-timeMs)
	d = binary.AppendVarint(d, o.UpdateTimeMs-o.TimeMs)
	if generatedCID(o) {
		return append(d, 0xFF)
	}
	d = append(d, o.ClientID.N)
	return append(d, o.ClientID.Bytes()...)
}

// write adds the batch's blocks to wb, each keyed by its first order or
// trade id, or (user blocks) by the batch's time, shard and first seq. Only
// finished orders are written: the orders a user created in a market and
// that finished in the batch as one "o" block, an order created in an
// earlier batch as an "l" row, and a "c" row for a client-supplied id. An
// order still working at the end of the batch gets no row: the engine
// answers for it (doc.go).
func (h *histBatch) write(wb *pebble.Batch, shard int, firstSeq uint64, timeMs int64, k, v []byte) ([]byte, []byte) {
	// Orders created before this batch first: the "c" rows of the ones it
	// created then overwrite theirs (higher ids: the latest order with a
	// client id wins).
	for i := range h.later {
		o := &h.later[i]
		if o.Status.Working() {
			continue
		}
		k = laterKey(k[:0], o.UID, o.Market, o.OrderID)
		v = appendOrder(appendOrderHeader(v[:0], o), o, o.OrderID, o.TimeMs)
		wb.Set(k, v, nil)
		k, v = writeCID(wb, o, k, v)
	}
	for i := range h.orders {
		o := &h.orders[i]
		if o.Status.Working() {
			continue
		}
		k, v = writeCID(wb, o, k, v)
		g := ordGroup{o.UID, o.Market}
		j, ok := h.ords[g]
		if !ok {
			if h.nob == len(h.ob) {
				h.ob = append(h.ob, orderBlock{})
			}
			j = int32(h.nob)
			h.nob++
			h.ords[g] = j
			b := &h.ob[j]
			b.uid, b.m, b.first, b.timeMs = o.UID, o.Market, o.OrderID, o.TimeMs
			b.buf = appendOrderHeader(b.buf[:0], o)
		}
		b := &h.ob[j]
		b.buf = appendOrder(b.buf, o, b.first, b.timeMs)
	}
	for j := 0; j < h.nob; j++ {
		b := &h.ob[j]
		k = orderBlockKey(k[:0], b.uid, b.m, b.first)
		wb.Set(k, b.buf, nil)
	}
	for j := 0; j < h.nub; j++ {
		b := &h.ub[j]
		k = userBlockKey(k[:0], b.uid, timeMs, shard, firstSeq)
		wb.Set(k, b.buf, nil)
	}
	for j := 0; j < h.npub; j++ {
		p := &h.pub[j]
		k = publicKey(k[:0], p.m, p.first)
		v = binary.AppendVarint(append(v[:0], histVersion), timeMs)
		v = append(v, p.buf[1:]...)
		wb.Set(k, v, nil)
	}
	return k, v
}

// writeCID writes the "c" row of finished order o if its client id is its
// own (a generated one names its order).
func writeCID(wb *pebble.Batch, o *engine.OrderView, k, v []byte) ([]byte, []byte) {
	if generatedCID(o) {
		return k, v
	}
	k = clientIDKey(k[:0], o.UID, o.Market, o.ClientID.Bytes())
	v = be.AppendUint64(v[:0], s64(o.OrderID))
	wb.Set(k, v, nil)
	return k, v
}

// appendOrderHeader starts an "o" block (or "l" row) whose first order is
// o: the version, the user, and the time its orders' times are relative to.
func appendOrderHeader(d []byte, o *engine.OrderView) []byte {
	d = append(d, histVersion)
	d = binary.AppendUvarint(d, uint64(o.User))
	return binary.AppendVarint(d, o.TimeMs)
}

// reader decodes varints; a short or malformed input sets bad.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte1() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) bytes(n int) []byte {
	if n > len(r.b) {
		r.bad, r.b = true, nil
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

// order decodes one order entry of a block with the given header.
func (r *reader) order(o *engine.OrderView, uid int64, user engine.UserIdx, m engine.MarketID, first, timeMs int64) {
	*o = engine.OrderView{UID: uid, User: user, Market: m}
	o.OrderID = first + r.varint()<<10
	sp := r.byte1()
	o.Side, o.Pos, o.Kind = engine.Side(sp&15), engine.PosSide(sp>>4&3), engine.OrderKind(sp>>6)
	o.Type, o.TIF, o.Status = engine.OrderType(r.byte1()), engine.TIF(r.byte1()), engine.Status(r.byte1())
	o.Price = engine.Price(r.varint())
	o.OrigQty = engine.Qty(r.varint())
	o.ExecutedQty = engine.Qty(r.varint())
	o.CumQuote = engine.Amount(r.varint())
	o.TimeMs = timeMs + r.varint()
	o.UpdateTimeMs = o.TimeMs + r.varint()
	n := r.byte1()
	if n == 0xFF { // generated: an empty ClientID, as the engine's views have
		return
	}
	if int(n) > engine.ClientIDMax {
		r.bad = true
		return
	}
	o.ClientID.N = uint8(copy(o.ClientID.B[:], r.bytes(int(n))))
}

// orderBlockHeader decodes the header of an "o" block or "l" row.
func orderBlockHeader(v []byte) (reader, engine.UserIdx, int64, bool) {
	if len(v) == 0 || v[0] != histVersion {
		return reader{}, 0, 0, false
	}
	r := reader{b: v[1:]}
	u := engine.UserIdx(r.uvarint())
	t := r.varint()
	return r, u, t, !r.bad
}

// userBlockDecoder walks the entries of an "h" block.
type userBlockDecoder struct {
	r        reader
	uid      int64
	shard    int
	firstSeq uint64
	timeMs   int64
	fill     fillRing
	last     []coinAfter
}

func (d *userBlockDecoder) init(k, v []byte) bool {
	uid, timeMs, shard, firstSeq, ok := parseUserBlockKey(k)
	if !ok || len(v) == 0 || v[0] != histVersion {
		return false
	}
	*d = userBlockDecoder{r: reader{b: v[1:]}, uid: uid, shard: shard, firstSeq: firstSeq, timeMs: timeMs, last: d.last[:0]}
	return true
}

// next decodes the next entry into t (a fill: isFill) or b (a bill); ok is
// false at the end or on a malformed entry (d.r.bad).
func (d *userBlockDecoder) next(t *engine.Trade, b *engine.Bill) (isFill, ok bool) {
	if len(d.r.b) == 0 {
		return false, false
	}
	r := &d.r
	tag := r.byte1()
	switch tag & 3 {
	case tagFill:
		*t = engine.Trade{TimeMs: d.timeMs}
		t.Market = engine.MarketID(r.uvarint())
		t.TradeID = r.varint()
		t.Price = engine.Price(r.varint())
		t.Qty = engine.Qty(r.varint())
		t.Quote = engine.Amount(r.varint())
		order, fee := r.varint(), engine.Amount(r.varint())
		pos, pnl := engine.PosSide(tag>>fillPosShift&3), engine.Amount(0)
		if tag&fillHasPnl != 0 {
			pnl = engine.Amount(r.varint())
		}
		t.TakerSide = engine.Buy
		if tag&fillSell != 0 {
			t.TakerSide = engine.Sell
		}
		if tag&fillTaker != 0 {
			t.TakerOrder, t.TakerFee, t.TakerUID, t.TakerPos, t.TakerPnl = order, fee, d.uid, pos, pnl
		} else {
			t.MakerOrder, t.MakerFee, t.MakerUID, t.MakerPos, t.MakerPnl = order, fee, d.uid, pos, pnl
		}
		d.fill.push(fillTuple{t.Market, t.Qty, t.Quote})
		return true, !r.bad
	case tagBill:
		*b = engine.Bill{UID: d.uid, TimeMs: d.timeMs}
		b.Biz = engine.BizType(r.byte1())
		seq := d.firstSeq + r.uvarint()
		k := int(r.uvarint())
		b.BillID = engine.BillID(seq, k, d.shard)
		b.Coin = engine.CoinID(r.uvarint())
		var tup fillTuple
		switch tag >> 2 & 3 {
		case tupNone:
		case tupOwn:
			tup.m = engine.MarketID(r.uvarint())
			tup.q = engine.Qty(r.varint())
			tup.quote = engine.Amount(r.varint())
			d.fill.push(tup)
		case tupRing:
			var found bool
			if tup, found = d.fill.at(int(r.byte1())); !found {
				r.bad = true
			}
		default:
			r.bad = true
		}
		b.Market, b.FillQty, b.FillQuote = tup.m, tup.q, tup.quote
		b.Delta = engine.Amount(r.varint())
		after := engine.Amount(r.varint())
		if tag&billAfterGiven == 0 {
			prev, known := lastAfter(d.last, b.Coin)
			if !known {
				r.bad = true
			}
			after += prev + b.Delta
		}
		b.After = after
		d.last = setAfter(d.last, b.Coin, after)
		if tag&billHasFee != 0 {
			b.Fee = engine.Amount(r.varint())
		}
		return false, !r.bad
	}
	r.bad = true
	return false, false
}

func lastAfter(last []coinAfter, c engine.CoinID) (engine.Amount, bool) {
	for _, a := range last {
		if a.coin == c {
			return a.after, true
		}
	}
	return 0, false
}

func setAfter(last []coinAfter, c engine.CoinID, after engine.Amount) []coinAfter {
	for i := range last {
		if last[i].coin == c {
			last[i].after = after
			return last
		}
	}
	return append(last, coinAfter{c, after})
}

// decodePublic walks a "p" block, calling f with each trade.
func decodePublic(k, v []byte, f func(*engine.Trade) bool) bool {
	m, first, ok := parsePublicKey(k)
	if !ok || len(v) == 0 || v[0] != histVersion {
		return false
	}
	r := reader{b: v[1:]}
	timeMs := r.varint()
	id := first
	for len(r.b) > 0 && !r.bad {
		t := engine.Trade{Market: m, TimeMs: timeMs}
		id += r.varint() << 10
		t.TradeID = id
		t.Price = engine.Price(r.varint())
		t.Qty = engine.Qty(r.varint())
		t.Quote = engine.Amount(r.varint())
		sd := r.byte1()
		t.TakerSide, t.Off = engine.Side(sd&0x7F), sd>>7 == 1
		t.MakerOrder = r.varint()
		t.TakerOrder = t.MakerOrder + r.varint()
		t.MakerUID = r.varint()
		t.TakerUID = t.MakerUID + r.varint()
		t.MakerFee = engine.Amount(r.varint())
		t.TakerFee = engine.Amount(r.varint())
		if r.bad {
			break
		}
		if !f(&t) {
			return true
		}
	}
	return !r.bad
}

// batchIndex maps int64 keys to int32 values for one batch: open
// addressing with linear probing and Fibonacci hashing; reset is O(1) (a
// slot belongs to the current batch only if it carries the current epoch).
// Go maps cost a third of the history work per command here.
type batchIndex struct {
	keys  []int64
	vals  []int32
	epoch []uint32
	cur   uint32
	shift uint
	n     int
}

func (m *batchIndex) reset() {
	m.cur++
	m.n = 0
	if m.cur == 0 { // wrapped: forget every stamp
		clear(m.epoch)
		m.cur = 1
	}
}

func (m *batchIndex) slot(k int64) int { return int((uint64(k) * 0x9E3779B97F4A7C15) >> m.shift) }

func (m *batchIndex) get(k int64) (int32, bool) {
	if m.n == 0 {
		return 0, false
	}
	mask := len(m.keys) - 1
	for i := m.slot(k); m.epoch[i] == m.cur; i = (i + 1) & mask {
		if m.keys[i] == k {
			return m.vals[i], true
		}
	}
	return 0, false
}

// put adds k (not present) with value v.
func (m *batchIndex) put(k int64, v int32) {
	if (m.n+1)*2 > len(m.keys) {
		m.grow()
	}
	mask := len(m.keys) - 1
	i := m.slot(k)
	for m.epoch[i] == m.cur {
		i = (i + 1) & mask
	}
	m.keys[i], m.vals[i], m.epoch[i] = k, v, m.cur
	m.n++
}

func (m *batchIndex) grow() {
	old := *m
	size := max(64, 2*len(old.keys))
	m.keys, m.vals, m.epoch = make([]int64, size), make([]int32, size), make([]uint32, size)
	m.shift = uint(64 - bits.TrailingZeros(uint(size)))
	m.cur, m.n = 1, 0
	for i, e := range old.epoch {
		if e == old.cur && old.n > 0 {
			m.put(old.keys[i], old.vals[i])
		}
	}
}
