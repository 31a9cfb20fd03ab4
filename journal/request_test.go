package journal

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
		r := acquireRequest()
		r.rt.state.Store(stateQueued) // as push does
		r.rt.refs.Add(1)
		if err := r.Wait(time.Now()); err != ErrTimeout {
			t.Fatalf("Wait with a past deadline: got %v, want ErrTimeout", err)
		}
		first, second := r.complete, func(error) { releaseRequest(r) }
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
		if st := r.rt.state.Load(); st != stateAbandoned {
			t.Fatalf("shardFirst=%v: state %d, want abandoned (the late result is not delivered)", shardFirst, st)
		}
	}
}
