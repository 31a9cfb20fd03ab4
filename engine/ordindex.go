package engine

// ordIndex maps one market's working order ids to their pool handles.
//
// Order ids are n<<10 | market, n counting the market's orders, and most
// working orders are recent. So slot n mod len(win) holds order n's handle
// directly: placing an order writes the slot beside the previous order's
// (no hashing, no probing, one cache line per 16 orders) and a lookup is one
// read plus a check of the order's id. A working order whose slot a newer
// order takes moves to the overflow map; the window doubles whenever the
// market's working orders fill a quarter of it, so such stragglers stay
// few (BenchmarkMixed's 10k-order book: 4.5% of its orders overflow with a
// 64k window; 19% with 32k).
type ordIndex struct {
	win  []handle // len a power of two (or 0)
	over idmap    // n -> handle: working orders not in their slot
	n    int      // working orders indexed (win and over)
}

// get returns the handle of working order id, or 0.
func (x *ordIndex) get(p *pool, id int64) handle {
	if id <= 0 || len(x.win) == 0 {
		return 0
	}
	if h := x.win[x.slot(id)]; h != 0 && p.get(h).id == id {
		return h
	}
	if v, ok := x.over.get(uint64(id) >> 10); ok && p.get(handle(v)).id == id {
		return handle(v)
	}
	return 0
}

// slot returns id's place in win (len(win) > 0).
func (x *ordIndex) slot(id int64) uint64 { return uint64(id) >> 10 & uint64(len(x.win)-1) }

// put indexes working order h, whose id is id (> 0, not indexed yet).
func (x *ordIndex) put(p *pool, id int64, h handle) {
	if (x.n+1)*4 > len(x.win) {
		x.grow(p)
	}
	x.n++
	x.place(p, uint64(id)>>10, h)
}

// place puts h in its slot, moving the slot's occupant to the overflow.
func (x *ordIndex) place(p *pool, n uint64, h handle) {
	i := n & uint64(len(x.win)-1)
	if old := x.win[i]; old != 0 {
		x.over.put(uint64(p.get(old).id)>>10, int32(old))
	}
	x.win[i] = h
}

// del forgets working order h, whose id is id.
func (x *ordIndex) del(id int64, h handle) {
	n := uint64(id) >> 10
	if i := n & uint64(len(x.win)-1); x.win[i] == h {
		x.win[i] = 0
	} else if !x.over.del(n) {
		panic("engine: working order missing from the order index")
	}
	x.n--
}

// grow doubles the window and places every indexed order again.
func (x *ordIndex) grow(p *pool) {
	old, over := x.win, x.over
	x.win, x.over = make([]handle, max(1024, 2*len(old))), idmap{}
	for _, h := range old {
		if h != 0 {
			x.place(p, uint64(p.get(h).id)>>10, h)
		}
	}
	over.each(func(n uint64, v int32) error {
		x.place(p, n, handle(v))
		return nil
	})
}

// len returns the number of indexed orders.
func (x *ordIndex) len() int { return x.n }
