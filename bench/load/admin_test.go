package load

import (
	"testing"
	"time"
)

// TestMetricsQuantile: a step's counts are the difference of two reads,
// and quantiles are the upper bounds of the buckets that hold them.
func TestMetricsQuantile(t *testing.T) {
	before := Metrics{RESTLatency: Hist{50: 10, 100: 5}, WALSync: Hist{200: 3}}
	after := Metrics{RESTLatency: Hist{50: 10, 100: 95, 350: 9, 11000: 1, 0: 0}, WALSync: Hist{200: 5, 300: 1}}
	m := after.Since(before)
	d := m.RESTLatency
	if d.Count() != 100 || m.WALSync.Count() != 3 {
		t.Fatalf("Since: %d answers, %d syncs; want 100, 3", d.Count(), m.WALSync.Count())
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
	slow := Hist{50: 1, 0: 1}
	if got := slow.Quantile(1); got != -1 {
		t.Errorf("quantile in the unbounded bucket: got %v, want -1", got)
	}
	if got := (Hist{}).Quantile(0.5); got != -1 {
		t.Errorf("no answers: got %v, want -1", got)
	}
}
