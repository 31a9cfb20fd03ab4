package engine

// A book side keeps its price levels in one slice sorted so that the best
// level is last: bids by ascending price, asks by descending price. Orders
// arrive and leave mostly near the touch, so inserts and removals move few
// elements, and the best level is levels[len-1] with no search. Each level
// is a FIFO of orders linked through the engine's order pool (price-time
// priority).
//
// Cost: finding a level is a binary search, O(log L); inserting or removing
// a level far from the touch moves the levels between it and the touch.
type side struct {
	ask    bool
	levels []level
}

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
	n := len(s.levels)
	for i := n - 1; i >= 0 && i >= n-4; i-- {
		if lp := s.levels[i].price; !s.better(lp, p) { // levels[i] is not better than p
			if lp == p {
				return i, true
			}
			return i + 1, false
		}
	}
	lo, hi := 0, max(n-4, 0)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s.better(p, s.levels[mid].price) { // p sorts after mid
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < len(s.levels) && s.levels[lo].price == p
}

// best returns the best level, or nil.
func (s *side) best() *level {
	if len(s.levels) == 0 {
		return nil
	}
	return &s.levels[len(s.levels)-1]
}

// levelAt returns the level for p, inserting an empty one if needed.
func (s *side) levelAt(p Price) *level {
	i, ok := s.find(p)
	if !ok {
		s.levels = append(s.levels, level{})
		copy(s.levels[i+1:], s.levels[i:])
		s.levels[i] = level{price: p}
	}
	return &s.levels[i]
}

// remove deletes the (empty) level holding p.
func (s *side) remove(p Price) {
	i, ok := s.find(p)
	if !ok {
		panic("engine: removing a missing level")
	}
	copy(s.levels[i:], s.levels[i+1:])
	s.levels = s.levels[:len(s.levels)-1]
}

// crosses reports whether an incoming order at limit on the other side
// would trade with the level at p.
func crosses(takerSide Side, limit, p Price) bool {
	if takerSide == Buy {
		return p <= limit
	}
	return p >= limit
}
