// Package walio is the file system Pebble writes the journal through. It
// adds three storage tunings under Pebble, each with a plain fallback (what
// Pebble does on its own) and a switch to turn it off (Tuning; exchanged
// -io-tuning); each is kept because make bench showed it pays
// (bench/LOG.md, "Storage tuning"):
//
//   - Spare: every WAL starts on a file of zeros written and synced ahead,
//     so a WAL's fdatasync overwrites blocks instead of appending and need
//     not commit the file's size to the file system's journal (spare.go).
//   - AIO: the data syncs of WALs, spares and table files are submitted
//     through Linux AIO and awaited on an eventfd, so the syncing goroutine
//     parks instead of holding an OS thread and its P (aio.go).
//   - PaceTables: memtable flushes and compactions write at a bounded rate
//     while Pebble's backlog is small, so they do not take a CPU from the
//     shards for a second at a time (pace.go).
//
// Pacing is on only while the node serves (Serving): replay at open and
// the flush at close run at full speed.
package walio

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Tuning says which tunings are on.
type Tuning struct {
	Spare      bool
	AIO        bool
	PaceTables bool
}

// All is every tuning on: the default.
func All() Tuning { return Tuning{Spare: true, AIO: true, PaceTables: true} }

// tuningNames are the names ParseTuning and String use, in order.
var tuningNames = [...]string{"spare", "aio", "pace-tables"}

func (t *Tuning) fields() [3]*bool { return [3]*bool{&t.Spare, &t.AIO, &t.PaceTables} }

// ParseTuning reads "all", "none", or a comma-separated list of spare,
// aio and pace-tables (those on; the others off).
func ParseTuning(s string) (Tuning, error) {
	switch s {
	case "all":
		return All(), nil
	case "none", "":
		return Tuning{}, nil
	}
	var t Tuning
	f := t.fields()
next:
	for _, name := range strings.Split(s, ",") {
		for i, n := range tuningNames {
			if strings.TrimSpace(name) == n {
				*f[i] = true
				continue next
			}
		}
		return Tuning{}, fmt.Errorf("walio: unknown tuning %q (want all, none, or a list of %s)", name, strings.Join(tuningNames[:], ","))
	}
	return t, nil
}

// String lists the tunings that are on, as ParseTuning reads them.
func (t Tuning) String() string {
	var on []string
	for i, b := range t.fields() {
		if *b {
			on = append(on, tuningNames[i])
		}
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ",")
}

// FS wraps a vfs.FS with the tunings that are on.
type FS struct {
	vfs.FS
	tuning Tuning
	log    *slog.Logger
	pacer  tablePacer // flushes' and compactions' writes (pace.go)
	// data syncs through AIO (nil when AIO is off): the WALs', the spare
	// writer's (apart, so as not to queue behind a WAL's), and the table
	// and blob files' of flushes and compactions
	syncer, spareSync, tableSync *asyncSync
	spares                       *spares // nil when Spare is off
}

// New returns base with the tunings t, for a Pebble DB in dir whose largest
// memtable (and so WAL spare) is maxSpare bytes. With Spare on it writes
// the first spare now, unless one is left from a previous run.
func New(base vfs.FS, dir string, maxSpare int64, t Tuning, log *slog.Logger) (*FS, error) {
	w := &FS{FS: base, tuning: t, log: log}
	if t.AIO {
		w.syncer, w.spareSync, w.tableSync = newAsyncSync(), newAsyncSync(), newAsyncSync()
	}
	if t.Spare {
		sp, err := newSpares(w, dir, maxSpare)
		if err != nil {
			w.Close()
			return nil, err
		}
		w.spares = sp
	}
	return w, nil
}

// Tuning returns the tunings that are on.
func (w *FS) Tuning() Tuning { return w.tuning }

// Serving turns pacing on (the node serves) or off (replay, close).
func (w *FS) Serving(on bool) { w.pacer.on.Store(on) }

// SetBacklog tells the pacer how far behind Pebble is: L0's sublevels and
// the memtables' size in memtables, rounded up.
func (w *FS) SetBacklog(l0Sublevels, memtables int) {
	w.pacer.l0.Store(int32(l0Sublevels))
	w.pacer.mem.Store(int32(memtables))
}

// Close stops writing spares (a spare in place stays for the next Open)
// and releases the AIO contexts.
func (w *FS) Close() {
	if w.spares != nil {
		w.spares.close()
	}
	for _, s := range []*asyncSync{w.syncer, w.spareSync, w.tableSync} {
		if s != nil {
			s.close()
		}
	}
}

// Create gives a new WAL the spare (Spare), and the files of flushes and
// compactions to the pacer (PaceTables) and the AIO syncer (AIO); any
// other file is created as usual.
func (w *FS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	switch {
	case cat == catFlush || cat == catCompaction:
		f, err := w.FS.Create(name, cat)
		if err != nil {
			return nil, err
		}
		f = w.withSyncer(f, w.tableSync)
		if w.tuning.PaceTables {
			f = pacedFile{File: f, p: &w.pacer, compaction: cat == catCompaction}
		}
		return f, nil
	case !isWAL(name):
		return w.FS.Create(name, cat)
	}
	return w.wal(w.newWAL("", name, cat))
}

// ReuseForWrite is Pebble recycling an old WAL for a new one (spare.go).
func (w *FS) ReuseForWrite(old, name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if !isWAL(name) {
		return w.FS.ReuseForWrite(old, name, cat)
	}
	return w.wal(w.newWAL(old, name, cat))
}

func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

// newWAL opens the WAL name: on a spare when there is one, else as Pebble
// would (recycling old, or a new empty file).
func (w *FS) newWAL(old, name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if w.spares != nil {
		return w.spares.take(old, name, cat)
	}
	if old != "" {
		return w.FS.ReuseForWrite(old, name, cat)
	}
	return w.FS.Create(name, cat)
}

// wal gives a WAL file its syncer.
func (w *FS) wal(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return w.withSyncer(f, w.syncer), nil
}

// withSyncer makes f's data syncs go through s (nil: AIO is off).
func (w *FS) withSyncer(f vfs.File, s *asyncSync) vfs.File {
	if s == nil {
		return f
	}
	return aioFile{File: f, s: s}
}

// syncData syncs f's data through s, or in place when s is nil.
func syncData(s *asyncSync, f vfs.File) error {
	if s == nil {
		return f.SyncData()
	}
	return s.syncData(f)
}
