package journal

import (
	"os"
	"syscall"
	"time"
)

// Remove deletes a file Pebble is done with (a WAL it does not recycle, a
// table or blob file a compaction replaced). While the node serves, a
// large file is first truncated to nothing a step at a time.
//
// Why: freeing a file's blocks is paid inside the one system call that
// frees them, and on this machine's file system (ext4, mounted with
// discard) it costs ~0.3 ms per MB: unlinking a 32 MB file took 8.4-10.7
// ms (6 runs, idle machine). A goroutine in a system call keeps its P
// until sysmon takes it away, and sysmon, backed off to 10 ms sleeps
// (cmd/exchanged/sysmon.go), often does not; the server in make bench has
// one P, so every request waited. A Go trace at 16,800 req/s caught the
// end of a memtable flush: two unlinks of files it had made obsolete held
// the P for 4.0 and 7.5 ms back to back, and the clients saw a 24 ms
// stall (451 answers over 2 ms in 100 ms). Truncated in 1 MB steps, the
// 32 MB file took 0.4-0.5 ms a step on average, so a removeStep
// truncation should hold the P ~0.1 ms, and the pause after it lets
// everything else run; the file is gone, as Pebble expects, when Remove
// returns.
func (w *journalFS) Remove(name string) error {
	if w.pacer.on.Load() {
		w.shrink(name)
	}
	return w.FS.Remove(name)
}

// The pause after each step sets the rate the blocks are freed at. On this
// machine each freed extent goes to the disk as a discard, and a burst of
// them slows the WAL's fdatasyncs. REST-only benchrun sweeps with a build
// that recorded every AIO sync (WAL, tables, spares; 2026-11-25): after a
// compaction ended, its inputs (~70 MB of L0 tables) freed at up to 256
// MB/s (a 1 ms pause), 35 of the 410 syncs of the next 0.5 s took over 1.5
// ms (2.9 per 0.5 s over the sweep); freed at 16 MB/s, the ~4 s after a
// compaction's end held 0-9 per 0.5 s (4.1 over that sweep). While compactions are paced (tablepace.go) tables are written
// at no more than 4 MB/s, so freeing at 16 MB/s keeps up; when they are
// not (L0 deep), neither is this.
const (
	removeStep      = 256 << 10
	removePause     = 16 * time.Millisecond
	removePauseFast = time.Millisecond
)

// shrink truncates name to nothing in removeStep steps, pausing after
// each, if it is a regular file of more than a step with no other link (a
// truncation would reach the other names; an unlink does not). It gives up
// quietly: Remove then unlinks what is left.
func (w *journalFS) shrink(name string) {
	st, err := w.FS.Stat(name)
	if err != nil || !st.Mode().IsRegular() || st.Size() <= removeStep {
		return
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Nlink != 1 {
		return
	}
	// Pebble's vfs has no truncation, so this goes to the OS by path; on
	// any other FS it fails at once and Remove unlinks as before.
	for size := st.Size(); size > 0 && w.pacer.on.Load(); {
		size = max(0, size-removeStep)
		if os.Truncate(name, size) != nil {
			return
		}
		if w.pacer.paces(true) {
			time.Sleep(removePause)
		} else {
			time.Sleep(removePauseFast)
		}
	}
}
