package edge

import (
	"bytes"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/weexcore/exchange/config"
)

// scrape serves GET /metrics with the given header and parses the answer.
func scrape(t *testing.T, s *Server, header, value string) map[string]*dto.MetricFamily {
	t.Helper()
	ctx := requestCtx("GET", "/metrics", "")
	ctx.Request.Header.Set(header, value)
	s.serveAdmin(ctx)
	if c := ctx.Response.StatusCode(); c != 200 {
		t.Fatalf("GET /metrics with %s: %d %s", header, c, ctx.Response.Body())
	}
	if ct := string(ctx.Response.Header.ContentType()); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(ctx.Response.Body()))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, ctx.Response.Body())
	}
	return mfs
}

// durationCount returns the count of the request duration series with
// these labels (0 if there is none).
func durationCount(mfs map[string]*dto.MetricFamily, endpoint, method, status string) uint64 {
	mf := mfs["exchanged_http_request_duration_seconds"]
	if mf == nil {
		return 0
	}
next:
	for _, m := range mf.Metric {
		want := map[string]string{"endpoint": endpoint, "method": method, "status": status}
		for _, l := range m.Label {
			if want[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}

// TestMetrics: REST answers are observed under their route, method and
// status (unknown paths as "other", methods outside the API's as
// "other"), next to the node's series, and the admin token is taken in
// either form.
func TestMetrics(t *testing.T) {
	s := openTestServer(t)
	for _, r := range []struct {
		method, uri string
		n           int
	}{
		{"GET", "/api/v3/time", 3},
		{"POST", "/api/v3/order", 2},
		{"GET", "/api/v3/nothing", 1},
		{"PROPFIND", "/api/v3/nothing", 1},
		{"PUT", "/api/v3/order", 1},
	} {
		for i := 0; i < r.n; i++ {
			s.serveREST(signedCtx(r.method, r.uri, `{"symbol":"BTCUSDT","side":"BUY","type":"LIMIT","quantity":"0.01","price":"100"}`))
		}
	}
	mfs := scrape(t, s, "Authorization", "Bearer "+string(s.adminToken))
	for _, c := range []struct {
		endpoint, method, status string
		want                     uint64
	}{
		{"/api/v3/time", "GET", "200", 3},
		{"/api/v3/order", "POST", "200", 2},
		{"other", "GET", "404", 1},
		{"other", "other", "404", 1},
		{"/api/v3/order", "PUT", "405", 1},
	} {
		if got := durationCount(mfs, c.endpoint, c.method, c.status); got != c.want {
			t.Errorf("exchanged_http_request_duration_seconds{endpoint=%q,method=%q,status=%q}: count %d, want %d", c.endpoint, c.method, c.status, got, c.want)
		}
	}
	for _, name := range []string{"exchanged_ring_depth", "exchanged_orders_resting", "exchanged_journal_commit_seconds", "exchanged_wal_fsync_seconds", "exchanged_rejects_total", "go_goroutines"} {
		if mfs[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	mfs = scrape(t, s, "X-Admin-Token", string(s.adminToken))
	if durationCount(mfs, "/api/v3/time", "GET", "200") != 3 {
		t.Errorf("with X-Admin-Token: the series differ")
	}
	for _, h := range [][2]string{{"", ""}, {"Authorization", "Bearer wrong"}, {"Authorization", string(s.adminToken)}, {"X-Admin-Token", "Bearer " + string(s.adminToken)}} {
		ctx := requestCtx("GET", "/metrics", "")
		if h[0] != "" {
			ctx.Request.Header.Set(h[0], h[1])
		}
		s.serveAdmin(ctx)
		if ctx.Response.StatusCode() != 401 {
			t.Errorf("GET /metrics with %q: %d, want 401", h, ctx.Response.StatusCode())
		}
	}
}

// TestReadiness: before Start the probes and metrics answer, readiness
// 503 and the admin API 503; after Start, 200; after Shutdown, 503.
func TestReadiness(t *testing.T) {
	cfg, err := config.ParseConfig(config.Default)
	if err != nil {
		t.Fatal(err)
	}
	s, close := openServer(t, cfg, t.TempDir())
	// a second edge on nothing, as it is while the node replays
	early, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	get := func(s *Server, path string, token bool) (int, string) {
		ctx := requestCtx("GET", path, "")
		if token {
			ctx.Request.Header.SetBytesV("X-Admin-Token", s.adminToken)
		}
		s.serveAdmin(ctx)
		return ctx.Response.StatusCode(), string(ctx.Response.Body())
	}
	for _, c := range []struct {
		s      *Server
		path   string
		token  bool
		status int
	}{
		{early, "/healthz", false, 200},
		{early, "/readyz", false, 503},
		{early, "/metrics", true, 200},
		{early, "/admin/v1/state", true, 503},
		{s, "/healthz", false, 200},
		{s, "/readyz", false, 200},
		{s, "/admin/v1/state", true, 200},
		{s, "/admin/v1/state", false, 401},
	} {
		status, body := get(c.s, c.path, c.token)
		if status != c.status {
			t.Errorf("%s (started %v): got %d %s, want %d", c.path, c.s == s, status, body, c.status)
		}
		if c.status == 200 && (c.path == "/healthz" || c.path == "/readyz") && body != `{"status":"ok"}` {
			t.Errorf("%s: body %s", c.path, body)
		}
	}
	close()
	if status, _ := get(s, "/readyz", false); status != 503 {
		t.Errorf("/readyz after Shutdown: %d, want 503", status)
	}
}
