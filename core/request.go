package core

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// Request is one command or in-shard query and, after Wait, its result.
// Requests are pooled: AcquireRequest, fill Cmd (and Query), Submit, Wait,
// read the results, ReleaseRequest.
type Request struct {
	Cmd   engine.Cmd
	Query Query
	// Rules is the spec a CmdSetRules installs.
	Rules *engine.MarketSpec
	// Rebate is the record a CmdRebate writes into history when it pays
	// (its SettledMs is set then).
	Rebate *journal.RebateRecord

	// Results, valid once Wait returned nil.
	Out      engine.Out       // Reject and BillID; Updates/Trades/Bills are not kept
	Order    engine.OrderView // the order placed, cancelled or asked for (when HasOrder)
	HasOrder bool
	Orders   []engine.OrderView
	Bids     []engine.Level
	Asks     []engine.Level
	Last     engine.Price
	Seq      uint64
	TimeMs   int64
	// QueryPositions: the positions, and the user's margin mode and
	// LONG/SHORT leverage in the market asked for (one market only).
	Positions []engine.PositionView
	Mode      engine.MarginMode
	Lev       [2]int32
	// Plans: a CmdPlan's or CmdPlanCancel's plans (placed, then any it
	// fired; or cancelled), or QueryPlans' answer.
	Plans []engine.PlanView

	rt reqState // runtime state, owned by this package
}

// AcquireRequest returns a reset request from the pool.
func AcquireRequest() *Request {
	r := reqPool.Get().(*Request)
	r.reset()
	r.rt.refs.Store(1)
	return r
}

// ReleaseRequest returns r to the pool. r must not be used afterwards.
func ReleaseRequest(r *Request) {
	if r != nil {
		r.unref()
	}
}

// Request life cycle (the low two bits of reqState.state, for Wait):
//
//	stateIdle -> stateQueued (Submit) -> stateDone (shard, after the sync)
//	                                  -> stateAbandoned (the deadline passed)
//
// Exactly one of the shard and the deadline watch (deadlines, below) wins
// the CAS out of stateQueued. The bits above the state count the request's
// uses (AcquireRequest adds one), so that a CAS by someone still holding a
// pointer to an earlier use, the deadline watch, fails on the next one.
//
// Recycling is decided by reqState.refs, not by the state: the caller holds
// one reference from AcquireRequest to ReleaseRequest, and a successful
// Submit adds one for the shard, dropped after it completes the request.
// Whoever drops the last one returns the request to the pool, so a request
// abandoned by a timed-out Wait is neither reused while its shard still
// writes its result nor put into the pool twice, whichever of the shard's
// completion and the caller's release comes first.
const (
	stateIdle uint64 = iota
	stateQueued
	stateDone
	stateAbandoned

	stateMask = 3 // the state's bits
	stateUse  = 4 // one use, in the bits above
)

// op says what the shard loop does with a request.
type op uint8

const (
	opCmd     op = iota // Cmd or Query from a client
	opBarrier           // stop at a barrier (snapshot, state hash)
	opStop              // finish and exit
	opReplay            // apply a replicated entry's records (replicated.go)
)

type reqState struct {
	state atomic.Uint64 // uses<<2 | state
	refs  atomic.Int32  // holders: the caller, and the shard while queued
	done  chan struct{} // capacity 1: the shard's or the deadline watch's signal
	op    op
	err   error      // result error (ErrClosed when the node stopped first)
	bar   *barrier   // opBarrier
	rep   *replayJob // opReplay
}

var reqPool = sync.Pool{New: func() any {
	r := &Request{}
	r.rt.done = make(chan struct{}, 1)
	return r
}}

func (r *Request) reset() {
	r.Cmd = engine.Cmd{}
	r.Query = QueryNone
	r.Rules, r.Rebate = nil, nil
	r.Out.Reset()
	r.Order = engine.OrderView{}
	r.Orders = r.Orders[:0]
	r.Plans = r.Plans[:0]
	r.Bids = r.Bids[:0]
	r.Asks = r.Asks[:0]
	r.Last, r.Seq, r.TimeMs = 0, 0, 0
	r.rt.op, r.rt.err, r.rt.bar = opCmd, nil, nil
	select { // a result nobody waited for
	case <-r.rt.done:
	default:
	}
	r.rt.state.Store(r.rt.state.Load()&^stateMask + stateUse) // idle, next use
}

// unref drops one reference; the last one returns r to the pool.
func (r *Request) unref() {
	if r.rt.refs.Add(-1) == 0 {
		reqPool.Put(r)
	}
}

// complete publishes r's result; called by the shard after the sync.
func (r *Request) complete(err error) {
	r.rt.err = err
	// The use cannot change while the shard holds its reference.
	if w := r.rt.state.Load(); w&stateMask == stateQueued && r.rt.state.CompareAndSwap(w, w&^stateMask|stateDone) {
		select {
		case r.rt.done <- struct{}{}:
		default:
		}
	}
	r.unref() // the shard's reference: r must not be touched after this
}

// Wait blocks until r's result is durable, or the deadline: it waits for
// the shard's signal, or the deadline watch's (checked every waitTick).
func (r *Request) Wait(deadline time.Time) error {
	w := r.rt.state.Load()
	switch w & stateMask {
	case stateDone:
		return r.rt.err
	case stateIdle:
		return errNotSubmitted
	case stateAbandoned:
		return ErrTimeout
	}
	select {
	case <-r.rt.done:
		return r.rt.err
	default:
	}
	deadlines.watch(r, w, deadline)
	<-r.rt.done
	if r.rt.state.Load()&stateMask == stateAbandoned {
		return ErrTimeout
	}
	return r.rt.err
}

// deadlines is the one timer behind every blocked Wait. Wait files its
// request with its deadline; while any are filed, a goroutine looks at them
// every waitTick, forgets those answered since (or recycled: the use in the
// state word differs) and abandons those still queued past their deadline,
// waking their waiters. A timer per Wait (its Reset, Stop and a select on
// two channels) cost several percent of the server's CPU.
var deadlines deadlineWatch

const waitTick = 10 * time.Millisecond

type deadlineWatch struct {
	mu      sync.Mutex
	filed   []filedWait
	spare   []filedWait // the other buffer, empty: run swaps the two
	running bool
}

type filedWait struct {
	r  *Request
	w  uint64 // r's state word when filed: this use, queued
	at time.Time
}

func (d *deadlineWatch) watch(r *Request, w uint64, at time.Time) {
	d.mu.Lock()
	d.filed = append(d.filed, filedWait{r, w, at})
	start := !d.running
	d.running = true
	d.mu.Unlock()
	if start {
		go d.run()
	}
}

// run checks the filed waits every waitTick until none is left.
func (d *deadlineWatch) run() {
	for {
		time.Sleep(waitTick)
		d.mu.Lock()
		list := d.filed
		d.filed = d.spare // empty
		d.mu.Unlock()
		now := time.Now()
		keep := list[:0]
		for _, f := range list {
			switch {
			case f.r.rt.state.Load() != f.w: // answered, or a later use
			case now.Before(f.at):
				keep = append(keep, f)
			case f.r.rt.state.CompareAndSwap(f.w, f.w&^stateMask|stateAbandoned):
				// The waiter still holds its reference: r is not recycled.
				select {
				case f.r.rt.done <- struct{}{}:
				default:
				}
			}
		}
		d.mu.Lock()
		d.filed = append(d.filed, keep...)
		clear(list)
		d.spare = list[:0]
		if len(d.filed) == 0 {
			d.running = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
	}
}
