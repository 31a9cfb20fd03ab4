package engine

// handle is an index into the order pool; 0 is no order.
type handle int32

// order is a working order. Orders live in a pool of fixed chunks (so growth
// never copies them) and link into their price level's queue (prev/next),
// their owner's list in the market (uprev/unext) and a client-id hash chain
// (cnext).
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

	prev, next   handle
	uprev, unext handle
	cnext        handle
	list         int32    // index of the user's list in market.lists
	lvl          lvHandle // the order's price level
	user         UserIdx
	market       MarketID
	side         Side
	typ          OrderType
	tif          TIF
	status       Status
	cidGen       bool     // the client id is the generated "x-<id>": cid is unset, and not in the cid index
	cid          ClientID // the client's own id (when !cidGen)
}

const chunkBits = 12

type chunk [1 << chunkBits]order

type pool struct {
	chunks []*chunk
	free   []handle
	n      int // handles handed out so far (high-water mark), excluding 0
	live   int
}

func (p *pool) get(h handle) *order {
	return &p.chunks[h>>chunkBits][h&(1<<chunkBits-1)]
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
	}
	return h
}

// release frees h. The order is not cleared: alloc's callers overwrite it.
func (p *pool) release(h handle) {
	p.free = append(p.free, h)
	p.live--
}
