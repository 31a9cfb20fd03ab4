package report

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// Benchmark is one result line of `go test -bench`.
type Benchmark struct {
	Name       string // without the "Benchmark" prefix and the -procs suffix
	Procs      int    // GOMAXPROCS suffix (0 when absent)
	Iterations int64
	Metrics    []Metric // in line order: ns/op, B/op, allocs/op, custom units
}

// Metric is one value-unit pair of a benchmark line.
type Metric struct {
	Value float64
	Unit  string
}

// Metric returns the value of unit and whether the line has it.
func (b *Benchmark) Metric(unit string) (float64, bool) {
	for _, m := range b.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// GoBench is a parsed `go test -bench` output.
type GoBench struct {
	Header     map[string]string // goos, goarch, pkg, cpu
	Benchmarks []Benchmark
	Failed     bool     // a FAIL line, a panic or a build error was seen
	Other      []string // lines that are neither results nor header (logs, errors), bounded
}

const maxOther = 200

// ParseGoBench parses the output of `go test -bench`. It never fails: lines
// it does not understand go to Other.
func ParseGoBench(r io.Reader) *GoBench {
	g := &GoBench{Header: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		g.addLine(sc.Text())
	}
	return g
}

func (g *GoBench) addLine(line string) {
	t := strings.TrimSpace(line)
	if b, ok := ParseBenchLine(t); ok {
		g.Benchmarks = append(g.Benchmarks, b)
		return
	}
	for _, h := range []string{"goos", "goarch", "pkg", "cpu"} {
		if v, ok := strings.CutPrefix(t, h+": "); ok {
			g.Header[h] = v
			return
		}
	}
	if t == "" || t == "PASS" || strings.HasPrefix(t, "ok ") || strings.HasPrefix(t, "ok\t") {
		return
	}
	if strings.HasPrefix(t, "FAIL") || strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "panic:") ||
		strings.Contains(t, "build failed") || strings.HasPrefix(t, "# ") {
		g.Failed = true
	}
	if len(g.Other) < maxOther {
		g.Other = append(g.Other, line)
	}
}

// ParseBenchLine parses one result line: "BenchmarkX-2  1000  123 ns/op  0 B/op ...".
func ParseBenchLine(line string) (Benchmark, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return Benchmark{}, false
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return Benchmark{}, false
	}
	b := Benchmark{Name: strings.TrimPrefix(f[0], "Benchmark"), Iterations: n}
	if i := strings.LastIndexByte(b.Name, '-'); i > 0 {
		if p, err := strconv.Atoi(b.Name[i+1:]); err == nil {
			b.Name, b.Procs = b.Name[:i], p
		}
	}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Benchmark{}, false
		}
		b.Metrics = append(b.Metrics, Metric{Value: v, Unit: f[i+1]})
	}
	return b, true
}

// Units returns every unit used by bs, standard ones first, then custom
// ones in order of first appearance.
func Units(bs []Benchmark) []string {
	std := []string{"ns/op", "B/op", "allocs/op", "MB/s"}
	seen := map[string]bool{}
	for _, b := range bs {
		for _, m := range b.Metrics {
			seen[m.Unit] = true
		}
	}
	var out []string
	for _, u := range std {
		if seen[u] {
			out = append(out, u)
			delete(seen, u)
		}
	}
	for _, b := range bs {
		for _, m := range b.Metrics {
			if seen[m.Unit] {
				out = append(out, m.Unit)
				delete(seen, m.Unit)
			}
		}
	}
	return out
}

// FormatNumber formats a metric value compactly: integers without a
// fraction, others with up to 3 significant decimals.
func FormatNumber(v float64) string {
	if v == float64(int64(v)) && v < 1e15 && v > -1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	switch a := abs(v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
