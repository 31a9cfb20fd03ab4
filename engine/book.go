package engine

// A book side keeps its price levels sorted so that the best is last: bids
// by ascending price, asks by descending price. Orders arrive and leave
// mostly near the touch, so inserting or deleting a level moves few
// elements, and the best level is the last one with no search.
//
// The sorted part is two parallel slices, keys (searched, dense in cache)
// and level handles; the levels themselves live in the engine's level pool
// and never move, so an order keeps its level's handle and reaches it in
// O(1). A search is needed only when a level is created or emptied, or an
// order joins one that the side's small cache of recently joined levels
// (near) does not hold. Each level is a FIFO of orders (price-time priority).
//
// A key is the price for bids and minus the price for asks, so on both
// sides keys ascend towards the best and one comparison serves both.
type side struct {
	ask  bool
	neg  Price // -1 for asks, 0 for bids: key(p) = p^neg - neg
	keys []Price
	lvls []lvHandle
	// near caches the levels orders joined lately, by price mod len(near):
	// most orders join an existing level near the touch, and a hit skips
	// find. An entry is a live level of this side (forget clears it when
	// its level goes) whose price must still be checked.
	near [nearSlots]lvHandle
}

// nearSlot returns price p's slot in near.
func nearSlot(p Price) int { return int(p & (nearSlots - 1)) }

const nearSlots = 64 // len(side.near), a power of two

// joinable returns the level of this side at price p if the cache has it.
func (s *side) joinable(lv *levels, p Price) lvHandle {
	if h := s.near[nearSlot(p)]; h != 0 && lv.get(h).price == p {
		return h
	}
	return 0
}

// remember caches level h at price p.
func (s *side) remember(p Price, h lvHandle) { s.near[nearSlot(p)] = h }

// forget drops level h at price p from the cache, before h is released.
func (s *side) forget(p Price, h lvHandle) {
	if i := nearSlot(p); s.near[i] == h {
		s.near[i] = 0
	}
}

func newSide(ask bool) side {
	if ask {
		return side{ask: true, neg: -1}
	}
	return side{}
}

// key maps a price to its sort key on s.
func (s *side) key(p Price) Price { return p ^ s.neg - s.neg }

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

// find returns the index where price is or would be inserted, and whether a
// level with that price exists.
//
// Keys are distinct integers ascending to the best, so between p and the
// best there are at most best-p levels: p's index is at least n-1-(best-p).
// Near the touch levels are mostly one tick apart, and that first guess is
// exact; otherwise a binary search runs from it.
func (s *side) find(p Price) (int, bool) {
	k := s.key(p)
	keys := s.keys
	n := len(keys)
	if n == 0 {
		return 0, false
	}
	d := keys[n-1] - k
	if d <= 0 {
		return n - 1 + int(min(-d, 1)), d == 0
	}
	lo, hi := 0, n-1 // keys[hi] > k
	if d < Price(n) {
		lo = n - 1 - int(d)
		if keys[lo] >= k {
			return lo, keys[lo] == k
		}
		lo++ // keys[lo-1] < k
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if keys[mid] < k {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, keys[lo] == k
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
	if len(s.keys) == 0 {
		return 0, false
	}
	return s.key(s.keys[len(s.keys)-1]), true // key is its own inverse
}

// insert puts level h with price p at position i.
func (s *side) insert(i int, p Price, h lvHandle) {
	s.keys = append(s.keys, 0)
	copy(s.keys[i+1:], s.keys[i:])
	s.keys[i] = s.key(p)
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
	s.keys = append(s.keys[:i], s.keys[i+1:]...)
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
