package walio

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveShrinks: while serving, Remove truncates a large file away in
// steps before unlinking it; a file with another link keeps its data under
// that link; small files and a stopped node's files are simply unlinked.
func TestRemoveShrinks(t *testing.T) {
	w, dir := newTestFS(t)
	data := bytes.Repeat([]byte("journal!"), (3*removeStep+100)/8)
	mk := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := func(p string) {
		t.Helper()
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s after Remove: %v, want it gone", filepath.Base(p), err)
		}
	}

	w.pacer.on.Store(true)
	big := mk("000001.log", data)
	w.shrink(big)
	if st, err := os.Stat(big); err != nil || st.Size() != 0 {
		t.Fatalf("shrunk file: %v, %v; want it there and empty", st, err)
	}
	if err := w.Remove(big); err != nil {
		t.Fatal(err)
	}
	gone(big)

	linked := mk("000002.sst", data)
	other := filepath.Join(dir, "elsewhere.sst")
	if err := os.Link(linked, other); err != nil {
		t.Fatal(err)
	}
	if err := w.Remove(linked); err != nil {
		t.Fatal(err)
	}
	gone(linked)
	if b, err := os.ReadFile(other); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the other link after Remove: %d bytes, %v; want the %d written", len(b), err, len(data))
	}

	small := mk("OPTIONS-000003", []byte("small"))
	if err := w.Remove(small); err != nil {
		t.Fatal(err)
	}
	gone(small)

	w.pacer.on.Store(false)
	late := mk("000004.log", data)
	w.shrink(late)
	if st, err := os.Stat(late); err != nil || st.Size() != int64(len(data)) {
		t.Fatalf("shrink while not serving: %v, %v; want the file untouched", st, err)
	}
	if err := w.Remove(late); err != nil {
		t.Fatal(err)
	}
	gone(late)

	if err := w.Remove(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removing a missing file: %v, want not-exist", err)
	}
}
