package journal

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// tablePacer spreads Pebble's memtable flushes and compactions over time:
// their table and blob file writes go through it at no more than
// tableWriteRate, so the goroutine doing the work sleeps between writes
// instead of taking a CPU for a second at a time. On a machine whose CPUs
// the server shares (make bench: the generator, 2 cores), an unpaced 64 MB
// flush or compaction left requests waiting to be read for 60-1,400 ms.
// Measured at 13,000 req/s, 65 s runs that hold one flush and one
// compaction, interleaved (client p99 / max ms): flushes and compactions
// paced at 8 MB/s 18.6 / 134 (a stall in the first second), 6.1 / 24,
// 12.4 / 27, 11.0 / 32; unpaced 27.9 / 59, 104.5 / 154, 1,414 / 1,488,
// 67 / 91; the final code, 2 more pairs: 36.9 / 81 (in the first second,
// before any flush) and 5.6 / 19 against 10.7 / 37 and 116 / 221. Flushes
// alone paced: 68.9 / 171 and 7.7 / 33 against 141 / 237 and 32 / 67.
//
// The rate was 8 MB/s until the server stopped holding its P through
// table syncs and unlinks (aioFile under pacedFile, remove.go); since, the
// flush's own CPU is what its requests feel: at 16,800 req/s a 64 MB
// flush (29 MB written) took CPU 0, the server's, from 70-80% busy to as
// much as 92-94% (1 s samples of /proc/stat) in a slow phase of this VM.
// Half the rate spreads the same work over twice the time. Fresh server,
// 50 s at 16,800 req/s, one flush each, interleaved, answers over 2 ms in
// the seconds the flush ran: 4 MB/s 3,768 (2.04%), 6,409 (3.47%), 2,401
// (1.43%); 8 MB/s 25,857 (25.65%), 4,114 (4.08%), 17,492 (17.35%). A 64
// MB flush now takes 8.7-9.5 s (make bench, 2026-11-24).
//
// Flushes need far less than the rate (at 25,000 req/s a 64 MB memtable
// fills in ~15 s and flushes to ~25 MB), but a burst can outrun it, so a
// flush runs at full speed while the memtables hold more than
// memPaceLimit memtables' worth (one flushing, one filling, and more
// queued; writes stall at MemTableStopWritesThreshold, 4). Compactions can
// need more as the store grows, so they are paced only while L0 is
// shallow: from l0PaceLimit sublevels on they run at full speed until
// Pebble catches up (write stalls begin at L0StopWritesThreshold, 24).
//
// Pacing is on only while the node serves: the flushes of a WAL replay at
// open and of the memtable at close run at full speed.
type tablePacer struct {
	on    atomic.Bool
	l0    atomic.Int32 // L0 sublevels, sampled by Node.watchBacklog
	mem   atomic.Int32 // memtables' bytes in memTableSizes, rounded up, sampled by Node.watchBacklog
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
// compaction, on an aioFile: its data syncs (one as each file is
// finished) go through asyncSync, like the WAL's. A plain fdatasync held
// the server's only P (make bench runs it on one CPU) for its whole
// length, 1.3-2.0 ms here
// (a Go trace at 16,800 req/s: one per table, every ~275 ms of a flush),
// and every request in the server waited that long; sysmon, backed off
// to 10 ms sleeps (cmd/exchanged/sysmon.go), did not hand the P on.
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
