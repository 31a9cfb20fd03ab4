package edge

import (
	"strconv"
	"sync/atomic"
	"time"
)

// latencyHist counts how long the REST edge takes to answer, from the
// moment fasthttp hands it a parsed request to the moment the response is
// ready to write (for orders: decoding, authentication, the journal's
// durable sync, encoding). The socket's and the client's side are not in
// it, so set against a client's own latencies it tells the server's share
// from the machine's (scheduling, loopback) and the client's.
//
// Buckets: 50 µs wide below 10 ms, 1 ms wide below 1 s, then one more for
// everything slower. Counts only grow; readers diff two reads.
type latencyHist struct {
	n [latFine + latCoarse + 1]atomic.Uint64
}

const (
	latFineW   = 50 * time.Microsecond
	latFine    = int(10 * time.Millisecond / latFineW)
	latCoarseW = time.Millisecond
	latCoarse  = int((time.Second - 10*time.Millisecond) / latCoarseW)
)

func (h *latencyHist) record(d time.Duration) {
	var i int
	switch {
	case d < 0:
		i = 0
	case d < time.Duration(latFine)*latFineW:
		i = int(d / latFineW)
	case d < time.Second:
		i = latFine + int((d-time.Duration(latFine)*latFineW)/latCoarseW)
	default:
		i = latFine + latCoarse
	}
	h.n[i].Add(1)
}

// latencyBucket is one bucket: how many took less than upper (and at
// least the previous bucket's upper); upper 0 is the unbounded last one.
type latencyBucket struct {
	Upper time.Duration
	Count uint64
}

// buckets returns the non-empty buckets in order.
func (h *latencyHist) buckets() []latencyBucket {
	var out []latencyBucket
	for i := range h.n {
		if c := h.n[i].Load(); c != 0 {
			out = append(out, latencyBucket{Upper: latUpper(i), Count: c})
		}
	}
	return out
}

// latUpper returns bucket i's exclusive upper bound (0: unbounded).
func latUpper(i int) time.Duration {
	switch {
	case i < latFine:
		return time.Duration(i+1) * latFineW
	case i < latFine+latCoarse:
		return time.Duration(latFine)*latFineW + time.Duration(i-latFine+1)*latCoarseW
	}
	return 0
}

// appendBuckets appends bs as [[upperUs, count], ...] (upperUs 0:
// unbounded), the form of the admin metrics.
func appendBuckets(b []byte, bs []latencyBucket) []byte {
	b = append(b, '[')
	for i, x := range bs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, x.Upper.Microseconds(), 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, x.Count, 10)
		b = append(b, ']')
	}
	return append(b, ']')
}
