package load

import (
	"maps"
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

// TestParseMetrics: the REST histogram's series are summed, cumulative
// buckets become counts per bucket with µs bounds, and what lies above
// the last bound is the unbounded bucket (0).
func TestParseMetrics(t *testing.T) {
	text := `# TYPE exchanged_http_request_duration_seconds histogram
exchanged_http_request_duration_seconds_bucket{endpoint="/api/v3/order",method="POST",status="200",le="0.0005"} 3
exchanged_http_request_duration_seconds_bucket{endpoint="/api/v3/order",method="POST",status="200",le="0.001"} 10
exchanged_http_request_duration_seconds_bucket{endpoint="/api/v3/order",method="POST",status="200",le="+Inf"} 11
exchanged_http_request_duration_seconds_sum{endpoint="/api/v3/order",method="POST",status="200"} 0.01
exchanged_http_request_duration_seconds_count{endpoint="/api/v3/order",method="POST",status="200"} 11
exchanged_http_request_duration_seconds_bucket{endpoint="other",method="GET",status="404",le="0.0005"} 2
exchanged_http_request_duration_seconds_bucket{endpoint="other",method="GET",status="404",le="0.001"} 2
exchanged_http_request_duration_seconds_bucket{endpoint="other",method="GET",status="404",le="+Inf"} 2
exchanged_http_request_duration_seconds_sum{endpoint="other",method="GET",status="404"} 0.0001
exchanged_http_request_duration_seconds_count{endpoint="other",method="GET",status="404"} 2
# TYPE exchanged_wal_fsync_seconds histogram
exchanged_wal_fsync_seconds_bucket{le="0.0001"} 0
exchanged_wal_fsync_seconds_bucket{le="0.0002"} 4
exchanged_wal_fsync_seconds_bucket{le="0.0003"} 5
exchanged_wal_fsync_seconds_bucket{le="+Inf"} 5
exchanged_wal_fsync_seconds_sum 0.001
exchanged_wal_fsync_seconds_count 5
`
	m, err := ParseMetrics([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Hist{500: 5, 1000: 7, 0: 1}); !maps.Equal(m.RESTLatency, want) {
		t.Errorf("REST: got %v, want %v", m.RESTLatency, want)
	}
	if want := (Hist{100: 0, 200: 4, 300: 1, 0: 0}); !maps.Equal(m.WALSync, want) {
		t.Errorf("WAL syncs: got %v, want %v", m.WALSync, want)
	}
	if got := m.RESTLatency.Quantile(0.5); got != time.Millisecond {
		t.Errorf("REST p50: got %v, want 1ms", got)
	}
	if got := m.WALSync.Top(); got != 300*time.Microsecond {
		t.Errorf("WAL syncs' top bound: got %v, want 300µs", got)
	}
}
