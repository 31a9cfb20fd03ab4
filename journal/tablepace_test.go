package journal

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weexcore/exchange/engine"
)

// TestTablePacer: while on, a flush's writes are paced at tableWriteRate
// unless memtables queue behind it, and a compaction's too unless L0 is
// deep; off, nothing is; files that are neither are never paced.
func TestTablePacer(t *testing.T) {
	w, dir := newTestFS(t)
	chunk := make([]byte, 64<<10)
	write := func(name string, cat vfs.DiskWriteCategory, n int) time.Duration {
		t.Helper()
		f, err := w.Create(filepath.Join(dir, name), cat)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if _, err := f.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	paced := func() int64 { return w.pacer.paced.Load() }

	write("000001.sst", catFlush, 4)
	if paced() != 0 {
		t.Fatalf("off: %d bytes paced", paced())
	}
	w.pacer.on.Store(true)
	d := write("000002.sst", catFlush, 16) // 1 MiB
	if want := time.Duration(1<<20) * time.Second / tableWriteRate; paced() != 1<<20 || d < want-2*time.Millisecond {
		t.Fatalf("flush: %d bytes paced in %v, want 1 MiB in at least %v", paced(), d, want)
	}
	w.pacer.mem.Store(memPaceLimit + 1)
	write("000006.sst", catFlush, 2)
	if paced() != 1<<20 {
		t.Fatalf("flush with memtables queued was paced: %d bytes paced in all", paced())
	}
	w.pacer.mem.Store(memPaceLimit)
	write("000003.sst", catCompaction, 2)
	if paced() != 1<<20+128<<10 {
		t.Fatalf("compaction with L0 shallow: %d bytes paced in all", paced())
	}
	w.pacer.l0.Store(l0PaceLimit)
	write("000004.sst", catCompaction, 2)
	write("OPTIONS-000005", vfs.WriteCategoryUnspecified, 2)
	if paced() != 1<<20+128<<10 {
		t.Fatalf("compaction with L0 deep, or another file, was paced: %d bytes paced in all", paced())
	}
}

// TestTablePacerSeesPebbleFlush: a memtable flush of a serving node goes
// through the pacer, so Pebble still creates its tables with the write
// category the pacer looks for, and syncs them through AIO (pacedFile's
// SyncData, which Pebble must still call to finish a table).
func TestTablePacerSeesPebbleFlush(t *testing.T) {
	n, err := Open(testOptions(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	u := addUser(t, n, 100)
	r := AcquireRequest()
	r.Cmd = engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 100, Coin: 2, Amount: 1}
	if err := n.Submit(r); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(deadline()); err != nil {
		t.Fatal(err)
	}
	ReleaseRequest(r)
	for t0 := time.Now(); n.fs.pacer.mem.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Since(t0) > 5*time.Second {
			t.Fatal("the pacer never saw the memtables' size")
		}
	}
	before, syncs := n.fs.pacer.paced.Load(), n.fs.tableSync.count()
	if err := n.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := n.fs.pacer.paced.Load() - before; got <= 0 {
		t.Fatalf("a memtable flush wrote %d bytes through the pacer; want its table", got)
	}
	if n.fs.tableSync.ctx != 0 && n.fs.tableSync.count() == syncs {
		t.Fatal("a memtable flush synced its table without AIO")
	}
}
