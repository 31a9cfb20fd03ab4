// Command exchanged is the exchange server: the REST edge over the journaled
// matching core. See README.md and docs/API.md.
package main

import (
	"flag"
	"fmt"
	"log"
	"log/slog"
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

func main() {
	configPath := flag.String("config", "", "config JSON file (default: the embedded demo config)")
	dataDir := flag.String("data", "./data", "data directory (journal and snapshots)")
	listen := flag.String("listen", "127.0.0.1:8080", "REST address (spot and contract families)")
	adminListen := flag.String("admin-listen", "127.0.0.1:8081", "admin API address")
	adminToken := flag.String("admin-token", "", "admin API token (default: admin_token from the config)")
	recvWindow := flag.Duration("recv-window", 30*time.Second, "accepted clock difference of ACCESS-TIMESTAMP")
	shards := flag.Int("shards", 0, "market shards for a new data directory (0: one per CPU)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to this file until shutdown")
	cpus := flag.String("cpus", "", "run on these CPUs only, a Linux CPU list such as 0 or 0-3 (default: all); Go then runs one processor more than CPUs")
	flag.Parse()
	if *cpus != "" {
		// Before the re-execution: the new process inherits the set (and
		// restricts itself again, for its processors).
		//
		// One Go processor more than CPUs. The journal's sync slot and its
		// WAL syncs' completions reach their goroutines through the
		// netpoller, which a busy processor polls only once its run queue
		// is empty, so under load they waited behind the requests queued
		// meanwhile. The spare processor waits in the netpoller and takes
		// them when they come; the kernel runs its thread on the same CPUs
		// (under -cpus 0 the same one, so no wake-up crosses CPUs).
		// Measured with one CPU only: bench/LOG.md, "One Go processor
		// more than CPUs".
		set, err := affinity.Parse(*cpus)
		if err == nil {
			err = affinity.Restrict(set, set.Count()+1)
		}
		if err != nil {
			log.Fatalf("-cpus: %v", err)
		}
	}
	reexecForSysmon()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatalf("cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatalf("cpuprofile: %v", err)
		}
		defer pprof.StopCPUProfile()
	}

	logger := log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds)
	if *cpus != "" {
		logger.Printf("cpus %s: %d Go processors", *cpus, runtime.GOMAXPROCS(0))
	}
	cfg, err := config.LoadConfig(*configPath)
	if err != nil {
		logger.Fatal(err)
	}
	s, err := edge.New(edge.Options{Config: cfg, AdminToken: *adminToken, RecvWindow: *recvWindow, Logf: logger.Printf})
	if err != nil {
		logger.Fatal(err)
	}
	// Both addresses are bound before the replay, so that a taken port
	// fails the start at once; the admin listener serves during it
	// (/healthz, /readyz 503, /metrics), the REST one once it is done.
	if err := s.Listen(*listen, *adminListen); err != nil {
		logger.Fatal(err)
	}
	s.ServeAdmin()
	coins, specs, _ := cfg.EngineSpecs()
	slogger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	node, err := core.Start(journal.Options{Dir: *dataDir, Tuning: walio.All()},
		journal.LoadOptions{Shards: *shards, Coins: coins, Markets: specs, FeeUID: cfg.FeeUID},
		core.Options{Logger: slogger, OnAddUser: s.OnAddUser})
	if err != nil {
		logger.Fatal(err)
	}
	if err := s.Start(node); err != nil {
		node.Close()
		logger.Fatal(err)
	}
	if *configPath == "" {
		for _, u := range cfg.Users {
			logger.Printf("demo user uid=%d apiKey=%s secretKey=%s passphrase=%s", u.UID, u.APIKey, u.SecretKey, u.Passphrase)
		}
	}
	// Catch SIGTERM/SIGINT before saying ready: whoever waits for "ready"
	// may stop us at once, and must get the clean shutdown (TestRateLimit,
	// done within 40 ms of ready, once got the default action: death by it).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s.Serve()
	rest, admin := s.Addrs()
	logger.Printf("ready rest=%s admin=%s", rest, admin)

	got := <-sig
	logger.Printf("%v: shutting down", got)
	s.Shutdown(30 * time.Second)
	if err := node.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "exchanged: shutdown:", err)
		os.Exit(1)
	}
	logger.Printf("stopped")
}
