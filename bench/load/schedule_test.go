package load

import (
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := Schedule{Start: t0, Rate: 4000, Total: 8000}
	if got, want := s.Intended(0), t0; !got.Equal(want) {
		t.Errorf("Intended(0) = %v, want %v", got, want)
	}
	if got, want := s.Intended(4000).Sub(t0), time.Second; got != want {
		t.Errorf("Intended(4000) - start = %v, want %v", got, want)
	}
	if got, want := s.Intended(1).Sub(t0), 250*time.Microsecond; got != want {
		t.Errorf("Intended(1) - start = %v, want %v", got, want)
	}
	if got, want := s.End().Sub(t0), 2*time.Second-250*time.Microsecond; got != want {
		t.Errorf("End - start = %v, want %v", got, want)
	}
	for _, c := range []struct {
		at   time.Duration
		want int64
	}{{-time.Second, 0}, {0, 1}, {time.Millisecond, 5}, {time.Second, 4001}} {
		if got := s.Due(t0.Add(c.at)); got != c.want {
			t.Errorf("Due(start%+v) = %d, want %d", c.at, got, c.want)
		}
	}
}

func TestCriteria(t *testing.T) {
	c := Criteria{MinAchieved: 0.95, MaxP99: 10 * time.Millisecond, MaxErrors: 0.01}
	mk := func(ok int64, lat time.Duration, failed int64) *Result {
		r := &Result{Rate: 1000, Duration: time.Second, Elapsed: time.Second, Scheduled: 1000, OK: ok, Failed: failed, Hist: NewHistogram(), Pacer: NewHistogram()}
		for i := int64(0); i < ok+failed; i++ {
			r.Hist.RecordValue(lat.Microseconds())
		}
		return r
	}
	if ok, why := c.Pass(mk(1000, time.Millisecond, 0)); !ok {
		t.Errorf("healthy step: got fail (%s), want pass", why)
	}
	if ok, _ := c.Pass(mk(900, time.Millisecond, 0)); ok {
		t.Errorf("90%% achieved: got pass, want fail")
	}
	if ok, _ := c.Pass(mk(1000, 20*time.Millisecond, 0)); ok {
		t.Errorf("p99 20ms: got pass, want fail")
	}
	if ok, _ := c.Pass(mk(970, time.Millisecond, 30)); ok {
		t.Errorf("3%% failed: got pass, want fail")
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		status int
		body   string
		kind   outcomeKind
		key    string
		id     int64
	}{
		{200, `{"orderId":12345,"clientOrderId":"x"}`, outcomeOK, "", 12345},
		{200, `{"symbol":"BTCUSDT","orderId":"987","status":"NEW"}`, outcomeOK, "", 987},
		{400, `{"code":-2200,"msg":"order does not exist"}`, outcomeRejected, "HTTP 400 code -2200", 0},
		{400, `{"code": -2010, "msg":"insufficient balance"}`, outcomeRejected, "HTTP 400 code -2010", 0},
		{503, `{"code":-1054,"msg":"busy"}`, outcomeFailed, "HTTP 503 code -1054", 0},
		{401, `{"code":-1047,"msg":"bad sign"}`, outcomeFailed, "HTTP 401 code -1047", 0},
		{500, `oops`, outcomeFailed, "HTTP 500", 0},
		{200, `{"foo":1}`, outcomeFailed, "HTTP 200 without orderId", 0},
	}
	for _, c := range cases {
		o := classify(c.status, []byte(c.body))
		if o.kind != c.kind || o.key != c.key || o.id != c.id {
			t.Errorf("classify(%d, %s) = {%d %q %d}, want {%d %q %d}", c.status, c.body, o.kind, o.key, o.id, c.kind, c.key, c.id)
		}
	}
}
