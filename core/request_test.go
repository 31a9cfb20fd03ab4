package core

import (
	"testing"
	"time"
)

// TestAbandonedRequestRecycledOnce: after a Wait times out, the shard's
// completion and the caller's release may come in either order; the
// request goes back to the pool once, when the last of them drops its
// reference (a second put would hand one request to two callers).
func TestAbandonedRequestRecycledOnce(t *testing.T) {
	for _, shardFirst := range []bool{true, false} {
		r := AcquireRequest()
		r.rt.state.Store(r.rt.state.Load()&^stateMask | stateQueued) // as push does
		r.rt.refs.Add(1)
		if err := r.Wait(time.Now()); err != ErrTimeout {
			t.Fatalf("Wait with a past deadline: got %v, want ErrTimeout", err)
		}
		first, second := r.complete, func(error) { ReleaseRequest(r) }
		if !shardFirst {
			first, second = second, first
		}
		first(nil)
		if got := r.rt.refs.Load(); got != 1 {
			t.Fatalf("shardFirst=%v: after the first release refs = %d, want 1 (not yet recycled)", shardFirst, got)
		}
		second(nil)
		if got := r.rt.refs.Load(); got != 0 {
			t.Fatalf("shardFirst=%v: after both refs = %d, want 0 (recycled once)", shardFirst, got)
		}
		if st := r.rt.state.Load() & stateMask; st != stateAbandoned {
			t.Fatalf("shardFirst=%v: state %d, want abandoned (the late result is not delivered)", shardFirst, st)
		}
	}
}

// TestDeadlineWatchSkipsLaterUse: the deadline watch holds a pointer to a
// request it was given for one use; once that use is over and the request
// is queued again (pooled requests are reused), the watch must not abandon
// the new use with the old use's deadline.
func TestDeadlineWatchSkipsLaterUse(t *testing.T) {
	r := AcquireRequest()
	queue := func() uint64 { // as push does
		w := r.rt.state.Load()&^stateMask | stateQueued
		r.rt.state.Store(w)
		r.rt.refs.Add(1)
		return w
	}
	first := queue()
	deadlines.watch(r, first, time.Now().Add(-time.Second)) // a past deadline
	r.complete(nil)                                         // the first use is answered before the watch looks
	<-r.rt.done
	r.reset() // the next use (as acquireRequest does)
	next := queue()
	time.Sleep(5 * waitTick)
	if got := r.rt.state.Load(); got != next {
		t.Fatalf("state %#x after the watch looked, want %#x (the next use, still queued)", got, next)
	}
	select {
	case <-r.rt.done:
		t.Fatal("the watch signalled the next use")
	default:
	}
	r.complete(nil)
	if err := r.Wait(time.Now().Add(time.Second)); err != nil {
		t.Fatalf("Wait of the next use: %v", err)
	}
	ReleaseRequest(r)
}
