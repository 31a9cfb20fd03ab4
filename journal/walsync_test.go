package journal

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestAsyncSync: a WAL's data syncs, and the spare writer's, go through
// AIO (counted), each one
// completes and is reaped (a second sync after the first neither returns
// early nor hangs), and a file the kernel cannot fsync gets its error, not
// a hang: AIO refuses it and the sync in place reports it.
func TestAsyncSync(t *testing.T) {
	dir := t.TempDir()
	w, err := newJournalFS(vfs.Default, dir, 1<<20, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if w.syncer.ctx == 0 {
		t.Skip("Linux AIO unavailable here: WAL syncs are made in place")
	}
	waitSpare(t, w)
	if w.spareSync.count() == 0 {
		t.Fatal("the spare was written without syncs through AIO")
	}
	f, err := w.Create(filepath.Join(dir, "000001.log"), "pebble-wal")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := f.Write([]byte("record")); err != nil {
			t.Fatal(err)
		}
		if err := f.SyncData(); err != nil {
			t.Fatal(err)
		}
		if n := w.syncer.count(); n != i {
			t.Fatalf("after %d syncs, %d went through AIO", i, n)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// other files are not wrapped
	g, err := w.Create(filepath.Join(dir, "MANIFEST-000001"), "pebble-manifest")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.(walFile); ok {
		t.Fatal("a manifest got the WAL syncer")
	}
	g.Close()

	r, wp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer wp.Close()
	if err := w.syncer.syncData(pipeFile{f: wp}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("syncing a pipe: %v, want EINVAL", err)
	}
}

// count returns how many syncs went through AIO.
func (s *asyncSync) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// pipeFile is a vfs.File on a pipe, which has no fsync: only Fd and
// SyncData are used.
type pipeFile struct {
	vfs.File
	f *os.File
}

func (p pipeFile) Fd() uintptr     { return p.f.Fd() }
func (p pipeFile) SyncData() error { return p.f.Sync() }
