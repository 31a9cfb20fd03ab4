package walio

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// TestAsyncSync: a WAL's data syncs, and the spare writer's, go through
// AIO (counted: each of three syncs in a row is reaped, so the next can be
// submitted), other files keep their own syncs, and a file the kernel
// cannot fsync gets its error, not a hang: AIO refuses it and the sync in
// place reports it.
func TestAsyncSync(t *testing.T) {
	w, dir := newTestFS(t)
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
	if _, ok := g.(aioFile); ok {
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

// TestAsyncSyncStrayEvent: when the event reaped is not the sync's own
// (here a request submitted behind the syncer's back, completed first),
// the syncer does not take it for its own: it gives up AIO and syncs in
// place.
func TestAsyncSyncStrayEvent(t *testing.T) {
	s := newAsyncSync()
	defer s.close()
	if s.ctx == 0 {
		t.Skip("Linux AIO unavailable here")
	}
	f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "f"), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stray := &iocb{data: 7, opcode: iocbCmdFdsync, fd: uint32(f.Fd()), flags: iocbFlagResfd, resfd: uint32(s.ev.Fd())}
	if n, _, e := syscall.Syscall(unix.SYS_IO_SUBMIT, s.ctx, 1, uintptr(unsafe.Pointer(&stray))); e != 0 || n != 1 {
		t.Fatalf("io_submit: %d, %v", n, e)
	}
	var b [8]byte
	if _, err := s.ev.Read(b[:]); err != nil { // the stray request is done
		t.Fatal(err)
	}
	if err := s.syncData(f); err != nil {
		t.Fatal(err)
	}
	if s.count() != 0 || s.ctx != 0 {
		t.Fatalf("after a stray event: %d syncs counted through AIO, context %d; want 0 and none", s.count(), s.ctx)
	}
	if err := s.syncData(f); err != nil { // in place from now on
		t.Fatal(err)
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
