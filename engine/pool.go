package engine

// handle is an index into the order pool; 0 is no order.
type handle int32

// order is a working order. Orders live in a pool of fixed chunks (so growth
// never copies them) and link into their price level's queue and their
// owner's list in the market (both through links, kept apart: see links),
// and a client-id hash chain (cnext).
type order struct {
	id       int64
	price    Price
	qty      Qty    // original
	filled   Qty    // executed
	cumQuote Amount // executed notional
	reserved Amount // still frozen for this order
	timeMs   int64
	updateMs int64
	uid      int64 // the user's external uid, for views

	cnext  handle
	lvl    lvHandle // the order's price level
	user   UserIdx
	market MarketID
	side   Side
	typ    OrderType
	tif    TIF
	status Status
	cidGen bool    // the client id is the generated "x-<id>": not stored, and not in the cid index
	pos    PosSide // contract orders: the position side (0 on spot)
	lev    uint8   // contract orders: the leverage an open reserved at
	kind   OrderKind
}

// links are an order's places in its price level's queue (prev/next) and
// in its owner's list in the market (uprev/unext). They live in arrays of
// their own beside the orders: taking an order out of the middle of both
// queues, as a cancel does, writes the links of four other orders, and at
// 16 bytes each those stay in cache where the orders (96 bytes) would not
// (BenchmarkMixed's 10k-order book: its links take 160 KiB).
type links struct {
	prev, next   handle
	uprev, unext handle
}

const chunkBits = 12

type chunk [1 << chunkBits]order

type linkChunk [1 << chunkBits]links

// An order's client id (when it has its own, !cidGen) is kept beside it,
// like its links: at 41 bytes it would make every order two fifths larger
// (96 bytes without, 136 with) and most reads of an order (a fill, a
// cancel by id) never look at it. A chunk's array is made when the first
// of its orders has its own client id.
type cidChunk [1 << chunkBits]ClientID

type pool struct {
	chunks []*chunk
	links  []*linkChunk // links[i] holds the links of chunks[i]'s orders
	cids   []*cidChunk  // cids[i] holds the client ids of chunks[i]'s orders (nil: none yet)
	free   []handle
	n      int // handles handed out so far (high-water mark), excluding 0
	live   int
}

func (p *pool) get(h handle) *order {
	return &p.chunks[h>>chunkBits][h&(1<<chunkBits-1)]
}

// cid returns the client id of order h, which has its own (!cidGen).
func (p *pool) cid(h handle) *ClientID {
	return &p.cids[h>>chunkBits][h&(1<<chunkBits-1)]
}

// setCID stores c as order h's own client id.
func (p *pool) setCID(h handle, c []byte) {
	i := h >> chunkBits
	if p.cids[i] == nil {
		p.cids[i] = new(cidChunk)
	}
	p.cids[i][h&(1<<chunkBits-1)].Set(c)
}

// clientID returns the client id of o (handle h), the generated one
// included (for the snapshot and the invariants; views leave a generated
// id out).
func (p *pool) clientID(h handle, o *order) ClientID {
	if o.cidGen {
		return generatedClientID(o.id)
	}
	return *p.cid(h)
}

// ln returns the links of order h.
func (p *pool) ln(h handle) *links {
	return &p.links[h>>chunkBits][h&(1<<chunkBits-1)]
}

func (p *pool) alloc() handle {
	p.live++
	if n := len(p.free); n > 0 {
		h := p.free[n-1]
		p.free = p.free[:n-1]
		return h
	}
	p.n++
	h := handle(p.n)
	if int(h>>chunkBits) == len(p.chunks) {
		p.chunks = append(p.chunks, new(chunk))
		p.links = append(p.links, new(linkChunk))
		p.cids = append(p.cids, nil)
	}
	return h
}

// release frees h. The order is not cleared: alloc's callers overwrite it.
func (p *pool) release(h handle) {
	p.free = append(p.free, h)
	p.live--
}
