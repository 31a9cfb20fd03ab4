package engine

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Snapshots and the state hash share one canonical encoding, documented here
// because the audit tool and the reference model reproduce it. All integers
// are little-endian and fixed width.
//
// market:
//
//	u16 id | i64 last | i64 nextOrder | i64 nextTrade | u32 n | n x order
//
// with orders listed bids first then asks, each side from the best level to
// the worst and each level in time priority; order:
//
//	i64 id | u32 user | u8 side | u8 type | u8 tif | u8 status |
//	i64 price | i64 qty | i64 filled | i64 cumQuote | i64 reserved |
//	i64 timeMs | i64 updateMs | u8 cidLen | cid bytes
//
// accounts:
//
//	u32 coins | u32 users | users x (i64 uid | u8 broker | i64 referrer |
//	coins x (i64 avail | i64 total)) | coins x i64 net | settled set |
//	futures wallets
//
// the last two each left out when empty (appendSettled, appendFutures).
//
// An engine snapshot is "ENG1" | u32 markets | markets; an accounts snapshot
// is "ACC1" | accounts. StateHash is SHA-256 over "STATE1", every market
// (from all engines) in id order, then the accounts encoding.

var le = binary.LittleEndian

const (
	engineMagic   = "ENG1"
	accountsMagic = "ACC1"
)

func appendMarket(dst []byte, e *Engine, m *market) []byte {
	dst = appendBook(dst, &e.pool, &e.lvls, m.head(), m.bids.lvls, m.asks.lvls)
	if m.ct != nil {
		dst = appendContract(dst, m.ct)
	}
	return dst
}

// head returns what m's encoding starts with.
func (m *market) head() marketHead { return marketHead{m.spec.ID, m.last, m.nextOrder, m.nextTrade} }

// marketHead is what a market's encoding starts with.
type marketHead struct {
	id                   MarketID
	last                 Price
	nextOrder, nextTrade int64
}

// appendBook appends a market's encoding: its head, then the orders of
// the levels bids and asks (each best last, as side.lvls keeps them),
// read from p and lv.
func appendBook(dst []byte, p *pool, lv *levels, hd marketHead, bids, asks []lvHandle) []byte {
	dst = le.AppendUint16(dst, uint16(hd.id))
	dst = le.AppendUint64(dst, uint64(hd.last))
	dst = le.AppendUint64(dst, uint64(hd.nextOrder))
	dst = le.AppendUint64(dst, uint64(hd.nextTrade))
	n := 0
	for _, s := range [2][]lvHandle{bids, asks} {
		for _, lh := range s {
			n += int(lv.get(lh).count)
		}
	}
	dst = le.AppendUint32(dst, uint32(n))
	dst = slices.Grow(dst, n*(orderFixedLen+8)) // most client ids are short
	for _, s := range [2][]lvHandle{bids, asks} {
		for i := len(s) - 1; i >= 0; i-- {
			for h := lv.get(s[i]).head; h != 0; {
				o := p.get(h)
				dst = appendOrder(dst, p, h, o)
				h = p.ln(h).next
			}
		}
	}
	return dst
}

// orderFixedLen is an order's encoding without its client id's bytes.
const orderFixedLen = 8 + 4 + 4 + 7*8 + 1

func appendOrder(dst []byte, p *pool, h handle, o *order) []byte {
	dst = le.AppendUint64(dst, uint64(o.id))
	dst = le.AppendUint32(dst, uint32(o.user))
	dst = append(dst, byte(o.side), byte(o.typ), byte(o.tif), byte(o.status))
	if o.pos != 0 { // a contract order
		dst = append(dst, byte(o.pos), o.lev)
	}
	for _, v := range [...]int64{int64(o.price), int64(o.qty), int64(o.filled), int64(o.cumQuote),
		int64(o.reserved), o.timeMs, o.updateMs} {
		dst = le.AppendUint64(dst, uint64(v))
	}
	cid := p.clientID(h, o) // a generated id too: the canonical form has its text
	dst = append(dst, cid.N)
	return append(dst, cid.Bytes()...)
}

// AppendSnapshot appends the state of every market e owns. It panics if
// credits are pending: snapshots are taken after Flush.
func (e *Engine) AppendSnapshot(dst []byte) []byte {
	if len(e.pending) != 0 {
		panic("engine: snapshot with pending credits")
	}
	dst = append(dst, engineMagic...)
	dst = le.AppendUint32(dst, uint32(len(e.owned)))
	for _, m := range e.owned {
		dst = appendMarket(dst, e, m)
	}
	return dst
}

// Frozen is a copy of what AppendSnapshot reads from an engine: its order
// pool, its price levels and each owned market's head and level lists.
// Freeze takes it while the engine's shard is stopped, in the time of a
// few large copies; the encoding, which chases every level's queue through
// memory (~400 ns per order: 120 ms for 300k orders), then runs
// from the copy while the shard goes on.
//
// The copy is of the whole order pool up to its high-water mark; when few
// of those slots hold working orders (a burst placed and cancelled),
// Freeze encodes the book at once instead, which then costs less.
type Frozen struct {
	pool  pool
	lvls  levels
	heads []marketHead
	books [][2][]lvHandle // bids, asks of heads[i]
	enc   []byte          // the encoding itself, when Freeze made it (else empty)
}

// Freeze copies e's book into f (reusing f's memory) and returns f; a nil
// f gets a new one. Like AppendSnapshot it panics if credits are pending.
func (e *Engine) Freeze(f *Frozen) *Frozen {
	if len(e.pending) != 0 {
		panic("engine: snapshot with pending credits")
	}
	if f == nil {
		f = &Frozen{}
	}
	f.enc = f.enc[:0]
	if e.pool.live*8 < e.pool.n || e.hasContracts() { // contract state is encoded now: it is not copied
		f.enc = e.AppendSnapshot(f.enc)
		return f
	}
	used := (e.pool.n >> chunkBits) + 1 // chunks holding handles 1..n
	used = min(used, len(e.pool.chunks))
	for len(f.pool.chunks) < used {
		f.pool.chunks = append(f.pool.chunks, new(chunk))
		f.pool.links = append(f.pool.links, new(linkChunk))
		f.pool.cids = append(f.pool.cids, nil)
	}
	for i := 0; i < used; i++ {
		*f.pool.chunks[i] = *e.pool.chunks[i]
		*f.pool.links[i] = *e.pool.links[i]
		if c := e.pool.cids[i]; c != nil {
			if f.pool.cids[i] == nil {
				f.pool.cids[i] = new(cidChunk)
			}
			*f.pool.cids[i] = *c
		}
	}
	f.lvls.l = append(f.lvls.l[:0], e.lvls.l...)
	f.heads = f.heads[:0]
	for i, m := range e.owned {
		f.heads = append(f.heads, m.head())
		if i == len(f.books) {
			f.books = append(f.books, [2][]lvHandle{})
		}
		f.books[i][0] = append(f.books[i][0][:0], m.bids.lvls...)
		f.books[i][1] = append(f.books[i][1][:0], m.asks.lvls...)
	}
	return f
}

// AppendSnapshot appends what Engine.AppendSnapshot would have appended
// at the time of the Freeze.
func (f *Frozen) AppendSnapshot(dst []byte) []byte {
	if len(f.enc) > 0 { // never empty when made: it starts with the magic
		return append(dst, f.enc...)
	}
	dst = append(dst, engineMagic...)
	dst = le.AppendUint32(dst, uint32(len(f.heads)))
	for i, hd := range f.heads {
		dst = appendBook(dst, &f.pool, &f.lvls, hd, f.books[i][0], f.books[i][1])
	}
	return dst
}

var (
	errShort      = errors.New("engine: snapshot truncated")
	errBadSettled = errors.New("engine: bad settled-rebates section in accounts snapshot")
)

// reader decodes the canonical encoding; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.err = errShort
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *reader) u8() uint8   { return r.take(1)[0] }
func (r *reader) u16() uint16 { return le.Uint16(r.take(2)) }
func (r *reader) u32() uint32 { return le.Uint32(r.take(4)) }
func (r *reader) i64() int64  { return int64(le.Uint64(r.take(8))) }

// LoadSnapshot restores markets written by AppendSnapshot into a new engine.
func (e *Engine) LoadSnapshot(b []byte) error {
	r := &reader{b: b}
	if string(r.take(4)) != engineMagic {
		return errors.New("engine: not an engine snapshot")
	}
	nm := int(r.u32())
	for i := 0; i < nm && r.err == nil; i++ {
		id := MarketID(r.u16())
		m := e.market(id)
		if m == nil {
			return fmt.Errorf("engine: snapshot has market %d, which this engine does not own", id)
		}
		m.last, m.nextOrder, m.nextTrade = Price(r.i64()), r.i64(), r.i64()
		n := int(r.u32())
		hs := make([]handle, 0, n)
		for j := 0; j < n && r.err == nil; j++ {
			h := e.pool.alloc()
			o := e.pool.get(h)
			*o = order{}
			o.id = r.i64()
			o.user = UserIdx(r.u32())
			if int(o.user) >= e.acc.NumUsers() {
				return fmt.Errorf("engine: snapshot order %d has unknown user %d", o.id, o.user)
			}
			o.uid = e.acc.UID(o.user)
			o.side, o.typ, o.tif, o.status = Side(r.u8()), OrderType(r.u8()), TIF(r.u8()), Status(r.u8())
			if m.ct != nil {
				o.pos, o.lev = PosSide(r.u8()), r.u8()
			}
			o.price, o.qty, o.filled, o.cumQuote = Price(r.i64()), Qty(r.i64()), Qty(r.i64()), Amount(r.i64())
			o.reserved, o.timeMs, o.updateMs = Amount(r.i64()), r.i64(), r.i64()
			o.market = id
			cn := int(r.u8())
			if cn > ClientIDMax {
				return errors.New("engine: snapshot client id too long")
			}
			cid := r.take(cn)
			gid, x := generatedForm(cid)
			if o.cidGen = x && gid == o.id; !o.cidGen {
				e.pool.setCID(h, cid)
			}
			if r.err == nil && (o.side != Buy && o.side != Sell || !o.status.Working() || o.price <= 0) {
				return fmt.Errorf("engine: snapshot order %d is malformed", o.id)
			}
			hs = append(hs, h)
		}
		if r.err != nil {
			break
		}
		// Book order first (levels in time priority), then user lists in
		// creation (id) order.
		for _, h := range hs {
			o := e.pool.get(h)
			sd := &m.bids
			if o.side == Sell {
				sd = &m.asks
			}
			e.link(sd, h, o)
		}
		slices.SortFunc(hs, func(a, b handle) int {
			return cmp.Compare(e.pool.get(a).id>>10, e.pool.get(b).id>>10)
		})
		for _, h := range hs {
			e.index(m, h, e.pool.get(h))
		}
		if m.ct != nil {
			if err := e.loadContract(r, m); err != nil {
				return err
			}
		}
	}
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return errors.New("engine: trailing bytes in snapshot")
	}
	if e.risk != nil {
		e.risk.rebuild = true
	}
	return nil
}

// appendAccounts appends the canonical accounts encoding, handing full
// chunks to flush (if not nil) so hashing a large table needs little memory.
func (a *Accounts) appendAccounts(dst []byte, flush func([]byte) []byte) []byte {
	n := a.NumUsers()
	dst = le.AppendUint32(dst, uint32(a.nc))
	dst = le.AppendUint32(dst, uint32(n))
	if flush == nil { // a snapshot: one buffer for all (a barrier waits for it)
		dst = slices.Grow(dst, n*(17+16*a.nc)+8*len(a.net))
	}
	for u0 := 0; u0 < n; u0 += pageSize { // a page at a time
		p := a.pages[u0>>pageBits].Load()
		for i := 0; i < min(pageSize, n-u0); i++ {
			dst = le.AppendUint64(dst, uint64(p.uid[i]))
			switch {
			case p.rate[i] != 0: // a broker with a rebate rate: 2 and the rate
				dst = le.AppendUint64(append(dst, 2), uint64(p.rate[i]))
			case p.broker[i]:
				dst = append(dst, 1)
			default:
				dst = append(dst, 0)
			}
			dst = le.AppendUint64(dst, uint64(p.referrer[i]))
			cs := p.cells[i*a.w : i*a.w+a.nc]
			for c := range cs {
				dst = le.AppendUint64(dst, uint64(cs[c].avail.Load()))
				dst = le.AppendUint64(dst, uint64(cs[c].total.Load()))
			}
			if flush != nil && len(dst) > 1<<16 {
				dst = flush(dst)
			}
		}
	}
	for c := range a.net {
		dst = le.AppendUint64(dst, uint64(a.net[c].Load()))
	}
	return a.appendFutures(a.appendSettled(dst), flush)
}

// futuresMagic starts the futures wallets' section, which follows the
// settled set and is left out when every futures cell is zero (a state
// from before contracts hashes as it did): u32 n | n x (u32 user |
// coins x (i64 avail | i64 total)), users with a non-zero futures cell only.
const futuresMagic = "FUT1"

func (a *Accounts) appendFutures(dst []byte, flush func([]byte) []byte) []byte {
	n := a.NumUsers()
	var users []UserIdx
	for u := 0; u < n; u++ {
		p := a.pages[u>>pageBits].Load()
		i := u & (pageSize - 1)
		for c := i*a.w + a.nc; c < i*a.w+a.w; c++ {
			if p.cells[c].avail.Load() != 0 || p.cells[c].total.Load() != 0 {
				users = append(users, UserIdx(u))
				break
			}
		}
	}
	if len(users) == 0 {
		return dst
	}
	dst = le.AppendUint32(append(dst, futuresMagic...), uint32(len(users)))
	for _, u := range users {
		p := a.pages[u>>pageBits].Load()
		i := int(u & (pageSize - 1))
		dst = le.AppendUint32(dst, uint32(u))
		for c := 0; c < a.nc; c++ {
			cl := &p.cells[i*a.w+a.nc+c]
			dst = le.AppendUint64(dst, uint64(cl.avail.Load()))
			dst = le.AppendUint64(dst, uint64(cl.total.Load()))
		}
		if flush != nil && len(dst) > 1<<16 {
			dst = flush(dst)
		}
	}
	return dst
}

func (a *Accounts) loadFutures(r *reader, nc int) {
	r.take(len(futuresMagic))
	n := int(r.u32())
	for i := 0; i < n && r.err == nil; i++ {
		u := UserIdx(r.u32())
		if int(u) >= a.NumUsers() {
			r.err = fmt.Errorf("engine: futures wallets of unknown user %d", u)
			return
		}
		for c := 0; c < nc; c++ {
			avail, total := Amount(r.i64()), Amount(r.i64())
			a.setBalance(u, CoinID(c)|Futures, avail, total)
		}
	}
}

// AppendSnapshot appends the accounts table (users, cells, net per coin).
// Call it only while no shard is applying (at a barrier) and after Flush.
func (a *Accounts) AppendSnapshot(dst []byte) []byte {
	return a.appendAccounts(append(dst, accountsMagic...), nil)
}

// LoadSnapshot restores a table written by AppendSnapshot into an empty one.
func (a *Accounts) LoadSnapshot(b []byte) error {
	if a.NumUsers() != 0 {
		return errors.New("engine: loading accounts into a non-empty table")
	}
	r := &reader{b: b}
	if string(r.take(4)) != accountsMagic {
		return errors.New("engine: not an accounts snapshot")
	}
	// Coins may be appended to the config between restarts, never removed.
	nc := int(r.u32())
	if nc > a.nc {
		return fmt.Errorf("engine: snapshot has %d coins, config %d", nc, a.nc)
	}
	return a.loadUsers(r, nc)
}

func (a *Accounts) loadUsers(r *reader, nc int) error {
	n := int(r.u32())
	for i := 0; i < n && r.err == nil; i++ {
		uid := r.i64()
		kind := r.u8()
		broker, rate := kind != 0, int64(0)
		if kind == 2 {
			rate = r.i64()
		}
		ref := r.i64()
		u, ok := a.addUser(uid, broker, ref, rate)
		if !ok {
			return fmt.Errorf("engine: snapshot has user %d twice", uid)
		}
		for c := 0; c < nc; c++ {
			avail, total := Amount(r.i64()), Amount(r.i64())
			a.setBalance(u, CoinID(c), avail, total)
		}
	}
	for c := 0; c < nc; c++ {
		a.net[c].Store(r.i64())
	}
	if len(r.b) >= len(settledMagic) && string(r.b[:len(settledMagic)]) == settledMagic && r.err == nil {
		a.loadSettled(r)
	}
	if len(r.b) >= len(futuresMagic) && string(r.b[:len(futuresMagic)]) == futuresMagic && r.err == nil {
		a.loadFutures(r, nc)
	}
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return errors.New("engine: trailing bytes in accounts snapshot")
	}
	return nil
}

// StateHash is a deterministic hash of the whole state: every market's book,
// orders and counters in market id order, then the accounts. It does not
// depend on how markets are spread over engines. Call it at a barrier,
// after Flush.
func StateHash(acc *Accounts, engines []*Engine) [32]byte {
	h := sha256.New()
	buf := append(make([]byte, 0, 1<<17), "STATE1"...)
	flush := func(b []byte) []byte { h.Write(b); return b[:0] }
	for id := 0; id < MaxMarkets; id++ {
		for _, e := range engines {
			if m := e.market(MarketID(id)); m != nil {
				buf = appendMarket(buf, e, m)
				if len(buf) > 1<<16 {
					buf = flush(buf)
				}
			}
		}
	}
	buf = acc.appendAccounts(buf, flush)
	flush(buf)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
