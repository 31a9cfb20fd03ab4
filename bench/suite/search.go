package suite

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"github.com/weexcore/exchange/bench/load"
)

// StepResult is one rate step with the CPU both sides used during it.
type StepResult struct {
	*load.Result
	Role     string  // "search", "refine", "half-saturation"
	IrqCPU   float64 // cores in interrupts and softirqs (loopback networking, disk)
	OtherCPU float64 // cores used by every other process (other users, the go tool...)
	Wall     time.Duration
	Target   Counters // the target's counter deltas over the step
	Gen      Counters // the generator's
	// Disk is a short fsync probe taken just before the step (on the
	// server's file system): other users' disk traffic shows up here.
	DiskP50, DiskMax time.Duration
	// Served is what the server itself counted during the step (its
	// GET /metrics histograms, diffed): its own answer times and its WAL
	// syncs.
	// Nil when the target has none (the bare handler).
	Served *load.Metrics
	Pass   bool
	Why    string // why it did not pass
}

// Search is the rate-step plan.
type Search struct {
	Start    float64       // first rate
	Factor   float64       // multiply the rate by this while steps pass
	Max      float64       // never offer more than this
	Refine   int           // bisection steps between the last pass and the first failure
	Retry    bool          // run a failed step once more (both are reported); the retry decides
	Duration time.Duration // per step
	HalfDur  time.Duration // the half-saturation step's length
	Pause    time.Duration // between steps, for the target to drain
	Lead     time.Duration // each step's unrecorded lead-in at its rate (load.Step.Lead)
	Criteria load.Criteria
	// Deadline: no step starts that could not end (with the
	// half-saturation step after it) before it. Zero: none.
	Deadline time.Time
	// ProbeDir, if set, gets a 20-fsync probe before every step.
	ProbeDir string
	// Turn, if set, is held for each step: sweeps sharing one Turn take
	// their steps in alternation (see Baton).
	Turn Baton
	// Sharing is how many sweeps share Turn (for the time budget: the
	// others' steps come between one's; 0: two when Turn is set).
	Sharing int
	// Pair, if set, lines this sweep's fixed-rate step up with another
	// sweep's (side PairSide, 0 or 1): see Pair.
	Pair     *Pair
	PairSide int
}

// Pair lines up one fixed-rate step of two sweeps, the single node's and
// the replicated group's (bench/README.md, "The replicated run"), so that
// their latencies compare at one offered rate: each reports its saturation
// after its search and waits for the other's, and both then run a step at
// half the lower of the two, where neither is queueing near its limit. A
// sweep whose half-saturation step is at that rate already does not run
// it twice.
type Pair struct {
	once [2]sync.Once
	done [2]chan struct{}
	sat  [2]float64
}

// NewPair returns a pair that neither side has reported to.
func NewPair() *Pair {
	return &Pair{done: [2]chan struct{}{make(chan struct{}), make(chan struct{})}}
}

// Report records side's saturation (0: none) and returns the rate both
// run their paired step at: half the lower of the two saturations, 0 when
// either has none. It waits for the other side. A nil Pair returns 0.
func (p *Pair) Report(side int, sat float64) float64 {
	if p == nil {
		return 0
	}
	p.set(side, sat)
	<-p.done[1-side]
	if p.sat[0] <= 0 || p.sat[1] <= 0 {
		return 0
	}
	return math.Round(min(p.sat[0], p.sat[1]) / 2)
}

// Leave tells the other side, without waiting, that side has no
// saturation to pair (its sweep did not run or found none). Only a side's
// first Report or Leave counts, so a deferred Leave is harmless.
func (p *Pair) Leave(side int) {
	if p != nil {
		p.set(side, 0)
	}
}

func (p *Pair) set(side int, sat float64) {
	p.once[side].Do(func() {
		p.sat[side] = sat
		close(p.done[side])
	})
}

// Baton makes sweeps take turns, step by step, so that the REST and the
// bare target see the same phases of a shared machine (on this VM the same
// binary's speed moves by a third from one minute to the next, and a ratio
// of two sweeps run one after the other measured the phases as much as the
// targets). Whoever holds it runs alone; giving it hands it to the sweep
// that has waited longest (a channel's send goes to its first waiting
// receiver), so three sweeps go round in turn, or back to the giver when
// the others have ended. A nil Baton does nothing.
type Baton chan struct{}

// NewBaton returns a baton that nobody holds yet.
func NewBaton() Baton {
	b := make(Baton, 1)
	b <- struct{}{}
	return b
}

func (b Baton) take() {
	if b != nil {
		<-b
	}
}

func (b Baton) give() {
	if b != nil {
		b <- struct{}{}
	}
}

// Sweep is a target's step results and its saturation point.
type Sweep struct {
	Name       string
	Steps      []StepResult
	Saturation *StepResult // the highest passing rate; nil if none passed
	Half       *StepResult // the step at half the saturation rate
	// Paired is the step at the rate a Pair agreed on (Search.Pair): the
	// same as Half when that is the rate; nil without a pair.
	Paired    *StepResult
	Capped    bool // every step passed up to Search.Max
	OutOfTime bool // the search stopped at the run's time budget
	// Mix labels a REST sweep's request mix ("spot only", "30%
	// contracts"; "": the bare target's, or a run before contracts), and
	// Contracts is its share of orders on contracts.
	Mix       string
	Contracts float64
}

// RunSearch steps g's rate up until a step fails, refines between the last
// pass and the first failure, then runs a longer step at half the
// saturation rate. probe reads the target's counters, served its own
// metrics (either nil: not measured).
func RunSearch(name string, g *load.Generator, s Search, probe func() Counters, served func() (load.Metrics, error), progress io.Writer) *Sweep {
	sw := &Sweep{Name: name}
	run := func(rate float64, dur time.Duration, role string) *StepResult {
		s.Turn.take()
		defer s.Turn.give()
		rate = math.Round(rate)
		var dp50, dmax time.Duration
		if s.ProbeDir != "" {
			dp50, dmax, _ = fsyncSample(s.ProbeDir, 20)
		}
		fmt.Fprintf(progress, "[%s] %s step %s: %.0f req/s for %v after a %v lead-in (fsync probe p50 %s, max %s ms)\n", name, time.Now().Format("15:04:05.000"), role, rate, dur,
			s.Lead, load.FormatLatency(dp50), load.FormatLatency(dmax))
		// The counters cover the recorded part of the step, not its lead-in.
		var sv0 load.Metrics
		var svErr error
		var c0, g0 Counters
		var t0 time.Time
		var m0, i0 time.Duration
		begin := func() {
			if served != nil {
				sv0, svErr = served()
			}
			c0, g0, t0 = countersOf(probe), procCounters(os.Getpid()), time.Now()
			m0, i0 = machineBusy()
		}
		r := g.Run(load.Step{Rate: rate, Duration: dur, Lead: s.Lead, Recording: begin, Progress: func(p load.Progress) {
			fmt.Fprintf(progress, "[%s]   %s\n", name, load.FormatProgress(p))
		}})
		m1, i1 := machineBusy()
		w := time.Since(t0)
		wall := w.Seconds()
		c1, g1 := countersOf(probe), procCounters(os.Getpid())
		sr := &StepResult{Result: r, Role: role, Wall: w, DiskP50: dp50, DiskMax: dmax,
			Target: c1.since(c0), Gen: g1.since(g0)}
		if served != nil && svErr == nil {
			if sv1, err := served(); err == nil {
				d := sv1.Since(sv0)
				sr.Served = &d
			}
		}
		sr.IrqCPU = (i1 - i0).Seconds() / wall
		tc, gc := sr.Cores()
		sr.OtherCPU = max(0, (m1-m0).Seconds()/wall-tc-gc)
		sr.Pass, sr.Why = s.Criteria.Pass(r)
		verdict := "pass"
		if !sr.Pass {
			verdict = "FAIL: " + sr.Why
		}
		own := ""
		if sr.Served != nil {
			own = "server's own answer time p50/p99/max " + servedLatency(sr.Served) + " ms, WAL fdatasync " + walSyncs(sr.Served) + " ms, "
		}
		fmt.Fprintf(progress, "[%s] %s\n[%s] %s  %starget CPU %.2f, generator %.2f, irq %.2f, others %.2f cores  %s\n", name, load.StepHeader(), name, load.StepLine(r), own, tc, gc, sr.IrqCPU, sr.OtherCPU, verdict)
		sw.Steps = append(sw.Steps, *sr)
		time.Sleep(s.Pause)
		return &sw.Steps[len(sw.Steps)-1]
	}
	// try runs a step and, if it fails and retries are on, once more: on
	// a machine shared with other work one disturbed step should not set
	// the saturation point. Both runs stay in the report.
	// fits reports whether a step of dur (plus the half-saturation step)
	// can still finish before the deadline.
	fits := func(dur time.Duration) bool {
		ahead := dur + s.HalfDur + 2*(s.Pause+s.Lead) + s.Duration/2
		if s.Turn != nil {
			ahead *= time.Duration(max(s.Sharing, 2)) // the other sweeps' steps come in between
		}
		return s.Deadline.IsZero() || time.Now().Add(ahead).Before(s.Deadline)
	}
	try := func(rate float64, dur time.Duration, role string) *StepResult {
		r := run(rate, dur, role)
		if !r.Pass && s.Retry && fits(dur) {
			r = run(rate, dur, role+" retry")
		}
		return r
	}
	// Steps are appended to sw.Steps, so keep indexes, not pointers, until the end.
	pass, fail := -1.0, -1.0
	passIdx := -1
	rate := s.Start
	for {
		if !fits(s.Duration) {
			sw.OutOfTime = true
			fmt.Fprintf(progress, "[%s] out of time budget: stopping the search\n", name)
			break
		}
		r := try(rate, s.Duration, "search")
		if r.Pass {
			pass, passIdx = rate, len(sw.Steps)-1
			if rate >= s.Max {
				sw.Capped = true
				break
			}
			rate = math.Min(rate*s.Factor, s.Max)
			continue
		}
		fail = rate
		if pass < 0 && rate > 200 {
			rate /= 4 // the very first step failed: go down until one passes
			continue
		}
		break
	}
	for i := 0; i < s.Refine && pass > 0 && fail > 0 && fail-pass > 0.04*pass && fits(s.Duration); i++ {
		mid := math.Round((pass + fail) / 2)
		if r := try(mid, s.Duration, "refine"); r.Pass {
			pass, passIdx = mid, len(sw.Steps)-1
		} else {
			fail = mid
		}
	}
	if passIdx < 0 {
		s.Pair.Leave(s.PairSide)
	}
	if passIdx >= 0 {
		half := math.Round(pass / 2)
		paired := s.Pair.Report(s.PairSide, pass)
		run(half, s.HalfDur, "half-saturation")
		sw.Saturation = &sw.Steps[passIdx]
		sw.Half = &sw.Steps[len(sw.Steps)-1]
		switch {
		case paired == half:
			sw.Paired = sw.Half
		case paired > 0:
			run(paired, s.HalfDur, "paired")
			sw.Saturation = &sw.Steps[passIdx]
			sw.Half = &sw.Steps[len(sw.Steps)-2]
			sw.Paired = &sw.Steps[len(sw.Steps)-1]
		}
	}
	return sw
}

func countersOf(f func() Counters) Counters {
	if f == nil {
		return Counters{}
	}
	return f()
}

// PerRequest divides n by the requests sent.
func (s *StepResult) PerRequest(n int64) float64 {
	if s.Sent == 0 {
		return 0
	}
	return float64(n) / float64(s.Sent)
}

// Cores returns the cores the target and the generator used during the
// step.
func (s *StepResult) Cores() (target, gen float64) {
	if s.Wall <= 0 {
		return 0, 0
	}
	return s.Target.CPU.Seconds() / s.Wall.Seconds(), s.Gen.CPU.Seconds() / s.Wall.Seconds()
}

// CPUPerRequest returns the target's and the generator's CPU time per sent
// request.
func (s *StepResult) CPUPerRequest() (target, gen time.Duration) {
	if s.Sent == 0 {
		return 0, 0
	}
	return s.Target.CPU / time.Duration(s.Sent), s.Gen.CPU / time.Duration(s.Sent)
}

// KernelShare returns the share of the target's and of the generator's CPU
// time that was spent in the kernel (-1 when a process used none).
func (s *StepResult) KernelShare() (target, gen float64) {
	return s.Target.kernelShare(), s.Gen.kernelShare()
}
