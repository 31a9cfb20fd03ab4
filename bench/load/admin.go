package load

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/valyala/fasthttp"
)

// Admin talks to the server's admin API (docs/API.md, "Admin API").
type Admin struct {
	Addr  string // host:port
	Token string
	c     fasthttp.Client
}

func (a *Admin) post(path string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return a.do(fasthttp.MethodPost, path, b, out)
}

// do sends one admin request (body nil: none) and decodes the answer into out.
func (a *Admin) do(method, path string, body []byte, out any) error {
	b, err := a.raw(method, path, body)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("load: admin %s: %v in %s", path, err, sample(b))
	}
	return nil
}

// raw sends one admin request (body nil: none) and returns the answer's body.
func (a *Admin) raw(method, path string, body []byte) ([]byte, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + a.Addr + path)
	req.Header.SetMethod(method)
	req.Header.Set("X-Admin-Token", a.Token)
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBody(body)
	}
	if err := a.c.DoTimeout(req, resp, 30*time.Second); err != nil {
		return nil, fmt.Errorf("load: admin %s: %v", path, err)
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return nil, fmt.Errorf("load: admin %s: HTTP %d: %s", path, resp.StatusCode(), sample(resp.Body()))
	}
	return append([]byte(nil), resp.Body()...), nil
}

// Metrics are the server's growing counters, read from its GET /metrics.
type Metrics struct {
	RESTLatency Hist // REST answers (every endpoint and status) by the server's own answer time
	WALSync     Hist // the journal's WAL fdatasyncs by duration
}

// Hist is a latency histogram: bucket upper bound in µs (0: unbounded) ->
// how many fell in the bucket (since the bucket below).
type Hist map[int64]uint64

// The Prometheus histograms Metrics reads.
const (
	metricREST    = "exchanged_http_request_duration_seconds"
	metricWALSync = "exchanged_wal_fsync_seconds"
)

// Raw returns the body of a GET of path on the admin listener.
func (a *Admin) Raw(path string) ([]byte, error) {
	return a.raw(fasthttp.MethodGet, path, nil)
}

// Metrics reads the server's counters.
func (a *Admin) Metrics() (Metrics, error) {
	b, err := a.raw(fasthttp.MethodGet, "/metrics", nil)
	if err != nil {
		return Metrics{}, err
	}
	return ParseMetrics(b)
}

// ParseMetrics reads Metrics from a Prometheus text exposition: each
// histogram's series summed (the REST one has one per endpoint, method
// and status) into buckets of their own.
func ParseMetrics(text []byte) (Metrics, error) {
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return Metrics{}, fmt.Errorf("load: metrics: %v", err)
	}
	return Metrics{RESTLatency: histOf(mfs[metricREST]), WALSync: histOf(mfs[metricWALSync])}, nil
}

// histOf sums the series of a histogram family and turns the cumulative
// buckets into counts per bucket, bounds in µs (rounded; +Inf is 0).
func histOf(mf *dto.MetricFamily) Hist {
	h := Hist{}
	if mf == nil {
		return h
	}
	for _, m := range mf.Metric {
		hm := m.GetHistogram()
		if hm == nil {
			continue
		}
		var below uint64
		bs := slices.Clone(hm.Bucket)
		slices.SortFunc(bs, func(x, y *dto.Bucket) int { return cmp.Compare(x.GetUpperBound(), y.GetUpperBound()) })
		for _, b := range bs {
			ub, c := b.GetUpperBound(), b.GetCumulativeCount()
			if math.IsInf(ub, 1) {
				continue
			}
			h[int64(math.Round(ub*1e6))] += c - below // every bound, empty or not: Top
			below = c
		}
		h[0] += hm.GetSampleCount() - below
	}
	return h
}

// Since returns the counts of m accrued after prev (an earlier read).
func (m Metrics) Since(prev Metrics) Metrics {
	return Metrics{RESTLatency: m.RESTLatency.Since(prev.RESTLatency), WALSync: m.WALSync.Since(prev.WALSync)}
}

// Since returns the counts of h accrued after prev (an earlier read),
// with every bound of h.
func (h Hist) Since(prev Hist) Hist {
	d := make(Hist, len(h))
	for ub, n := range h {
		d[ub] = n - min(n, prev[ub])
	}
	return d
}

// Top returns the highest bound of h: the unbounded bucket holds what
// took longer.
func (h Hist) Top() time.Duration {
	var top int64
	for ub := range h {
		top = max(top, ub)
	}
	return time.Duration(top) * time.Microsecond
}

// Count returns how many h counts.
func (h Hist) Count() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile returns the upper bound of the bucket holding the q-quantile
// (q in (0, 1]); -1 when h counts nothing or the quantile is in the
// unbounded bucket.
func (h Hist) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return -1
	}
	bounds := make([]int64, 0, len(h))
	for ub := range h {
		if ub != 0 {
			bounds = append(bounds, ub)
		}
	}
	slices.Sort(bounds)
	want := uint64(math.Ceil(q * float64(n)))
	var c uint64
	for _, ub := range bounds {
		if c += h[ub]; c >= want {
			return time.Duration(ub) * time.Microsecond
		}
	}
	return -1
}

// CreateUser creates a user and returns its credentials.
func (a *Admin) CreateUser() (Cred, error) {
	var r struct {
		UID        json.Number `json:"uid"`
		APIKey     string      `json:"apiKey"`
		SecretKey  string      `json:"secretKey"`
		Passphrase string      `json:"passphrase"`
	}
	if err := a.post("/admin/v1/users", map[string]any{}, &r); err != nil {
		return Cred{}, err
	}
	uid, err := strconv.ParseInt(r.UID.String(), 10, 64)
	if err != nil || r.APIKey == "" || r.SecretKey == "" {
		return Cred{}, fmt.Errorf("load: admin users: bad answer uid=%q apiKey=%q", r.UID, r.APIKey)
	}
	return Cred{UID: uid, APIKey: r.APIKey, SecretKey: r.SecretKey, Passphrase: r.Passphrase}, nil
}

// Deposit credits amount of coin to uid's spot wallet.
func (a *Admin) Deposit(uid int64, coin, amount string) error {
	return a.DepositTo(uid, "", coin, amount)
}

// DepositTo credits amount of coin to uid's wallet ("spot", "futures";
// "": spot).
func (a *Admin) DepositTo(uid int64, wallet, coin, amount string) error {
	body := map[string]any{"uid": uid, "coin": coin, "amount": amount}
	if wallet != "" {
		body["wallet"] = wallet
	}
	return a.post("/admin/v1/deposit", body, nil)
}

// Deposit is one coin amount credited to every created user, into Wallet
// ("futures" for contract margin; "": spot).
type Deposit struct{ Coin, Amount, Wallet string }

// CreateUsers creates n users with conc parallel requests and credits each
// with deposits.
func (a *Admin) CreateUsers(n, conc int, deposits []Deposit) ([]Cred, error) {
	if conc <= 0 {
		conc = 8
	}
	out := make([]Cred, n)
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	jobs := make(chan int)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				c, err := a.CreateUser()
				if err == nil {
					for _, d := range deposits {
						if err = a.DepositTo(c.UID, d.Wallet, d.Coin, d.Amount); err != nil {
							break
						}
					}
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				out[i] = c
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
		if len(errs) > 0 {
			break
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	return out, nil
}
