package report

import (
	"strings"
	"testing"
)

const sampleOutput = `goos: linux
goarch: amd64
pkg: github.com/weexcore/exchange/engine
cpu: AMD EPYC
BenchmarkMixed10k-2   	 5000000	       221.5 ns/op	 4514672 cmds/s	      180 p99-ns	       0 B/op	       0 allocs/op
BenchmarkMixedSmall   	 100	 1234 ns/op
BenchmarkBad-2 notanumber 12 ns/op
--- FAIL: BenchmarkBroken
PASS
ok  	github.com/weexcore/exchange/engine	3.2s
`

func TestParseGoBench(t *testing.T) {
	g := ParseGoBench(strings.NewReader(sampleOutput))
	if got := g.Header["cpu"]; got != "AMD EPYC" {
		t.Errorf("cpu = %q, want AMD EPYC", got)
	}
	if len(g.Benchmarks) != 2 {
		t.Fatalf("got %d benchmarks, want 2: %+v", len(g.Benchmarks), g.Benchmarks)
	}
	b := g.Benchmarks[0]
	if b.Name != "Mixed10k" || b.Procs != 2 || b.Iterations != 5000000 {
		t.Errorf("first = %+v, want Mixed10k procs 2 iterations 5000000", b)
	}
	for unit, want := range map[string]float64{"ns/op": 221.5, "cmds/s": 4514672, "p99-ns": 180, "allocs/op": 0} {
		if v, ok := b.Metric(unit); !ok || v != want {
			t.Errorf("metric %s = %v, %v; want %v", unit, v, ok, want)
		}
	}
	if g.Benchmarks[1].Procs != 0 || g.Benchmarks[1].Name != "MixedSmall" {
		t.Errorf("second = %+v, want MixedSmall without procs", g.Benchmarks[1])
	}
	if !g.Failed {
		t.Errorf("Failed = false, want true (a --- FAIL line)")
	}
	if got, want := strings.Join(Units(g.Benchmarks), " "), "ns/op B/op allocs/op cmds/s p99-ns"; got != want {
		t.Errorf("Units = %q, want %q", got, want)
	}
}

func TestFormatNumber(t *testing.T) {
	for v, want := range map[float64]string{221: "221", 221.5: "222", 2.345: "2.35", 0.01234: "0.0123", 4514672: "4514672"} {
		if got := FormatNumber(v); got != want {
			t.Errorf("FormatNumber(%v) = %s, want %s", v, got, want)
		}
	}
}
