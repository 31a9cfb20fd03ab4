package engine

import (
	"math/rand/v2"
	"testing"
)

// TestIDText checks generated client ids made by adding 1024 to the last
// one against a conversion: runs of consecutive ids across carries and
// digit-count changes, and gaps.
func TestIDText(t *testing.T) {
	var g idText
	check := func(id int64) {
		t.Helper()
		if got, want := *g.next(id), generatedClientID(id); got != want {
			t.Fatalf("id %d: got %q %v, want %q", id, got.String(), got.B, want.String())
		}
	}
	for _, start := range []int64{1, 7<<10 | 3, 9_999_000, 99_999_000, 1e15 - 1e6, 1<<53 - 1<<22} {
		for id := start; id < start+5000<<10; id += idStep {
			check(id)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		if id := int64(r.Uint64N(1 << 53)); id > 0 {
			check(id)
			check(id + idStep)
		}
	}
}
