package core

import (
	"errors"
	"fmt"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// Broker rebates (docs/API.md, "Broker rebates"). Every batch of trades
// writes its referral accruals (journal/rebate.go). Once a UTC day has
// ended on the exchange's clock, settlement reads the day's accruals and
// pays each (broker, product, market) its commission with a CmdRebate on
// the ledger shard, which records the amount: the ledger pays a day once
// (engine/rebate.go), so settling again, by the timer or an operator,
// pays nothing more.

// ErrDayNotEnded: settlement was asked for a day that has not ended on the
// exchange's clock.
var ErrDayNotEnded = errors.New("core: the day has not ended on the exchange's clock")

// settleLookback is how many ended days the settler looks back over when
// it starts and at every new day; older days are settled by an operator.
const settleLookback = 30

// Settled is what one settlement did.
type Settled struct {
	Paid    int // records written and commissions paid
	Before  int // (broker, product, market) of the days that were paid before
	Refused int // commissions the ledger refused (the fee account is short): tried again later
}

// SettleRebates settles the days from through to (UTC days since
// 1970-01-01), which must have ended on the exchange's clock. A commission
// the ledger refuses does not stop the others; the error names each.
func (n *Node) SettleRebates(from, to int32, deadline time.Time) (Settled, error) {
	var res Settled
	if journal.DayOf(n.Now()) <= to {
		return res, ErrDayNotEnded
	}
	n.settleMu.Lock()
	defer n.settleMu.Unlock()
	// Every batch timed before the clock passed the days is built before
	// the barrier and durable once every shard reached it; later batches
	// are timed later. So the days' accrual rows are complete after it.
	if err := n.atBarrier(deadline, func() {}); err != nil {
		return res, err
	}
	coins := n.st.Accounts.Coins()
	var refused []error
	for day := from; day <= to; day++ {
		acc, err := n.store.Accruals(day)
		if err != nil {
			return res, err
		}
		for _, a := range acc {
			paid, err := n.settle(day, &a, coins, deadline)
			var rej refusal
			switch {
			case errors.As(err, &rej):
				res.Refused++
				refused = append(refused, err)
			case err != nil:
				return res, err
			case paid:
				res.Paid++
			default:
				res.Before++
			}
		}
	}
	return res, errors.Join(refused...)
}

// refusal is a commission the ledger refused.
type refusal struct{ msg string }

func (r refusal) Error() string { return r.msg }

// settle pays one accrual of day unless it was paid before (then false).
func (n *Node) settle(day int32, a *journal.Accrual, coins []engine.Coin, deadline time.Time) (bool, error) {
	spec := n.rulesOf(a.Market)
	if spec == nil {
		return false, fmt.Errorf("core: accrual of day %d on unknown market %d", day, a.Market)
	}
	uid := n.st.Accounts.UID(a.Broker)
	probe := engine.Cmd{Kind: engine.CmdRebate, User: a.Broker, UID: uid, Market: a.Market,
		OrderID: engine.RebateDay(day, a.Product)}
	r, err := n.query(QuerySettled, probe, deadline)
	if err != nil {
		return false, err
	}
	before := r.HasOrder
	ReleaseRequest(r)
	if before {
		return false, nil
	}
	rate := n.st.Accounts.RebateRate(a.Broker)
	commission, ok := engine.MulRate(int64(a.Fee), rate)
	if !ok {
		return false, fmt.Errorf("core: commission of broker %d on %s overflows", uid, spec.Symbol)
	}
	rec := &journal.RebateRecord{BrokerUID: uid, Day: day, Product: a.Product, Market: a.Market, Coin: spec.Quote,
		Deal: a.Deal, Fee: a.Fee, Rate: rate, Commission: engine.Amount(commission)}
	rec.USDT = n.inUSDT(spec.Quote, rec.Commission, coins, deadline)
	r = AcquireRequest()
	r.Cmd = probe
	r.Cmd.Coin, r.Cmd.Amount = spec.Quote, rec.Commission
	r.Rebate = rec
	if err := n.Submit(r); err != nil {
		ReleaseRequest(r)
		return false, err
	}
	if err := r.Wait(deadline); err != nil {
		return false, err // not released: the shard may still write it
	}
	rej := r.Out.Reject
	ReleaseRequest(r)
	switch rej {
	case engine.OK:
		return true, nil
	case engine.RejectAlreadySettled:
		return false, nil
	}
	return false, refusal{fmt.Sprintf("core: commission %d of broker %d on %s day %d refused: %v", commission, uid, spec.Symbol, day, rej)}
}

// inUSDT values x of coin c in USDT: x itself for USDT, else at the last
// price of the market of c against USDT; 0 when there is none or it has
// not traded.
func (n *Node) inUSDT(c engine.CoinID, x engine.Amount, coins []engine.Coin, deadline time.Time) engine.Amount {
	if coins[c].Name == "USDT" {
		return x
	}
	for _, s := range n.st.Markets {
		if s == nil || s.Contract || s.Base != c || coins[s.Quote].Name != "USDT" {
			continue
		}
		b, err := n.Depth(s.ID, 0, deadline, nil, nil)
		if err != nil || b.Last <= 0 {
			return 0
		}
		v, _ := s.BaseValue(x, b.Last)
		return v
	}
	return 0
}

// settler settles every ended day of the last settleLookback days when the
// node starts and again once a day has ended, every SettleEvery.
func (n *Node) settler() {
	defer n.wg.Done()
	every := n.opt.SettleEvery
	if every == 0 {
		every = time.Second
	}
	done := int32(-1) // every day before it is settled
	wait := every
	for {
		select {
		case <-n.stopSnap:
			return
		case <-time.After(wait):
		}
		wait = every
		today := journal.DayOf(n.Now())
		if done >= today {
			continue
		}
		from := max(done, today-settleLookback)
		res, err := n.SettleRebates(from, today-1, time.Now().Add(time.Minute))
		switch {
		case errors.Is(err, ErrClosed):
			return
		case errors.Is(err, ErrNotLeader):
			continue // a replicated follower: its leader settles (replicated.go)
		case err != nil:
			n.log.Error("core: rebate settlement failed; it is tried again in a minute", "from", from, "to", today-1, "err", err)
			wait = max(every, time.Minute)
			continue
		case res.Paid > 0:
			n.log.Info("core: rebates settled", "from", from, "to", today-1, "paid", res.Paid)
		}
		done = today
	}
}
