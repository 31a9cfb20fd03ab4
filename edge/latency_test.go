package edge

import (
	"encoding/json"
	"testing"
	"time"
)

// TestLatencyHist: each duration lands in the bucket whose bounds hold it,
// and the JSON lists exactly the non-empty buckets, bounds increasing.
func TestLatencyHist(t *testing.T) {
	var h latencyHist
	cases := []struct {
		d     time.Duration
		upper int64 // the bucket's upper bound in µs (0: unbounded)
	}{
		{-time.Microsecond, 50},
		{0, 50},
		{49 * time.Microsecond, 50},
		{50 * time.Microsecond, 100},
		{9999 * time.Microsecond, 10_000},
		{10 * time.Millisecond, 11_000},
		{10*time.Millisecond + 999*time.Microsecond, 11_000},
		{999 * time.Millisecond, 1_000_000},
		{time.Second, 0},
		{time.Hour, 0},
	}
	want := map[int64]int64{}
	for _, c := range cases {
		h.record(c.d)
		want[c.upper]++
	}
	var got [][2]int64
	if err := json.Unmarshal(appendBuckets(nil, h.buckets()), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d buckets %v, want %d: %v", len(got), got, len(want), want)
	}
	for i, b := range got {
		if want[b[0]] != b[1] {
			t.Errorf("bucket <%d µs: got %d, want %d", b[0], b[1], want[b[0]])
		}
		if i > 0 && b[0] != 0 && b[0] <= got[i-1][0] {
			t.Errorf("bounds not increasing: %v", got)
		}
	}
	if got[len(got)-1][0] != 0 {
		t.Errorf("the unbounded bucket is not last: %v", got)
	}
}
