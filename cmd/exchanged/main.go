// Command exchanged is the exchange server: the REST edge over the journaled
// matching core. See README.md and docs/API.md.
package main

import (
	"cmp"
	"errors"
	"flag"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/weexcore/exchange/config"
	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/edge"
	"github.com/weexcore/exchange/internal/affinity"
	"github.com/weexcore/exchange/internal/walio"
	"github.com/weexcore/exchange/journal"
)

func main() { os.Exit(run()) }

// run starts the server and serves until SIGTERM or SIGINT; it returns the
// exit status. Every line it logs is one slog text record on stderr.
func run() int {
	configPath := flag.String("config", "", "config JSON file (default: the embedded demo config)")
	dataDir := flag.String("data", "./data", "data directory (journal and snapshots)")
	listen := flag.String("listen", "127.0.0.1:8080", "REST address (spot and contract families)")
	adminListen := flag.String("admin-listen", "127.0.0.1:8081", "admin API address")
	adminToken := flag.String("admin-token", "", "admin API token (default: admin_token from the config)")
	recvWindow := flag.Duration("recv-window", 30*time.Second, "accepted clock difference of ACCESS-TIMESTAMP")
	shards := flag.Int("shards", 0, "market shards for a new data directory (0: one per CPU)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to this file until shutdown")
	cpus := flag.String("cpus", "", "run on these CPUs only, a Linux CPU list such as 0 or 0-3 (default: all); Go then runs one processor more than CPUs")
	ioTuning := flag.String("io-tuning", "all", "storage tunings under Pebble: all, none, or a list of spare,aio,pace-tables (docs/DESIGN.md)")
	maxConns := flag.Int("max-conns", 0, "open connections each listener holds at most (0: 16384; kept below the file limit)")
	maxConnsPerIP := flag.Int("max-conns-per-ip", 0, "open connections from one address each listener holds at most (0: 1024)")
	devClock := flag.Bool("dev-clock", false, "demo and test clock: POST /admin/v1/clock {\"nowMs\"} moves the exchange's clock forward (docs/API.md)")
	nodeID := flag.Uint64("node-id", 0, "replication: this node's id in -peers (docs/REPLICATION.md)")
	peers := flag.String("peers", "", "replication: every member's raft address, 1=host:port,2=host:port,3=host:port (absent: a single node)")
	peerREST := flag.String("peer-rest", "", "replication: every member's REST address for X-LEADER, 1=host:port,... (default: none named)")
	raftKeep := flag.Uint64("raft-keep", 0, "replication: raft entries kept behind a snapshot (0: 1000)")
	snapshotEvery := flag.Int("snapshot-every", 0, "commands between snapshots (0: 2,000,000); replicated, each is also the raft snapshot")
	replicaSecret := flag.String("replica-secret", "", "replication: the members' shared secret, at least 16 bytes (default: $EXCHANGED_REPLICA_SECRET)")
	rebuild := flag.String("rebuild", "exec", "replication: how a member that was deposed or installed the leader's snapshot rebuilds from what is durable: exec (re-executes itself, same pid and flags) or exit (status 75, for a supervisor)")
	sysmonPoll := flag.Bool("sysmon-poll", true, "re-execute once with GODEBUG="+sysmonSetting+" so that Go's sysmon polls instead of sleeping deeply between requests (less CPU under load, a little more when idle)")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	fail := func(msg string, args ...any) int {
		logger.Error(msg, args...)
		return 1
	}
	if *cpus != "" {
		// Before the re-execution: the new process inherits the set (and
		// restricts itself again, for its processors).
		//
		// One Go processor more than CPUs: the journal's sync slot and its
		// WAL syncs' completions reach their goroutines through the
		// netpoller, which a busy processor polls only once its run queue
		// is empty. The spare processor waits in the netpoller and takes
		// them when they come, on the same CPUs.
		set, err := affinity.Parse(*cpus)
		if err == nil {
			err = affinity.Restrict(set, set.Count()+1)
		}
		if err != nil {
			return fail("invalid flag", "flag", "-cpus", "err", err)
		}
	}
	tuning, err := walio.ParseTuning(*ioTuning)
	if err != nil {
		return fail("invalid flag", "flag", "-io-tuning", "err", err)
	}
	var reexecErr error
	if *sysmonPoll {
		reexecErr = reexecForSysmon()
	}
	// Nothing is logged before this point: a re-executed process would
	// log it twice.
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			return fail("invalid flag", "flag", "-cpuprofile", "err", err)
		}
		defer pprof.StopCPUProfile()
	}
	if *cpus != "" {
		logger.Info("cpus", "cpus", *cpus, "procs", runtime.GOMAXPROCS(0))
	}
	cfg, err := config.LoadConfig(*configPath)
	if err != nil {
		return fail("config", "err", err)
	}
	configName := *configPath
	if configName == "" {
		configName = "embedded"
	}
	logger.Info("starting", "config", configName, "data", *dataDir, "pid", os.Getpid(), "ioTuning", tuning.String())
	switch reexecuted, godebug := sysmonState(); {
	case reexecErr != nil:
		logger.Warn("sysmon poll: the re-execution failed; running as started", "err", reexecErr, "godebug", godebug)
	case *sysmonPoll && reexecuted:
		logger.Info("sysmon poll: re-executed with GODEBUG="+sysmonSetting+" (off: -sysmon-poll=false)", "godebug", godebug)
	case *sysmonPoll:
		logger.Info("sysmon poll: GODEBUG names schedtrace already; not re-executed", "godebug", godebug)
	default:
		logger.Info("sysmon poll: off (-sysmon-poll=false)", "godebug", godebug)
	}
	if token := cmp.Or(*adminToken, cfg.AdminToken); !loopback(*adminListen) && token == demoToken() {
		return fail("the admin API would listen beyond this machine with the demo config's public token: set -admin-token",
			"adminListen", *adminListen)
	}
	var clock *core.DevClock
	var clockNow func() int64
	if *devClock {
		clock = &core.DevClock{}
		clockNow = clock.Now
		logger.Warn("dev clock: POST /admin/v1/clock moves the exchange's clock; not for production")
	}
	replOpt, leaderREST, err := replicaFlags(*nodeID, *peers, *peerREST, *replicaSecret)
	if err != nil {
		return fail("invalid flag", "err", err)
	}
	if replOpt != nil {
		replOpt.CompactKeep = *raftKeep
	}
	if *rebuild != "exec" && *rebuild != "exit" {
		return fail("invalid flag", "flag", "-rebuild", "value", *rebuild, "err", "want exec or exit")
	}
	// restart rebuilds the process from the journal and the committed log:
	// re-executed in place, or by the supervisor it exits to.
	restart := func(msg string) int {
		if *rebuild == "exec" {
			logger.Warn(msg+"; rebuilding in place: re-executing", "pid", os.Getpid())
			err := reexec()
			logger.Error("re-execution failed; exiting for the supervisor", "err", err, "status", exitRestart)
			return exitRestart
		}
		logger.Warn(msg+"; exiting for the supervisor to restart", "status", exitRestart)
		return exitRestart
	}
	s, err := edge.New(edge.Options{Config: cfg, AdminToken: *adminToken, RecvWindow: *recvWindow, Logger: logger,
		MaxConns: *maxConns, MaxConnsPerIP: *maxConnsPerIP, DevClock: clock, LeaderREST: leaderREST})
	if err != nil {
		return fail("edge", "err", err)
	}
	// Both addresses are bound before the replay, so that a taken port
	// fails the start at once; the admin listener serves during it
	// (/healthz, /readyz 503, /metrics), the REST one once it is done.
	if err := s.Listen(*listen, *adminListen); err != nil {
		return fail("listen", "err", err)
	}
	s.ServeAdmin()
	coins, specs, _ := cfg.EngineSpecs()
	node, err := core.Start(journal.Options{Dir: *dataDir, Tuning: tuning},
		journal.LoadOptions{Shards: *shards, Coins: coins, Markets: specs, FeeUID: cfg.FeeUID, InsuranceUID: cfg.InsuranceUID},
		core.Options{Logger: logger, OnAddUser: s.OnAddUser, Clock: clockNow, Replica: replOpt, SnapshotEvery: *snapshotEvery})
	if err != nil {
		s.Shutdown(5 * time.Second)
		if errors.Is(err, core.ErrRestart) { // replicated: a snapshot from the leader to load
			return restart("a snapshot installed from the leader is to be loaded")
		}
		return fail("start", "err", err)
	}
	if err := s.Start(node); err != nil {
		s.Shutdown(5 * time.Second)
		node.Close()
		return fail("start", "err", err)
	}
	if *configPath == "" {
		// The embedded config's demo credentials are public (README.md);
		// no other secret is logged.
		for _, u := range cfg.Users {
			logger.Info("demo user", "uid", u.UID, "apiKey", u.APIKey, "secretKey", u.SecretKey, "passphrase", u.Passphrase)
		}
	}
	// SIGTERM and SIGINT are caught before "ready": whoever waits for it
	// may stop the server at once, and must get the clean shutdown.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s.Serve()
	rest, admin := s.Addrs()
	logger.Info("ready", "rest", rest, "admin", admin) // msg=ready rest=ADDR admin=ADDR

	status := 0
	select {
	case got := <-sig:
		logger.Info("shutting down", "signal", got.String())
	case <-node.SpaceBack():
		// The journal could not be written (a full disk), and now can: a
		// restart replays what is durable and serves again.
		logger.Info("shutting down: the journal failed and the disk has room again; exiting for the supervisor to restart", "status", exitRestart)
		status = exitRestart
	case <-node.Deposed():
		// A replicated node that led and lost its leadership (or could
		// not commit, or installed a snapshot): its memory may hold
		// commands the group never committed. It starts over at once,
		// as after a crash: it rebuilds from the journal and the
		// committed log, which hold nothing uncommitted, and rejoins as a
		// follower.
		return restart("no longer the leader (or a snapshot was installed)")
	}
	s.Shutdown(30 * time.Second)
	if err := node.Close(); err != nil {
		return fail("shutdown", "err", err)
	}
	logger.Info("stopped")
	return status
}

// exitRestart is the status exchanged exits with to be restarted
// (EX_TEMPFAIL): the journal failed and can be written again.
const exitRestart = 75

// demoToken returns the embedded demo config's admin token, which
// README.md publishes.
func demoToken() string {
	c, err := config.ParseConfig(config.Default)
	if err != nil {
		return ""
	}
	return c.AdminToken
}

// loopback reports whether addr listens on a loopback address only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
