package suite

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/bench/load"
	"github.com/weexcore/exchange/bench/report"
)

// The replicated run (issue 48; bench/README.md, "The replicated run"): a
// three-node group of the real server on loopback, driven at its leader by
// the spot-only REST mix's generator, its sweep taking turns with the
// single node's, and its fixed-rate step paired with the single node's
// (Pair): the group's saturation as a share of the single node's, and the
// p50/p99 each adds at one offered rate.

// ReplName is the replicated sweep's name (files rest-repl-NN-RATE.hgrm,
// progress lines).
const ReplName = "rest-repl"

// replSecret is the group's shared secret: the nodes listen on loopback
// only, for the length of the run.
const replSecret = "bench-replica-secret-loopback-only"

// group is the three running members of a replicated run.
type group struct {
	ids   []int
	procs map[int]*Proc
	rest  map[int]string // REST host:port of each member
}

// counters sums the members' counters: the group's cost on this machine.
func (g *group) counters() Counters {
	var c Counters
	for _, p := range g.procs {
		x := p.Counters()
		c.CPU += x.CPU
		c.SysCPU += x.SysCPU
		c.CtxSwitches += x.CtxSwitches
		c.ReadSyscalls += x.ReadSyscalls
		c.WriteSyscall += x.WriteSyscall
		c.RunDelay += x.RunDelay
	}
	return c
}

// exited lists the members that exited while the run went on (a deposed
// leader exits 75 and nothing here restarts it).
func (g *group) exited() []string {
	var out []string
	for _, id := range g.ids {
		select {
		case <-g.procs[id].done:
			out = append(out, fmt.Sprintf("node %d exited during the run (%v)", id, g.procs[id].err))
		default:
		}
	}
	return out
}

func runReplicated(r *Run) error {
	o := r.Opts
	pr := o.Progress
	defer o.Search.Pair.Leave(1)
	turn := o.Search.Turn // as in runREST: setup and shutdown run alone
	turn.take()
	defer turn.give()
	root, err := os.MkdirTemp("", "weex-bench-repl-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	token := fmt.Sprintf("bench-repl-%d", time.Now().UnixNano())
	cfg, err := ServerConfigWith(o.Markets, nil, token)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(r.Dir, "server-config-replicated.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return err
	}
	// REST and raft addresses are named in every member's flags, so they
	// are fixed ahead (below the ephemeral range the single node's ":0"
	// draws from); admin addresses come from each ready line.
	ports, err := loopbackPorts(6)
	if err != nil {
		return err
	}
	g := &group{ids: []int{1, 2, 3}, procs: map[int]*Proc{}, rest: map[int]string{}}
	var peers, rests []string
	for i, id := range g.ids {
		g.rest[id] = ports[i]
		peers = append(peers, fmt.Sprintf("%d=%s", id, ports[3+i]))
		rests = append(rests, fmt.Sprintf("%d=%s", id, ports[i]))
	}
	argsOf := func(id int) []string {
		a := []string{"-config", cfgPath, "-data", filepath.Join(root, strconv.Itoa(id)), "-listen", g.rest[id],
			"-admin-listen", "127.0.0.1:0", "-admin-token", token, "-node-id", strconv.Itoa(id),
			"-peers", strings.Join(peers, ","), "-peer-rest", strings.Join(rests, ","), "-replica-secret", replSecret}
		if o.ReplCPUs != "" {
			a = append(a, "-cpus", o.ReplCPUs)
		}
		return a
	}
	r.ReplArgs = filepath.Base(o.ServerBin) + " " + strings.NewReplacer(token, "<token>", replSecret, "<secret>",
		filepath.Join(root, "1"), "DIR/N", "-node-id 1", "-node-id N").Replace(shellJoin(argsOf(1)))
	fmt.Fprintf(pr, "bench: starting a three-node group of %s (data in %s, %s)\n", o.ServerBin, root, report.FSType(root))
	// At once: a member may wait for the others before it is ready.
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, id := range g.ids {
		wg.Go(func() {
			p, err := StartProc(o.ServerBin, argsOf(id), filepath.Join(r.Dir, fmt.Sprintf("server-repl-%d.log", id)), 2*time.Minute)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			g.procs[id] = p
		})
	}
	wg.Wait()
	defer func() {
		r.Setup = append(r.Setup, g.exited()...)
		for _, id := range g.ids {
			if p := g.procs[id]; p != nil {
				if err := p.Stop(30 * time.Second); err != nil {
					fmt.Fprintf(pr, "bench: replicated node %d stop: %v\n", id, err)
				}
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	t0 := time.Now()
	leader, err := waitLeader(g, time.Minute)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("replicated: node %d leads (REST %s), %v after all three were up", leader, g.rest[leader], time.Since(t0).Round(time.Millisecond))
	fmt.Fprintln(pr, "bench: "+note)
	r.Setup = append(r.Setup, note)
	a := &load.Admin{Addr: g.procs[leader].Addrs["admin"], Token: token}
	t0 = time.Now()
	users, err := a.CreateUsers(o.Users, 8, load.DefaultDeposits(o.Markets))
	if err != nil {
		return err
	}
	gen, err := load.New(load.Target{Addr: g.rest[leader], Users: users, Markets: o.Markets, Conns: o.Conns},
		load.Mix{Place: o.Place, Take: o.Take, Seed: o.Seed})
	if err != nil {
		return err
	}
	defer gen.Close()
	failed, first := gen.Populate(o.Populate)
	note = fmt.Sprintf("replicated: created and funded %d users on the leader, pre-populated %d resting orders per market in %v, %d failed %s",
		len(users), o.Populate, time.Since(t0).Round(time.Millisecond), failed, first)
	fmt.Fprintln(pr, "bench: "+note)
	r.Setup = append(r.Setup, note)
	if failed > int64(o.Populate*len(o.Markets))/10 {
		return fmt.Errorf("suite: populating the group's books failed: %d failed, first: %s", failed, first)
	}
	warm(gen, o, pr, ReplName)
	search := o.Search
	search.ProbeDir = root
	search.PairSide = 1
	turn.give()
	r.Repl = RunSearch(ReplName, gen, search, g.counters, a.Metrics, pr)
	r.Repl.Mix = MixName(0) + ", three-node group"
	turn.take()
	if moved := leaderMoved(g, leader, token); moved != "" {
		// The generator keeps to the first leader: its steps after the
		// move were answered by a follower's refusals.
		fmt.Fprintln(pr, "bench: "+moved)
		r.Setup = append(r.Setup, moved)
	}
	return nil
}

// leaderMoved says so when the member that led at the start no longer
// leads (an overloaded step can cost a leader its quorum's heartbeats).
func leaderMoved(g *group, leader int, token string) string {
	for _, id := range g.ids {
		a := &load.Admin{Addr: g.procs[id].Addrs["admin"], Token: token}
		b, err := a.Raw("/metrics")
		if err == nil && id != leader && bytes.Contains(b, []byte("\nexchanged_replica_is_leader 1\n")) {
			return fmt.Sprintf("replicated: node %d leads at the end, not node %d: the steps after the move measured a follower's refusals (its log says when)", id, leader)
		}
	}
	return ""
}

// waitLeader waits until every member's /readyz answers 200 (a leader is
// known) and one member takes signed requests: a follower answers an
// unsigned private request 503 with X-LEADER, the serving leader with an
// authentication error.
func waitLeader(g *group, within time.Duration) (int, error) {
	var c fasthttp.Client
	get := func(url string) (int, string, error) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(url)
		err := c.DoTimeout(req, resp, time.Second)
		return resp.StatusCode(), string(resp.Header.Peek("X-LEADER")), err
	}
	end := time.Now().Add(within)
	last := "no member answered"
	for time.Now().Before(end) {
		ready := 0
		for _, id := range g.ids {
			if st, _, err := get("http://" + g.procs[id].Addrs["admin"] + "/readyz"); err == nil && st == 200 {
				ready++
			}
		}
		if ready == len(g.ids) {
			for _, id := range g.ids {
				st, lead, err := get("http://" + g.rest[id] + "/api/v3/account")
				switch {
				case err != nil:
					last = fmt.Sprintf("node %d: %v", id, err)
				case st != 503:
					return id, nil
				default:
					last = fmt.Sprintf("node %d: 503, X-LEADER %q", id, lead)
				}
			}
		} else {
			last = fmt.Sprintf("%d of %d members ready", ready, len(g.ids))
		}
		if ex := g.exited(); len(ex) > 0 {
			return 0, fmt.Errorf("suite: %s", strings.Join(ex, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("suite: no leader of the replicated group within %v (%s)", within, last)
}

// loopbackPorts returns n loopback addresses free at the time of the
// call, below Linux's ephemeral range (32768 and up) from which every ":0"
// listener and outgoing connection draws, so that no other socket takes
// one between this call and the member's bind (cmd/exchanged's cluster
// test picks its ports the same way).
func loopbackPorts(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []string
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("suite: no free loopback port below 32768")
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000)))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// replSummary adds the replicated run's rows to the report's summary: the
// group's saturation, its share of the single node's in the same run, and
// the p50/p99 of both at one offered rate, with the difference.
func replSummary(r *Run, t *report.Table) {
	if !r.Opts.Replicated {
		return
	}
	rep := r.Repl
	if rep == nil || rep.Saturation == nil {
		t.Add("replicated saturation (three-node group, durable orders, spot only)", "not measured "+r.ReplErr, "", "")
		return
	}
	rs := rep.Saturation.Achieved()
	t.Add("replicated saturation (three-node group on this machine, durable orders, spot only)",
		fmt.Sprintf("%.0f req/s achieved at %.0f offered", rs, rep.Saturation.Rate), "", capped(rep))
	single := spotSweep(r)
	if single == nil || single.Saturation == nil {
		return
	}
	ss := single.Saturation.Achieved()
	t.Add("replicated / single-node saturation, spot only, same run", fmt.Sprintf("%s (%.0f / %.0f req/s)", percentDown(rs/ss), rs, ss),
		fmt.Sprintf(">= %.0f%% (issue 48)", targetReplRatio*100), yesNo(rs/ss >= targetReplRatio))
	if gt, gg := rep.Saturation.CPUPerRequest(); gt > 0 {
		st, sg := single.Saturation.CPUPerRequest()
		t.Add("CPU per request at saturation, single node / group (three members summed); generator",
			fmt.Sprintf("%s / %s µs; generator %s / %s µs", us(st), us(gt), us(sg), us(gg)), "", "")
	}
	a, b := single.Paired, rep.Paired
	if a == nil || b == nil {
		return
	}
	ms := func(st *StepResult, p float64) string { return load.FormatLatency(st.Percentile(p)) }
	t.Add(fmt.Sprintf("p50 / p99 at %.0f req/s (half the lower saturation), single node / replicated", a.Rate),
		fmt.Sprintf("%s / %s ms, %s / %s ms", ms(a, 50), ms(a, 99), ms(b, 50), ms(b, 99)), "", "")
	d := func(p float64) string {
		return fmt.Sprintf("%+.3f", float64(b.Percentile(p)-a.Percentile(p))/1e6)
	}
	t.Add("extra per request through the group there, p50 / p99", d(50)+" / "+d(99)+" ms", "", "")
}

// targetReplRatio is issue 48's aim: the group's saturation at least this
// share of the single node's.
const targetReplRatio = 0.6

// spotSweep is the run's single-node spot-only REST sweep, nil without one.
func spotSweep(r *Run) *Sweep {
	for _, sw := range restSweeps(r) {
		if sw.Contracts == 0 {
			return sw
		}
	}
	return nil
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
