package walio

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestWALSpares: every WAL is created on a spare of zeros whose size
// doubles from 256 KiB up to the maximum; a WAL Pebble recycles from a
// smaller file takes the spare instead, and the smaller file is filled up
// to be the next; other files are created as usual; a spare left at close
// is used by the next open, and a partial one is filled up.
func TestWALSpares(t *testing.T) {
	dir := t.TempDir()
	const max = 1 << 20
	w, err := New(vfs.Default, dir, max, All(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	sizeOf := func(f vfs.File) int64 {
		t.Helper()
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	waitReady := func() { waitSpare(t, w) }
	for i, want := range []int64{256 << 10, 512 << 10, 1 << 20, 1 << 20} {
		waitReady()
		name := filepath.Join(dir, fmt.Sprintf("%06d.log", i+1))
		f, err := w.Create(name, "pebble-wal")
		if err != nil {
			t.Fatal(err)
		}
		if got := sizeOf(f); got != want {
			t.Fatalf("WAL %d: %d bytes, want a spare of %d", i+1, got, want)
		}
		b, _ := os.ReadFile(name)
		if walEnd(b) != 0 {
			t.Fatalf("WAL %d: spare not all zeros", i+1)
		}
		if _, err := f.Write([]byte("record")); err != nil {
			t.Fatal(err)
		}
		if got := sizeOf(f); got != want {
			t.Fatalf("WAL %d after a write: %d bytes, want %d (written in place)", i+1, got, want)
		}
		f.Close()
	}
	// Pebble recycles WAL 1 (256 KiB) for WAL 5: the spare (1 MiB) is
	// larger, so WAL 5 takes it, and WAL 1 becomes the start of the next.
	waitReady()
	wal1 := filepath.Join(dir, "000001.log")
	old, _ := os.ReadFile(wal1)
	f, err := w.ReuseForWrite(wal1, filepath.Join(dir, "000005.log"), "pebble-wal")
	if err != nil {
		t.Fatal(err)
	}
	if got := sizeOf(f); got != 1<<20 {
		t.Fatalf("recycled WAL: %d bytes, want the spare's 1 MiB", got)
	}
	f.Close()
	waitReady()
	if b, _ := os.ReadFile(w.spares.spare); len(b) != 1<<20 || string(b[:len(old)]) != string(old) || walEnd(b) != walEnd(old) {
		t.Fatalf("next spare: %d bytes, want WAL 1's %d bytes filled up with zeros to 1 MiB", len(b), len(old))
	}
	if _, err := os.Stat(wal1); !os.IsNotExist(err) {
		t.Fatalf("WAL 1 still there after it became a spare: %v", err)
	}
	// A recycled file as large as the spare is Pebble's to reuse.
	f, err = w.ReuseForWrite(filepath.Join(dir, "000004.log"), filepath.Join(dir, "000006.log"), "pebble-wal")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "000006.log")); len(b) != 1<<20 || walEnd(b) != len("record") {
		t.Fatalf("WAL 6 is not WAL 4 recycled")
	}
	f.Close()
	if _, err := os.Stat(w.spares.spare); err != nil {
		t.Fatalf("spare used for a WAL that recycled a large enough file: %v", err)
	}

	f, err = w.Create(filepath.Join(dir, "MANIFEST-000001"), "")
	if err != nil {
		t.Fatal(err)
	}
	if sizeOf(f) != 0 {
		t.Fatal("a file other than a WAL was created on a spare")
	}
	f.Close()
	waitReady()
	w.Close()

	// A spare left in place is taken as it is; a partial one left by a
	// crash is filled up into the next.
	os.WriteFile(w.spares.tmp, []byte{0}, 0o644)
	w, err = New(vfs.Default, dir, max, All(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	f, err = w.Create(filepath.Join(dir, "000009.log"), "pebble-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := sizeOf(f); got != 1<<20 {
		t.Fatalf("after reopen: WAL of %d bytes, want the spare left at close (1 MiB)", got)
	}
	waitReady()
	if b, _ := os.ReadFile(w.spares.spare); len(b) < 512<<10 || len(b) >= 512<<10+spareChunk || walEnd(b) != 0 || int64(len(b)) != w.spares.size {
		t.Fatalf("next spare after reopen: %d bytes (%d not zero; size known %d), want 512 KiB of zeros, and the byte left", len(b), walEnd(b), w.spares.size)
	}
	if _, err := os.Stat(w.spares.tmp); !os.IsNotExist(err) {
		t.Fatalf("partial spare still there: %v", err)
	}
}

// waitSpare waits until w has a spare ready.
func waitSpare(t *testing.T, w *FS) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		w.spares.mu.Lock()
		ready := w.spares.ready
		w.spares.mu.Unlock()
		if ready {
			return
		}
		if time.Now().After(end) {
			t.Fatal("no spare written in 10 s")
		}
	}
}
