package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestWALSpares: every WAL is created on a spare of zeros whose size
// doubles from 256 KiB up to the maximum; other files are created as
// usual; a spare left at close is used by the next open, and a partial one
// is removed.
func TestWALSpares(t *testing.T) {
	dir := t.TempDir()
	const max = 1 << 20
	w, err := newWALSpares(vfs.Default, dir, max, t.Logf)
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
	waitReady := func() {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			w.mu.Lock()
			ready := w.ready
			w.mu.Unlock()
			if ready {
				return
			}
			if time.Now().After(end) {
				t.Fatal("no spare written in 10 s")
			}
		}
	}
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
	f, err := w.Create(filepath.Join(dir, "MANIFEST-000001"), "")
	if err != nil {
		t.Fatal(err)
	}
	if sizeOf(f) != 0 {
		t.Fatal("a file other than a WAL was created on a spare")
	}
	f.Close()
	waitReady()
	w.close()

	// A spare left in place is taken as it is; a partial one is removed.
	os.WriteFile(w.tmp, []byte{0}, 0o644)
	w, err = newWALSpares(vfs.Default, dir, max, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if _, err := os.Stat(w.tmp); !os.IsNotExist(err) {
		t.Fatalf("partial spare still there: %v", err)
	}
	f, err = w.Create(filepath.Join(dir, "000009.log"), "pebble-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := sizeOf(f); got != 1<<20 {
		t.Fatalf("after reopen: WAL of %d bytes, want the spare left at close (1 MiB)", got)
	}
}
