package engine

import (
	"fmt"
	"slices"
)

// CheckInvariants checks the whole state: every book sorted and not crossed,
// level aggregates equal to their orders, every working order's reservation
// exactly what its remainder needs, frozen balances equal to the sum of the
// reservations, no negative cell, and per coin the sum of all balances equal
// to deposits minus withdrawals. Credits not yet flushed count as the
// available balance they will become (a balance's total already holds
// them). No engine may be applying a command meanwhile (tests, barriers,
// the audit tool, the runtime's invariants build). It is O(state).
func CheckInvariants(acc *Accounts, engines []*Engine) error {
	type key struct {
		u UserIdx
		c CoinID
	}
	reserved := make(map[key]Amount) // and position margins
	pending := make(map[*cell]Amount)
	// per coin: short minus long open value, less bad debt (contract.go)
	posNet := make([]Amount, acc.nc)
	for _, e := range engines {
		for _, cr := range e.pending {
			pending[cr.to] += cr.x
		}
		live := 0
		for _, m := range e.owned {
			n, err := e.checkMarket(m, func(o *order) {
				c := m.spec.Quote
				switch {
				case m.ct != nil:
					c = m.spec.Margin
				case o.side == Sell:
					c = m.spec.Base
				}
				reserved[key{o.user, c}] += o.reserved
			})
			if err != nil {
				return err
			}
			live += n
			if m.ct != nil {
				lv, sv, err := e.checkContract(m, func(u UserIdx, c CoinID, x Amount) { reserved[key{u, c}] += x })
				if err != nil {
					return err
				}
				if m.ct.badDebt < 0 {
					return fmt.Errorf("engine: %s: negative bad debt %d", m.spec.Symbol, m.ct.badDebt)
				}
				posNet[m.spec.Margin.Spot()] += sv - lv - m.ct.badDebt
			}
		}
		indexed := 0
		for _, m := range e.owned {
			indexed += m.ids.len()
		}
		if live != e.pool.live || live != indexed {
			return fmt.Errorf("engine: shard %d: %d orders in books, %d in pool, %d indexed", e.shard, live, e.pool.live, indexed)
		}
		if err := e.checkRiskState(); err != nil {
			return err
		}
	}
	sum := posNet
	for u := UserIdx(0); int(u) < acc.NumUsers(); u++ {
		for i := 0; i < acc.w; i++ {
			c := CoinID(i % acc.nc)
			if i >= acc.nc {
				c |= Futures
			}
			avail, frozen := acc.Balance(u, c)
			if p := pending[acc.cell(u, c)]; p != 0 {
				if p < 0 {
					return fmt.Errorf("engine: user %d %s: negative pending credit %d", acc.UID(u), acc.coins[c].Name, p)
				}
				avail, frozen = avail+p, frozen-p
			}
			if avail < 0 || frozen < 0 {
				return fmt.Errorf("engine: user %d %s wallet %d: negative balance: available %d, frozen %d", acc.UID(u), acc.coins[c.Spot()].Name, c>>15, avail, frozen)
			}
			if want := reserved[key{u, c}]; frozen != want {
				return fmt.Errorf("engine: user %d %s wallet %d: frozen %d, working orders and positions hold %d", acc.UID(u), acc.coins[c.Spot()].Name, c>>15, frozen, want)
			}
			sum[c.Spot()] += avail + frozen
		}
	}
	for c := range sum {
		if net := acc.Net(CoinID(c)); sum[c] != net {
			return fmt.Errorf("engine: %s: balances sum to %d, deposits minus withdrawals is %d", acc.coins[c].Name, sum[c], net)
		}
	}
	return nil
}

// checkMarket checks one market's book and returns its working order count.
func (e *Engine) checkMarket(m *market, each func(*order)) (int, error) {
	s := m.spec
	n := 0
	for _, sd := range [2]*side{&m.bids, &m.asks} {
		if len(sd.keys) != len(sd.lvls) {
			return 0, fmt.Errorf("engine: %s: %d prices for %d levels", s.Symbol, len(sd.keys), len(sd.lvls))
		}
		for i, lh := range sd.near {
			if lh != 0 && (!slices.Contains(sd.lvls, lh) || nearSlot(e.lvls.get(lh).price) != i) {
				return 0, fmt.Errorf("engine: %s: level cache slot %d holds level %d, not a level of this side at a price in that slot", s.Symbol, i, lh)
			}
		}
		for i, lh := range sd.lvls {
			lv := e.lvls.get(lh)
			if sd.key(lv.price) != sd.keys[i] || i > 0 && sd.keys[i] <= sd.keys[i-1] {
				return 0, fmt.Errorf("engine: %s: levels out of order at %d", s.Symbol, lv.price)
			}
			var qty Qty
			var count int32
			prev := handle(0)
			for h := lv.head; h != 0; h = e.pool.ln(h).next {
				o := e.pool.get(h)
				if e.pool.ln(h).prev != prev || o.price != lv.price || o.lvl != lh || (o.side == Sell) != sd.ask || !o.status.Working() ||
					o.filled < 0 || o.filled >= o.qty || o.market != s.ID {
					return 0, fmt.Errorf("engine: %s: order %d is inconsistent with its level %d", s.Symbol, o.id, lv.price)
				}
				cid := e.pool.clientID(h, o)
				gid, x := generatedForm(cid.Bytes())
				if e.lookup(m, o.user, 0, cid.Bytes()) != h || o.cidGen != (x && gid == o.id) {
					return 0, fmt.Errorf("engine: %s: order %d is not found by its client id", s.Symbol, o.id)
				}
				if m.ids.get(&e.pool, o.id) != h {
					return 0, fmt.Errorf("engine: %s: order %d is not indexed", s.Symbol, o.id)
				}
				var want Amount
				switch {
				case s.Contract && o.opens():
					want, _ = openHold(s, o.price, o.qty-o.filled, int32(o.lev))
				case s.Contract:
				case o.side == Buy:
					want, _ = s.Notional(o.price, o.qty-o.filled)
				default:
					want, _ = s.BaseAmount(o.qty - o.filled)
				}
				if o.reserved != want {
					return 0, fmt.Errorf("engine: %s: order %d reserves %d, its remainder needs %d", s.Symbol, o.id, o.reserved, want)
				}
				each(o)
				qty += o.qty - o.filled
				count++
				prev = h
			}
			if lv.tail != prev || lv.qty != qty || lv.count != count || count == 0 {
				return 0, fmt.Errorf("engine: %s: level %d says %d orders/%d qty, has %d/%d", s.Symbol, lv.price, lv.count, lv.qty, count, qty)
			}
			n += int(count)
		}
	}
	b, bok := m.bids.bestPrice()
	a, aok := m.asks.bestPrice()
	if bok && aok && b >= a {
		return 0, fmt.Errorf("engine: %s: book crossed: bid %d >= ask %d", s.Symbol, b, a)
	}
	users := 0
	for pi, p := range m.lists {
		if p == nil {
			continue
		}
		for i := range p {
			u, ul := UserIdx(pi<<listPageBits|i), &p[i]
			k := int32(0)
			for h := ul.head; h != 0; h = e.pool.ln(h).unext {
				if e.pool.get(h).user != u {
					return 0, fmt.Errorf("engine: %s: user list of %d holds another user's order", s.Symbol, u)
				}
				k++
			}
			if k != ul.n || (k == 0) != (ul.tail == 0) {
				return 0, fmt.Errorf("engine: %s: user %d list has %d orders, counts %d", s.Symbol, u, k, ul.n)
			}
			users += int(k)
		}
	}
	if users != n {
		return 0, fmt.Errorf("engine: %s: user lists hold %d orders, books %d", s.Symbol, users, n)
	}
	return n, nil
}
