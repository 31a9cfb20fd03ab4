package suite

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weexcore/exchange/bench/load"
	"github.com/weexcore/exchange/bench/report"
)

func fakeStep(rate float64, lat time.Duration, pass bool, role string) StepResult {
	r := &load.Result{Rate: rate, Duration: time.Second, Elapsed: time.Second, Scheduled: int64(rate), Sent: int64(rate), OK: int64(rate),
		Ops: map[string]int64{load.OpPlace: int64(rate)}, Errors: map[string]*load.ErrorKind{}, Hist: load.NewHistogram(), Pacer: load.NewHistogram()}
	for i := 0; i < int(rate); i++ {
		r.Hist.RecordValue(lat.Microseconds())
	}
	if !pass {
		r.Failed = 10
		r.Errors["place HTTP 503 code -1054"] = &load.ErrorKind{Count: 10, Sample: `{"code":-1054,"msg":"busy"}`}
	}
	return StepResult{Result: r, Role: role, Pass: pass}
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	rest := &Sweep{Name: "rest", Steps: []StepResult{
		fakeStep(1000, time.Millisecond, true, "search"), fakeStep(2000, 50*time.Millisecond, false, "search"), fakeStep(500, time.Millisecond, true, "half-saturation")}}
	rest.Saturation, rest.Half = &rest.Steps[0], &rest.Steps[2]
	// the server's own counters at half saturation: one answer and one
	// fdatasync of ~120-150 ms, which the max shows and the p50 hides
	rest.Steps[2].Served = &load.Metrics{RESTLatency: load.Hist{100: 98, 1000: 1, 150000: 1}, WALSync: load.Hist{300: 9, 120000: 1}}
	// a 30.1 s timeline: 1% of the first 10 s over 2 ms, none of the
	// next, 5% of the last 10 s, and a last window of answers that ended
	// after the schedule, counted in the last part
	for i := range 301 {
		w := load.Window{Count: 100, Max: 500}
		switch {
		case i < 100 && i%10 == 0:
			w.Slow = 10
		case i >= 200:
			w.Slow = 5
		}
		rest.Steps[2].Windows = append(rest.Steps[2].Windows, w)
	}
	// 1000 requests in 1 s: 0.05 and 0.03 cores, 50 and 30 µs per request
	rest.Steps[0].Wall = time.Second
	rest.Steps[0].Target.CPU, rest.Steps[0].Target.SysCPU = 50*time.Millisecond, 30*time.Millisecond // 60% in the kernel
	rest.Steps[0].Gen.CPU, rest.Steps[0].Gen.SysCPU = 30*time.Millisecond, 15*time.Millisecond       // 50%
	bare := &Sweep{Name: "bare", Steps: []StepResult{fakeStep(1000, 100*time.Microsecond, true, "search")}, Capped: true}
	bare.Saturation = &bare.Steps[0]
	bare.Steps[0].Wall, bare.Steps[0].Gen.CPU = time.Second, 25*time.Millisecond
	bare.Steps[0].Target.CPU, bare.Steps[0].Target.SysCPU = 20*time.Millisecond, 15*time.Millisecond // 75%
	engine := &GoRun{Command: "go test", Bench: report.ParseGoBench(strings.NewReader("BenchmarkMixed-2 100 250 ns/op 0 allocs/op\n"))}
	r := &Run{Opts: Options{Command: "benchrun", Markets: load.DefaultMarkets()[:2], Search: Search{Criteria: load.Criteria{MinAchieved: 0.95, MaxP99: 20 * time.Millisecond}}},
		Started: time.Now(), Finished: time.Now(), Dir: dir, Engine: engine, REST: rest, Bare: bare, BareErr: ""}
	path, err := writeReport(r)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		"REST / bare throughput (at saturation)", " 100.0% |", "REST p99 at half saturation (500 req/s)", "rate cap reached",
		"search (**saturation**)", "place HTTP 503 code -1054", "rest-02-2000.hgrm", "latency.svg", "engine Mixed: per command (ns/op)", "4000000 cmds/s",
		"## 2. Runtime (./core/): durable throughput (ring + engine + journal) and replay", "Skipped.", "REST 50 / 30 µs, bare 20 / 25 µs; kernel 60% / 75%",
		"0.100 / 1.000 / 150.000 ms |", "0.300 / 120.000 / 120.000 ms (10 syncs, 50.0 requests per sync)",
		"Over 2 ms in each 10 s of the step, in order: 1.00%, 0.00%, 5.00% (at most 1% in 2 of 3).",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	// the step table's CPU columns: cores, µs per request, kernel share
	norm := strings.Join(strings.Fields(s), " ")
	for _, want := range []string{"| 0.05 | 50 | 60% |", "| 0.03 | 30 | 50% |", "| 0.02 | 20 | 75% |"} {
		if !strings.Contains(norm, want) {
			t.Errorf("step tables lack %q", want)
		}
	}
	for _, f := range []string{"latency.svg", "latency-rest.svg", "latency-bare.svg", "rest-01-1000.hgrm", "bare-01-1000.hgrm"} {
		if _, err := os.Stat(dir + "/" + f); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
}

// TestEngineRunsSummary: several runs of the engine benchmark (go test
// -count) give one summary row with their median and range.
func TestEngineRunsSummary(t *testing.T) {
	raw := "BenchmarkMixed-2 100 250 ns/op 0 allocs/op\nBenchmarkMixed-2 100 150 ns/op 0 allocs/op\n" +
		"BenchmarkMixed-2 100 180 ns/op 0 allocs/op\nBenchmarkMixed-2 100 90 ns/op 0 allocs/op\n"
	r := &Run{Engine: &GoRun{Command: "go test", Bench: report.ParseGoBench(strings.NewReader(raw))}}
	s := summary(r).String()
	if n := strings.Count(s, "engine Mixed: per command"); n != 1 {
		t.Errorf("got %d engine rows, want 1:\n%s", n, s)
	}
	for _, want := range []string{"median of 4 runs 165 ns (90-250)", "6060606 cmds/s", "**no**"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// TestEngineLatencySummary: BenchmarkMixedLatency's percentiles make one
// summary row; a run without them says so instead of showing zeros.
func TestEngineLatencySummary(t *testing.T) {
	raw := "BenchmarkMixedLatency-2 7322226 172.1 ns/op 20.00 clock-ns 606207 max-ns 100.0 p50-ns 511.0 p99-ns 932.0 p99.9-ns 0 allocs/op\n"
	lat := &GoRun{Command: "go test", Bench: report.ParseGoBench(strings.NewReader(raw))}
	s := summary(&Run{EngineLatency: lat}).String()
	if want := "100 / 511 / 932 / 606207 ns (clock read 20 ns)"; !strings.Contains(s, want) {
		t.Errorf("summary lacks %q:\n%s", want, s)
	}
	lat = &GoRun{Command: "go test", Bench: report.ParseGoBench(strings.NewReader("BenchmarkMixedLatency-2 100 172 ns/op\n")), Err: "exit status 1"}
	if s := summary(&Run{EngineLatency: lat}).String(); !strings.Contains(s, "not available: exit status 1") {
		t.Errorf("a run without percentiles: summary lacks the reason:\n%s", s)
	}
}

func TestPercentDown(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{{15989.0 / 31997, "49.9%"}, {0.5, "50.0%"}, {1, "100.0%"}, {0.61234, "61.2%"}, {0.57, "57.0%"}} {
		if got := percentDown(c.f); got != c.want {
			t.Errorf("percentDown(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

// TestWriteReportMixes: a run with a spot-only and a 30% contracts REST
// sweep labels each one's rows and sections, compares them side by side,
// and writes each one's files under its own name.
func TestWriteReportMixes(t *testing.T) {
	dir := t.TempDir()
	spot := &Sweep{Name: "rest", Mix: MixName(0), Steps: []StepResult{fakeStep(1000, time.Millisecond, true, "search"), fakeStep(500, time.Millisecond, true, "half-saturation")}}
	spot.Saturation, spot.Half = &spot.Steps[0], &spot.Steps[1]
	ct := &Sweep{Name: SweepName(0.3), Mix: MixName(0.3), Contracts: 0.3, Steps: []StepResult{fakeStep(900, time.Millisecond, true, "search"), fakeStep(450, 3*time.Millisecond, true, "half-saturation")}}
	ct.Saturation, ct.Half = &ct.Steps[0], &ct.Steps[1]
	ct.Steps[0].Ops[load.OpCtPlace] = 300
	bare := &Sweep{Name: "bare", Steps: []StepResult{fakeStep(2000, 100*time.Microsecond, true, "search")}}
	bare.Saturation = &bare.Steps[0]
	r := &Run{Opts: Options{Command: "benchrun", Markets: load.DefaultMarkets()[:2], Contracts: load.DefaultContracts(), Mixes: []float64{0, 0.3},
		Search: Search{Criteria: load.Criteria{MinAchieved: 0.95, MaxP99: 20 * time.Millisecond}}},
		Started: time.Now(), Finished: time.Now(), Dir: dir, REST: spot, RESTs: []*Sweep{spot, ct}, Bare: bare}
	path, err := writeReport(r)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		"REST saturation (durable orders), spot only", "REST saturation (durable orders), 30% contracts",
		"REST / bare throughput (at saturation), spot only", "REST / bare throughput (at saturation), 30% contracts",
		"REST p99 at half saturation (500 req/s), spot only", "REST p99 at half saturation (450 req/s), 30% contracts",
		"30% contracts against spot only, side by side in this run: REST saturation, REST / bare",
		"900 against 1000 req/s (-10.0%); 45.0% against 50.0% (-5.0 points)",
		"## 3. REST load against the real server (durable acknowledgement), mix: spot only",
		"## 3b. REST load against the real server (durable acknowledgement), mix: 30% contracts",
		"`rest`: spot only; `rest-ct30`: 30% contracts", "BTCUSDT (cmt_btcusdt)", "ct-place 300", "rest-ct30-02-450.hgrm",
		"noise during the rest-ct30 sweep",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, f := range []string{"latency.svg", "latency-rest.svg", "latency-rest-ct30.svg", "rest-01-1000.hgrm", "rest-ct30-01-900.hgrm", "rest-ct30-timeline.svg"} {
		if _, err := os.Stat(dir + "/" + f); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
}
