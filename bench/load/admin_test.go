package load

import (
	"testing"
	"time"
)

// TestMetricsQuantile: a step's counts are the difference of two reads,
// and quantiles are the upper bounds of the buckets that hold them.
func TestMetricsQuantile(t *testing.T) {
	before := Metrics{RESTLatency: map[int64]uint64{50: 10, 100: 5}, JournalKeys: 7, JournalBytes: 700}
	after := Metrics{RESTLatency: map[int64]uint64{50: 10, 100: 95, 350: 9, 11000: 1, 0: 0}, JournalKeys: 107, JournalBytes: 10700}
	d := after.Since(before)
	if d.Answers() != 100 || d.JournalKeys != 100 || d.JournalBytes != 10000 {
		t.Fatalf("Since: %d answers, %d keys, %d bytes; want 100, 100, 10000", d.Answers(), d.JournalKeys, d.JournalBytes)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 100 * time.Microsecond}, {0.9, 100 * time.Microsecond}, {0.91, 350 * time.Microsecond},
		{0.99, 350 * time.Microsecond}, {1, 11 * time.Millisecond}} {
		if got := d.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v): got %v, want %v", c.q, got, c.want)
		}
	}
	slow := Metrics{RESTLatency: map[int64]uint64{50: 1, 0: 1}}
	if got := slow.Quantile(1); got != -1 {
		t.Errorf("quantile in the unbounded bucket: got %v, want -1", got)
	}
	if got := (Metrics{}).Quantile(0.5); got != -1 {
		t.Errorf("no answers: got %v, want -1", got)
	}
}
