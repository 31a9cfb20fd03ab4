package core

import (
	"runtime"
	"sync/atomic"
	"time"
)

// ring is a bounded lock-free multi-producer single-consumer queue of
// *Request (Vyukov's bounded queue, specialised to one consumer).
//
// Every slot carries a sequence number. For the lap that starts at position
// p, a slot is free for a producer when seq == p and holds a value for the
// consumer when seq == p+1; the consumer hands it to the next lap by storing
// p+size. Producers claim a position by CAS on tail; the consumer alone
// advances head, so it needs no CAS.
//
// Parking: the consumer spins briefly when it finds nothing, then sets
// sleeping and re-checks before blocking on wake. A producer, after
// publishing its slot, loads sleeping and sends on wake only when it is set,
// so a busy consumer costs producers one atomic load. The store of sleeping
// and the producer's publication are sequentially consistent atomics, so
// either the consumer's re-check sees the value or the producer sees
// sleeping == 1: no wake-up is lost.
type ring struct {
	_    [64]byte
	tail atomic.Uint64 // next position producers claim
	_    [56]byte
	head uint64 // next position the consumer reads (consumer only)
	// drained is head as of the consumer's last drain, for depth
	drained atomic.Uint64
	_       [48]byte
	// sleeping is 1 while the consumer is parked or about to park.
	sleeping atomic.Int32
	_        [60]byte
	mask     uint64
	slots    []slot
	wake     chan struct{} // capacity 1
}

type slot struct {
	seq atomic.Uint64
	r   *Request
	_   [48]byte // one slot per cache line: producers do not share lines
}

func newRing(size int) *ring {
	if size <= 0 {
		size = 4096
	}
	n := 1
	for n < size {
		n <<= 1
	}
	q := &ring{mask: uint64(n - 1), slots: make([]slot, n), wake: make(chan struct{}, 1)}
	for i := range q.slots {
		q.slots[i].seq.Store(uint64(i))
	}
	return q
}

// push appends r; it returns false at once when the ring is full.
func (q *ring) push(r *Request) bool {
	pos := q.tail.Load()
	for {
		s := &q.slots[pos&q.mask]
		seq := s.seq.Load()
		switch d := int64(seq - pos); {
		case d == 0:
			if q.tail.CompareAndSwap(pos, pos+1) {
				s.r = r
				s.seq.Store(pos + 1) // publishes r
				if q.sleeping.Load() != 0 && q.sleeping.CompareAndSwap(1, 0) {
					select {
					case q.wake <- struct{}{}:
					default:
					}
				}
				return true
			}
			pos = q.tail.Load()
		case d < 0:
			return false // the slot still holds a value from the previous lap: full
		default:
			pos = q.tail.Load() // another producer took pos
		}
	}
}

// pop removes the oldest published value, or returns nil when there is none
// (or the oldest claimed slot is not yet published). Consumer only.
func (q *ring) pop() *Request {
	s := &q.slots[q.head&q.mask]
	if s.seq.Load() != q.head+1 {
		return nil
	}
	r := s.r
	s.r = nil
	s.seq.Store(q.head + q.mask + 1) // free for the next lap
	q.head++
	return r
}

// empty reports whether nothing is claimed past head. Consumer only.
func (q *ring) empty() bool { return q.tail.Load() == q.head }

// drain appends up to max values to dst. Consumer only.
func (q *ring) drain(dst []*Request, max int) []*Request {
	for len(dst) < max {
		r := q.pop()
		if r == nil {
			break
		}
		dst = append(dst, r)
	}
	if len(dst) > 0 {
		q.drained.Store(q.head)
	}
	return dst
}

// depth returns how many requests wait in the ring (as of the consumer's
// last drain; any goroutine).
func (q *ring) depth() uint64 {
	t, d := q.tail.Load(), q.drained.Load()
	if t < d {
		return 0
	}
	return t - d
}

// spinFor is how long an idle consumer polls before it parks: long enough
// to catch the next request of a steady stream without a wake-up (a futex
// wake of a parked thread costs tens of microseconds on a VM), short
// enough that an idle shard costs nothing.
const spinFor = 50 * time.Microsecond

// idle is called when the ring was found empty; it yields the processor and
// reports true when the consumer has spun for spinFor and should park.
// *since holds when the idle period started (0: it just started).
func (q *ring) idle(since *int64) bool {
	now := nanotime()
	if *since == 0 {
		*since = now
	}
	if now-*since >= int64(spinFor) {
		*since = 0
		return true
	}
	runtime.Gosched()
	return false
}

var epoch = time.Now()

func nanotime() int64 { return int64(time.Since(epoch)) }

// park blocks until a producer pushes or tick fires (tick may be nil).
// Consumer only.
func (q *ring) park(tick <-chan struct{}) {
	q.sleeping.Store(1)
	if !q.empty() {
		q.sleeping.Store(0)
		return
	}
	select {
	case <-q.wake:
	case <-tick:
	}
	q.sleeping.Store(0)
}

// kick wakes the consumer whatever it is doing (used by the node for
// barriers and shutdown).
func (q *ring) kick() {
	q.sleeping.Store(0)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
