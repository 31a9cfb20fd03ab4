package engine

// A book side keeps its price levels sorted so that the best is last: bids
// by ascending price, asks by descending price. Orders arrive and leave
// mostly near the touch, so inserting or deleting a level moves few
// elements, and the best level is the last one with no search.
//
// The sorted part is two parallel slices, prices (searched, dense in cache)
// and level handles; the levels themselves live in the engine's level pool
// and never move, so an order keeps its level's handle and reaches it in
// O(1). A search (O(log L)) is needed only when a level is created or
// emptied. Each level is a FIFO of orders (price-time priority).
type side struct {
	ask    bool
	prices []Price
	lvls   []lvHandle
}

// lvHandle is an index into the engine's level pool; 0 is none.
type lvHandle int32

type level struct {
	price      Price
	qty        Qty   // remaining quantity of the level's orders
	count      int32 // orders in the level
	head, tail handle
}

// Level is one aggregated depth level.
type Level struct {
	Price Price
	Qty   Qty
	Count int32
}

// better reports whether price a is strictly better than b on this side.
func (s *side) better(a, b Price) bool {
	if s.ask {
		return a < b
	}
	return a > b
}

// find returns the index where price is or would be inserted, and whether a
// level with that price exists.
func (s *side) find(p Price) (int, bool) {
	// Most lookups are near the touch, at the end of the slice: look at the
	// last few levels before searching the rest.
	n := len(s.prices)
	for i := n - 1; i >= 0 && i >= n-4; i-- {
		if lp := s.prices[i]; !s.better(lp, p) { // prices[i] is not better than p
			if lp == p {
				return i, true
			}
			return i + 1, false
		}
	}
	lo, hi := 0, max(n-4, 0)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s.better(p, s.prices[mid]) { // p sorts after mid
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < n && s.prices[lo] == p
}

// best returns the handle of the best level, or 0.
func (s *side) best() lvHandle {
	if len(s.lvls) == 0 {
		return 0
	}
	return s.lvls[len(s.lvls)-1]
}

// bestPrice returns the best price, and false if the side is empty.
func (s *side) bestPrice() (Price, bool) {
	if len(s.prices) == 0 {
		return 0, false
	}
	return s.prices[len(s.prices)-1], true
}

// insert puts level h with price p at position i.
func (s *side) insert(i int, p Price, h lvHandle) {
	s.prices = append(s.prices, 0)
	copy(s.prices[i+1:], s.prices[i:])
	s.prices[i] = p
	s.lvls = append(s.lvls, 0)
	copy(s.lvls[i+1:], s.lvls[i:])
	s.lvls[i] = h
}

// delete removes the level with price p.
func (s *side) delete(p Price) {
	i, ok := s.find(p)
	if !ok {
		panic("engine: removing a missing level")
	}
	s.prices = append(s.prices[:i], s.prices[i+1:]...)
	s.lvls = append(s.lvls[:i], s.lvls[i+1:]...)
}

// levels is the engine's pool of price levels.
type levels struct {
	l    []level // l[0] unused
	free []lvHandle
}

func (p *levels) get(h lvHandle) *level { return &p.l[h] }

func (p *levels) alloc(price Price) lvHandle {
	var h lvHandle
	if n := len(p.free); n > 0 {
		h = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		if len(p.l) == 0 {
			p.l = append(p.l, level{})
		}
		h = lvHandle(len(p.l))
		p.l = append(p.l, level{})
	}
	p.l[h] = level{price: price}
	return h
}

func (p *levels) release(h lvHandle) {
	p.l[h] = level{}
	p.free = append(p.free, h)
}

// crosses reports whether an incoming order at limit on the other side
// would trade with the level at p.
func crosses(takerSide Side, limit, p Price) bool {
	if takerSide == Buy {
		return p <= limit
	}
	return p >= limit
}
