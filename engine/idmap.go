package engine

// idmap maps non-zero uint64 keys to int32 values: open addressing with
// linear probing and backward-shift deletion (no tombstones), Fibonacci
// hashing, kept at most 3/4 full. It replaces Go maps on the matching path,
// where they cost about half of every command; it allocates only to grow.
type idmap struct {
	keys  []uint64 // 0 is an empty slot
	vals  []int32
	shift uint // 64 - log2(len(keys))
	n     int
}

const fib = 0x9E3779B97F4A7C15

func (m *idmap) slot(k uint64) uint64 { return (k * fib) >> m.shift }

func (m *idmap) get(k uint64) (int32, bool) {
	if m.n == 0 {
		return 0, false
	}
	mask := uint64(len(m.keys) - 1)
	for i := m.slot(k); ; i = (i + 1) & mask {
		switch m.keys[i] {
		case k:
			return m.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// put sets k to v.
func (m *idmap) put(k uint64, v int32) {
	if k == 0 {
		panic("engine: idmap key 0")
	}
	if (m.n+1)*4 > len(m.keys)*3 {
		m.grow()
	}
	mask := uint64(len(m.keys) - 1)
	for i := m.slot(k); ; i = (i + 1) & mask {
		switch m.keys[i] {
		case k:
			m.vals[i] = v
			return
		case 0:
			m.keys[i], m.vals[i] = k, v
			m.n++
			return
		}
	}
}

// del removes k, reporting whether it was present.
func (m *idmap) del(k uint64) bool {
	if m.n == 0 {
		return false
	}
	mask := uint64(len(m.keys) - 1)
	i := m.slot(k)
	for ; m.keys[i] != k; i = (i + 1) & mask {
		if m.keys[i] == 0 {
			return false
		}
	}
	// Shift back every following entry whose home slot is not between the
	// hole and itself, so lookups never meet a gap before their key.
	for j := (i + 1) & mask; m.keys[j] != 0; j = (j + 1) & mask {
		if h := m.slot(m.keys[j]); (j-h)&mask >= (j-i)&mask {
			m.keys[i], m.vals[i] = m.keys[j], m.vals[j]
			i = j
		}
	}
	m.keys[i] = 0
	m.n--
	return true
}

func (m *idmap) grow() {
	keys, vals := m.keys, m.vals
	size := 2 * len(keys)
	if size < 16 {
		size = 16
	}
	m.keys, m.vals, m.n = make([]uint64, size), make([]int32, size), 0
	m.shift = 64
	for s := size; s > 1; s >>= 1 {
		m.shift--
	}
	for i, k := range keys {
		if k != 0 {
			m.put(k, vals[i])
		}
	}
}

// len returns the number of keys.
func (m *idmap) len() int { return m.n }
