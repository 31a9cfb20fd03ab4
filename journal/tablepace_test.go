package journal

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestTablePacer: while on, a flush's writes are paced at tableWriteRate,
// and a compaction's too unless L0 is deep; off, nothing is; files that are
// neither are never paced.
func TestTablePacer(t *testing.T) {
	dir := t.TempDir()
	w, err := newJournalFS(vfs.Default, dir, 1<<20, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	chunk := make([]byte, 64<<10)
	write := func(name, cat string, n int) time.Duration {
		t.Helper()
		f, err := w.Create(filepath.Join(dir, name), vfs.DiskWriteCategory(cat))
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

	write("000001.sst", "pebble-memtable-flush", 4)
	if paced() != 0 {
		t.Fatalf("off: %d bytes paced", paced())
	}
	w.pacer.on.Store(true)
	d := write("000002.sst", "pebble-memtable-flush", 16) // 1 MiB
	if paced() != 1<<20 || d < time.Second/8-2*time.Millisecond {
		t.Fatalf("flush: %d bytes paced in %v, want 1 MiB in at least %v", paced(), d, time.Second/8)
	}
	write("000003.sst", "pebble-compaction", 2)
	if paced() != 1<<20+128<<10 {
		t.Fatalf("compaction with L0 shallow: %d bytes paced in all", paced())
	}
	w.pacer.l0.Store(l0PaceLimit)
	write("000004.sst", "pebble-compaction", 2)
	write("OPTIONS-000005", "unspecified", 2)
	if paced() != 1<<20+128<<10 {
		t.Fatalf("compaction with L0 deep, or another file, was paced: %d bytes paced in all", paced())
	}
}
