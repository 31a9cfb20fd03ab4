// Package suite is `make bench`: it runs the engine, runtime (core) and
// edge Go benchmarks, starts the real server and a bare fasthttp target, drives both
// with the open-loop load generator at increasing rates, and writes the
// Markdown report, HdrHistogram percentile files and latency plots.
package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weexcore/exchange/bench/load"
	"github.com/weexcore/exchange/bench/report"
)

// Options configure a run.
type Options struct {
	Repo      string // module root (go test runs there)
	Out       string // results directory; the run writes Out/<UTC stamp>/
	GoBin     string
	ServerBin string // built server binary
	Self      string // this executable, re-run with -serve-bare for the bare target
	// ServerCPUs is the CPU list the server and the bare target each run
	// on ("": anywhere); the generator runs anywhere.
	ServerCPUs string
	// ReplCPUs is the CPU list each member of the replicated group runs on
	// ("": anywhere).
	ReplCPUs string
	Command  string // how the run was started, for the report
	Quick    bool

	Seed    uint64
	Users   int
	Conns   int
	Markets []load.Market
	// Contracts are the perpetual contracts the server is configured with
	// when a mix sends orders to them.
	Contracts []load.Market
	// Mixes are the REST sweeps, one per entry: the share of order
	// placements (and so of cancels) sent to contracts (load.Mix.Contracts).
	// The sweeps run against one server, taking turns step by step with
	// each other and the bare sweep. Empty: one spot-only sweep.
	Mixes    []float64
	Place    float64
	Take     float64
	Populate int // resting orders per market before the steps
	Search   Search

	BenchTime     string        // go test -benchtime for engine and edge ("" = default)
	CoreBenchTime string        // go test -benchtime for the runtime, ./core/ ("" = default)
	EngineCount   int           // go test -count for the engine benchmark (0 or 1: once)
	BenchTimeout  time.Duration // per go test run
	// Budget bounds the whole run: go test runs are cut short to leave
	// SweepReserve for the two sweeps, and the sweeps stop stepping up in
	// time to finish (0: no bound).
	Budget       time.Duration
	SweepReserve time.Duration

	SkipEngine, SkipCore, SkipEdge, SkipREST, SkipBare bool
	// Replicated adds the replicated run: a three-node group on loopback
	// under the spot-only mix, its sweep taking turns with the others and
	// its fixed-rate step paired with the single node's spot-only sweep
	// (replicated.go).
	Replicated bool

	Progress io.Writer
}

// Run is everything one run measured.
type Run struct {
	Opts     Options
	Started  time.Time
	Finished time.Time
	Dir      string
	Machine  report.Machine
	Commit   string
	Dirty    []string
	DataFS   string

	Engine, Core, Edge    *GoRun   // Core: the runtime's benchmarks, ./core/
	EngineLatency         *GoRun   // BenchmarkMixedLatency: one command's time, percentiles
	REST, Bare            *Sweep   // REST: the first of RESTs
	RESTs                 []*Sweep // one per Opts.Mixes, in order (nil: setup failed)
	RESTErr, BareErr      string
	Repl                  *Sweep // the three-node group's sweep (Opts.Replicated)
	ReplErr, ReplArgs     string
	Setup                 []string // setup notes (users, population timings)
	ServerLog, ServerArgs string
	ConfigFile            string
}

// GoRun is one `go test -bench` invocation.
type GoRun struct {
	Command string
	Bench   *report.GoBench
	Err     string
	Elapsed time.Duration
	RawFile string
}

// PGOProfile is the server's profile for profile-guided optimization,
// relative to the module root (bench/pgo.sh writes it).
const PGOProfile = "cmd/exchanged/default.pgo"

// Execute performs the run and writes the report. It returns the report's path.
func Execute(ctx context.Context, o Options) (string, error) {
	r := &Run{Opts: o, Started: time.Now().UTC()}
	stamp := r.Started.Format("20060102-150405")
	if o.Quick {
		stamp += "-quick"
	}
	r.Dir = filepath.Join(o.Out, stamp)
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return "", err
	}
	pr := o.Progress
	r.Machine = report.ReadMachine(o.GoBin)
	r.Commit, r.Dirty = report.Git(o.Repo)
	fmt.Fprintf(pr, "bench: writing %s (commit %.12s, %d cores, load %s)\n", r.Dir, r.Commit, r.Machine.Cores, r.Machine.LoadAvg)

	end := time.Now().Add(24 * time.Hour)
	if o.Budget > 0 {
		end = time.Now().Add(o.Budget)
	}
	goEnv := []string{"GOFLAGS=-buildvcs=false"}
	// The benchmarks are built with the server's PGO profile, as the
	// server is (go build picks cmd/exchanged/default.pgo up by itself;
	// go test of another package needs it named): they measure the code
	// as it runs in the server.
	pgo := []string{}
	if _, err := os.Stat(filepath.Join(o.Repo, PGOProfile)); err == nil {
		pgo = []string{"-pgo", PGOProfile}
	}
	goBench := func(name, pkg, pattern, benchtime string, count int) *GoRun {
		args := append([]string{"test", "-run", "^$", "-bench", pattern, "-benchmem"}, pgo...)
		if benchtime != "" {
			args = append(args, "-benchtime", benchtime)
		}
		if count > 1 {
			args = append(args, "-count", strconv.Itoa(count))
		}
		args = append(args, "-timeout", o.BenchTimeout.String(), pkg)
		g := &GoRun{Command: "go " + shellJoin(args), RawFile: name + "-bench.txt"}
		limit := min(o.BenchTimeout+30*time.Second, time.Until(end.Add(-o.SweepReserve)))
		if limit < 5*time.Second {
			g.Err = "skipped: the run's time budget is spent"
			g.Bench = report.ParseGoBench(strings.NewReader(""))
			fmt.Fprintf(pr, "bench: %s: %s\n", name, g.Err)
			return g
		}
		fmt.Fprintf(pr, "bench: %s (at most %v)\n", g.Command, limit.Round(time.Second))
		t0 := time.Now()
		out, err := RunLogged(ctx, o.Repo, goEnv, pr, "["+name+"] ", limit, o.GoBin, args...)
		g.Elapsed = time.Since(t0)
		if err != nil {
			g.Err = err.Error()
		}
		_ = os.WriteFile(filepath.Join(r.Dir, g.RawFile), []byte(out), 0o644)
		g.Bench = report.ParseGoBench(strings.NewReader(out))
		if len(g.Bench.Benchmarks) == 0 && g.Err == "" {
			g.Err = "no benchmark lines in the output"
		}
		return g
	}
	if !o.SkipEngine {
		r.Engine = goBench("engine", "./engine/", "Mixed$", o.BenchTime, o.EngineCount)
		// once: percentiles of millions of commands; the ns/op target is
		// judged on the runs above, which do not read the clock
		r.EngineLatency = goBench("engine-latency", "./engine/", "MixedLatency", o.BenchTime, 1)
	}
	if !o.SkipCore {
		// ring hand-off, durable throughput, replay, query round trip
		r.Core = goBench("core", "./core/", ".", o.CoreBenchTime, 1)
	}
	if !o.SkipEdge {
		r.Edge = goBench("edge", "./edge/", ".", o.BenchTime, 1)
	}
	// The sweeps (one REST sweep per mix, and the bare one) run at once,
	// taking turns step by step (Baton), and share what is left of the
	// time.
	r.Opts.Search.Deadline = end
	if len(r.Opts.Mixes) == 0 {
		r.Opts.Mixes = []float64{0}
	}
	sweeps := 0
	if !o.SkipREST {
		sweeps += len(r.Opts.Mixes)
	}
	if !o.SkipBare {
		sweeps++
	}
	if o.Replicated {
		sweeps++
		r.Opts.Search.Pair = NewPair()
		if o.SkipREST || !slices.Contains(r.Opts.Mixes, 0) {
			r.Opts.Search.Pair.Leave(0) // no single-node spot-only sweep to pair with
		}
	}
	if sweeps > 1 {
		r.Opts.Search.Turn = NewBaton()
	}
	r.Opts.Search.Sharing = sweeps
	var wg sync.WaitGroup
	if !o.SkipREST {
		wg.Go(func() {
			if err := runREST(r); err != nil {
				r.RESTErr = err.Error()
				fmt.Fprintf(pr, "bench: REST: %v\n", err)
			}
		})
	}
	if o.Replicated {
		wg.Go(func() {
			if err := runReplicated(r); err != nil {
				r.ReplErr = err.Error()
				fmt.Fprintf(pr, "bench: replicated: %v\n", err)
			}
		})
	}
	if !o.SkipBare {
		wg.Go(func() {
			if err := runBare(r); err != nil {
				r.BareErr = err.Error()
				fmt.Fprintf(pr, "bench: bare: %v\n", err)
			}
		})
	}
	wg.Wait()
	r.Finished = time.Now().UTC()
	path, err := writeReport(r)
	if err != nil {
		return "", err
	}
	latest := filepath.Join(o.Out, "latest")
	_ = os.Remove(latest)
	_ = os.Symlink(stamp, latest)
	return path, nil
}

func runREST(r *Run) error {
	o := r.Opts
	pr := o.Progress
	defer o.Search.Pair.Leave(0)
	// setup and shutdown run alone, between the other sweep's steps
	turn := o.Search.Turn
	turn.take()
	defer turn.give() // after the server's stop: deferred first, runs last
	dataDir, err := os.MkdirTemp("", "weex-bench-data-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	r.DataFS = report.FSType(dataDir)
	probes := 200
	if o.Quick {
		probes = 50
	}
	probe := func(when string) {
		if s, err := FsyncProbe(dataDir, probes); err == nil {
			fmt.Fprintf(pr, "bench: fsync probe %s: %s\n", when, s)
			r.Setup = append(r.Setup, "fsync probe "+when+": "+s)
		}
	}
	probe("before the sweep")
	defer probe("after the sweep")
	token := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var contracts []load.Market
	for _, share := range o.Mixes {
		if share > 0 {
			contracts = o.Contracts
		}
	}
	cfg, err := ServerConfigWith(o.Markets, contracts, token)
	if err != nil {
		return err
	}
	r.ConfigFile = "server-config.json"
	cfgPath := filepath.Join(r.Dir, r.ConfigFile)
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return err
	}
	args := []string{"-config", cfgPath, "-data", dataDir, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-admin-token", token}
	if o.ServerCPUs != "" {
		args = append(args, "-cpus", o.ServerCPUs)
	}
	r.ServerArgs = filepath.Base(o.ServerBin) + " " + strings.ReplaceAll(shellJoin(args), token, "<token>")
	r.ServerLog = "server.log"
	fmt.Fprintf(pr, "bench: starting %s (data in %s, %s)\n", o.ServerBin, dataDir, r.DataFS)
	srv, err := StartProc(o.ServerBin, args, filepath.Join(r.Dir, r.ServerLog), 2*time.Minute)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Stop(30 * time.Second); err != nil {
			fmt.Fprintf(pr, "bench: server stop: %v\n", err)
			r.Setup = append(r.Setup, "server stop: "+err.Error())
		}
	}()
	rest, admin := srv.Addrs["rest"], srv.Addrs["admin"]
	if rest == "" || admin == "" {
		return fmt.Errorf("suite: ready line without rest= and admin= addresses: %v", srv.Addrs)
	}
	t0 := time.Now()
	a := &load.Admin{Addr: admin, Token: token}
	deposits := append(load.DefaultDeposits(o.Markets), load.DefaultFuturesDeposits(contracts)...)
	users, err := a.CreateUsers(o.Users, 8, deposits)
	if err != nil {
		return err
	}
	wallets := ""
	if len(contracts) > 0 {
		wallets = " (spot and futures wallets)"
	}
	note := fmt.Sprintf("created and funded%s %d users through the admin API in %v", wallets, len(users), time.Since(t0).Round(time.Millisecond))
	fmt.Fprintln(pr, "bench: "+note)
	r.Setup = append(r.Setup, note)
	// One generator per mix, the same users and seed: a spot-only mix
	// draws the same requests as before contracts existed.
	gens := make([]*load.Generator, len(o.Mixes))
	pop := 0 // the generator that populates the books: one with contracts if any
	for i, share := range o.Mixes {
		t := load.Target{Addr: rest, Users: users, Markets: o.Markets, Conns: o.Conns}
		if share > 0 {
			t.Contracts = contracts
			if o.Mixes[pop] == 0 {
				pop = i
			}
		}
		g, err := load.New(t, load.Mix{Place: o.Place, Take: o.Take, Contracts: share, Seed: o.Seed})
		if err != nil {
			return err
		}
		defer g.Close()
		gens[i] = g
	}
	t0 = time.Now()
	failed, first := gens[pop].Populate(o.Populate)
	books := len(o.Markets)
	if o.Mixes[pop] > 0 {
		books += len(contracts)
	}
	note = fmt.Sprintf("pre-populated %d resting orders per market (%d markets, %d of them contracts) in %v, %d failed %s", o.Populate, books, books-len(o.Markets), time.Since(t0).Round(time.Millisecond), failed, first)
	fmt.Fprintln(pr, "bench: "+note)
	r.Setup = append(r.Setup, note)
	if failed > int64(o.Populate*books)/10 {
		return fmt.Errorf("suite: populating the books failed: %d failed, first: %s", failed, first)
	}
	for i, g := range gens {
		warm(g, o, pr, SweepName(o.Mixes[i]))
	}
	search := o.Search
	search.ProbeDir = dataDir
	turn.give()
	sweeps := make([]*Sweep, len(gens))
	paired := slices.Index(o.Mixes, 0) // the spot-only sweep pairs with the replicated one
	var wg sync.WaitGroup
	for i, g := range gens {
		search := search
		if i != paired {
			search.Pair = nil
		}
		wg.Go(func() {
			sweeps[i] = RunSearch(SweepName(o.Mixes[i]), g, search, srv.Counters, a.Metrics, pr)
			sweeps[i].Mix = MixName(o.Mixes[i])
			sweeps[i].Contracts = o.Mixes[i]
		})
	}
	wg.Wait()
	r.RESTs, r.REST = sweeps, sweeps[0]
	turn.take()
	return nil
}

// SweepName names a REST sweep by its contract share (load.Mix.Contracts):
// "rest" for spot only, "rest-ct30" for 30% contracts. Its files
// (rest-ct30-01-1000.hgrm) and progress lines carry it.
func SweepName(share float64) string {
	if share <= 0 {
		return "rest"
	}
	return fmt.Sprintf("rest-ct%.0f", share*100)
}

// MixName labels a REST sweep's mix in the report: "spot only", "30%
// contracts".
func MixName(share float64) string {
	if share <= 0 {
		return "spot only"
	}
	return fmt.Sprintf("%.0f%% contracts", share*100)
}

func runBare(r *Run) error {
	o := r.Opts
	pr := o.Progress
	turn := o.Search.Turn // as in runREST
	turn.take()
	defer turn.give()
	fmt.Fprintf(pr, "bench: starting the bare fasthttp target\n")
	cpus := o.ServerCPUs
	if cpus == "" {
		cpus = "all"
	}
	args := []string{"-serve-bare", "127.0.0.1:0", "-server-cpus", cpus}
	p, err := StartProc(o.Self, args, filepath.Join(r.Dir, "bare.log"), 30*time.Second)
	if err != nil {
		return err
	}
	defer p.Stop(5 * time.Second)
	// The same users (fake credentials: the target checks nothing) and the
	// same request mix, so the generator's own cost is the same.
	users := make([]load.Cred, o.Users)
	for i := range users {
		users[i] = load.Cred{UID: int64(i + 1), APIKey: fmt.Sprintf("bare-key-%d", i), SecretKey: fmt.Sprintf("bare-secret-%d", i), Passphrase: "bare"}
	}
	g, err := load.New(load.Target{Addr: p.Addrs["bare"], Users: users, Markets: o.Markets, Conns: o.Conns},
		load.Mix{Place: o.Place, Take: o.Take, Seed: o.Seed})
	if err != nil {
		return err
	}
	defer g.Close()
	warm(g, o, pr, "bare")
	search := o.Search
	search.ProbeDir = os.TempDir()
	search.Pair = nil // the replicated run pairs with the REST sweep
	turn.give()
	r.Bare = RunSearch("bare", g, search, p.Counters, nil, pr)
	turn.take()
	return nil
}

// warm runs a short unrecorded step at the first rate: connections open,
// heaps and caches reach their working size.
func warm(g *load.Generator, o Options, pr io.Writer, name string) {
	fmt.Fprintf(pr, "[%s] warm-up: %.0f req/s for 1s (not recorded)\n", name, o.Search.Start)
	g.Run(load.Step{Rate: o.Search.Start, Duration: time.Second})
	time.Sleep(o.Search.Pause)
}

func shellJoin(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a == "" || strings.ContainsAny(a, " '\"$^*?[]{}()|&;<>\\") {
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
		} else {
			b.WriteString(a)
		}
	}
	return b.String()
}

// LookGo finds the go tool.
func LookGo() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}
