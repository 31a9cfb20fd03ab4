package engine

import (
	"math/rand/v2"
	"testing"
)

// TestMulRate checks mulRate against mulDiv, on both sides of the 64-bit
// product boundary.
func TestMulRate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		a := int64(r.Uint64N(1 << 63))
		if i%2 == 0 {
			a >>= r.UintN(63)
		}
		rate := int64(r.Uint64N(uint64(RateOne) + 1))
		gq, gok := mulRate(a, rate)
		wq, wok := mulDiv(a, rate, RateOne)
		if gq != wq || gok != wok {
			t.Fatalf("mulRate(%d, %d): got %d %v, want %d %v", a, rate, gq, gok, wq, wok)
		}
	}
}
