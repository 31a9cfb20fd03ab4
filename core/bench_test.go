package core

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// BenchmarkRingHandoff measures the one-way hand-off from a producer's push
// to the consumer's pop when the ring is not saturated: the producer
// sleeps between pushes (it must not burn one of the two shared cores, or
// the measurement is of the OS scheduler), stamps the time just before
// each push, and the consumer, idling exactly like a shard (spin, then
// park), records pop time minus push time in an HdrHistogram. Pushes are
// spaced `gap` apart: below spinFor the consumer is still spinning, above
// it the consumer has parked and must be woken. With gap 0 the producer
// pushes the next request as soon as the previous one was popped.
func BenchmarkRingHandoff(b *testing.B) {
	for _, gap := range []time.Duration{0, 200 * time.Microsecond} {
		b.Run(fmt.Sprintf("gap=%v", gap), func(b *testing.B) { benchHandoff(b, gap) })
	}
}

func benchHandoff(b *testing.B, gap time.Duration) {
	q := newRing(4096)
	h := hdrhistogram.New(1, int64(time.Second), 3)
	reqs := make([]Request, 1024)
	due := make([]int64, len(reqs)) // intended send time of reqs[i]
	for i := range reqs {
		reqs[i].Seq = uint64(i)
	}
	var popped atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	stop := make(chan struct{})
	go func() { // consumer
		defer wg.Done()
		var since int64
		for {
			r := q.pop()
			if r == nil {
				select {
				case <-stop:
					return
				default:
				}
				if q.idle(&since) {
					q.park(stop)
				}
				continue
			}
			since = 0
			now := time.Now().UnixNano()
			h.RecordValue(now - due[r.Seq])
			popped.Add(1)
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if gap > 0 {
			time.Sleep(gap)
		} else {
			for popped.Load() < int64(i) { // one in flight: hand-off, not queueing
				runtime.Gosched()
			}
		}
		k := i % len(reqs)
		due[k] = time.Now().UnixNano()
		for !q.push(&reqs[k]) {
		}
	}
	b.StopTimer()
	close(stop)
	q.kick()
	wg.Wait()
	b.ReportMetric(float64(h.ValueAtQuantile(50)), "p50-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99)), "p99-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99.9)), "p99.9-ns")
	b.ReportMetric(float64(h.Max()), "max-ns")
}

// benchNode opens a node with `users` funded users trading two markets on
// different shards.
func benchNode(b *testing.B, dir string, users int) (*Node, []engine.UserIdx) {
	o := testOptions(b, dir)
	o.Logf = nil
	n, err := openNode(o)
	if err != nil {
		b.Fatal(err)
	}
	addUser(b, n, feeUID)
	u := make([]engine.UserIdx, users)
	for i := range u {
		uid := int64(100 + i)
		u[i] = addUser(b, n, uid)
		for c := 0; c < 3; c++ {
			mustOK(b, "deposit", first(do(b, n, engine.Cmd{Kind: engine.CmdDeposit, User: u[i], UID: uid, Coin: engine.CoinID(c), Amount: 1 << 52})))
		}
	}
	return n, u
}

// benchCmd is command i of the durable stream: in each group of four, one
// user buys one step on markets 0 and 1 (shards 0 and 1) and another sells
// the same at the same price, so every other order trades: updates, a
// trade and bills, like real flow. Groups rotate over the users.
func benchCmd(i int, u []engine.UserIdx) engine.Cmd {
	k := i / 2 % 2
	side := engine.Buy
	if k == 1 {
		side = engine.Sell
	}
	j := (i/4*2 + k) % len(u)
	return engine.Cmd{Kind: engine.CmdPlace, User: u[j], UID: int64(100 + j), Market: engine.MarketID(i % 2), Side: side,
		Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 1}
}

// BenchmarkDurable measures commands per second through Submit, the ring,
// the engine, the journal (one synced Pebble batch per drained batch) and
// back through Wait.
//
// batch=N is lockstep: N commands submitted, then all N waited for, then
// the next N; shards and disk idle while the producer submits and waits.
// inflight=N keeps N commands in flight, one submitted as soon as the
// oldest is answered, as an edge with many busy clients does: shards apply
// a batch while the previous one is synced.
//
// The journal-only variants skip the history rows (a test-only switch) to
// show what the rows cost.
func BenchmarkDurable(b *testing.B) {
	for _, hist := range []bool{true, false} {
		for _, batch := range []int{1, 16, 256, 4096} {
			name := fmt.Sprintf("batch=%d", batch)
			if !hist {
				name = "journal-only/" + name
			}
			b.Run(name, func(b *testing.B) {
				benchNoHistory = !hist
				defer func() { benchNoHistory = false }()
				benchDurable(b, batch, 2, false)
			})
		}
	}
	for _, n := range []int{256, 4096} {
		b.Run(fmt.Sprintf("inflight=%d", n), func(b *testing.B) { benchDurable(b, n, 2, true) })
	}
	// History is grouped per user per batch: with many users in a batch it
	// writes more Pebble keys.
	b.Run("users=1000/batch=4096", func(b *testing.B) { benchDurable(b, 4096, 1000, false) })
}

// benchDurable runs b.N commands of benchCmd over `users` users, `batch`
// at a time (lockstep) or, with window, `batch` in flight.
func benchDurable(b *testing.B, batch, users int, window bool) {
	n, u := benchNode(b, b.TempDir(), users)
	defer n.Close()
	reqs := make([]*Request, batch)
	submit := func(i int) *Request {
		r := AcquireRequest()
		r.Cmd = benchCmd(i, u)
		for n.Submit(r) == ErrBusy {
			runtime.Gosched()
		}
		return r
	}
	var dl time.Time
	wait := func(r *Request) {
		if err := r.Wait(dl); err != nil {
			b.Fatal(err)
		}
		if r.Out.Reject != engine.OK {
			b.Fatalf("reject %v", r.Out.Reject)
		}
		ReleaseRequest(r)
	}
	k0, y0 := n.Written()
	b.ReportAllocs()
	b.ResetTimer()
	t0, c0 := time.Now(), cpuTime()
	if window {
		dl = deadline()
		for i := 0; i < b.N+batch; i++ {
			k := i % batch
			if reqs[k] != nil {
				wait(reqs[k])
				reqs[k] = nil
			}
			if i < b.N {
				reqs[k] = submit(i)
			}
			if i%65536 == 0 {
				dl = deadline()
			}
		}
	} else {
		for i := 0; i < b.N; {
			reqs = reqs[:0]
			for ; len(reqs) < batch && i < b.N; i++ {
				reqs = append(reqs, submit(i))
			}
			dl = deadline()
			for _, r := range reqs {
				wait(r)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "cmds/s")
	// CPU time of the whole process (shards, Pebble's flushes and
	// compactions, this producer) per command: on a shared machine it is
	// steadier than wall time.
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/cmd")
	k1, y1 := n.Written()
	b.ReportMetric(float64(k1-k0)/float64(b.N), "keys/cmd")
	b.ReportMetric(float64(y1-y0)/float64(b.N), "bytes/cmd")
}

// cpuTime returns the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkReplay measures a full read-only replay of a journal of
// replayCmds commands (written once, in large batches).
func BenchmarkReplay(b *testing.B) {
	const replayCmds = 300_000
	dir := filepath.Join(b.TempDir(), "data")
	n, u := benchNode(b, dir, 2)
	reqs := make([]*Request, 0, 4096)
	for i := 0; i < replayCmds; {
		reqs = reqs[:0]
		for ; len(reqs) < 4096 && i < replayCmds; i++ {
			r := AcquireRequest()
			r.Cmd = benchCmd(i, u)
			for n.Submit(r) == ErrBusy {
				runtime.Gosched()
			}
			reqs = append(reqs, r)
		}
		for _, r := range reqs {
			if err := r.Wait(deadline()); err != nil {
				b.Fatal(err)
			}
			ReleaseRequest(r)
		}
	}
	n.Close()
	b.ResetTimer()
	t0 := time.Now()
	var replay time.Duration
	for i := 0; i < b.N; i++ {
		ro, err := journal.Open(journal.Options{Dir: dir, ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ro.Load(journal.LoadOptions{FullReplay: true}); err != nil {
			b.Fatal(err)
		}
		k, d := ro.Replayed()
		if k < replayCmds {
			b.Fatalf("replayed %d commands, want >= %d", k, replayCmds)
		}
		replay += d
		ro.Close()
	}
	b.StopTimer()
	// cmds/s counts the whole Open (Pebble open included); replay-cmds/s
	// only the replay of the journal into the engines.
	b.ReportMetric(float64(b.N*replayCmds)/time.Since(t0).Seconds(), "cmds/s")
	b.ReportMetric(float64(b.N*replayCmds)/replay.Seconds(), "replay-cmds/s")
}

// BenchmarkQueryRoundTrip measures Submit -> shard -> Wait for an in-shard
// query (a depth read: no journal write, so no fsync), one at a time:
// the edge's full hand-off both ways, including waking the waiter.
func BenchmarkQueryRoundTrip(b *testing.B) {
	n, _ := benchNode(b, b.TempDir(), 2)
	defer n.Close()
	h := hdrhistogram.New(1, int64(time.Second), 3)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := AcquireRequest()
		r.Query = QueryDepth
		r.Cmd.Market, r.Cmd.Qty = 0, 5
		t0 := time.Now()
		if err := n.Submit(r); err != nil {
			b.Fatal(err)
		}
		if err := r.Wait(deadline()); err != nil {
			b.Fatal(err)
		}
		h.RecordValue(int64(time.Since(t0)))
		ReleaseRequest(r)
	}
	b.StopTimer()
	b.ReportMetric(float64(h.ValueAtQuantile(50)), "p50-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99)), "p99-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99.9)), "p99.9-ns")
}
