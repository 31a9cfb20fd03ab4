package core

import (
	"sync/atomic"
	"time"
)

// syncPace is group commit for busy periods. Each synced commit of a
// shard costs one WAL fdatasync, and at a few thousand syncs a second the
// syncs become the load: back-to-back fdatasyncs stall far more often than
// spaced ones.
//
// So while commits come faster than paceRateOn per second, shards hand
// their batches to the committer (commit.go), which syncs at most once per
// gap for all of them, and keep applying meanwhile (up to maxFlights
// batches each in flight); each batch is answered when its sync is done.
//
// The gap trades an answer's wait for the next sync against what a sync
// costs the server (the WAL write, the fdatasync's submission, the
// wake-ups). It is paceGap up to paceLoadLow commands/s and rises to
// paceGapMax at paceLoadHigh, near saturation, where fewer syncs leave CPU
// for requests but a longer wait lowers what a client's connections can
// carry (n connections get at most n / latency answers a second). The
// bounds were chosen with make bench and bench/rest-ab.sh (bench/LOG.md).
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
	return ramp(rate, paceLoadLow, paceLoadHigh, paceGap, paceGapMax)
}

// ramp returns lo up to rate from, hi from rate to on, and the straight
// line between them.
func ramp(rate, from, to int64, lo, hi time.Duration) time.Duration {
	switch {
	case rate <= from:
		return lo
	case rate >= to:
		return hi
	}
	return lo + (hi-lo)*time.Duration(rate-from)/time.Duration(to-from)
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
