package edge

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/weexcore/exchange/journal"
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

// upper returns bucket i's exclusive upper bound in µs (0: unbounded).
func latUpper(i int) int64 {
	switch {
	case i < latFine:
		return int64(time.Duration(i+1) * latFineW / time.Microsecond)
	case i < latFine+latCoarse:
		return int64((time.Duration(latFine)*latFineW + time.Duration(i-latFine+1)*latCoarseW) / time.Microsecond)
	}
	return 0
}

// appendJSON appends the non-empty buckets as [[upperUs, count], ...]
// (upperUs 0: one second or more).
func (h *latencyHist) appendJSON(b []byte) []byte {
	b = append(b, '[')
	n := 0
	for i := range h.n {
		if c := h.n[i].Load(); c != 0 {
			b = appendBucket(b, n, latUpper(i), c)
			n++
		}
	}
	return append(b, ']')
}

// appendWALSyncs appends the WAL fsync latencies in the same form.
func appendWALSyncs(b []byte, bs []journal.LatencyBucket) []byte {
	b = append(b, '[')
	for i, x := range bs {
		b = appendBucket(b, i, x.Upper.Microseconds(), x.Count)
	}
	return append(b, ']')
}

// appendBucket appends the i-th bucket [upperUs, count] of a list.
func appendBucket(b []byte, i int, upperUs int64, count uint64) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	b = append(b, '[')
	b = strconv.AppendInt(b, upperUs, 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, count, 10)
	return append(b, ']')
}
