// Command benchrun is `make bench` and `make bench-quick`: the engine,
// runtime (core) and edge Go benchmarks, then the open-loop REST load
// against the real server and against a bare fasthttp handler, into a
// Markdown report with HdrHistogram percentile files and SVG latency plots
// under -out.
//
// With -serve-bare ADDR it is instead the bare target itself (the run starts
// it that way, as its own process, so it does not share the generator's
// runtime).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/weexcore/exchange/bench/load"
	"github.com/weexcore/exchange/bench/suite"
	"github.com/weexcore/exchange/internal/affinity"
)

func main() {
	out := flag.String("out", "results", "results directory (the run writes OUT/<UTC stamp>/ and points OUT/latest at it)")
	quick := flag.Bool("quick", false, "short run (under a minute): shorter steps, fewer users, short go benchmarks")
	server := flag.String("server", "bin/exchanged", "server binary (go build -o bin/exchanged ./cmd/exchanged)")
	repo := flag.String("repo", ".", "module root, where go test runs")
	seed := flag.Uint64("seed", 1, "generator seed")
	users := flag.Int("users", 100, "users created through the admin API")
	conns := flag.Int("conns", 128, "keep-alive connections (bench/README.md: why 128)")
	markets := flag.String("markets", "", "markets (comma-separated; default all of: "+symbols()+")")
	place := flag.Float64("place", 0.5, "fraction of requests that place orders (the rest cancel)")
	take := flag.Float64("take", 0.1, "fraction of placements that cross the spread (IOC)")
	contracts := flag.String("contracts", "0,0.3", "REST mixes, comma-separated: for each, the fraction of placements (and so of cancels) sent to perpetual contracts ("+contractSymbols()+"; opens, BUY LONG and SELL SHORT), one REST sweep each against the same server, taking turns with the bare sweep; 0 is the spot-only mix (bench/README.md: the contract mix)")
	populate := flag.Int("populate", 500, "resting orders per market before the steps")
	start := flag.Float64("start", 1000, "first offered rate, req/s")
	factor := flag.Float64("factor", 1.5, "rate multiplier between passing steps")
	maxRate := flag.Float64("max-rate", 200000, "highest rate offered")
	refine := flag.Int("refine", 3, "bisection steps after the first failing rate (3: the saturation is found within ~6% of the rate, where ×1.5 steps and 2 bisections left ~12%)")
	retry := flag.Bool("retry", true, "run a failing step once more before accepting the failure (both are reported)")
	step := flag.Duration("step", 5*time.Second, "length of each rate step")
	halfStep := flag.Duration("half-step", 30*time.Second, "length of the half-saturation step (bench/README.md: why 30 s)")
	pause := flag.Duration("pause", 500*time.Millisecond, "pause between steps")
	lead := flag.Duration("lead", 300*time.Millisecond, "each step's unrecorded lead-in at its rate, so that what is recorded starts under load (bench/README.md: this VM's disk after an idle spell)")
	satP99 := flag.Duration("sat-p99", 20*time.Millisecond, "saturation criterion: p99 at most this")
	satAch := flag.Float64("sat-achieved", 0.95, "saturation criterion: achieved/offered at least this")
	satErr := flag.Float64("sat-errors", 0.01, "saturation criterion: failed+unsent fraction at most this")
	benchtime := flag.String("benchtime", "", "go test -benchtime for the engine and edge benchmarks (default: go's)")
	coreBenchtime := flag.String("core-benchtime", "", "go test -benchtime for the runtime's benchmarks, ./core/ (default: go's)")
	engineCount := flag.Int("engine-count", 5, "go test -count for the engine benchmark: the summary gives the median and the range (ns/op moves by a third from one run to the next on a shared machine)")
	benchTimeout := flag.Duration("bench-timeout", 3*time.Minute, "timeout of each go test run")
	budget := flag.Duration("budget", 9*time.Minute+15*time.Second, "bound on the whole run (go benchmarks are cut short and the sweeps stop stepping up to stay within it); 0: none")
	sweepReserve := flag.Duration("sweep-reserve", 5*time.Minute+10*time.Second, "part of -budget kept for the load sweeps (two: one REST mix and the bare target); each REST mix beyond the first adds half of it unless set")
	skipEngine := flag.Bool("skip-engine", false, "skip the engine benchmark")
	skipCore := flag.Bool("skip-core", false, "skip the runtime's benchmarks (./core/)")
	skipEdge := flag.Bool("skip-edge", false, "skip the edge's in-process benchmarks")
	skipREST := flag.Bool("skip-rest", false, "skip the REST load against the server")
	skipBare := flag.Bool("skip-bare", false, "skip the bare fasthttp load")
	replicated := flag.String("replicated", "on", "the replicated run (bench/README.md): on (beside the other sweeps; off by default with -quick), off, or only (the single node's spot-only sweep and the three-node group's, nothing else)")
	serveBare := flag.String("serve-bare", "", "serve the bare fasthttp target on ADDR (internal)")
	serverCPUs := flag.String("server-cpus", "half", "CPUs the server and the bare target each run on: a CPU list such as 0 or 0-3, half (the first half of this process's CPUs; the generator shares them all) or all (bench/LOG.md: why)")
	replCPUs := flag.String("replicated-cpus", "all", "CPUs each member of the replicated group runs on, as -server-cpus (bench/LOG.md: why all)")
	flag.Parse()
	log.SetFlags(0)

	cpus, err := resolveCPUs(*serverCPUs)
	if err != nil {
		log.Fatalf("-server-cpus: %v", err)
	}
	rcpus, err := resolveCPUs(*replCPUs)
	if err != nil {
		log.Fatalf("-replicated-cpus: %v", err)
	}
	if *serveBare != "" {
		if cpus.Count() > 0 {
			if err := affinity.Restrict(cpus, cpus.Count()); err != nil {
				log.Fatalf("-server-cpus: %v", err)
			}
		}
		ln, err := net.Listen("tcp", *serveBare)
		if err != nil {
			log.Fatal(err)
		}
		log.Printf("ready bare=%s", ln.Addr())
		log.Fatal(load.ServeBare(ln))
	}

	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	quickDefault := func(name string, apply func()) {
		if *quick && !set[name] {
			apply()
		}
	}
	quickDefault("users", func() { *users = 20 })
	quickDefault("populate", func() { *populate = 100 })
	quickDefault("factor", func() { *factor = 2 })
	quickDefault("refine", func() { *refine = 0 })
	quickDefault("retry", func() { *retry = false })
	quickDefault("step", func() { *step = time.Second })
	quickDefault("half-step", func() { *halfStep = 2 * time.Second })
	quickDefault("pause", func() { *pause = 200 * time.Millisecond })
	quickDefault("benchtime", func() { *benchtime = "100ms" })
	quickDefault("engine-count", func() { *engineCount = 1 })
	quickDefault("core-benchtime", func() { *coreBenchtime = "1x" })
	quickDefault("bench-timeout", func() { *benchTimeout = 30 * time.Second })
	quickDefault("budget", func() { *budget = 50 * time.Second })
	quickDefault("sweep-reserve", func() { *sweepReserve = 25 * time.Second })
	quickDefault("replicated", func() { *replicated = "off" })
	switch *replicated {
	case "on", "off":
	case "only":
		*skipEngine, *skipCore, *skipEdge, *skipBare, *skipREST = true, true, true, true, false
		if !set["contracts"] {
			*contracts = "0"
		}
	default:
		log.Fatalf("-replicated: %q is not on, off or only", *replicated)
	}
	repl := *replicated != "off"

	ms, err := load.SelectMarkets(load.DefaultMarkets(), *markets)
	if err != nil {
		log.Fatal(err)
	}
	var mixes []float64
	for _, f := range strings.Split(*contracts, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 0 || v > 1 {
			log.Fatalf("-contracts: %q is not a share from 0 to 1", f)
		}
		mixes = append(mixes, v)
	}
	if extra := len(mixes) - 1; extra > 0 && !*skipREST {
		// Each further REST sweep takes about as long as one of the two
		// sweeps the defaults were set for.
		if !set["sweep-reserve"] {
			*sweepReserve += time.Duration(extra) * *sweepReserve / 2
		}
		if !set["budget"] {
			*budget += time.Duration(extra) * extraBudget(*quick)
		}
	}
	if repl && *replicated == "on" {
		// The group's sweep takes about as long as one of the REST mixes
		// (its search, then its fixed-rate step and the single node's
		// step paired with it).
		if !set["sweep-reserve"] {
			*sweepReserve += replReserve(*quick)
		}
		if !set["budget"] {
			*budget += replReserve(*quick)
		}
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	root, _ := filepath.Abs(*repo)
	srv := *server
	if !filepath.IsAbs(srv) {
		srv = filepath.Join(root, srv)
	}
	outDir := *out
	if !filepath.IsAbs(outDir) {
		outDir = filepath.Join(root, outDir)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	o := suite.Options{
		Repo: root, Out: outDir, GoBin: suite.LookGo(), ServerBin: srv, Self: self,
		ServerCPUs: affinity.Format(cpus), ReplCPUs: affinity.Format(rcpus),
		Command: strings.Join(append([]string{"benchrun"}, os.Args[1:]...), " "),
		Quick:   *quick, Seed: *seed, Users: *users, Conns: *conns, Markets: ms,
		Contracts: load.DefaultContracts(), Mixes: mixes,
		Place: *place, Take: *take, Populate: *populate,
		Search: suite.Search{Start: *start, Factor: *factor, Max: *maxRate, Refine: *refine, Retry: *retry,
			Duration: *step, HalfDur: *halfStep, Pause: *pause, Lead: *lead,
			Criteria: load.Criteria{MinAchieved: *satAch, MaxP99: *satP99, MaxErrors: *satErr}},
		Budget: *budget, SweepReserve: *sweepReserve,
		BenchTime: *benchtime, CoreBenchTime: *coreBenchtime, EngineCount: *engineCount, BenchTimeout: *benchTimeout,
		SkipEngine: *skipEngine, SkipCore: *skipCore, SkipEdge: *skipEdge, SkipREST: *skipREST, SkipBare: *skipBare,
		Replicated: repl,
		Progress:   os.Stderr,
	}
	path, err := suite.Execute(ctx, o)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "bench: report %s\n", path)
	if b, err := os.ReadFile(path); err == nil {
		// The summary table, for the terminal.
		s := string(b)
		if i := strings.Index(s, "## Summary"); i >= 0 {
			s = s[i:]
			if j := strings.Index(s, "## Run"); j >= 0 {
				s = s[:j]
			}
			fmt.Print(s)
		}
	}
}

// extraBudget is what -budget grows by for each REST mix beyond the first
// (unless set): the go benchmarks keep their share, and make bench stays
// under 10 minutes (bench/README.md).
func extraBudget(quick bool) time.Duration {
	if quick {
		return 10 * time.Second
	}
	return 35 * time.Second
}

// replReserve is what -sweep-reserve and -budget grow by with the
// replicated run beside the others (unless set): its search and two steps
// of -half-step.
func replReserve(quick bool) time.Duration {
	if quick {
		return 15 * time.Second
	}
	return 2 * time.Minute
}

func contractSymbols() string {
	var s []string
	for _, m := range load.DefaultContracts() {
		s = append(s, m.Symbol)
	}
	return strings.Join(s, ",")
}

func symbols() string {
	var s []string
	for _, m := range load.DefaultMarkets() {
		s = append(s, m.Symbol)
	}
	return strings.Join(s, ",")
}

// resolveCPUs turns -server-cpus into a CPU set (empty: no restriction).
func resolveCPUs(v string) (unix.CPUSet, error) {
	switch v {
	case "all":
		return unix.CPUSet{}, nil
	case "half":
		return affinity.Half()
	}
	return affinity.Parse(v)
}
