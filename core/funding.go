package core

import (
	"errors"
	"slices"
	"time"

	"github.com/weexcore/exchange/engine"
)

// Funding timer (engine/funding.go). Each minute of the exchange's clock
// it samples, for every contract, the premium (mark - index) / index: the
// mark from the contract's book, the index the mid of its spot index
// market. The samples live here, not in the engine: they change no state.
// At each funding time (every fundingIntervalHours from 00:00 UTC) it
// submits a CmdFunding recording the interval's average premium and the
// last index, so replay needs neither. A restart loses the interval's
// samples so far: the rate then averages those taken since. The engine
// refuses a funding time it has passed, so restarts pay nothing twice;
// a funding time that passed while the exchange was down is paid once
// (the latest), and one from before a contract's first settlement is
// not paid (a new exchange does not settle the hours before it existed).

const minuteMs = 60_000

// premiums are one contract's samples of the current interval.
type premiums struct {
	sum, n   int64
	ended    int64 // the funding time whose interval avg holds (0: none pending)
	avg      int64
	index    engine.Price // the last index sampled
	sampled  int64        // the last minute sampled
	funded   int64        // the last funding time submitted
	lastMark engine.Price
}

// funder runs the funding timer until the node stops.
func (n *Node) funder() {
	defer n.wg.Done()
	every := n.opt.SettleEvery
	if every == 0 {
		every = time.Second
	}
	var contracts, index []*engine.MarketSpec
	for _, s := range n.st.Markets {
		if s != nil && s.Contract {
			contracts = append(contracts, s)
			index = append(index, n.spotMarket(s.IndexSymbol))
		}
	}
	if len(contracts) == 0 {
		return
	}
	now := n.Now()
	n.premMu.Lock()
	n.prem = make(map[engine.MarketID]*premiums, len(contracts))
	for _, s := range contracts {
		p := &premiums{}
		if err := n.store.FundingRecords(s.ID, 0, now, func(r *engine.FundingRecord) bool { p.funded = r.TimeMs; return false }); err != nil {
			n.log.Error("core: funding timer: reading the last funding", "market", s.Symbol, "err", err.Error())
		}
		if p.funded == 0 { // never settled: from the next funding time on
			interval := int64(s.FundingHours) * 3_600_000
			p.funded = now / interval * interval
		}
		n.prem[s.ID] = p
	}
	n.premMu.Unlock()
	for {
		select {
		case <-n.stopSnap:
			return
		case <-time.After(every):
		}
		now := n.Now()
		for i, s := range contracts {
			n.premMu.Lock()
			p := *n.prem[s.ID]
			n.premMu.Unlock()
			interval := int64(s.FundingHours) * 3_600_000
			if at := now / interval * interval; at > p.funded {
				if p.ended != at { // the interval ended: its samples are this funding's
					p.ended, p.avg = at, 0
					if p.n > 0 {
						p.avg = p.sum / p.n
					}
					p.sum, p.n = 0, 0
				}
				// a follower is refused until it leads: then it funds the
				// interval its leader did not (the engine refuses it if it did)
				c := engine.Cmd{Kind: engine.CmdFunding, Market: s.ID, OrderID: at, Amount: engine.Amount(p.avg), Price: p.index}
				cont, done := n.timerCmd(c, s)
				if !cont {
					return
				}
				if done {
					p.funded = at
				}
			}
			if at := now / minuteMs * minuteMs; at > p.sampled {
				mark, idx := n.markPrice(s), engine.Price(0)
				if index[i] != nil {
					idx = n.indexPrice(index[i], s)
				}
				if idx == 0 {
					idx = mark // no index market or price: the premium is 0
				}
				if mark > 0 {
					p.sum += engine.Premium(mark, idx)
					p.n++
				}
				p.sampled, p.index, p.lastMark = at, idx, mark
			}
			n.premMu.Lock()
			*n.prem[s.ID] = p
			n.premMu.Unlock()
		}
	}
}

// Premium returns contract m's current interval so far: the average
// premium of its samples (RateOne units; 0 with none), how many, and the
// last index and mark sampled. ok is false before the timer's first tick.
func (n *Node) Premium(m engine.MarketID) (avg, samples int64, index, mark engine.Price, ok bool) {
	n.premMu.Lock()
	defer n.premMu.Unlock()
	p := n.prem[m]
	if p == nil {
		return 0, 0, 0, 0, false
	}
	if p.n > 0 {
		avg = p.sum / p.n
	}
	return avg, p.n, p.index, p.lastMark, true
}

// markPrice reads contract s's mark price from its book (engine/funding.go).
func (n *Node) markPrice(s *engine.MarketSpec) engine.Price {
	b, err := n.Depth(s.ID, 1, time.Now().Add(10*time.Second), nil, nil)
	if err != nil || b.Last == 0 {
		return 0
	}
	if len(b.Bids) == 0 || len(b.Asks) == 0 {
		return b.Last
	}
	x := []engine.Price{b.Bids[0].Price, b.Asks[0].Price, b.Last}
	slices.Sort(x)
	return x[1]
}

// timerCmd submits c and waits for it; cont is false when the node is
// closing, done when c was applied or refused as done already (a time
// passed) or may still be (no answer in time).
func (n *Node) timerCmd(c engine.Cmd, s *engine.MarketSpec) (cont, done bool) {
	r := AcquireRequest()
	r.Cmd = c
	if err := n.Submit(r); err != nil {
		ReleaseRequest(r)
		// A replicated follower's timer is refused every tick: its leader's
		// funds (ErrNotLeader, replicated.go), and so will it once it leads.
		if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrNotLeader) {
			n.log.Warn("core: funding timer: submit failed; retried next tick", "market", s.Symbol, "err", err.Error())
		}
		return !errors.Is(err, ErrClosed), false
	}
	if err := r.Wait(time.Now().Add(time.Minute)); err != nil {
		return !errors.Is(err, ErrClosed), true // not released: the shard may still write it
	}
	if r.Out.Reject == engine.OK {
		n.log.Info("core: funding settled", "market", s.Symbol, "atMs", c.OrderID, "avgPremium", int64(c.Amount))
	}
	ReleaseRequest(r)
	return true, true
}

// spotMarket returns the spot market named sym, or nil.
func (n *Node) spotMarket(sym string) *engine.MarketSpec {
	for _, s := range n.st.Markets {
		if s != nil && !s.Contract && s.Symbol == sym {
			return s
		}
	}
	return nil
}

// indexPrice returns spot market sp's mid (its last price with a one-sided
// book; 0 with none) in contract ct's ticks, rounded down.
func (n *Node) indexPrice(sp, ct *engine.MarketSpec) engine.Price {
	b, err := n.Depth(sp.ID, 1, time.Now().Add(10*time.Second), nil, nil)
	if err != nil {
		return 0
	}
	var mid engine.Price
	switch {
	case len(b.Bids) > 0 && len(b.Asks) > 0:
		mid = (b.Bids[0].Price + b.Asks[0].Price) / 2
	default:
		mid = b.Last
	}
	return engine.ConvertPrice(mid, sp, ct)
}
