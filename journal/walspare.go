package journal

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// journalFS is the file system Pebble writes the journal through. It adds
// two things: paced writes for flushes and compactions (tablepace.go), and
// a WAL file written ahead (this file). Each WAL Pebble creates is a file
// already filled with zeros and synced (the "spare"), renamed to the WAL's
// name, and a goroutine then writes the next spare, off the commit path.
//
// Why: a WAL's fdatasync after an append must also commit the file's new
// size and blocks to the file system's journal (ext4: a jbd2 commit, a
// second device flush, and a kernel thread that needs a CPU on a busy
// machine); after an overwrite of blocks already written it flushes only
// the data. Pebble gets overwrites only from a recycled WAL, and has one
// only after memtable flushes, so a fresh exchange (every make bench run)
// and any WAL longer than the one it recycled paid for appends; and the
// first WALs it recycles are the small early ones (256 KiB, 512 KiB, ...),
// so for minutes after a start nearly every sync was an append. Measured
// on this machine, a raw write+fdatasync loop 700 µs apart: append p50
// 270-280 / p99 560-640 µs, overwrite 200-215 / 370-380 µs; with 3 busy
// loops on the 2 CPUs: p99 7.0-9.5 ms against 4.3-5.5. The server at
// 11,000-16,000 req/s (2 interleaved pairs): WAL fdatasync p50 0.20-0.30
// / p99 0.50-0.90 ms against 0.30-0.40 / 0.60-1.30, its own answer time
// p99 1.50-2.40 ms against 1.60-3.10.
//
// The zeros are safe to leave behind: Pebble reads a zeroed chunk at a
// WAL's end as its end (it does the same for preallocated and recycled
// WALs, and closes every WAL but the newest with an EOF trailer), and the
// WAL's name is synced into the directory before Pebble writes to it.
//
// Spare sizes follow Pebble's memtable sizes (256 KiB at Open, doubling
// per WAL up to MemTableSize): a WAL holds about what its memtable does,
// and small early spares keep the first seconds' rotations cheap. When
// Pebble recycles a WAL smaller than the spare, the spare is taken and the
// small file is filled up into the next spare (ReuseForWrite). A WAL that
// outgrows its spare appends, as before.
type journalFS struct {
	vfs.FS
	spare, tmp string
	max        int64
	logf       func(string, ...any)
	pacer      tablePacer // flushes' and compactions' writes (tablepace.go)
	syncer     *asyncSync // WALs' data syncs (walsync.go)
	spareSync  *asyncSync // the spare writer's, apart so as not to queue behind a WAL's
	tableSync  *asyncSync // flushes' and compactions' table and blob files'

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
	// The spare is written in chunks, each synced and followed by a pause,
	// so the writer never queues more than a chunk ahead of a WAL sync on
	// the disk: ~20 MB/s here, 64 MB in under 3 s (a 64 MB WAL lasts 16 s
	// or more at the benchmark's saturation). A loop of WAL-like syncs
	// 600 µs apart meanwhile, 3 runs each: p99 0.35-0.46 ms, against
	// 0.51-0.68 with 256 KiB chunks and 1 ms pauses and 0.33-0.38 alone.
	spareChunk = 64 << 10
	sparePause = 2 * time.Millisecond
)

var errSpareStopped = errors.New("stopped")

// newJournalFS returns fs with WAL spares in dir, and writes the first one
// now unless one is left from a previous run (a spare is renamed into
// place only when it is complete and synced; a partial one, left by a
// crash, is filled up into the next).
func newJournalFS(fs vfs.FS, dir string, max int64, logf func(string, ...any)) (*journalFS, error) {
	w := &journalFS{FS: fs, spare: fs.PathJoin(dir, "journal-wal-spare"), max: max, logf: logf,
		next: spareFirst, stop: make(chan struct{})}
	w.tmp = w.spare + ".tmp"
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w.syncer, w.spareSync, w.tableSync = newAsyncSync(), newAsyncSync(), newAsyncSync()
	if st, err := fs.Stat(w.spare); err == nil {
		w.size, w.ready = st.Size(), true
	} else if size, err := w.write(w.next, 0); err != nil { // nothing to share the disk with yet
		// Not fatal: WALs are then created empty, as Pebble would.
		logf("journal: WAL spare: %v", err)
	} else {
		w.size, w.ready = size, true
	}
	return w, nil
}

// Create gives a new WAL the spare when one is ready, and the files of
// flushes and compactions to the pacer; anything else is created as usual.
func (w *journalFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	switch {
	case cat == catFlush || cat == catCompaction:
		f, err := w.FS.Create(name, cat)
		if err != nil {
			return nil, err
		}
		return pacedFile{File: aioFile{File: f, s: w.tableSync}, p: &w.pacer, compaction: cat == catCompaction}, nil
	case !strings.HasSuffix(name, ".log"):
		return w.FS.Create(name, cat)
	}
	return w.wal(w.newWAL("", name, cat))
}

// ReuseForWrite is Pebble recycling an old WAL for a new one. The first
// WALs are small (so are the first memtables), and a WAL recycled from one
// appends once past its end: when the spare is larger, the new WAL takes
// the spare, and the old file becomes the start of the next spare. Its old
// records are as harmless there as in any recycled WAL: every chunk names
// its WAL, and a reader stops at a chunk of another.
func (w *journalFS) ReuseForWrite(old, name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if !strings.HasSuffix(name, ".log") {
		return w.FS.ReuseForWrite(old, name, cat)
	}
	return w.wal(w.newWAL(old, name, cat))
}

// wal gives a WAL file its syncer.
func (w *journalFS) wal(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return aioFile{File: f, s: w.syncer}, nil
}

// newWAL opens the WAL name: on the spare, or else on old (recycled) or a
// new empty file; then it starts the next spare, from old if it was left.
func (w *journalFS) newWAL(old, name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	w.mu.Lock()
	ready := w.ready
	w.next = min(2*w.next, w.max)
	if ready && old != "" {
		if st, err := w.FS.Stat(old); err != nil || st.Size() >= w.size {
			ready = false // the recycled file is as large: Pebble's way
		}
	}
	if !ready {
		w.mu.Unlock()
		defer w.fill()
		if old != "" {
			return w.FS.ReuseForWrite(old, name, cat)
		}
		return w.FS.Create(name, cat)
	}
	w.ready = false
	size := w.size
	w.mu.Unlock()
	defer w.fill()
	f, err := w.FS.ReuseForWrite(w.spare, name, cat)
	if err != nil {
		w.logf("journal: WAL spare: %v (%s not on a spare)", err, w.FS.PathBase(name))
		if old != "" {
			return w.FS.ReuseForWrite(old, name, cat)
		}
		return w.FS.Create(name, cat)
	}
	if old == "" {
		w.logf("journal: WAL %s on a spare of %d KiB", w.FS.PathBase(name), size>>10)
	} else {
		w.logf("journal: WAL %s on a spare of %d KiB; %s, recycled, starts the next", w.FS.PathBase(name), size>>10, w.FS.PathBase(old))
		if err := w.FS.Rename(old, w.tmp); err != nil {
			w.logf("journal: WAL spare: %v", err)
			w.FS.Remove(old)
		}
	}
	return f, nil
}

// fill starts writing the next spare unless one is ready or being written.
func (w *journalFS) fill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ready || w.filling {
		return
	}
	select {
	case <-w.stop:
		return
	default:
	}
	w.filling = true
	size := w.next
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		got, err := w.write(size, sparePause)
		if err != nil && err != errSpareStopped {
			w.logf("journal: WAL spare: %v", err)
		}
		w.mu.Lock()
		w.filling, w.ready = false, err == nil
		if err == nil {
			w.size = got
		}
		w.mu.Unlock()
	}()
}

// write makes a spare of at least size bytes and returns its size: the
// temporary file (a recycled WAL, a partial spare, or a new empty file) is
// filled up with zeros, written and synced chunk by chunk (pause after
// each), then renamed into place.
func (w *journalFS) write(size int64, pause time.Duration) (got int64, err error) {
	f, err := w.FS.OpenReadWrite(w.tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = w.FS.Rename(w.tmp, w.spare)
		}
		if err != nil {
			w.FS.Remove(w.tmp)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	zeros := make([]byte, spareChunk)
	got = st.Size()
	if got < size {
		// Allocate the rest at once (unwritten, past the file's end), not
		// a chunk at a time amid the tables' allocations, which split the
		// file into many extents; each chunk then converts a piece of one
		// extent. Allocated per chunk, a metadata block of the spare (the
		// extent tree's, it seems) was freed and taken again as chunks
		// were converted (ftrace ext4_free_blocks: a kernel worker freeing
		// the same block every ~4 ms), and on a file system mounted with
		// discard (this VM's) every free is a discard sent to the disk the
		// WAL syncs on: 6,911-7,066 discards in 62 s at 32,400 req/s,
		// against 136 with this (one burst, when the first flush ended).
		// WAL fdatasyncs over 1.5 ms in those runs (a 5 s populate and two
		// 60 s steps each): 101, 133, 179 and 107 against 225, 134 and
		// 189. REST-only benchrun sweeps, 2 interleaved each:
		// half-saturation p99 1.955 and 1.982 ms against 2.077 and 2.197,
		// WAL fdatasync max 2.8 and 2.1 ms against 9.3 and 5.8. If the
		// allocation fails, the chunks allocate as they go.
		_ = f.Preallocate(got, size-got)
	}
	for ; got < size; got += spareChunk {
		select {
		case <-w.stop:
			return 0, errSpareStopped
		default:
		}
		if _, err := f.WriteAt(zeros, got); err != nil {
			return 0, err
		}
		if err := w.spareSync.syncData(f); err != nil {
			return 0, err
		}
		time.Sleep(pause)
	}
	return got, f.Sync() // the size, with the data
}

// close stops writing spares (a spare in place stays for the next Open).
func (w *journalFS) close() {
	close(w.stop)
	w.wg.Wait()
	w.syncer.close()
	w.spareSync.close()
	w.tableSync.close()
}
