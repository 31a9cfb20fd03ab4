package walio

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
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

// TestTablePacerSeesPebbleFlush: a memtable flush goes through the pacer,
// so Pebble still creates its tables with the write category the pacer
// looks for, and syncs them through AIO (pacedFile's SyncData, which
// Pebble must still call to finish a table).
func TestTablePacerSeesPebbleFlush(t *testing.T) {
	w, dir := newTestFS(t)
	db, err := pebble.Open(dir, &pebble.Options{FS: w})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w.Serving(true)
	w.SetBacklog(0, 1)
	if err := db.Set([]byte("k"), make([]byte, 4<<10), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	before, syncs := w.pacer.paced.Load(), w.tableSync.count()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := w.pacer.paced.Load() - before; got <= 0 {
		t.Fatalf("a memtable flush wrote %d bytes through the pacer; want its table", got)
	}
	if w.tableSync.ctx != 0 && w.tableSync.count() == syncs {
		t.Fatal("a memtable flush synced its table without AIO")
	}
}

// TestTuningOff: with every tuning off, files are Pebble's own: a WAL is
// created empty (no spare), syncs are made in place, nothing is paced and
// Remove unlinks at once.
func TestTuningOff(t *testing.T) {
	dir := t.TempDir()
	w, err := New(vfs.Default, dir, 1<<20, Tuning{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Serving(true)
	f, err := w.Create(filepath.Join(dir, "000001.log"), "pebble-wal")
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Fatalf("WAL with spares off: %d bytes, want an empty file", st.Size())
	}
	if _, ok := f.(aioFile); ok {
		t.Fatal("WAL with AIO off got the AIO syncer")
	}
	f.Close()
	g, err := w.Create(filepath.Join(dir, "000002.sst"), catFlush)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.(pacedFile); ok {
		t.Fatal("table with pacing off is paced")
	}
	g.Close()
	if _, err := os.Stat(filepath.Join(dir, SpareName)); !os.IsNotExist(err) {
		t.Fatalf("a spare was written with spares off: %v", err)
	}
	for _, s := range []string{"all", "none", "spare,aio", "pace-tables"} {
		tu, err := ParseTuning(s)
		if err != nil {
			t.Fatal(err)
		}
		if back, _ := ParseTuning(tu.String()); back != tu {
			t.Errorf("ParseTuning(%q).String() = %q does not read back", s, tu.String())
		}
	}
	if _, err := ParseTuning("spare,fast"); err == nil {
		t.Error("ParseTuning accepted an unknown tuning")
	}
}
