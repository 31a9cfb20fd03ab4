package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/internal/walio"
)

// recordKeys returns shard's journal keys in order (plain Pebble).
func recordKeys(t *testing.T, dir string, shard int) [][]byte {
	db := plainDB(t, dir, true)
	defer db.Close()
	it, _ := db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxJournal, byte(shard)}, UpperBound: []byte{pfxJournal, byte(shard + 1)}})
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	it.Close()
	return keys
}

// lastSeqs reads each shard's last journaled sequence with Pebble alone
// (no checks of ours: walcheck.go is not run), from the record headers.
func lastSeqs(dir string) ([]uint64, error) {
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: quietLogger{}})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxJournal}, UpperBound: []byte{pfxJournal + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	last := make([]uint64, 3)
	for valid := it.First(); valid; valid = it.Next() {
		k, v := it.Key(), it.Value()
		r, err := checkRecord(v)
		if err != nil {
			return nil, fmt.Errorf("record %x: %w", k, err)
		}
		sh := int(k[1])
		if r.firstSeq != last[sh]+1 {
			return nil, fmt.Errorf("shard %d: record at seq %d after seq %d (gap)", sh, r.firstSeq, last[sh])
		}
		last[sh] = r.firstSeq + uint64(r.count) - 1
	}
	return last, it.Error()
}

// rewrite changes one value in dir with f (through Pebble, so only our own
// record checks can notice).
func rewrite(t *testing.T, dir string, key []byte, f func(v []byte) []byte) {
	db := plainDB(t, dir, false)
	v, c, err := db.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	nv := f(append([]byte(nil), v...))
	c.Close()
	if err := db.Set(key, nv, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// TestBadLastRecord: a record that fails its checks at the end of a
// shard's journal is refused like any other: Pebble writes a batch
// atomically, so it cannot be a batch cut short.
func TestBadLastRecord(t *testing.T) {
	img, _, seqs := image(t, 6, 30)
	// Append a torn copy of the ledger's last record as its next record.
	ledger := 2
	keys := recordKeys(t, img, ledger)
	last := keys[len(keys)-1]
	db := plainDB(t, img, false)
	v, c, _ := db.Get(last)
	torn := append([]byte(nil), v[:len(v)/2]...)
	c.Close()
	db.Set(journalKey(nil, ledger, seqs[ledger]+1), torn, pebble.Sync)
	db.Close()
	want := fmt.Sprintf("shard %d: record at seq %d", ledger, seqs[ledger]+1)
	if _, _, err := openLoad(t, img, nil); err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Fatalf("open with a bad last record: got %v, want ErrCorrupt and %q", err, want)
	}
	if k := recordKeys(t, img, ledger); len(k) != len(keys)+1 {
		t.Fatalf("records after the refused open: got %d, want %d (nothing cut)", len(k), len(keys)+1)
	}
}

// TestFlippedByteMiddle: a record failing its checksum before the tail
// refuses Load, naming the shard and sequence, with ErrCorrupt.
func TestFlippedByteMiddle(t *testing.T) {
	img, _, _ := image(t, 8, 30)
	keys := recordKeys(t, img, 0)
	if len(keys) < 3 {
		t.Fatalf("shard 0 has %d records, want >= 3", len(keys))
	}
	mid := keys[len(keys)/2]
	rewrite(t, img, mid, func(v []byte) []byte { v[len(v)/2] ^= 0x10; return v })
	_, _, err := openLoad(t, img, nil)
	want := fmt.Sprintf("shard 0: record at seq %d", be.Uint64(mid[2:]))
	if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Fatalf("open with a flipped byte: got %v, want ErrCorrupt and %q", err, want)
	}
	// The audit path refuses too.
	if _, err := loadRO(img, true); err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Fatalf("read-only load with a flipped byte: got %v, want ErrCorrupt and %q", err, want)
	}
}

// newestWAL returns the path of the highest-numbered WAL file in dir.
func newestWAL(t *testing.T, dir string) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) == 0 {
		t.Fatalf("no WAL in %s", dir)
	}
	sort.Strings(logs)
	return logs[len(logs)-1]
}

// TestWALTrailerFlip flips the bit that makes a record's first chunk in
// the newest WAL claim the next WAL's number: Pebble alone reads that as
// the WAL's end trailer and drops the records after it without an error
// (lastSeqs, a plain read-only pebble.Open); Open refuses (walcheck.go).
// The same image with the chunk's own number put back opens.
func TestWALTrailerFlip(t *testing.T) {
	img, wal, good := walImage(t)
	before, err := lastSeqs(img)
	if err != nil {
		t.Fatal(err)
	}
	// The first record that starts after the WAL's first third.
	end, at := walEnd(good), -1
	walChunks(good, func(p int, c walChunk) bool {
		if p > end/3 && c.first && c.hdr >= 11 && c.length > 0 {
			at = p + 7
			return false
		}
		return true
	})
	if at < 0 {
		t.Fatal("no record starts after the WAL's first third")
	}
	bad := bytes.Clone(good)
	num := le.Uint32(bad[at:])
	le.PutUint32(bad[at:], num+1)
	if err := os.WriteFile(wal, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := lastSeqs(img)
	if err != nil {
		t.Fatalf("Pebble refuses the flip itself now (%v): walcheck.go may be unneeded", err)
	}
	if slices.Equal(before, after) {
		t.Fatal("Pebble read the whole WAL past the flipped chunk: the test does not flip what it means to")
	}
	if _, _, err := openLoad(t, img, nil); err == nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a chunk numbered as the next WAL's end: got %v, want ErrCorrupt", err)
	} else {
		t.Logf("refused as expected: %v", err)
	}
	if _, err := loadRO(img, true); err == nil {
		t.Fatal("read-only open with a chunk numbered as the next WAL's end: got no error")
	}
	if err := os.WriteFile(wal, good, 0o644); err != nil {
		t.Fatal(err)
	}
	reopenImage(t, img)
}

// walImage writes 90 batches of 80 commands, takes a crash image of the
// directory and returns it, its newest WAL and that WAL's bytes.
func walImage(t *testing.T) (img, wal string, b []byte) {
	t.Helper()
	img, _, _ = image(t, 90, 80)
	wal = newestWAL(t, img)
	b, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	return img, wal, b
}

// walPayloadAt returns off if it lies in a chunk's payload in the Pebble
// WAL b, or else the first payload byte after it.
func walPayloadAt(t *testing.T, b []byte, off int) int {
	t.Helper()
	at := -1
	walChunks(b, func(p int, c walChunk) bool {
		if off < p+c.hdr+c.length && c.length > 0 {
			at = max(off, p+c.hdr)
			return false
		}
		return true
	})
	if at < 0 {
		t.Fatalf("no WAL chunk payload at or after offset %d of %d", off, len(b))
	}
	return at
}

// walEnd returns where the records of a WAL file end: it is written onto
// a spare of zeros (walio), so the file goes on past them.
func walEnd(b []byte) int {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return n
}

// TestTornWALTail tears the newest Pebble WAL file inside its last batch,
// as a power cut in the middle of a write would: Pebble drops the torn
// batch (an unclean end of the newest WAL is tolerated), and what is left
// is a consistent prefix: gap-free, invariants hold, same hash as a full
// replay. The last 40 bytes written are cut off (a WAL not on a spare,
// or past its spare's end: one without a recorded size) or back to zeros
// (a WAL within its spare).
func TestTornWALTail(t *testing.T) {
	for _, zero := range []bool{false, true} {
		t.Run(fmt.Sprintf("zeroed=%v", zero), func(t *testing.T) { testTornWALTail(t, zero) })
	}
}

func testTornWALTail(t *testing.T, zero bool) {
	img, _, seqs := image(t, 6, 30)
	wal := newestWAL(t, img)
	b, _ := os.ReadFile(wal)
	end := walEnd(b)
	if end == len(b) {
		t.Fatalf("the newest WAL (%d bytes) is not on a spare", len(b))
	}
	var err error
	if zero {
		clear(b[end-40 : end])
		err = os.WriteFile(wal, b, 0o644)
	} else {
		syscall.Removexattr(wal, walio.SizeAttr)
		err = os.Truncate(wal, int64(end)-40)
	}
	if err != nil {
		t.Fatal(err)
	}
	gotSeqs, err := lastSeqs(img)
	if err != nil {
		t.Fatalf("journal after the torn WAL: %v", err)
	}
	lost := 0
	for i := range seqs {
		if gotSeqs[i] > seqs[i] {
			t.Fatalf("shard %d: seq %d after the cut, %d before", i, gotSeqs[i], seqs[i])
		}
		lost += int(seqs[i] - gotSeqs[i])
	}
	if lost == 0 || lost > 30 {
		t.Fatalf("commands lost by cutting the last batch: got %d, want 1..30", lost)
	}
	reopenImage(t, img)
}

// reopenImage opens the crash image img, checks every invariant there and
// that a full read-only replay gives the same state hash; it returns the
// hash and the shards' seqs after the reopen.
func reopenImage(t *testing.T, img string) ([32]byte, []uint64) {
	t.Helper()
	s, st, err := openLoad(t, img, nil)
	if err != nil {
		t.Fatalf("open the crash image: %v", err)
	}
	if err := engineCheck(st); err != nil {
		t.Fatal(err)
	}
	h, seqs := st.Hash(), append([]uint64(nil), st.Seqs...)
	s.Close()
	full, err := loadRO(img, true)
	if err != nil {
		t.Fatal(err)
	}
	if hf := full.Hash(); h != hf {
		t.Fatalf("hash after restart %s, full replay %s", hashString(h), hashString(hf))
	}
	return h, seqs
}

// TestFlippedByteWAL flips a byte in the middle of the newest WAL file:
// Pebble finds valid records after the bad chunk and refuses to open
// (ErrCorruption) rather than silently dropping them.
func TestFlippedByteWAL(t *testing.T) {
	img, wal, b := walImage(t)
	// Pebble can only tell corruption from a torn tail when synced chunks
	// follow in a later 32 KB block: a flip inside the last block reads as
	// a torn tail (TestTornWALTail). So the WAL must span several blocks.
	end := walEnd(b)
	if end < 3*32<<10 {
		t.Fatalf("WAL of %d bytes: too small for a flip before its last block", end)
	}
	// The flip goes into a chunk's payload: a flip of the one header bit
	// Pebble reads as the WAL's end is TestWALTrailerFlip's.
	b[walPayloadAt(t, b, end/3)] ^= 0x01
	if err := os.WriteFile(wal, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := lastSeqs(img); err == nil {
		t.Fatal("read-only Pebble open with a flipped byte in the middle of the WAL: got no error")
	}
	_, _, err := openLoad(t, img, nil)
	if err == nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a flipped byte in the middle of the WAL: got %v, want ErrCorrupt", err)
	}
	t.Logf("refused as expected: %v", err)
}

// TestWALOnRecycledSpare: memtable flushes make Pebble recycle the small
// early WALs, and each is filled up into the next spare, old records and
// all, so the later WALs are written over another WAL's records; a crash
// image then opens to the same state (a reader stops at the old records:
// they name another WAL), and a full read-only replay agrees.
func TestWALOnRecycledSpare(t *testing.T) {
	testMaxSpare = 4 << 20 // spares of 256 KiB .. 4 MiB, written in well under a second each
	defer func() { testMaxSpare = 0 }()
	dir := t.TempDir()
	var log testLog
	s, st, err := openLoad(t, dir, log.logger())
	if err != nil {
		t.Fatal(err)
	}
	sh := newShards(s, st)
	sh.loadBatches(t, 1, 3)
	u, v := engine.UserIdx(1), engine.UserIdx(2) // uids 100 and 200
	for i := 0; i < 8; i++ {
		sh.moreBatches(t, u, v, 10, 60)
		waitSpare(t, dir)
		if err := s.db.Flush(); err != nil { // a new WAL; the flushed ones go to the recycler
			t.Fatal(err)
		}
	}
	sh.moreBatches(t, u, v, 10, 60) // into the newest WAL, on a spare that was a recycled WAL
	recycled := strings.Count(log.String(), "recycledStartsNext=")
	if recycled < 3 {
		t.Fatalf("no recycled WAL became a spare:\n%s", log.String())
	}
	h, seqs := st.Hash(), append([]uint64(nil), st.Seqs...)
	img := filepath.Join(t.TempDir(), "img")
	crashImage(t, dir, img)
	s.Close()
	b, err := os.ReadFile(newestWAL(t, img))
	if err != nil {
		t.Fatal(err)
	}
	if walEnd(b) == len(b) {
		t.Fatal("the newest WAL is not on a spare")
	}
	h2, seqs2 := reopenImage(t, img)
	if h2 != h || !slices.Equal(seqs2, seqs) {
		t.Fatalf("after the crash image: hash %s seqs %v, before %s %v", hashString(h2), seqs2, hashString(h), seqs)
	}
	t.Logf("%d recycled WALs became spares", recycled)
}

// waitSpare waits until dir has a WAL spare in place.
func waitSpare(t *testing.T, dir string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, walio.SpareName)); err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatal("no spare written in 10 s")
		}
	}
}

// TestWALFlipsEverywhere flips one byte at offsets across the newest WAL
// of a crash image (every one when JOURNAL_WAL_FLIPS=all, else a spread)
// and opens it each time: it must either be refused with ErrCorrupt naming
// the WAL, or open with every batch, or (a flip inside the last batch,
// which looks exactly like a write torn by a crash) open with every batch
// but the last. Never a silent loss of more, never a fresh start.
func TestWALFlipsEverywhere(t *testing.T) {
	for _, size := range [][2]int{{30, 10}, {100, 20}} { // one block, several
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) { testWALFlips(t, size[0], size[1]) })
	}
}

func testWALFlips(t *testing.T, batches, per int) {
	img, full, _ := image(t, batches, per)
	_, lessOne, _ := image(t, batches-1, per)
	wal := newestWAL(t, img)
	good, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	num := walNumber(t, wal)
	end, lastRec := walEnd(good), -1
	walChunks(good, func(p int, c walChunk) bool {
		if !c.valid || c.logNum != num {
			return false
		}
		if c.first {
			lastRec = p
		}
		return true
	})
	if lastRec < 0 {
		t.Fatalf("WAL of %d bytes without a record", end)
	}
	step := 1 + end/150
	if os.Getenv("JOURNAL_WAL_FLIPS") == "all" {
		step = 1
	}
	var refused, whole, lastLost int
	dir := filepath.Join(t.TempDir(), "flip")
	for off := 0; off < end+64; off += step {
		os.RemoveAll(dir)
		copyDir(t, img, dir)
		b := bytes.Clone(good)
		b[off] ^= 0x20
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(wal)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, st, err := openLoad(t, dir, nil)
		switch {
		case err != nil:
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(wal)) {
				t.Fatalf("flip at %d: refused with %v, want ErrCorrupt naming %s", off, err, filepath.Base(wal))
			}
			refused++
			continue
		case st.Hash() == full:
			whole++
		case st.Hash() == lessOne && off >= lastRec:
			lastLost++
		default:
			t.Fatalf("flip at %d (last record at %d, end %d): opened with state %s, want %s (all) or a refusal",
				off, lastRec, end, hashString(st.Hash()), hashString(full))
		}
		s.Close()
	}
	t.Logf("%d flips in a WAL of %d bytes: %d refused, %d opened whole, %d lost only the last batch", refused+whole+lastLost, end, refused, whole, lastLost)
	if refused == 0 {
		t.Fatal("no flip was refused")
	}
}

func walNumber(t *testing.T, name string) uint32 {
	var n uint32
	if _, err := fmt.Sscanf(filepath.Base(name), "%d.log", &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWALTruncated cuts the newest WAL, written onto a spare, at every
// record boundary and inside records: no crash shortens a WAL on a spare,
// so each cut is refused as damage naming the file.
func TestWALTruncated(t *testing.T) {
	img, _, _ := image(t, 30, 10)
	wal := newestWAL(t, img)
	good, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	size, ok := walio.RecordedSize(wal)
	if !ok {
		t.Skip("this file system keeps no extended attributes: WAL sizes are not recorded")
	}
	if size != int64(len(good)) {
		t.Fatalf("recorded size %d, file %d", size, len(good))
	}
	var cuts []int
	num := walNumber(t, wal)
	walChunks(good, func(p int, c walChunk) bool {
		if !c.valid || c.logNum != num {
			return false
		}
		cuts = append(cuts, p, p+c.hdr/2, p+c.hdr+c.length/2)
		return true
	})
	cuts = append(cuts, walEnd(good), walEnd(good)+1)
	dir := filepath.Join(t.TempDir(), "cut")
	for _, at := range cuts {
		os.RemoveAll(dir)
		copyDir(t, img, dir)
		name := filepath.Join(dir, filepath.Base(wal))
		if err := os.Truncate(name, int64(at)); err != nil {
			t.Fatal(err)
		}
		if err := walio.SetRecordedSize(name, size); err != nil { // copyDir does not copy it
			t.Fatal(err)
		}
		if _, _, err := openLoad(t, dir, nil); err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(wal)) {
			t.Fatalf("WAL cut at %d of %d: got %v, want ErrCorrupt naming it", at, walEnd(good), err)
		}
		if _, err := loadRO(dir, false); err == nil {
			t.Fatalf("WAL cut at %d: the read-only load accepted it", at)
		}
	}
	t.Logf("%d cuts refused", len(cuts))
}
