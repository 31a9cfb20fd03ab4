package engine

import (
	"math/rand/v2"
	"testing"
)

// TestIDMap checks idmap against a Go map under random puts and deletes,
// with keys drawn from a small range so probe chains collide and wrap.
func TestIDMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var m idmap
	ref := map[uint64]int32{}
	for i := 0; i < 200000; i++ {
		k := 1 + r.Uint64N(3000)
		switch r.IntN(3) {
		case 0, 1:
			v := r.Int32()
			m.put(k, v)
			ref[k] = v
		default:
			_, want := ref[k]
			if got := m.del(k); got != want {
				t.Fatalf("step %d: del(%d) = %v, want %v", i, k, got, want)
			}
			delete(ref, k)
		}
		if m.len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", i, m.len(), len(ref))
		}
		if i%1000 == 0 {
			for k := uint64(1); k <= 3000; k++ {
				v, ok := m.get(k)
				w, wok := ref[k]
				if ok != wok || v != w {
					t.Fatalf("step %d: get(%d) = %d,%v, want %d,%v", i, k, v, ok, w, wok)
				}
			}
		}
	}
}
