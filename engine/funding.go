package engine

import "fmt"

// Mark price and funding (docs/API.md, "Perpetual contracts: funding").
//
// The mark price is the median of the best bid, the best ask and the last
// trade; the last trade alone when a side of the book is empty; 0 before
// the first trade. The engine has no clock and reads no other shard: the
// runtime samples, each minute, the premium (mark - index) / index, the
// index being the mid of the contract's spot index market, and at each
// funding time submits a CmdFunding that records the interval's average
// premium (Amount, RateOne units) and the last index (Price): a recorded
// decision, like a rebate's amount, so replay needs neither the spot book
// nor the samples, and the samples change no state between fundings.
// OrderID is the funding time; a time not after the last one is refused,
// so a restarted timer pays nothing twice. The rate is
//
//	rate = clamp(avg + clamp(interestRate - avg, ±0.0005), ±maxFundingRate)
//
// and every position pays or receives rate × size × mark: longs pay
// shorts when the rate is positive. A payer pays from its wallet's
// available balance (cross) or its position's margin (isolated), as far as
// they go; what was collected is shared among the receivers by size,
// rounded down, and the rounding's remainder goes to the fee account.
// Money is moved, not made: the money rule of contract.go holds.

// fundingFloor bounds the interest term of the rate (0.05%).
const fundingFloor = RateOne / 2000

// markPrice returns m's mark price (see above).
func (m *market) markPrice() Price {
	b, bok := m.bids.bestPrice()
	a, aok := m.asks.bestPrice()
	if m.last == 0 || !bok || !aok {
		return m.last
	}
	// the median of three
	x, y, z := b, a, m.last
	if x > y {
		x, y = y, x
	}
	if y > z {
		y = z
	}
	if x > y {
		return x
	}
	return y
}

// MarkPrice returns contract market id's mark price (0: no price yet).
func (e *Engine) MarkPrice(id MarketID) Price {
	if m := e.market(id); m != nil && m.ct != nil {
		return m.markPrice()
	}
	return 0
}

// FundingState is a contract's last funding settlement.
type FundingState struct {
	LastRate      int64 // RateOne = 100%
	LastFundingMs int64 // 0: none yet
	Index         Price // the index price it recorded
}

// Funding returns contract market id's last funding settlement.
func (e *Engine) Funding(id MarketID) FundingState {
	m := e.market(id)
	if m == nil || m.ct == nil {
		return FundingState{}
	}
	return FundingState{LastRate: m.ct.lastRate, LastFundingMs: m.ct.lastFundingMs, Index: m.ct.lastIndex}
}

// Premium returns (mark - index) / index in RateOne units, truncated
// toward zero; 0 without both prices.
func Premium(mark, index Price) int64 {
	if mark <= 0 || index <= 0 {
		return 0
	}
	p, _ := mulDiv(abs64(int64(mark-index)), RateOne, int64(index))
	if mark < index {
		p = -p
	}
	return p
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func clamp(x, lo, hi int64) int64 { return max(lo, min(hi, x)) }

// FundingRate returns the rate of an interval whose average premium is
// avg (RateOne units) under s's interest rate and cap.
func FundingRate(s *MarketSpec, avg int64) int64 {
	avg = clamp(avg, -RateOne, RateOne) // a recorded value: bounded before it is added to
	r := avg + clamp(s.InterestRate-avg, -fundingFloor, fundingFloor)
	return clamp(r, -s.MaxFundingRate, s.MaxFundingRate)
}

// payFunding applies a CmdFunding.
func (e *Engine) payFunding(c *Cmd) Reject {
	m := e.market(c.Market)
	if m == nil || m.ct == nil {
		return RejectUnknownMarket
	}
	ct, s := m.ct, m.spec
	if c.OrderID <= ct.lastFundingMs || c.Price < 0 {
		return RejectAlreadySettled
	}
	rate, mark := FundingRate(s, int64(c.Amount)), m.markPrice()
	ct.lastFundingMs, ct.lastRate, ct.lastIndex = c.OrderID, rate, c.Price
	e.out.Funding = FundingRecord{Market: s.ID, TimeMs: c.OrderID, Rate: rate, Mark: mark, Index: c.Price}
	if rate == 0 || mark == 0 {
		return OK
	}
	payer, receiver := Long, Short
	if rate < 0 {
		payer, receiver, rate = Short, Long, -rate
	}
	// collect from the payers, in user order
	var collected Amount
	var recvSize Qty
	ct.each(func(u UserIdx, a *ctAcct) {
		if p := &a.pos[receiver-1]; p.size > 0 {
			recvSize += p.size
		}
		p := &a.pos[payer-1]
		if p.size == 0 {
			return
		}
		v, ok := s.Notional(mark, p.size)
		due, ok2 := mulDiv(int64(v), rate, RateOne)
		if !ok || !ok2 {
			panic(fmt.Sprintf("engine: %s: funding overflows", s.Symbol)) // sizes and prices are bounded far below
		}
		paid := e.takeFunding(m, a, p, u, Amount(due))
		collected += paid
		p.funding -= paid
		p.updatedMs = e.timeMs
		e.bill(u, s.Margin, BizFunding, -paid, 0, s.ID, 0, 0)
	})
	if collected == 0 || recvSize == 0 {
		if collected > 0 { // nobody to receive it: cannot happen (long size = short size)
			e.fundingDust(m, collected)
		}
		return OK
	}
	// share it among the receivers by size
	var shared Amount
	ct.each(func(u UserIdx, a *ctAcct) {
		p := &a.pos[receiver-1]
		if p.size == 0 {
			return
		}
		got, _ := mulDiv(int64(collected), int64(p.size), int64(recvSize))
		shared += Amount(got)
		p.funding += Amount(got)
		p.updatedMs = e.timeMs
		e.bill(u, s.Margin, BizFunding, Amount(got), 0, s.ID, 0, 0)
		e.credit(u, s.Margin, Amount(got))
	})
	e.fundingDust(m, collected-shared)
	return OK
}

// takeFunding takes up to due from u's wallet (cross) or position p's
// margin (isolated) and returns what it took.
func (e *Engine) takeFunding(m *market, a *ctAcct, p *position, u UserIdx, due Amount) Amount {
	if a.mode == Isolated {
		x := min(due, p.margin)
		p.margin -= x
		return x
	}
	cl := e.acc.cell(u, m.spec.Margin)
	x := min(due, Amount(cl.avail.Load()))
	cl.avail.Add(-int64(x))
	return x
}

// fundingDust credits the fee account with a funding's rounding remainder.
func (e *Engine) fundingDust(m *market, x Amount) {
	if x > 0 {
		fee := e.feeUser()
		e.bill(fee, m.spec.Margin, BizFunding, x, 0, m.spec.ID, 0, 0)
		e.credit(fee, m.spec.Margin, x)
	}
}
