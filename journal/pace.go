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
// So while commits come faster than paceRateOn per second, Pebble spaces
// WAL syncs at least paceGap apart (Options.WALMinSyncInterval, which
// calls interval before each sync); commits that arrive meanwhile, from
// every shard, share the next sync.
//
// Pebble waits with a Go timer, and Go's scheduler, when it has nothing
// else to do, sleeps in epoll_wait with a timeout rounded up to a whole
// millisecond: a 300 us timer fires after ~1.07 ms here. Tried and
// dropped (loadgen at 6,000 orders/s, 8 markets, p50/p99): spacing the
// commits in the shard loop with a precise sleep (timerfd or nanosleep)
// instead of Pebble's delay: 0.6/11 ms against 0.9/3.2 ms, because commits
// of several shards then land just after one another and each needs its
// own sync; waking the scheduler every 100 us with a periodic timerfd so
// Pebble's timer fires on time: 1.0/4.4-5.2 ms.
type syncPace struct {
	commits atomic.Int64 // synced commits so far
	at      atomic.Int64 // when the rate was last sampled (nanotime)
	seen    atomic.Int64 // commits at that sample
	gap     atomic.Int64 // current minimum gap between syncs (ns)
}

const (
	paceWindow  = 50 * time.Millisecond
	paceRateOn  = 2500                   // commits/s at which syncs start to be spaced
	paceRateOff = 1500                   // ... and below which they stop (hysteresis)
	paceGap     = 300 * time.Microsecond // the spacing while on
)

// commit counts one synced commit.
func (p *syncPace) commit() { p.commits.Add(1) }

// interval returns the minimum gap between WAL syncs, re-deciding it from
// the commit rate once per window.
func (p *syncPace) interval() time.Duration { return p.intervalAt(nanotime()) }

func (p *syncPace) intervalAt(now int64) time.Duration {
	at := p.at.Load()
	if d := now - at; d >= int64(paceWindow) && p.at.CompareAndSwap(at, now) {
		c := p.commits.Load()
		rate := (c - p.seen.Swap(c)) * int64(time.Second) / d
		switch {
		case rate >= paceRateOn:
			p.gap.Store(int64(paceGap))
		case rate < paceRateOff:
			p.gap.Store(0)
		}
	}
	return time.Duration(p.gap.Load())
}
