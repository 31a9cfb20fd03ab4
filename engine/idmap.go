package engine

// idmap maps non-zero uint64 keys to int32 values: open addressing with
// linear probing and backward-shift deletion (no tombstones), Fibonacci
// hashing, kept at most half full (a miss or a delete scans a cluster:
// about 2.5 slots at 1/2, 8.5 at 3/4). A key and its value share a slot,
// so a lookup touches one cache line. It replaces Go maps on the matching
// path, where they cost about half of every command; it allocates only to
// grow.
type idmap struct {
	slots []slot
	shift uint // 64 - log2(len(slots))
	n     int
}

type slot struct {
	key uint64 // 0: empty
	val int32
}

const fib = 0x9E3779B97F4A7C15

func (m *idmap) home(k uint64) uint64 { return (k * fib) >> m.shift }

func (m *idmap) get(k uint64) (int32, bool) {
	if m.n == 0 {
		return 0, false
	}
	s := m.slots
	mask := uint64(len(s) - 1)
	for i := m.home(k); ; i = (i + 1) & mask {
		switch e := &s[i]; e.key {
		case k:
			return e.val, true
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
	if (m.n+1)*2 > len(m.slots) {
		m.grow()
	}
	s := m.slots
	mask := uint64(len(s) - 1)
	for i := m.home(k); ; i = (i + 1) & mask {
		switch e := &s[i]; e.key {
		case k:
			e.val = v
			return
		case 0:
			e.key, e.val = k, v
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
	s := m.slots
	mask := uint64(len(s) - 1)
	i := m.home(k)
	for ; s[i].key != k; i = (i + 1) & mask {
		if s[i].key == 0 {
			return false
		}
	}
	// Shift back every following entry whose home slot is not between the
	// hole and itself, so lookups never meet a gap before their key.
	for j := (i + 1) & mask; s[j].key != 0; j = (j + 1) & mask {
		if h := m.home(s[j].key); (j-h)&mask >= (j-i)&mask {
			s[i] = s[j]
			i = j
		}
	}
	s[i] = slot{}
	m.n--
	return true
}

func (m *idmap) grow() {
	old := m.slots
	size := 2 * len(old)
	if size < 16 {
		size = 16
	}
	m.slots, m.n = make([]slot, size), 0
	m.shift = 64
	for s := size; s > 1; s >>= 1 {
		m.shift--
	}
	for _, e := range old {
		if e.key != 0 {
			m.put(e.key, e.val)
		}
	}
}

// len returns the number of keys.
func (m *idmap) len() int { return m.n }

// each calls f for every key and value, in slot order.
func (m *idmap) each(f func(k uint64, v int32) error) error {
	for _, e := range m.slots {
		if e.key != 0 {
			if err := f(e.key, e.val); err != nil {
				return err
			}
		}
	}
	return nil
}
