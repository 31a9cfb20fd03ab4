package core

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

// The crash test runs a real Node in a child process (this test binary,
// re-executed with JOURNAL_CRASH_DIR set) under concurrent load, kills it
// with SIGKILL at random moments, and checks the directory after every
// kill:
//
//   - every command the child acknowledged (printed "A" after Wait returned
//     nil) is in the journal, at the shard and seq it was acknowledged with;
//   - every journaled command was sent (printed "S" before Submit);
//   - every shard's sequence is gap-free from 1;
//   - the read-only replay (the audit tool's path) passes
//     engine.CheckInvariants, and full replay, snapshot-plus-tail replay
//     and a read-write restart all give the same state hash.
//
// Every command carries a unique tag in Cmd.Text (client order id for
// orders, unused by the engine otherwise, journaled for all kinds).
//
// SIGKILL loses nothing the kernel accepted, so this test catches
// acknowledging before the write (TestCrashCheckerCatchesEarlyAck proves
// it does); losing an unsynced page cache (power loss) is Pebble's WAL
// fsync, which it cannot observe.

const (
	envCrashDir = "JOURNAL_CRASH_DIR"
	envCrashRun = "JOURNAL_CRASH_RUN"
	envEarlyAck = "JOURNAL_TEST_ACK_BEFORE_SYNC"
)

func crashOptions(dir string) testOpts {
	return testOpts{Dir: dir, Shards: 2, Coins: enginetest.SmallCoins(), Markets: crashMarkets(), FeeUID: feeUID,
		InsuranceUID: crashInsurance, SnapshotEvery: 4000}
}

// crashMarkets are the three small spot markets and a BTCUSDT perpetual
// (tick 0.01, step 0.0001, leverage 1-100), which the ledger shard owns.
func crashMarkets() []*engine.MarketSpec {
	coins := enginetest.SmallCoins()
	ct, err := engine.NewContractSpec(crashContract, engine.ContractConfig{Symbol: "BTCUSDT", V2Symbol: "cmt_btcusdt", ContractID: 1,
		BaseAsset: "BTC", QuoteAsset: "USDT", MarginAsset: "USDT", ContractVal: "1", TickSize: "0.01", StepSize: "0.0001",
		MinOrderSize: "0.0001", MaxOrderSize: "1000", MaxPositionSize: "1000", MakerFeeRate: "0.0002", TakerFeeRate: "0.0006",
		MinLeverage: 1, MaxLeverage: 100, DefaultLeverage: 20, MaintenanceMarginRate: "0.005",
		BuyLimitPriceRatio: "0.5", SellLimitPriceRatio: "0.5", MarketFallbackPriceRatio: "0.05",
		IndexSymbol: "BTCUSDT", FundingIntervalHours: 8, InterestRate: "0.0001", MaxFundingRate: "0.0075", EnableTrade: true}, coins[0], coins[2])
	if err != nil {
		panic(err)
	}
	specs := make([]*engine.MarketSpec, crashContract+1)
	copy(specs, enginetest.SmallSpecs(3))
	specs[crashContract] = ct
	return specs
}

const (
	crashContract  = engine.ContractBase
	crashInsurance = 101 // the first user doubles as the insurance account
	usdt           = engine.CoinID(2)
)

// TestCrashChild is the child process; it is skipped in a normal run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(envCrashDir)
	if dir == "" {
		t.Skip("crash test helper process")
	}
	crashChild(dir, os.Getenv(envCrashRun))
}

type lineOut struct {
	mu sync.Mutex
	w  io.Writer
}

// printf writes one line with one write(2): a line printed is in the pipe
// even if the process dies right after.
func (l *lineOut) printf(format string, a ...any) {
	b := fmt.Appendf(nil, format+"\n", a...)
	l.mu.Lock()
	l.w.Write(b)
	l.mu.Unlock()
}

func crashChild(dir, run string) {
	out := &lineOut{w: os.Stdout}
	o := crashOptions(dir)
	o.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	n, err := openNode(o)
	if err == nil {
		crashLoad(n, run, out)
	}
	out.printf("ERR %v", err)
	os.Exit(3)
}

const crashUsers = 16

func crashLoad(n *Node, run string, out *lineOut) {
	users := make([]engine.UserIdx, crashUsers+1)
	uids := make([]int64, crashUsers+1)
	for i := 0; i <= crashUsers; i++ {
		uid := int64(feeUID)
		if i > 0 {
			uid = int64(100 + i)
		}
		uids[i] = uid
		if u, ok := n.Accounts().Lookup(uid); ok {
			users[i] = u
			continue
		}
		r := AcquireRequest()
		tag := fmt.Sprintf("%s.u.%d", run, uid)
		r.Cmd = engine.Cmd{Kind: engine.CmdAddUser, UID: uid}
		r.Cmd.Text.Set([]byte(tag))
		out.printf("S %s", tag)
		if err := n.Submit(r); err != nil {
			out.printf("ERR add user: %v", err)
			os.Exit(3)
		}
		if err := r.Wait(time.Now().Add(10 * time.Second)); err != nil {
			out.printf("ERR add user: %v", err)
			os.Exit(3)
		}
		out.printf("A %s %d %d", tag, n.Shards(), r.Seq)
		users[i] = r.Cmd.User
	}
	out.printf("READY")
	seed, _ := strconv.ParseInt(run, 36, 64)
	for w := 0; w < 4; w++ {
		go crashWorker(n, run, w, rand.New(rand.NewSource(seed*31+int64(w))), users, uids, out)
	}
	select {}
}

func crashWorker(n *Node, run string, w int, rng *rand.Rand, users []engine.UserIdx, uids []int64, out *lineOut) {
	var working []engine.Cmd // orders to cancel: Market, User, UID, OrderID
	reqs := make([]*Request, 0, 16)
	tags := make([]string, 0, 16)
	for cnt := 0; ; {
		k := 1 + rng.Intn(16)
		reqs, tags = reqs[:0], tags[:0]
		for j := 0; j < k; j++ {
			cnt++
			tag := fmt.Sprintf("%s.%d.%d", run, w, cnt)
			i := 1 + rng.Intn(len(users)-1)
			u, uid := users[i], uids[i]
			r := AcquireRequest()
			c := &r.Cmd
			*c = randomCmd(rng, u, uid, &working)
			c.Text.Set([]byte(tag))
			out.printf("S %s", tag)
			if err := n.Submit(r); err != nil {
				out.printf("X %s %v", tag, err) // not queued: nothing applied
				ReleaseRequest(r)
				continue
			}
			reqs, tags = append(reqs, r), append(tags, tag)
		}
		for i, r := range reqs {
			err := r.Wait(time.Now().Add(5 * time.Second))
			if err == nil {
				out.printf("A %s %d %d", tags[i], n.shardOf(&r.Cmd).id, r.Seq)
				if r.Cmd.Kind == engine.CmdPlace && r.HasOrder && r.Order.Status.Working() && len(working) < 64 {
					working = append(working, engine.Cmd{Market: r.Cmd.Market, User: r.Cmd.User, UID: r.Cmd.UID, OrderID: r.Order.OrderID})
				}
			}
			ReleaseRequest(r)
		}
	}
}

// crashLog is what the parent learned from the children's stdout.
type crashLog struct {
	sent  map[string]bool
	acked map[string][2]uint64 // tag -> shard, seq
}

// runChild starts a child on dir and kills it after it has run for d
// under load, or, for d < 0, -d after it started (during start-up).
func runChild(t *testing.T, dir, run string, d time.Duration, early bool, log *crashLog) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashDir+"="+dir, envCrashRun+"="+run)
	if early {
		cmd.Env = append(cmd.Env, envEarlyAck+"=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		r := false
		var bad error
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) >= 2 && f[0] == "S":
				log.sent[f[1]] = true
			case len(f) == 4 && f[0] == "A":
				sh, _ := strconv.ParseUint(f[2], 10, 64)
				seq, _ := strconv.ParseUint(f[3], 10, 64)
				log.acked[f[1]] = [2]uint64{sh, seq}
			case len(f) == 1 && f[0] == "READY" && !r:
				r = true
				close(ready)
			case len(f) >= 1 && f[0] == "ERR":
				bad = errors.New(sc.Text())
			}
		}
		done <- bad
	}()
	if d < 0 { // kill during start-up: Open, replay, user registration
		time.Sleep(-d)
	} else {
		select {
		case <-ready:
			time.Sleep(d)
		case <-time.After(30 * time.Second):
			t.Errorf("child %s not ready in 30s", run)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	bad := <-done
	cmd.Wait()
	if bad != nil {
		t.Fatalf("child %s: %v\nstderr:\n%s", run, bad, stderr.String())
	}
	if strings.Contains(stderr.String(), "DATA RACE") || strings.Contains(stderr.String(), "panic:") {
		t.Fatalf("child %s:\n%s", run, stderr.String())
	}
}

// journalTags reads every shard's journal (read-only) and returns tag ->
// (shard, seq) and each shard's last seq; it fails on a gap or a bad
// record.
func journalTags(tb testing.TB, dir string) (map[string][2]uint64, []uint64, error) {
	tags := make(map[string][2]uint64)
	last := make([]uint64, 64)
	err := records(tb, dir, func(sh int, seq uint64, _ int64, cmds []engine.Cmd) error {
		for i := range cmds {
			tag := cmds[i].Text.String()
			if _, dup := tags[tag]; dup && tag != "" {
				return fmt.Errorf("shard %d seq %d: tag %s journaled twice", sh, seq+uint64(i), tag)
			}
			tags[tag] = [2]uint64{uint64(sh), seq + uint64(i)}
		}
		last[sh] = seq + uint64(len(cmds)) - 1
		return nil
	})
	return tags, last, err
}

// verifyCrash checks dir against what the children said; it returns every
// problem found.
func verifyCrash(t *testing.T, dir string, log *crashLog) []string {
	var probs []string
	tags, _, err := journalTags(t, dir)
	if err != nil {
		return []string{"journal: " + err.Error()}
	}
	for tag, at := range log.acked {
		got, ok := tags[tag]
		if !ok {
			probs = append(probs, fmt.Sprintf("acknowledged command %s (shard %d seq %d) is not in the journal", tag, at[0], at[1]))
		} else if at[1] != 0 && got != at {
			probs = append(probs, fmt.Sprintf("acknowledged command %s: journaled at %v, acknowledged at %v", tag, got, at))
		}
	}
	for tag := range tags {
		if !log.sent[tag] {
			probs = append(probs, fmt.Sprintf("journaled command %s was never sent", tag))
		}
	}
	ro, err := loadRO(dir, false) // coins and markets from the meta, as the audit tool does
	if err != nil {
		return append(probs, "read-only open: "+err.Error())
	}
	hRO := ro.Hash()
	if err := engine.CheckInvariants(ro.Accounts, ro.Engines); err != nil {
		probs = append(probs, "invariants after replay: "+err.Error())
	}
	full, err := loadRO(dir, true)
	if err != nil {
		return append(probs, "full replay: "+err.Error())
	}
	if hFull := full.Hash(); hFull != hRO {
		probs = append(probs, fmt.Sprintf("state hash: full replay %s, snapshot+tail %s", hashString(full.Hash()), hashString(hRO)))
	}
	n, err := openNode(crashOptions(dir))
	if err != nil {
		return append(probs, "restart: "+err.Error())
	}
	hRW, _, err := n.State(deadline())
	if err != nil {
		probs = append(probs, "state after restart: "+err.Error())
	} else if hRW != hRO {
		probs = append(probs, fmt.Sprintf("state hash: restart %s, read-only replay %s", hashString(hRW), hashString(hRO)))
	}
	if err := n.Close(); err != nil {
		probs = append(probs, "close: "+err.Error())
	}
	return probs
}

func crashIters(def int) int {
	if s := os.Getenv("JOURNAL_CRASH_ITERS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	if testing.Short() {
		return 3
	}
	return def
}

func TestCrash(t *testing.T) {
	if os.Getenv(envCrashDir) != "" {
		t.Skip("inside a child")
	}
	dir := t.TempDir()
	log := &crashLog{sent: map[string]bool{}, acked: map[string][2]uint64{}}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	iters := crashIters(20)
	t0 := time.Now()
	for i := 0; i < iters; i++ {
		d := time.Duration(50+rng.Intn(900)) * time.Millisecond
		if i > 0 && rng.Intn(5) == 0 { // not the first: the checks need a created directory
			d = -time.Duration(1+rng.Intn(40)) * time.Millisecond
		}
		// every other child commits through the committer, as under load
		if i%2 == 1 {
			os.Setenv("JOURNAL_TEST_FORCE_PACE", "1")
		} else {
			os.Unsetenv("JOURNAL_TEST_FORCE_PACE")
		}
		runChild(t, dir, strconv.FormatInt(int64(i+1), 36), d, false, log)
		os.Unsetenv("JOURNAL_TEST_FORCE_PACE")
		if probs := verifyCrash(t, dir, log); len(probs) > 0 {
			t.Fatalf("after kill %d (at %v): %d problems:\n%s", i+1, d, len(probs), strings.Join(first10(probs), "\n"))
		}
	}
	tags, seqs, _ := journalTags(t, dir)
	// the mix must have exercised contracts: positions open, futures money
	st, err := loadRO(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	positions, funded := 0, 0
	for u := 0; u < st.Accounts.NumUsers(); u++ {
		positions += len(st.Engines[len(st.Engines)-1].Positions(engine.UserIdx(u), engine.AllContracts, nil))
		if st.Accounts.Total(engine.UserIdx(u), usdt|engine.Futures) > 0 {
			funded++
		}
	}
	if positions == 0 || funded == 0 {
		t.Fatalf("the load opened no contract position (%d) or funded no futures wallet (%d)", positions, funded)
	}
	// and liquidated some: their orders are in the history replay rebuilt
	n, err := openNode(crashOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	liquidations := 0
	for u := 0; u < st.Accounts.NumUsers(); u++ {
		os, err := n.AllOrders(engine.UserIdx(u), st.Accounts.UID(engine.UserIdx(u)), crashContract, 0, maxTime, 0, 1<<30, deadline(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range os {
			if o.Kind == engine.KindLiquidation && o.Status == engine.StatusFilled {
				liquidations++
			}
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if liquidations == 0 {
		t.Fatal("the load liquidated no position")
	}
	t.Logf("%d kills in %v: %d commands sent, %d acknowledged, %d journaled, last seqs %v; %d positions, %d futures wallets, %d liquidation orders at the end",
		iters, time.Since(t0).Round(time.Millisecond), len(log.sent), len(log.acked), len(tags), seqs[:3], positions, funded, liquidations)
}

// TestCrashCheckerCatchesEarlyAck runs the deliberately broken variant
// (acknowledge on enqueue, before the write and the sync) and asserts the
// checker reports acknowledged commands lost.
func TestCrashCheckerCatchesEarlyAck(t *testing.T) {
	if os.Getenv(envCrashDir) != "" {
		t.Skip("inside a child")
	}
	dir := t.TempDir()
	log := &crashLog{sent: map[string]bool{}, acked: map[string][2]uint64{}}
	// The broken child answers a batch during its fsync, so a kill loses
	// acknowledged commands about one time in four: 40 kills miss with
	// probability ~1e-5, and the loop ends at the first catch.
	for i := 0; i < 40; i++ {
		runChild(t, dir, strconv.FormatInt(int64(i+1), 36), 300*time.Millisecond, true, log)
		probs := verifyCrash(t, dir, log)
		lost := 0
		for _, p := range probs {
			if strings.Contains(p, "is not in the journal") {
				lost++
			}
		}
		if lost > 0 {
			t.Logf("kill %d: the checker caught %d lost acknowledged commands, e.g. %s", i+1, lost, probs[0])
			return
		}
	}
	t.Fatal("the checker did not notice acknowledgements before the sync")
}

func first10(s []string) []string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

// randomCmd returns a random command of user u: deposits, withdrawals,
// limit, IOC and market orders around a common price, cancels of orders in
// *working, and cancel-alls.
func randomCmd(rng *rand.Rand, u engine.UserIdx, uid int64, working *[]engine.Cmd) engine.Cmd {
	var c engine.Cmd
	switch p := rng.Intn(100); {
	case p < 12:
		c = engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: uid, Coin: engine.CoinID(rng.Intn(3)), Amount: engine.Amount(1 + rng.Int63n(50_000_000_000))}
	case p < 20:
		c = engine.Cmd{Kind: engine.CmdWithdraw, User: u, UID: uid, Coin: engine.CoinID(rng.Intn(3)), Amount: engine.Amount(1 + rng.Int63n(20_000_000_000))}
	case p < 35 && len(*working) > 0:
		w := *working
		x := rng.Intn(len(w))
		c = w[x]
		c.Kind = engine.CmdCancel
		w[x] = w[len(w)-1]
		*working = w[:len(w)-1]
	case p < 37:
		c = engine.Cmd{Kind: engine.CmdCancelAll, User: u, UID: uid, Market: engine.MarketID(rng.Intn(3))}
	case p < 45: // contracts: about a third of the commands
		c = engine.Cmd{Kind: engine.CmdTransfer, User: u, UID: uid, Coin: usdt | engine.Futures, Amount: engine.Amount(1 + rng.Int63n(20_000_000_000))}
		if rng.Intn(3) == 0 {
			c.Coin = usdt
		}
	case p < 47:
		c = engine.Cmd{Kind: engine.CmdLeverage, User: u, UID: uid, Market: crashContract, Amount: engine.Amount(rng.Intn(120)), Pos: engine.PosSide(rng.Intn(3))}
	case p < 48:
		c = engine.Cmd{Kind: engine.CmdMarginMode, User: u, UID: uid, Market: crashContract, Mode: engine.MarginMode(1 + rng.Intn(2))}
	case p < 49:
		c = engine.Cmd{Kind: engine.CmdPositionMargin, User: u, UID: uid, Market: crashContract, Pos: engine.PosSide(1 + rng.Intn(2)),
			Amount: engine.Amount(rng.Int63n(2_000_000) - 1_000_000)}
		if rng.Intn(2) == 0 { // a plan near the price (fires as trades move it), or all cancelled
			c = engine.Cmd{Kind: engine.CmdPlan, User: u, UID: uid, Market: crashContract, Pos: engine.PosSide(1 + rng.Intn(2)),
				PlanKind: uint8(1 + rng.Intn(2)), Price: engine.Price(9900 + rng.Intn(200)), Qty: engine.Qty(rng.Intn(3000)),
				TrigMark: uint8(rng.Intn(2))}
			if rng.Intn(3) == 0 {
				c.Exec = engine.Price(9900 + rng.Intn(200))
			}
			if rng.Intn(8) == 0 {
				c = engine.Cmd{Kind: engine.CmdPlanCancel, User: u, UID: uid, Market: crashContract}
			}
		}
	case p < 68:
		c = engine.Cmd{Kind: engine.CmdPlace, User: u, UID: uid, Market: crashContract, Side: engine.Side(1 + rng.Intn(2)),
			Pos: engine.PosSide(1 + rng.Intn(2)), Type: engine.Limit, TIF: engine.GTC,
			Price: engine.Price(9900 + rng.Intn(200)), Qty: engine.Qty(1 + rng.Intn(5000))}
		if rng.Intn(5) == 0 { // presets (refused on a close or the wrong side)
			c.TP, c.SL, c.TrigMark = c.Price+engine.Price(rng.Intn(300)), c.Price-engine.Price(rng.Intn(300)), uint8(rng.Intn(4))
			if c.Pos == engine.Short {
				c.TP, c.SL = c.SL, c.TP
			}
		}
		if rng.Intn(10) == 0 {
			c.TIF = engine.IOC
		}
		if rng.Intn(20) == 0 {
			c.Type, c.TIF, c.Price = engine.Market, 0, 0
		}
	default:
		side := engine.Side(1 + rng.Intn(2))
		m := engine.MarketID(rng.Intn(3))
		price := engine.Price(9900 + rng.Intn(200))
		if m == 2 {
			price = engine.Price(500 + rng.Intn(20))
		}
		c = engine.Cmd{Kind: engine.CmdPlace, User: u, UID: uid, Market: m, Side: side, Type: engine.Limit,
			TIF: engine.GTC, Price: price, Qty: engine.Qty(1 + rng.Intn(5000))}
		if rng.Intn(10) == 0 {
			c.TIF = engine.IOC
		}
		if rng.Intn(20) == 0 {
			c.Type, c.TIF, c.Price = engine.Market, 0, 0
		}
	}
	return c
}

// TestCrashDuringCreation kills children while they create a new data
// directory; the next Open must succeed either way.
func TestCrashDuringCreation(t *testing.T) {
	if os.Getenv(envCrashDir) != "" {
		t.Skip("inside a child")
	}
	for i, ms := range []int{5, 15, 30, 50, 80, 120, 200} {
		dir := filepath.Join(t.TempDir(), "data")
		log := &crashLog{sent: map[string]bool{}, acked: map[string][2]uint64{}}
		runChild(t, dir, strconv.Itoa(i+1), -time.Duration(ms)*time.Millisecond, false, log)
		o := crashOptions(dir)
		n, err := openNode(o)
		if err != nil {
			t.Fatalf("open after a kill %dms into creation: %v", ms, err)
		}
		if err := n.Check(deadline()); err != nil {
			t.Fatal(err)
		}
		n.Close()
	}
}
