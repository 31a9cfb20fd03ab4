// Command loadgen is the open-loop REST load generator on its own: point it
// at any running server (or at its built-in bare fasthttp target) and run
// one or more fixed-rate steps of signed order placements and cancels.
//
//	loadgen -addr 127.0.0.1:8080 -api-key K -secret S -passphrase P -rate 1000,2000 -duration 5s
//	loadgen -addr 127.0.0.1:8080 -admin 127.0.0.1:8081 -admin-token T -users 50 -populate 200 -rate 5000
//	loadgen -serve-bare 127.0.0.1:9000     # the bare 200-only target
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/weexcore/exchange/bench/load"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "REST address host:port")
	apiKey := flag.String("api-key", "", "API key of one existing user (with -secret, -passphrase)")
	secret := flag.String("secret", "", "secret key of that user")
	pass := flag.String("passphrase", "", "passphrase of that user")
	admin := flag.String("admin", "", "admin address host:port: create -users users instead of -api-key")
	adminToken := flag.String("admin-token", "", "admin token (X-Admin-Token)")
	users := flag.Int("users", 50, "users to create through the admin API")
	deposit := flag.String("deposit", "", "coin=amount,... credited to each created user (default: plenty of every coin of -markets)")
	rates := flag.String("rate", "1000", "arrival rates in requests/s, comma-separated: one step each")
	duration := flag.Duration("duration", 5*time.Second, "length of each step")
	conns := flag.Int("conns", 128, "keep-alive connections (one worker each)")
	place := flag.Float64("place", 0.5, "fraction of requests that place an order (the rest cancel one placed earlier)")
	take := flag.Float64("take", 0.1, "fraction of placements that are IOC orders crossing the spread")
	markets := flag.String("markets", "BTCUSDT,ETHUSDT", "markets, comma-separated, of: "+symbols())
	seed := flag.Uint64("seed", 1, "random seed")
	populate := flag.Int("populate", 0, "resting orders to place per market before the steps")
	timeout := flag.Duration("timeout", 5*time.Second, "per-request timeout")
	hgrm := flag.String("hgrm", "", "directory to write each step's percentile distribution (.hgrm)")
	serveBare := flag.String("serve-bare", "", "serve the bare 200-only fasthttp target on this address and do nothing else")
	timeline := flag.Duration("timeline", 0, "after each step, print its timeline in slices of this length (answers, those over 2 ms, max; 0: none)")
	pause := flag.Duration("pause", 0, "idle time between steps (make bench's sweeps pause 500ms)")
	lead := flag.Duration("lead", 0, "before each step, this long at its rate unrecorded (make bench's sweeps: 300ms)")
	cpuProfile := flag.String("cpuprofile", "", "write the generator's CPU profile to this file")
	flag.Parse()
	log.SetFlags(0)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}

	if *serveBare != "" {
		ln, err := net.Listen("tcp", *serveBare)
		if err != nil {
			log.Fatal(err)
		}
		log.Printf("ready bare=%s", ln.Addr())
		log.Fatal(load.ServeBare(ln))
	}

	ms, err := load.SelectMarkets(load.DefaultMarkets(), *markets)
	if err != nil {
		log.Fatal(err)
	}
	var creds []load.Cred
	switch {
	case *apiKey != "":
		creds = []load.Cred{{APIKey: *apiKey, SecretKey: *secret, Passphrase: *pass}}
	case *admin != "":
		deps := load.DefaultDeposits(ms)
		if *deposit != "" {
			deps = load.ParseDeposits(*deposit)
		}
		a := &load.Admin{Addr: *admin, Token: *adminToken}
		t0 := time.Now()
		if creds, err = a.CreateUsers(*users, 8, deps); err != nil {
			log.Fatal(err)
		}
		log.Printf("created and funded %d users in %v", len(creds), time.Since(t0).Round(time.Millisecond))
	default:
		log.Fatal("loadgen: need -api-key/-secret/-passphrase or -admin/-admin-token")
	}
	g, err := load.New(load.Target{Addr: *addr, Users: creds, Markets: ms, Conns: *conns, Timeout: *timeout},
		load.Mix{Place: *place, Take: *take, Seed: *seed})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	if *populate > 0 {
		t0 := time.Now()
		failed, first := g.Populate(*populate)
		log.Printf("populated %d orders per market in %v (%d failed %s)", *populate, time.Since(t0).Round(time.Millisecond), failed, first)
	}
	fmt.Println(load.StepHeader())
	for i, rs := range strings.Split(*rates, ",") {
		if i > 0 {
			time.Sleep(*pause)
		}
		rate, err := strconv.ParseFloat(strings.TrimSpace(rs), 64)
		if err != nil || rate <= 0 {
			log.Fatalf("loadgen: bad rate %q", rs)
		}
		r := g.Run(load.Step{Rate: rate, Duration: *duration, Lead: *lead, Progress: func(p load.Progress) {
			fmt.Fprintln(os.Stderr, "  ", load.FormatProgress(p))
		}})
		fmt.Println(load.StepLine(r))
		for _, k := range r.ErrorKeys() {
			e := r.Errors[k]
			fmt.Printf("    %8d  %s  e.g. %s\n", e.Count, k, e.Sample)
		}
		if *timeline > 0 {
			for _, l := range load.Timeline(r, *timeline) {
				fmt.Println("   ", l)
			}
		}
		if *hgrm != "" {
			name := filepath.Join(*hgrm, fmt.Sprintf("loadgen-%.0f.hgrm", rate))
			if err := load.WriteHgrm(name, r.Hist); err != nil {
				log.Fatal(err)
			}
		}
	}
}

func symbols() string {
	var s []string
	for _, m := range load.DefaultMarkets() {
		s = append(s, m.Symbol)
	}
	return strings.Join(s, ",")
}
