package walio

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// tablePacer spreads Pebble's memtable flushes and compactions over time:
// their table and blob file writes go through it at no more than
// tableWriteRate, so the goroutine doing the work sleeps between writes
// instead of taking a CPU for a second at a time from the shards that
// share it.
//
// A burst can outrun the rate, so a flush runs at full speed while the
// memtables hold more than memPaceLimit memtables' worth (one flushing,
// one filling, and more queued; Pebble stalls writes at 4), and
// compactions run at full speed while L0 has l0PaceLimit sublevels or
// more (Pebble stalls writes at 24).
type tablePacer struct {
	on    atomic.Bool
	l0    atomic.Int32 // L0 sublevels (FS.SetBacklog)
	mem   atomic.Int32 // memtables' bytes in memTableSizes, rounded up, sampled by FS.SetBacklog
	paced atomic.Int64 // bytes written through wait

	mu   sync.Mutex
	next time.Time // when the bytes written so far are paid for
}

const (
	tableWriteRate = 4_000_000 // bytes per second, flushes and compactions together
	l0PaceLimit    = 8
	memPaceLimit   = 2
)

// paces says whether a flush's (or a compaction's) writes wait for the rate.
func (p *tablePacer) paces(compaction bool) bool {
	if !p.on.Load() {
		return false
	}
	if compaction {
		return p.l0.Load() < l0PaceLimit
	}
	return p.mem.Load() <= memPaceLimit
}

// The write categories Pebble creates flush and compaction outputs with
// (not exported by Pebble; TestTablePacerSeesPebbleFlush fails if they
// change).
const (
	catFlush      vfs.DiskWriteCategory = "pebble-memtable-flush"
	catCompaction vfs.DiskWriteCategory = "pebble-compaction"
)

// wait sleeps until n more bytes fit the rate.
func (p *tablePacer) wait(n int) {
	p.paced.Add(int64(n))
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	p.next = p.next.Add(time.Duration(n) * time.Second / tableWriteRate)
	d := p.next.Sub(now)
	p.mu.Unlock()
	if d > time.Millisecond { // shorter debts are paid with the next write
		time.Sleep(d)
	}
}

// pacedFile is a table or blob file being written by a flush or a
// compaction. Its data syncs (one as each file is finished) go through the
// AIO syncer underneath when AIO is on, so they do not hold a P either.
type pacedFile struct {
	vfs.File   // an aioFile
	p          *tablePacer
	compaction bool
}

func (f pacedFile) Write(b []byte) (int, error) {
	if f.p.paces(f.compaction) {
		f.p.wait(len(b))
	}
	return f.File.Write(b)
}
