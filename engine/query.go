package engine

// AllMarkets asks OpenOrders for every market the engine owns.
const AllMarkets MarketID = 0xFFFF

// AllContracts asks the same of the ledger engine, which owns every
// contract market (the runtime routes it there).
const AllContracts MarketID = 0xFFFE

// OpenOrders appends user u's working orders in market id (or AllMarkets),
// oldest first, to dst.
func (e *Engine) OpenOrders(u UserIdx, id MarketID, dst []OrderView) []OrderView {
	start := len(dst)
	all := id == AllMarkets || id == AllContracts
	for _, m := range e.owned {
		if !all && m.spec.ID != id {
			continue
		}
		ul := m.list(u)
		if ul == nil {
			continue
		}
		for h := ul.head; h != 0; h = e.pool.ln(h).unext {
			dst = append(dst, e.view(h))
		}
	}
	if all {
		SortOrders(dst[start:])
	}
	return dst
}

// SortOrders sorts views oldest first (creation time, then order id).
func SortOrders(v []OrderView) {
	for i := 1; i < len(v); i++ { // insertion sort: inputs are mostly sorted
		for j := i; j > 0 && (v[j].TimeMs < v[j-1].TimeMs ||
			v[j].TimeMs == v[j-1].TimeMs && v[j].OrderID < v[j-1].OrderID); j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// Order returns user u's working order in market id, by order id, or by
// client id when orderID is 0.
func (e *Engine) Order(u UserIdx, id MarketID, orderID int64, cid []byte) (OrderView, bool) {
	m := e.market(id)
	if m == nil {
		return OrderView{}, false
	}
	h := e.lookup(m, u, orderID, cid)
	if h == 0 {
		return OrderView{}, false
	}
	return e.view(h), true
}

// Depth appends up to limit aggregated levels of each side of market id,
// best first.
func (e *Engine) Depth(id MarketID, limit int, bids, asks []Level) ([]Level, []Level) {
	m := e.market(id)
	if m == nil {
		return bids, asks
	}
	app := func(dst []Level, s *side) []Level {
		for i, n := len(s.lvls)-1, 0; i >= 0 && n < limit; i, n = i-1, n+1 {
			lv := e.lvls.get(s.lvls[i])
			dst = append(dst, Level{Price: lv.price, Qty: lv.qty, Count: lv.count})
		}
		return dst
	}
	return app(bids, &m.bids), app(asks, &m.asks)
}

// LastPrice returns market id's last trade price, 0 if none.
func (e *Engine) LastPrice(id MarketID) Price {
	if m := e.market(id); m != nil {
		return m.last
	}
	return 0
}
