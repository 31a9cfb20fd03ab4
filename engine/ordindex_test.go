package engine

import "testing"

// TestOrdIndex checks the order index against a map under random churn
// with long-lived orders (which overflow), window growth, and lookups of
// ids that are not indexed: absent, already removed, of another market
// with the same sequence number, zero and negative.
func TestOrdIndex(t *testing.T) {
	var p pool
	var x ordIndex
	want := map[int64]handle{}
	const market = 7
	rnd := uint64(1)
	next := func() uint64 { // SplitMix64
		rnd += 0x9E3779B97F4A7C15
		z := rnd
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		return z ^ z>>31
	}
	var live []int64
	n := int64(0)
	for step := 0; step < 300_000; step++ {
		switch r := next(); {
		case r%100 < 55 || len(live) == 0: // place
			n++
			id := n<<10 | market
			h := p.alloc()
			p.get(h).id = id
			x.put(&p, id, h)
			want[id] = h
			if n%97 != 0 { // every 97th order works forever
				live = append(live, id)
			}
		default: // remove a random working order; the oldest ones live on
			k := int(next() % uint64(len(live)))
			if r%7 == 0 {
				k = len(live) - 1 - k/8 // mostly recent ones
			}
			id := live[k]
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
			h := want[id]
			x.del(id, h)
			p.release(h)
			delete(want, id)
			if got := x.get(&p, id); got != 0 {
				t.Fatalf("step %d: removed order %d still found as %d", step, id, got)
			}
		}
		if step%1000 == 0 {
			if x.len() != len(want) {
				t.Fatalf("step %d: len %d, want %d", step, x.len(), len(want))
			}
			for id, h := range want {
				if got := x.get(&p, id); got != h {
					t.Fatalf("step %d: get(%d) = %d, want %d", step, id, got, h)
				}
				if got := x.get(&p, id^1); got != 0 { // another market's order n
					t.Fatalf("step %d: get(%d) = %d, want 0", step, id^1, got)
				}
			}
		}
	}
	for _, id := range []int64{0, -1, -(1 << 20), (n+1)<<10 | market} {
		if got := x.get(&p, id); got != 0 {
			t.Errorf("get(%d) = %d, want 0", id, got)
		}
	}
	if x.over.len() == 0 {
		t.Errorf("no order overflowed its slot: the test does not reach the overflow path")
	}
}
