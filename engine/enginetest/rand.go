package enginetest

// Rand is a small seeded generator (SplitMix64) for test command streams:
// deterministic for a seed on every platform and Go version.
type Rand struct{ s uint64 }

// NewRand returns a generator seeded with seed.
func NewRand(seed uint64) *Rand { return &Rand{s: seed} }

// Uint64 returns the next value.
func (r *Rand) Uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Int64N returns a value in [0, n) for n > 0 (the modulo bias is
// irrelevant for test streams).
func (r *Rand) Int64N(n int64) int64 { return int64(r.Uint64() % uint64(n)) }

// IntN returns a value in [0, n) for n > 0.
func (r *Rand) IntN(n int) int { return int(r.Uint64() % uint64(n)) }
