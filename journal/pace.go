package journal

import (
	"sync/atomic"
	"time"
)

// syncPace is group commit for busy periods. Each synced commit of a shard
// costs one WAL fdatasync; at a few thousand syncs per second the fsyncs
// themselves become the load: on the VMs this runs on, back-to-back
// fdatasyncs (~4.5k/s) stall for 15-20 ms once every few hundred (p99.9),
// and the host takes CPU from the guest (steal time). Measured with a bare
// append+fdatasync loop on this machine: back to back p99.9 16-18 ms;
// spaced 300 us apart p99.9 0.36 ms, max 1.6 ms.
//
// So while commits come faster than paceRateOn per second, shards hand
// their batches to the committer (commit.go), which syncs at most once per
// paceGap for all of them, and keep applying meanwhile (up to maxFlights
// batches each in flight); each batch is answered when its sync is done.
//
// Measured with the loadgen on this machine (8 markets, 6,000 and 14,400
// orders/s, 8 s per run, two runs; p50/p99 ms):
//
//   - Pebble's WALMinSyncInterval of 300 us (before): 0.9/3.2 and 1.7/3.5.
//     Pebble waits with a Go timer, and Go's scheduler, when idle, sleeps in
//     epoll_wait with a timeout rounded up to a whole millisecond: a 300 us
//     timer fires after ~1.07 ms here, and a shard blocked in its commit
//     cannot build the next batch, so requests waited one to two cycles.
//   - The committer, waiting with a timerfd (netpoller: 0.26 ms for 250 us),
//     shards pipelined: gap 650 us: 0.66/0.85-0.89 and 0.73/4.6-5.1;
//     gap 800 us: 0.81/1.54-1.59 and 0.96/1.90-1.91. Shorter gaps sync
//     more often and the fsync stalls come back at the higher rate. At
//     16,000/s (half of saturation in make bench): gap 700 us 0.85/3.1-4.0,
//     750 us 0.93-0.95/1.79-1.86, 800 us 1.31-1.33/1.91-1.96.
//   - Still open: a memtable flush (64 MB: every ~15 s at 14,400 orders/s)
//     writes to the disk the WAL syncs on, and syncs wait behind it: 10-30
//     ms spikes, p99 over 30 s 3.4-3.5 ms. Smaller memtables (16 MB: 6.4
//     ms), no compression (more bytes: 7.1 ms) and other BytesPerSync values
//     were worse. (Since then flushes are paced, tablepace.go, and their
//     syncs and unlinks no longer hold the server's P, remove.go.)
//   - Tried and dropped: spacing commits in each shard with a precise sleep
//     (commits of several shards then land just after one another and each
//     needs its own sync: p99 11 ms at 6,000/s); waking the scheduler every
//     100 us so Pebble's timer fires on time (p99 4.4-5.2 ms at 6,000/s);
//     a 300 us gap once WALs were written on spares (walspare.go): in short
//     interleaved runs on a fresh server (10-15 s at 8,500-21,000/s) it
//     beat 750 us on p50 and p99 for ~0.1 core more, but in a make bench
//     run (results/20261123-142406) it synced 2,163 times/s at half
//     saturation against 1,216, the server used 0.95 cores there against
//     0.82, and the REST numbers were worse (half-saturation p99 2.97 ms,
//     saturation 17,082/s).
//
// The gap grows with the command rate, from paceGap at paceLoadLow
// commands/s to paceGapMax at paceLoadHigh and above: each sync cost the
// server ~0.2 ms of CPU when this was measured (the WAL write and
// fdatasync, and waking the committer, Pebble's log writer and every
// shard; since the fdatasync went through AIO, walsync.go, part of it is a
// kernel worker's and the server's own CPU fell 13-17% at 14,400-17,000
// requests/s, the machine's 3-6%), which near saturation is
// CPU the requests need, while a longer wait for the sync is small beside
// the queueing there. Measured with the loadgen on a fresh server (8
// markets, 8 s at 28,000 orders/s, interleaved): the server's CPU was 6 of 6
// runs lower with a 1,500 us gap than with 750 us (mean 645 against 766 CPU
// ticks, -16%), with 1,000-1,200 us 3-8% lower; at 12,800/s (half of the
// saturation make bench found then: where its p99 target is) a 1,000 us gap
// gave p99 1.49-1.90 ms against 1.41-1.61 ms with 750 us, so the low end
// stays at 750 us. With this rule against the fixed 750 us, in two
// interleaved REST sweeps each (benchrun with only the REST load), at
// 25,629/s: 4,163 and 4,238 syncs in the 5 s step against 6,149 and 6,135;
// the server used 0.78 and 0.76 cores against 0.88 and 0.89; p50 1.23 and
// 1.22 ms against 0.89 and 0.94; p99 2.96 and 2.23 ms against 4.12 and 3.05.
// The top is bounded by the answer time it adds: a client with n connections
// gets at most n / latency answers per second.
//
// The rise started at 16,000 commands/s until the server's CPU per request
// fell (cmd/exchanged/sysmon.go: -14-16% at 19,200/s) and make bench's REST
// saturation rose to 43,226/s (results/20261124-175852), which put its
// half-saturation step at 21,625/s, on the slope (a ~1 ms gap). There,
// with bench/rest-ab.sh, 6 interleaved rounds, a rise from 24,000 (so a
// 750 us gap at that rate) against 16,000: p50 0.77-0.81 against 1.03-1.04
// ms (6 of 6), p99 median 2.05 against 2.40 ms (lower in 5 of 6), for 8%
// more CPU (server 1,056 against 977 ticks, machine 1,936 against 1,789).
// Saturation is above paceLoadHigh either way, where the gap is the same.
//
// The top was 1,500 us until the server's CPU per sync fell (the AIO
// fdatasync, and sysmon's backing off) and make bench's saturation came to
// be set by latency rather than CPU: at 38,400/s the server answered every
// request with 0.78 of its core, but the step failed on p99 over 20 ms,
// as every request queues behind the one before it on its connection once
// answers take longer. A 1,000 us top against 1,500, with
// bench/rest-ab.sh-style interleaved rounds (a fresh server on CPU 0, two
// 6 s steps, the second read), at 38,400/s in two sets of 4 rounds: p99
// 18.0/9.8/27.3/23.6 against 63.1/91.1/162/34.1 ms, and
// 35.6/28.8/22.0/24.4 against 280/39.3/11.8/66.6 ms; at 28,800/s (a 900
// against a 1,200 us gap) 8.2/3.8/23.8 against 11.4/6.1/26.4 ms. p50 was
// lower in 11 of 11 rounds, p99 in 10 of 11, for 3-7% more server CPU;
// against a flat 750 us the 1,000 us top had the lower p99 in 3 of 4
// rounds at 38,400/s.
//
// The low end was 750 us up to 24,000 commands/s (rising to the top at
// 32,000) until the server's CPU per request fell again (history rows for
// finished orders only, doc.go) and make bench's half-saturation step came
// to 28,800/s, on that slope (~0.9 ms): there the server's own p99 was the
// gap plus an fdatasync (1.8-2.2 ms) and the client's 2.4-2.9 ms in three
// runs, while a runtime trace showed nothing in the process holding its
// processor longer than 0.35 ms (bench/README.md). Now 500 us up to 32,000,
// rising to the top at 40,000, so saturation (above 40,000 since) kept the
// same gap (1,000 us then). bench/rest-ab.sh at 28,800/s, 6 interleaved
// rounds, against the rule before: p50 0.57-0.59 against 0.93-0.94 ms (6 of
// 6), p99 1.79-2.46 (median 2.35) against 2.24-2.70 ms (2.55), lower in 6 of
// 6, for 12% more server CPU (769 against 685 ticks) and 12% more of the
// machine's. Three make bench runs each (results/20261125-0336..0355 before,
// -0411..0423 after): half-saturation p99 2.909, 2.403, 2.715 ms against
// 2.209 (at 32,437/s), 1.926, 2.523 ms; answers over 2 ms there 4.57, 2.54,
// 3.33% against 1.33, 0.87, 1.40%, the latter mostly (76-88%) in the 10
// worst 100 ms windows, i.e. fdatasync stalls (max 9.3 ms); the server's CPU
// at that step 0.52-0.53 cores against 0.54-0.57; REST/bare 50.8, 50.7,
// 48.3% against 54.4, 50.7, 50.7%. The lower steps' p99 moved both ways:
// 11,391/s 1.95-2.04 ms before, 7.07, 2.91 and 1.57 after (two runs with an
// fdatasync of 9-11 ms in that step).
//
// The top was 1,000 us until make bench's saturation came to sit at
// 57,665-64,873/s, set by latency again rather than CPU: at 57,600/s the
// server's CPU 0 was 3% idle plus 8% in I/O wait (/proc/stat, 8 s), so the
// 128 connections, each waiting for its answer, bounded the rate (128 /
// 57,600 = 2.2 ms a round trip) while the server still had CPU for more
// syncs. A 750 us top against 1,000 us, bench/rest-ab.sh at 57,600/s, 3
// interleaved rounds: p50 1.21-1.25 against 1.42-1.99 ms, p99 4.6, 8.9
// and 9.8 against 6.6, 17.4 and 17.4 ms (lower in 3 of 3), server CPU
// 1,172-1,174 against 1,171-1,217 ticks. A flat 500 us against 750 us
// at 57,600/s, 3 rounds: p99 7.6/18.2/7.9 against 4.5/13.7/9.6 ms, and
// 2-6% more of the machine's CPU. At 64,800/s every variant queued (p99
// 25-280 ms): saturation is just below. The low end (up to 32,000/s, the
// half-saturation step) is unchanged.
//
// A 250 us low end, tried (2026-11-25) when make bench's half-saturation
// step sat at 32,437/s with its p99 at 2.04-3.15 ms: on a fresh server it
// looked better (bench/rest-ab.sh at 32,400/s, 4 interleaved rounds: p99
// 1.28-1.86 against 1.93-2.43 ms, for 7% more server CPU and 19% more of
// the machine's; 60 s steps, 2 rounds, with the WAL spares preallocated
// (walspare.go) in the 250 us build only: answers over 2 ms 0.93 and 0.94%
// against 1.17 and 1.49%), but make bench's step comes after the
// overloaded steps of the saturation search, and there it was worse even
// with the preallocation on its side: REST-only sweeps, 2 interleaved
// each, half-saturation p99 2.833 and 2.587 ms against 2.035 and 1.913
// (~30,000 syncs in the step against ~17,900, WAL fdatasync max 6.8 and
// 4.5 ms against 4.7 and 2.3), while the preallocation alone, in sweeps
// of its own, lowered it (walspare.go); three make bench runs of the 250
// us build: 1.522, 2.095 and 2.775 ms. The low end stays 500 us.
type syncPace struct {
	commits atomic.Int64 // segments applied so far (drained batches with commands: shard.segment)
	cmds    atomic.Int64 // commands in them
	at      atomic.Int64 // when the rate was last sampled (nanotime)
	seen    atomic.Int64 // commits at that sample
	seenCmd atomic.Int64 // commands at that sample
	gap     atomic.Int64 // current minimum gap between syncs (ns)
	force   bool         // tests: always paced
}

const (
	paceWindow   = 50 * time.Millisecond
	paceRateOn   = 2500                   // commits/s at which syncs start to be spaced
	paceRateOff  = 1500                   // ... and below which they stop (hysteresis)
	paceGap      = 500 * time.Microsecond // between sync starts while on, up to paceLoadLow
	paceGapMax   = 750 * time.Microsecond // ... from paceLoadHigh on
	paceLoadLow  = 32000                  // commands/s
	paceLoadHigh = 40000
)

// commit counts one applied segment of n commands. Unpaced, a segment is
// its own synced commit unless the shard still has batches in flight;
// paced, the committer merges them.
func (p *syncPace) commit(n int) {
	p.commits.Add(1)
	p.cmds.Add(int64(n))
}

// gapFor returns the gap between syncs at rate commands/s.
func gapFor(rate int64) time.Duration {
	switch {
	case rate <= paceLoadLow:
		return paceGap
	case rate >= paceLoadHigh:
		return paceGapMax
	}
	return paceGap + (paceGapMax-paceGap)*time.Duration(rate-paceLoadLow)/(paceLoadHigh-paceLoadLow)
}

// syncGap returns the gap the committer keeps between syncs: the paced
// one, or paceGap while pacing is off (a shard then commits through the
// committer only while it has batches in flight).
func (p *syncPace) syncGap() time.Duration {
	if g := time.Duration(p.gap.Load()); g > 0 {
		return g
	}
	return paceGap
}

// interval returns the minimum gap between WAL syncs (0: not paced),
// re-deciding it from the commit rate once per window.
func (p *syncPace) interval() time.Duration {
	if p.force {
		return paceGap
	}
	return p.intervalAt(nanotime())
}

func (p *syncPace) intervalAt(now int64) time.Duration {
	at := p.at.Load()
	if d := now - at; d >= int64(paceWindow) && p.at.CompareAndSwap(at, now) {
		c, n := p.commits.Load(), p.cmds.Load()
		rate := (c - p.seen.Swap(c)) * int64(time.Second) / d
		load := (n - p.seenCmd.Swap(n)) * int64(time.Second) / d
		switch {
		case rate >= paceRateOn || (rate >= paceRateOff && p.gap.Load() > 0):
			p.gap.Store(int64(gapFor(load)))
		default:
			p.gap.Store(0)
		}
	}
	return time.Duration(p.gap.Load())
}
