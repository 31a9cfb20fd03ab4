package journal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	pebblerecord "github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weexcore/exchange/internal/walio"
)

var (
	// ErrCorrupt marks damage found in the data directory: a record, a
	// history row, a snapshot or a Pebble file that fails its checks.
	ErrCorrupt = errors.New("journal: corrupt data")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("journal: closed")
	// ErrLocked: another process (or this one) has the directory open.
	ErrLocked = errors.New("journal: data directory locked")
	// ErrWriteFailed: a commit could not be written or synced (a full
	// disk, an I/O error). Pebble cannot commit again after one; what was
	// committed before is durable, the failed batch and anything after it
	// are not. The store must be reopened.
	ErrWriteFailed = errors.New("journal: write failed")
)

// Options configures Open.
type Options struct {
	Dir      string
	ReadOnly bool         // audit: open, replay, never write
	Tuning   walio.Tuning // storage tunings (not used read-only)
	Logger   *slog.Logger // nil: discard
	// Reserve is the disk space kept for the store to stop cleanly when
	// the disk fills (space.go); 0: 64 MB, negative: none.
	Reserve int64
}

// Store is one data directory: a Pebble DB holding the journal records,
// the history rows, the snapshots and the meta (docs/JOURNAL.md).
type Store struct {
	dir      string
	readOnly bool
	log      *slog.Logger
	fs       *walio.FS // nil when read-only

	mu sync.RWMutex // guards db against Close for readers
	db *pebble.DB

	metaMu sync.Mutex // guards meta
	meta   *meta      // as stored
	fresh  bool       // this Open created the directory's meta

	snapNo    uint64   // number of the newest snapshot (one writer: the snapshot coordinator)
	installed []uint64 // snapshots installed from the group, ascending: never pruned (snapNo's writers)

	replayed  int           // commands Load replayed
	replayDur time.Duration // and how long loading and replaying took

	corruptions atomic.Int64          // damaged blocks Pebble met since Open
	failed      atomic.Pointer[error] // the first failed commit (ErrWriteFailed); nil: none
	reserve     int64                 // bytes kept free (space.go); 0 when read-only

	stopWatch chan struct{}
	watchWG   sync.WaitGroup
}

// memTableSize is Pebble's MemTableSize: a drained batch of 4096 commands
// with its history rows is a few MB, and with Pebble's 4 MB default each
// such batch would be flushed to L0 on its own.
const memTableSize = 64 << 20

// Open opens (or, unless read-only, creates) the data directory o.Dir.
func Open(o Options) (*Store, error) {
	if o.Dir == "" {
		return nil, errors.New("journal: no directory")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{dir: o.Dir, readOnly: o.ReadOnly, log: log}
	_, err := os.Stat(o.Dir)
	exists := err == nil
	if !exists && o.ReadOnly {
		return nil, fmt.Errorf("journal: %s does not exist", o.Dir)
	}
	if exists {
		if err := checkWALs(o.Dir, log); err != nil {
			return nil, err
		}
	}
	po := &pebble.Options{ReadOnly: o.ReadOnly, Logger: pebbleLogger{log}, EventListener: &pebble.EventListener{},
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: 4,
		L0StopWritesThreshold:       24,
	}
	if !o.ReadOnly {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		s.reserve = o.reserve()
		if err := makeBallast(o.Dir, s.reserve); err != nil {
			return nil, err
		}
		// WAL sync chunks record in each chunk how far the WAL was synced,
		// so recovery can tell a torn tail (never acknowledged: dropped)
		// from a corrupt chunk followed by synced ones (refused). Without
		// them Pebble ends the log silently at the first bad chunk.
		// FormatValueSeparation comes after FormatWALSyncChunks.
		//
		// Journal records and history blocks are large values written
		// once: kept in blob files, compactions move their references
		// instead of rewriting them.
		po.FormatMajorVersion = pebble.FormatValueSeparation
		po.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
			return pebble.ValueSeparationPolicy{Enabled: true, MinimumSize: 1024, MaxBlobReferenceDepth: 10,
				RewriteMinimumAge: 10 * time.Minute, TargetGarbageRatio: 1}
		}
		po.EventListener = storageEvents(log)
		if err := s.openFS(po, o.Tuning); err != nil {
			return nil, err
		}
	}
	// A read that meets a damaged block gets Pebble's corruption error
	// (ErrCorrupt here) and the store stays up for what it can read;
	// Pebble's default would be a fatal log, a panic here.
	po.EventListener.DataCorruption = func(i pebble.DataCorruptionInfo) {
		s.corruptions.Add(1)
		log.Error("journal: pebble: on-disk corruption", "file", i.Path, "details", i.Details)
	}
	db, err := pebble.Open(o.Dir, po)
	if err != nil {
		s.closeFS()
		if errors.Is(err, fs.ErrNotExist) { // a file the manifest names is gone
			return nil, fmt.Errorf("%w: open %s: %w", ErrCorrupt, o.Dir, err)
		}
		if errors.Is(err, syscall.EAGAIN) || strings.Contains(err.Error(), "lock held by current process") {
			return nil, fmt.Errorf("journal: %s is locked by another process (an exchanged running on it: stop it first): %w", o.Dir, ErrLocked)
		}
		return nil, wrapPebble(fmt.Sprintf("open %s", o.Dir), err)
	}
	if !o.ReadOnly && db.FormatMajorVersion() >= pebble.FormatWALSyncChunks {
		// A new DB is created at an old format and ratcheted up, so its
		// first WAL lacks sync chunks: reopen to start a WAL that has them.
		if _, c, err := getRecovering(db, []byte{pfxMeta}); errors.Is(err, pebble.ErrNotFound) {
			db.Close()
			s.closeFS()
			if err := s.openFS(po, o.Tuning); err != nil {
				return nil, err
			}
			if db, err = pebble.Open(o.Dir, po); err != nil {
				s.closeFS()
				return nil, wrapPebble(fmt.Sprintf("open %s", o.Dir), err)
			}
		} else if err == nil {
			c.Close()
		} else if errors.Is(err, ErrCorrupt) {
			func() { // the panic left references Close complains of
				defer func() { recover() }()
				db.Close()
			}()
			s.closeFS()
			return nil, err
		}
	}
	s.db = db
	if s.fs != nil {
		s.stopWatch = make(chan struct{})
		s.watchWG.Add(1)
		go s.watchBacklog()
	}
	return s, nil
}

// testMaxSpare, when set (tests only), caps the WAL spares' size.
var testMaxSpare int64

// openFS makes Pebble write through walio's FS with the tunings t.
func (s *Store) openFS(po *pebble.Options, t walio.Tuning) error {
	maxSpare := int64(memTableSize)
	if testMaxSpare > 0 {
		maxSpare = testMaxSpare
	}
	fs, err := walio.New(vfs.Default, s.dir, maxSpare, t, s.log)
	if err != nil {
		return fmt.Errorf("journal: storage in %s: %w", s.dir, err)
	}
	s.fs, po.FS = fs, fs
	return nil
}

func (s *Store) closeFS() {
	if s.fs != nil {
		s.fs.Close()
		s.fs = nil
	}
}

// wrapPebble wraps a Pebble error, marking its corruption errors (a bad
// block or table, a WAL chunk that fails its checksum before the end)
// with ErrCorrupt.
func wrapPebble(what string, err error) error {
	if pebble.IsCorruptionError(err) || errors.Is(err, pebblerecord.ErrInvalidChunk) ||
		errors.Is(err, pebblerecord.ErrZeroedChunk) || errors.Is(err, pebblerecord.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s: %w", ErrCorrupt, what, err)
	}
	return fmt.Errorf("journal: %s: %w", what, err)
}

// Dir returns the data directory.
func (s *Store) Dir() string { return s.dir }

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Serving tells the storage tunings that the node serves (pacing on) or
// not (replay, close: full speed).
func (s *Store) Serving(on bool) {
	if s.fs != nil {
		s.fs.Serving(on)
	}
}

// watchBacklog samples the memtables' size and L0's depth for the table
// pacer (walio) until the store closes.
func (s *Store) watchBacklog() {
	defer s.watchWG.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stopWatch:
			return
		case <-t.C:
		}
		s.checkSpace()
		if !s.mu.TryRLock() { // closing: Close holds it and waits for this goroutine
			continue
		}
		if s.db != nil {
			m := s.db.Metrics()
			s.fs.SetBacklog(int(m.Levels[0].Sublevels), int((m.MemTable.Size+memTableSize-1)/memTableSize))
		}
		s.mu.RUnlock()
	}
}

// Close flushes the memtable (so the next Open, or an audit, need not
// replay up to 64 MB of WAL before the journal) and closes the DB.
func (s *Store) Close() error {
	if s.stopWatch != nil {
		close(s.stopWatch)
		s.watchWG.Wait()
		s.stopWatch = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	if s.Failed() != nil {
		// Pebble cannot write any more: close what can be closed and
		// leave the rest to the next Open's replay of the WAL.
		s.closeFailed()
		return nil
	}
	if !s.readOnly {
		s.Serving(false) // nothing left to make room for
		if err := s.flush(); err != nil {
			s.log.Warn("journal: flush at close", "err", err.Error())
			if s.Failed() != nil { // Pebble cannot go on: leave the rest to the WAL
				s.closeFailed()
				return nil
			}
		}
	}
	err := s.db.Close()
	s.db = nil
	s.closeFS()
	if err != nil {
		return wrapPebble("close", err)
	}
	return nil
}

// flush flushes the memtable; Pebble's fatal log on the way (the disk
// gone or full) is ErrWriteFailed.
func (s *Store) flush() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fatalErr(p)
			s.setFailed(err)
		}
	}()
	return s.db.Flush()
}

// closeFailed closes a DB whose commit pipeline failed. Pebble's Close
// may meet the same failure (a fatal log) or report it; neither matters:
// everything acknowledged is in the WAL. s.mu is held.
func (s *Store) closeFailed() {
	func() {
		defer func() {
			if p := recover(); p != nil {
				fatalErr(p)
			}
		}()
		if err := s.db.Close(); err != nil {
			s.log.Warn("journal: close after a failed write", "err", err.Error())
		}
	}()
	s.db = nil
	s.closeFS()
}

// Batch is one atomic write of journal records and history rows, made
// durable by Commit (or a Group's).
type Batch struct {
	b *pebble.Batch
	s *Store
}

// NewBatch returns an empty batch. It keeps its buffer across Reset (up
// to 64 MB): a drained batch of commands is megabytes.
func (s *Store) NewBatch() *Batch {
	return &Batch{s.db.NewBatch(pebble.WithInitialSizeBytes(256<<10), pebble.WithMaxRetainedSizeBytes(64<<20)), s}
}

// Commit writes b and syncs the WAL. An error is ErrWriteFailed, and
// every later commit fails with it.
func (b *Batch) Commit() error { return b.s.commit(b.b) }

// commit commits b with a sync, turning its failure (an error, or the
// fatal log Pebble gives for a commit pipeline it cannot go on with) into
// a sticky ErrWriteFailed.
func (s *Store) commit(b *pebble.Batch) (err error) {
	if e := s.failed.Load(); e != nil {
		return *e
	}
	defer func() {
		if p := recover(); p != nil {
			err = fatalErr(p)
		} else if err != nil {
			err = fmt.Errorf("%w: %w", ErrWriteFailed, wrapPebble("commit", err))
		}
		if err != nil && s.setFailed(err) && errors.Is(err, syscall.ENOSPC) {
			s.dropBallast()
		}
	}()
	return b.Commit(pebble.Sync)
}

// setFailed records err as the store's failure unless one is recorded; it
// reports whether it did. (A pointer to a copy: taking err's address in
// commit would move it to the heap on every commit.)
func (s *Store) setFailed(err error) bool {
	p := new(error)
	*p = err
	return s.failed.CompareAndSwap(nil, p)
}

// Failed returns the error of the first failed commit, or nil.
func (s *Store) Failed() error {
	if e := s.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// Reset empties b for reuse.
func (b *Batch) Reset() { b.b.Reset() }

// Close releases b.
func (b *Batch) Close() { b.b.Close() }

// Keys returns how many keys b writes, and Bytes its encoded size.
func (b *Batch) Keys() uint32 { return b.b.Count() }
func (b *Batch) Bytes() int   { return b.b.Len() }

// Group commits several batches with one sync (group commit).
type Group struct {
	merged *pebble.Batch
	s      *Store
}

// NewGroup returns a Group; one goroutine uses it at a time.
func (s *Store) NewGroup() *Group { return &Group{s.db.NewBatch(), s} }

// Commit writes every batch of bs atomically and syncs the WAL once. An
// error is ErrWriteFailed, as for Batch.Commit.
func (g *Group) Commit(bs []*Batch) error {
	if len(bs) == 1 {
		return bs[0].Commit()
	}
	g.merged.Reset()
	for _, b := range bs {
		if err := g.merged.Apply(b.b, nil); err != nil {
			return wrapPebble("commit", err)
		}
	}
	return g.s.commit(g.merged)
}

// Close releases g.
func (g *Group) Close() { g.merged.Close() }

// storageEvents logs Pebble's background work that competes with the
// shards' syncs for the disk and the CPU (flushes, compactions, write
// stalls, slow disk operations, WAL files created and deleted), so that
// an operator can set a latency spike against them.
func storageEvents(log *slog.Logger) *pebble.EventListener {
	ev := func(msg string) func(fmt.Stringer) {
		return func(i fmt.Stringer) { log.Info("journal: pebble: "+msg, "event", i.String()) }
	}
	flush, compaction, stall, slow, created, deleted := ev("flush"), ev("compaction"), ev("write stall"), ev("disk slow"), ev("wal created"), ev("wal deleted")
	return &pebble.EventListener{
		FlushEnd: func(i pebble.FlushInfo) {
			if i.Err == nil || !strings.Contains(i.Err.Error(), "empty table") { // nothing to flush: not news
				flush(i)
			}
		},
		CompactionEnd:   func(i pebble.CompactionInfo) { compaction(i) },
		WriteStallBegin: func(i pebble.WriteStallBeginInfo) { stall(i) },
		WriteStallEnd:   func() { log.Info("journal: pebble: write stall ending") },
		DiskSlow:        func(i pebble.DiskSlowInfo) { slow(i) },
		WALCreated:      func(i pebble.WALCreateInfo) { created(i) },
		WALDeleted:      func(i pebble.WALDeleteInfo) { deleted(i) },
	}
}

// pebbleLogger routes Pebble's errors to the store's logger.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {}
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("journal: pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf is Pebble's "cannot go on": Pebble does not expect it to
// return. It panics with a pebbleFatal, which Store.commit turns into
// ErrWriteFailed when a commit is what cannot go on.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	fe := pebbleFatal{msg: "pebble: " + fmt.Sprintf(format, args...), cause: errors.New("fatal")}
	for _, a := range args {
		if err, ok := a.(error); ok {
			fe.cause = err
		}
	}
	l.log.Error("journal: " + fe.msg)
	panic(fe)
}

type pebbleFatal struct {
	msg   string
	cause error
}

func (f pebbleFatal) String() string { return f.msg }

// fatalErr turns p, recovered from a call into Pebble, into the
// ErrWriteFailed it stands for when it is Pebble's fatal log; any other
// panic goes on.
func fatalErr(p any) error {
	fe, ok := p.(pebbleFatal)
	if !ok {
		panic(p)
	}
	return fmt.Errorf("%w: %s: %w", ErrWriteFailed, fe.msg, fe.cause)
}

// getRecovering is db.Get for a directory that may be damaged: Pebble
// panics, rather than erring, on some damaged blob-file references (its
// corruption report assumes file metadata that a flipped reference does
// not name), and a damaged directory must be refused, not crash the
// process. The panic is returned as ErrCorrupt.
func getRecovering(db *pebble.DB, key []byte) (v []byte, c io.Closer, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, c, err = nil, nil, fmt.Errorf("%w: reading %x: pebble: %v", ErrCorrupt, key, p)
		}
	}()
	return db.Get(key)
}
