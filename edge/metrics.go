package edge

import (
	"bytes"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/valyala/fasthttp"
)

// durationBuckets suit a service that answers in 0.1 to 20 ms: fine
// around the sync slot and one fdatasync, coarse beyond.
var durationBuckets = []float64{50e-6, 100e-6, 200e-6, 300e-6, 500e-6, 750e-6, 1e-3, 1.5e-3, 2e-3, 3e-3,
	5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 250e-3, 1, 2.5}

// newRegistry returns the registry GET /metrics writes: the REST answer
// times, the Go runtime's and the process's collectors; Start adds the
// node's.
func newRegistry() (*prometheus.Registry, *prometheus.HistogramVec) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "exchanged_http_request_duration_seconds",
		Help: "REST answer times, from the routed request to the response ready to write " +
			"(for a command: decoding, authentication, the durable sync, encoding).",
		Buckets: durationBuckets,
	}, []string{"endpoint", "method", "status"})
	reg.MustRegister(h, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg, h
}

// statuses are the statuses the REST edge answers with; each has an
// observer slot per endpoint, and any other status the last slot.
var statuses = [...]int{200, 400, 401, 403, 404, 405, 413, 429, 500, 503}

// observers holds an endpoint's histogram series, one per status,
// resolved on first use (WithLabelValues allocates its label values), so
// that an answer is observed without allocating and only series that
// occurred are exported.
type observers struct {
	h     *prometheus.HistogramVec
	slots [len(statuses) + 1]atomic.Pointer[observer]
}

type observer struct{ prometheus.Observer }

// observe records how long the request that started at start took, under
// ep's route and the response's status.
func (s *Server) observe(ctx *fasthttp.RequestCtx, ep *endpoint, start time.Time) {
	d := time.Since(start)
	code := ctx.Response.StatusCode()
	i := len(statuses)
	for j, c := range statuses {
		if c == code {
			i = j
			break
		}
	}
	o := ep.obs.slots[i].Load()
	if o == nil {
		status := "other"
		if i < len(statuses) {
			status = strconv.Itoa(code)
		}
		ep.obs.slots[i].CompareAndSwap(nil, &observer{ep.obs.h.WithLabelValues(ep.path, ep.method, status)})
		o = ep.obs.slots[i].Load()
	}
	o.Observe(d.Seconds())
}

// handleMetrics writes the registry in Prometheus's text format.
func handleMetrics(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	mfs, err := s.registry.Gather()
	if err != nil { // a collector failed: the others are still written
		s.log.Warn("edge: metrics: a collector failed", "err", err)
	}
	w := bytes.NewBuffer(st.buf)
	enc := expfmt.NewEncoder(w, expfmt.FmtText)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			s.log.Error("edge: metrics: encoding failed", "err", err)
			return errInternal
		}
	}
	st.buf = w.Bytes()
	return nil
}

var statusOK = []byte(`{"status":"ok"}`)

// handleHealthz answers while the process serves at all.
func handleHealthz(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	st.buf = append(st.buf, statusOK...)
	return nil
}

// handleReadyz answers 200 once Start has taken the node (its journal
// replayed, the config's users registered) and until Shutdown.
func handleReadyz(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	if !s.ready.Load() || !s.replReady() {
		return errNotReady
	}
	st.buf = append(st.buf, statusOK...)
	return nil
}
