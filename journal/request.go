package journal

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/weexcore/exchange/engine"
)

// Request life cycle (reqState.state), for Wait:
//
//	stateIdle -> stateQueued (Submit) -> stateDone (shard, after the sync)
//	                                  -> stateAbandoned (Wait timed out)
//
// Exactly one of the shard and the waiter wins the CAS out of stateQueued.
//
// Recycling is decided by reqState.refs, not by the state: the caller holds
// one reference from AcquireRequest to ReleaseRequest, and a successful
// Submit adds one for the shard, dropped after it completes the request.
// Whoever drops the last one returns the request to the pool, so a request
// abandoned by a timed-out Wait is neither reused while its shard still
// writes its result nor put into the pool twice, whichever of the shard's
// completion and the caller's release comes first.
const (
	stateIdle uint32 = iota
	stateQueued
	stateDone
	stateAbandoned
)

// op says what the shard loop does with a request.
type op uint8

const (
	opCmd     op = iota // Cmd or Query from a client
	opBarrier           // stop at a barrier (snapshot, state hash)
	opStop              // finish and exit
)

type reqState struct {
	state atomic.Uint32
	refs  atomic.Int32  // holders: the caller, and the shard while queued
	done  chan struct{} // capacity 1: the shard's signal
	timer *time.Timer   // reused across Waits
	op    op
	err   error    // result error (ErrClosed when the node stopped first)
	bar   *barrier // opBarrier
}

var reqPool = sync.Pool{New: func() any {
	r := &Request{}
	r.rt.done = make(chan struct{}, 1)
	return r
}}

func acquireRequest() *Request {
	r := reqPool.Get().(*Request)
	r.reset()
	r.rt.refs.Store(1)
	return r
}

func (r *Request) reset() {
	r.Cmd = engine.Cmd{}
	r.Query = QueryNone
	r.Out.Reset()
	r.Order = engine.OrderView{}
	r.Orders = r.Orders[:0]
	r.Bids = r.Bids[:0]
	r.Asks = r.Asks[:0]
	r.Last, r.Seq, r.TimeMs = 0, 0, 0
	r.rt.op, r.rt.err, r.rt.bar = opCmd, nil, nil
	select { // a result nobody waited for
	case <-r.rt.done:
	default:
	}
	r.rt.state.Store(stateIdle)
}

func releaseRequest(r *Request) {
	if r != nil {
		r.unref()
	}
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
	if r.rt.state.CompareAndSwap(stateQueued, stateDone) {
		select {
		case r.rt.done <- struct{}{}:
		default:
		}
	}
	r.unref() // the shard's reference: r must not be touched after this
}

func (r *Request) wait(deadline time.Time) error {
	switch r.rt.state.Load() {
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
	d := time.Until(deadline)
	if d > 0 {
		if r.rt.timer == nil {
			r.rt.timer = time.NewTimer(d)
		} else {
			r.rt.timer.Reset(d)
		}
		select {
		case <-r.rt.done:
			r.rt.timer.Stop()
			return r.rt.err
		case <-r.rt.timer.C:
		}
	}
	if r.rt.state.CompareAndSwap(stateQueued, stateAbandoned) {
		return ErrTimeout
	}
	<-r.rt.done // the shard won the race: its signal is on its way
	return r.rt.err
}
