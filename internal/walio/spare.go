package walio

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// spares puts every WAL Pebble creates on a file already filled with zeros
// and synced (the spare), renamed to the WAL's name; a goroutine then
// writes the next spare, off the commit path.
//
// Why: a WAL's fdatasync after an append must also commit the file's new
// size and blocks to the file system's journal (ext4: a jbd2 commit and a
// second device flush); after an overwrite of blocks already written it
// flushes only the data. Pebble overwrites only when it recycles a WAL,
// which it has only after memtable flushes and which is often smaller than
// the WAL that reuses it.
//
// The zeros are safe to leave behind: Pebble reads a zeroed chunk at a
// WAL's end as its end (as for its own recycled WALs), and the WAL's name
// is synced into the directory before Pebble writes to it.
//
// Spare sizes follow Pebble's memtable sizes (256 KiB at Open, doubling
// per WAL up to the largest memtable): a WAL holds about what its memtable
// does. When Pebble recycles a WAL smaller than the spare, the WAL takes
// the spare and the small file is filled up into the next one. A WAL that
// outgrows its spare appends, as without spares.
type spares struct {
	w          *FS
	spare, tmp string
	max        int64

	mu      sync.Mutex
	ready   bool  // a spare is in place
	size    int64 // its size
	next    int64 // size of the next spare to write
	filling bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

const (
	spareFirst = 256 << 10 // Pebble's first memtable
	// The spare is written in chunks, each synced and followed by a
	// pause, so that the writer never queues more than a chunk ahead of a
	// WAL sync on the disk: ~20 MB/s, a 64 MB spare in under 3 s.
	spareChunk = 64 << 10
	sparePause = 2 * time.Millisecond
)

// SpareName is the spare's file name in the data directory.
const SpareName = "journal-wal-spare"

var errSpareStopped = errors.New("stopped")

// newSpares sets up spares in dir and writes the first one now, unless one
// is left from a previous run (a spare is renamed into place only when it
// is complete and synced; a partial one, left by a crash, is filled up
// into the next).
func newSpares(w *FS, dir string, max int64) (*spares, error) {
	s := &spares{w: w, spare: w.FS.PathJoin(dir, SpareName), max: max, next: spareFirst, stop: make(chan struct{})}
	s.tmp = s.spare + ".tmp"
	if err := w.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if st, err := w.FS.Stat(s.spare); err == nil {
		s.size, s.ready = st.Size(), true
	} else if size, err := s.write(s.next, 0); err != nil { // nothing to share the disk with yet
		// Not fatal: WALs are then created empty, as Pebble would.
		w.log.Warn("journal: WAL spare not written", "err", err)
	} else {
		s.size, s.ready = size, true
	}
	return s, nil
}

// take opens the WAL name on the spare, or else on old (recycled) or a
// new empty file; then it starts the next spare, from old if it was left.
func (s *spares) take(old, name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	fs := s.w.FS
	s.mu.Lock()
	ready := s.ready
	s.next = min(2*s.next, s.max)
	if ready && old != "" {
		if st, err := fs.Stat(old); err != nil || st.Size() >= s.size {
			ready = false // the recycled file is as large: Pebble's way
		}
	}
	if !ready {
		s.mu.Unlock()
		defer s.fill()
		if old != "" {
			return fs.ReuseForWrite(old, name, cat)
		}
		return fs.Create(name, cat)
	}
	s.ready = false
	size := s.size
	s.mu.Unlock()
	defer s.fill()
	f, err := fs.ReuseForWrite(s.spare, name, cat)
	if err != nil {
		s.w.log.Warn("journal: WAL not on a spare", "wal", fs.PathBase(name), "err", err)
		if old != "" {
			return fs.ReuseForWrite(old, name, cat)
		}
		return fs.Create(name, cat)
	}
	f = spareWAL{f}
	if old == "" {
		s.w.log.Info("journal: WAL on a spare", "wal", fs.PathBase(name), "spareKiB", size>>10)
	} else {
		// Its old records are as harmless in the next spare as in any
		// recycled WAL: every chunk names its WAL, and a reader stops at
		// a chunk of another.
		s.w.log.Info("journal: WAL on a spare", "wal", fs.PathBase(name), "spareKiB", size>>10, "recycledStartsNext", fs.PathBase(old))
		if err := fs.Rename(old, s.tmp); err != nil {
			s.w.log.Warn("journal: WAL spare", "err", err)
			fs.Remove(old)
		}
	}
	return f, nil
}

// spareWAL is a WAL on a spare. Pebble preallocates every WAL to 110% of
// a memtable (fallocate, keeping the size); on a spare the blocks are
// there already, and the preallocation would only hold another 70 MB of
// the disk per WAL, which the store's free-space reserve (journal) counts.
type spareWAL struct{ vfs.File }

func (spareWAL) Preallocate(offset, length int64) error { return nil }

// fill starts writing the next spare unless one is ready or being written.
func (s *spares) fill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready || s.filling {
		return
	}
	select {
	case <-s.stop:
		return
	default:
	}
	s.filling = true
	size := s.next
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		got, err := s.write(size, sparePause)
		if err != nil && err != errSpareStopped {
			s.w.log.Warn("journal: WAL spare not written", "err", err)
		}
		s.mu.Lock()
		s.filling, s.ready = false, err == nil
		if err == nil {
			s.size = got
		}
		s.mu.Unlock()
	}()
}

// write makes a spare of at least size bytes and returns its size: the
// temporary file (a recycled WAL, a partial spare, or a new empty file) is
// filled up with zeros, written and synced chunk by chunk (pause after
// each), then renamed into place.
func (s *spares) write(size int64, pause time.Duration) (got int64, err error) {
	fs := s.w.FS
	f, err := fs.OpenReadWrite(s.tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = fs.Rename(s.tmp, s.spare)
		}
		if err != nil {
			fs.Remove(s.tmp)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	zeros := make([]byte, spareChunk)
	got = st.Size()
	if got < size {
		// Allocate the rest at once, not a chunk at a time amid the
		// tables' allocations: per chunk, the file's extent tree blocks
		// were freed and taken again as chunks were written, and on a file
		// system mounted with discard every free is a discard sent to the
		// disk the WAL syncs on. If the allocation fails, the chunks
		// allocate as they go.
		_ = f.Preallocate(got, size-got)
	}
	for ; got < size; got += spareChunk {
		select {
		case <-s.stop:
			return 0, errSpareStopped
		default:
		}
		if _, err := f.WriteAt(zeros, got); err != nil {
			return 0, err
		}
		if err := syncData(s.w.spareSync, f); err != nil {
			return 0, err
		}
		time.Sleep(pause)
	}
	if err := unix.Fsetxattr(int(f.Fd()), SizeAttr, strconv.AppendInt(nil, got, 10), 0); err != nil { // (the file is open: by fd)
		s.w.log.Debug("journal: WAL spare: size not recorded", "err", err)
	}
	return got, f.Sync() // the size and its attribute, with the data
}

// SizeAttr is the extended attribute a spare keeps its size in, and so
// the WAL written onto it: with every byte allocated and synced before
// the WAL's first record, no crash can make it shorter, so a WAL shorter
// than its recorded size lost bytes after it was written.
const SizeAttr = "user.exchange.walsize"

// RecordedSize returns the size recorded on the file name (SizeAttr), if
// any: a WAL that was written onto a spare.
func RecordedSize(name string) (int64, bool) {
	var b [20]byte
	n, err := unix.Getxattr(name, SizeAttr, b[:])
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(string(b[:n]), 10, 64)
	return v, err == nil
}

// close stops writing spares (a spare in place stays for the next Open).
func (s *spares) close() {
	close(s.stop)
	s.wg.Wait()
}

// SetRecordedSize records size on the file name (SizeAttr).
func SetRecordedSize(name string, size int64) error {
	return unix.Setxattr(name, SizeAttr, strconv.AppendInt(nil, size, 10), 0)
}
