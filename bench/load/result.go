package load

import (
	"sort"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Result is one step's outcome.
type Result struct {
	Rate      float64       // offered arrival rate, requests/s
	Start     time.Time     // when the recorded schedule began, after any lead-in (to set against server.log)
	Duration  time.Duration // schedule length
	Elapsed   time.Duration // Start to the last response
	Scheduled int64         // requests in the recorded schedule

	Sent     int64 // requests sent (each has one latency sample)
	OK       int64 // accepted (order placed / cancelled)
	Rejected int64 // business rejects (-2xxx): legitimate under the mix
	Failed   int64 // other error responses, timeouts, transport errors
	Unsent   int64 // never sent: the step ran past its grace period

	Ops    map[string]int64        // requests by op kind
	Errors map[string]*ErrorKind   // non-OK answers by kind ("cancel HTTP 400 code -2200")
	Hist   *hdrhistogram.Histogram // latency, µs, one sample per sent request
	// Pacer is how late the generator's timer woke idle workers (µs): the
	// part of the schedule's error that is not counted as latency.
	Pacer *hdrhistogram.Histogram
	// ByOp is the latency of each op kind (µs).
	ByOp map[string]*hdrhistogram.Histogram
	// Windows is a timeline: requests completed and their largest latency
	// in each Window-long slice of the step, from its start.
	Windows []Window
}

// WindowLen is the timeline's resolution.
const WindowLen = 100 * time.Millisecond

// Window is one slice of a step's timeline.
type Window struct {
	Count int64
	Max   int64 // µs
	Slow  int64 // answers that took longer than SlowUs
}

// SlowUs is the latency a window counts answers above: 2 ms, the p99
// target at half saturation (issue 5). A step meets that target when at
// most 1% of its answers are slow; Result.SlowSpread says whether they
// were spread over the step or came in a few bursts.
const SlowUs = 2000

// Add counts x's answers in w and keeps the larger max.
func (w *Window) Add(x Window) {
	w.Count += x.Count
	w.Slow += x.Slow
	w.Max = max(w.Max, x.Max)
}

// SlowPercent is the share of w's answers over SlowUs, in percent.
func (w Window) SlowPercent() float64 {
	return 100 * float64(w.Slow) / float64(max(w.Count, 1))
}

// Met says whether at most 1% of w's answers were over SlowUs: a p99
// within SlowUs.
func (w Window) Met() bool { return w.Slow*100 <= w.Count }

// ErrorKind counts one kind of non-OK answer and keeps a sample body.
type ErrorKind struct {
	Count  int64
	Sample string
}

func (r *Result) addError(key, msg string) {
	e := r.Errors[key]
	if e == nil {
		e = &ErrorKind{Sample: msg}
		r.Errors[key] = e
	}
	e.Count++
}

func (r *Result) add(o *Result) {
	r.Sent += o.Sent
	r.OK += o.OK
	r.Rejected += o.Rejected
	r.Failed += o.Failed
	r.Unsent += o.Unsent
	for k, v := range o.Ops {
		r.Ops[k] += v
	}
	for k, e := range o.Errors {
		d := r.Errors[k]
		if d == nil {
			d = &ErrorKind{Sample: e.Sample}
			r.Errors[k] = d
		}
		d.Count += e.Count
	}
	r.Hist.Merge(o.Hist)
	r.Pacer.Merge(o.Pacer)
	for k, h := range o.ByOp {
		if r.ByOp[k] == nil {
			r.ByOp[k] = NewHistogram()
		}
		r.ByOp[k].Merge(h)
	}
	if len(o.Windows) > len(r.Windows) {
		r.Windows = append(r.Windows, make([]Window, len(o.Windows)-len(r.Windows))...)
	}
	for i, w := range o.Windows {
		r.Windows[i].Count += w.Count
		r.Windows[i].Max = max(r.Windows[i].Max, w.Max)
		r.Windows[i].Slow += w.Slow
	}
}

// SlowSpread says how a step's slow answers (over SlowUs) fell on its
// timeline: how many there were, how many of them the n windows with the
// most held, and in how many of the windows with answers at most 1% were
// slow (a p99 within SlowUs), out of how many.
func (r *Result) SlowSpread(n int) (slow, inWorst int64, met, windows int) {
	var per []int64
	for _, w := range r.Windows {
		if w.Count == 0 {
			continue
		}
		windows++
		slow += w.Slow
		if w.Met() {
			met++
		}
		per = append(per, w.Slow)
	}
	sort.Slice(per, func(a, b int) bool { return per[a] > per[b] })
	for _, s := range per[:min(n, len(per))] {
		inWorst += s
	}
	return slow, inWorst, met, windows
}

// Slices merges the step's timeline into slices of per (at least one
// window; the last may be shorter): answers and slow answers added, the
// largest latency kept.
func (r *Result) Slices(per time.Duration) []Window {
	n := max(1, int(per/WindowLen))
	var out []Window
	for i := 0; i < len(r.Windows); i += n {
		var w Window
		for _, x := range r.Windows[i:min(i+n, len(r.Windows))] {
			w.Add(x)
		}
		out = append(out, w)
	}
	return out
}

// Achieved is the answered throughput: accepted plus business rejects per
// second of elapsed time.
func (r *Result) Achieved() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK+r.Rejected) / r.Elapsed.Seconds()
}

// ErrorRate is the fraction of scheduled requests that failed or were never sent.
func (r *Result) ErrorRate() float64 {
	if r.Scheduled == 0 {
		return 0
	}
	return float64(r.Failed+r.Unsent) / float64(r.Scheduled)
}

// Percentile returns the latency at percentile p (0..100).
func (r *Result) Percentile(p float64) time.Duration {
	if r.Hist.TotalCount() == 0 {
		return 0
	}
	return time.Duration(r.Hist.ValueAtPercentile(p)) * time.Microsecond
}

// Max returns the largest latency.
func (r *Result) Max() time.Duration {
	return time.Duration(r.Hist.Max()) * time.Microsecond
}

// ErrorKeys returns the error kinds, most frequent first.
func (r *Result) ErrorKeys() []string {
	keys := make([]string, 0, len(r.Errors))
	for k := range r.Errors {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := r.Errors[keys[i]].Count, r.Errors[keys[j]].Count
		if a != b {
			return a > b
		}
		return keys[i] < keys[j]
	})
	return keys
}

// Criteria decide whether a step kept up with its offered rate.
type Criteria struct {
	MinAchieved float64       // achieved/offered at least this (e.g. 0.95)
	MaxP99      time.Duration // p99 at most this
	MaxErrors   float64       // failed+unsent fraction at most this
}

// Pass reports whether r meets c, and if not, why.
func (c Criteria) Pass(r *Result) (bool, string) {
	if a := r.Achieved() / r.Rate; a < c.MinAchieved {
		return false, "achieved " + pct(a) + " of offered"
	}
	if p := r.Percentile(99); p > c.MaxP99 {
		return false, "p99 " + p.String() + " > " + c.MaxP99.String()
	}
	if e := r.ErrorRate(); e > c.MaxErrors {
		return false, "errors " + pct(e)
	}
	return true, ""
}

func pct(f float64) string {
	return formatFloat(f*100, 1) + "%"
}

// WorstWindows returns the indexes of the n windows with the largest
// latency, worst first.
func (r *Result) WorstWindows(n int) []int {
	idx := make([]int, 0, len(r.Windows))
	for i, w := range r.Windows {
		if w.Count > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return r.Windows[idx[a]].Max > r.Windows[idx[b]].Max })
	if len(idx) > n {
		idx = idx[:n]
	}
	return idx
}
