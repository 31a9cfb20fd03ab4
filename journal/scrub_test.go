package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/weexcore/exchange/engine"
)

// exportAll renders every trade and finance record of s.
func exportAll(s *Store) (string, error) {
	var b bytes.Buffer
	err := s.Export(func(t *engine.Trade) error { fmt.Fprintf(&b, "%+v\n", *t); return nil },
		func(x *engine.Bill) error { fmt.Fprintf(&b, "%+v\n", *x); return nil })
	return b.String(), err
}

// TestTableFlips flips one byte at offsets across every table, blob file
// and manifest of a closed directory and opens it each time. Each open must be
// refused with ErrCorrupt, or give the whole state; then a scrub must
// report ErrCorrupt, or every history read must give what the undamaged
// directory gives. Nothing panics, before or at Close.
func TestTableFlips(t *testing.T) {
	dir := t.TempDir()
	s, st, err := openLoad(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	newShards(s, st).loadBatches(t, 60, 30)
	full := st.Hash()
	if err := s.Close(); err != nil { // flushes the memtable to tables
		t.Fatal(err)
	}
	s, _, err = openLoad(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := exportAll(s)
	if err != nil || s.Scrub(0, nil) != nil {
		t.Fatalf("the undamaged directory: export %v", err)
	}
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	blobs, _ := filepath.Glob(filepath.Join(dir, "*.blob"))
	manifests, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	files = append(append(files, blobs...), manifests...)
	if len(files) == 0 {
		t.Fatal("no table after Close")
	}
	var refused, scrubbed, intact int
	img := filepath.Join(t.TempDir(), "img")
	for _, f := range files {
		good, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(good); off += 1 + len(good)/25 {
			os.RemoveAll(img)
			copyDir(t, dir, img)
			b := bytes.Clone(good)
			b[off] ^= 0x08
			if err := os.WriteFile(filepath.Join(img, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
			at := fmt.Sprintf("%s at %d of %d", filepath.Base(f), off, len(good))
			s, st, err := openLoad(t, img, nil)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: refused with %v, want ErrCorrupt", at, err)
				}
				refused++
				continue
			}
			if st.Hash() != full {
				t.Fatalf("%s: opened with state %s, want %s", at, hashString(st.Hash()), hashString(full))
			}
			if err := s.Scrub(0, nil); err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: scrub: %v, want ErrCorrupt", at, err)
				}
				scrubbed++
			} else if got, err := exportAll(s); err != nil || got != want {
				t.Fatalf("%s: scrub found nothing, but the export differs (err %v)", at, err)
			} else {
				intact++
			}
			s.Close()
		}
	}
	t.Logf("%d flips: %d refused at open, %d found by the scrub, %d harmless (no block read covers them)", refused+scrubbed+intact, refused, scrubbed, intact)
}
