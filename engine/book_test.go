package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSideFind checks find, insert and delete on both sides against a
// sorted slice, with levels both one tick apart and scattered.
func TestSideFind(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, ask := range []bool{false, true} {
		s := newSide(ask)
		var want []Price // best last
		for i := 0; i < 20000; i++ {
			p := Price(1000 + r.IntN(40))
			if r.IntN(4) == 0 {
				p = Price(1 + r.IntN(5000))
			}
			wi := len(want)
			for j, q := range want {
				if ask && q <= p || !ask && q >= p {
					wi = j
					break
				}
			}
			wok := wi < len(want) && want[wi] == p
			gi, gok := s.find(p)
			if gi != wi || gok != wok {
				t.Fatalf("ask=%v step %d: find(%d) = %d,%v, want %d,%v (levels %v)", ask, i, p, gi, gok, wi, wok, want)
			}
			switch {
			case !wok:
				s.insert(gi, p, lvHandle(p))
				want = slices.Insert(want, wi, p)
			case r.IntN(2) == 0:
				s.delete(p)
				want = slices.Delete(want, wi, wi+1)
			}
			if b, ok := s.bestPrice(); ok != (len(want) > 0) || ok && b != want[len(want)-1] {
				t.Fatalf("ask=%v step %d: bestPrice = %d,%v, want last of %v", ask, i, b, ok, want)
			}
		}
	}
}
