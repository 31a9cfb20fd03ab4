package journal

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/weexcore/exchange/engine"
)

// Request life cycle (reqState.state):
//
//	stateIdle -> stateQueued (Submit) -> stateDone (shard, after the sync)
//	                                  -> stateAbandoned (Wait timed out)
//
// Exactly one of the shard and the waiter wins the CAS out of stateQueued.
// When the waiter abandons a request, the shard owns it from then on and
// returns it to the pool itself; ReleaseRequest of an abandoned request is a
// no-op, so a late result can never be written into a reused request.
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
	return r
}

func (r *Request) reset() {
	r.Cmd = engine.Cmd{}
	r.Query = QueryNone
	r.Out.Reset()
	r.Out.Order = engine.OrderView{}
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
	if r == nil || r.rt.state.Load() == stateAbandoned {
		return // the shard releases it when it is done with it
	}
	if r.rt.state.Load() == stateQueued {
		// Still in a ring or batch: dropping it is the only safe choice.
		if r.rt.state.CompareAndSwap(stateQueued, stateAbandoned) {
			return
		}
	}
	reqPool.Put(r)
}

// complete publishes r's result; called by the shard after the sync.
func (r *Request) complete(err error) {
	r.rt.err = err
	if r.rt.state.CompareAndSwap(stateQueued, stateDone) {
		select {
		case r.rt.done <- struct{}{}:
		default:
		}
		return
	}
	if r.rt.state.Load() == stateDone {
		return // acknowledged early by the broken test mode (ackBeforeSync)
	}
	// Abandoned by its waiter: it is ours to recycle.
	r.rt.state.Store(stateIdle)
	reqPool.Put(r)
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
