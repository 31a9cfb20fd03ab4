package main

import (
	"bytes"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// metrics scrapes GET /metrics with the admin token as Prometheus sends
// it and parses the answer.
func (s *server) metrics() map[string]*dto.MetricFamily {
	s.t.Helper()
	res := s.do(req{method: "GET", path: "/metrics", admin: true, noToken: true,
		headers: map[string]string{"Authorization": "Bearer test-admin"}})
	if res.status != 200 {
		s.t.Fatalf("GET /metrics: %d %s", res.status, res.body)
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(res.body))
	if err != nil {
		s.t.Fatalf("parsing /metrics: %v\n%s", err, res.body)
	}
	return mfs
}

// durationCount returns the count of the REST answer time series with
// these labels (0: none).
func durationCount(mfs map[string]*dto.MetricFamily, endpoint, method, status string) uint64 {
	for _, m := range mfs["exchanged_http_request_duration_seconds"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		if l["endpoint"] == endpoint && l["method"] == method && l["status"] == status {
			return m.GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// histCount sums a histogram's series' counts.
func histCount(mfs map[string]*dto.MetricFamily, name string) uint64 {
	var n uint64
	for _, m := range mfs[name].GetMetric() {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}

// metricValue sums a counter's or gauge's series.
func metricValue(mfs map[string]*dto.MetricFamily, name string) float64 {
	var v float64
	for _, m := range mfs[name].GetMetric() {
		v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return v
}

// TestOperatorEndpoints: after a few orders, GET /metrics on the admin
// listener refuses a scrape without the token, takes it in either form,
// and shows the orders' answer times, journal commits, WAL syncs and the
// resting orders; /healthz and /readyz answer without a token.
func TestOperatorEndpoints(t *testing.T) {
	s := startServer(t, "")
	for i := 0; i < 3; i++ {
		s.post(&userA, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.01", "30000", ""), nil)
	}
	if res := s.do(req{method: "GET", path: "/metrics", admin: true, noToken: true}); res.status != 401 {
		t.Errorf("GET /metrics without the token: %d %s, want 401", res.status, res.body)
	}
	if res := s.do(req{method: "GET", path: "/metrics", admin: true}); res.status != 200 || !bytes.Contains(res.body, []byte("# TYPE exchanged_")) {
		t.Errorf("GET /metrics with X-Admin-Token: %d %.200s", res.status, res.body)
	}
	m := s.metrics() // Authorization: Bearer
	if n := durationCount(m, "/api/v3/order", "POST", "200"); n < 3 {
		t.Errorf("exchanged_http_request_duration_seconds for POST /api/v3/order 200: count %d, want >= 3", n)
	}
	for _, name := range []string{"exchanged_journal_commit_seconds", "exchanged_wal_fsync_seconds"} {
		if n := histCount(m, name); n == 0 {
			t.Errorf("%s_count is 0", name)
		}
	}
	if v := metricValue(m, "exchanged_orders_resting"); v < 3 {
		t.Errorf("exchanged_orders_resting: %v, want >= 3", v)
	}
	// a contract position each for A and B
	s.post(&userA, "/capi/v3/order", `{"symbol":"BTCUSDT","side":"BUY","positionSide":"LONG","type":"LIMIT","quantity":"0.1","price":"30000"}`, nil)
	s.post(&userB, "/capi/v3/order", `{"symbol":"BTCUSDT","side":"SELL","positionSide":"SHORT","type":"LIMIT","quantity":"0.1","price":"30000"}`, nil)
	if v := metricValue(s.metrics(), "exchanged_positions_open"); v != 2 {
		t.Errorf("exchanged_positions_open: %v, want 2", v)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if res := s.do(req{method: "GET", path: p, admin: true, noToken: true}); res.status != 200 || string(res.body) != `{"status":"ok"}` {
			t.Errorf("GET %s without a token: %d %s", p, res.status, res.body)
		}
	}
}
