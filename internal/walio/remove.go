package walio

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Remove deletes a file Pebble is done with (a WAL it does not recycle, a
// table or blob file a compaction replaced). With PaceRemoval on and while
// the node serves, a large file is first truncated to nothing a step at a
// time: freeing blocks is paid inside the system call that frees them
// (ext4 with discard: ~0.3 ms per MB), and a goroutine in a system call
// keeps its P until sysmon takes it, so one unlink of a 32 MB file held
// every request on that P for ~10 ms.
func (w *FS) Remove(name string) error {
	if w.tuning.PaceRemoval && w.pacer.on.Load() {
		w.shrink(name)
	}
	return w.FS.Remove(name)
}

// The pause after each step sets the rate blocks are freed at (16 MB/s
// while compactions are paced, which write at 4 MB/s, so it keeps up): on
// a disk that gets a discard per freed extent, a burst of them slows the
// WAL's fdatasyncs.
const (
	removeStep      = 256 << 10
	removePause     = 16 * time.Millisecond
	removePauseFast = time.Millisecond
)

// shrink truncates name to nothing in removeStep steps, pausing after
// each, if it is a regular file of more than a step with no other link (a
// truncation would reach the other names; an unlink does not). It gives up
// quietly: Remove then unlinks what is left.
func (w *FS) shrink(name string) {
	st, err := w.FS.Stat(name)
	if err != nil || !st.Mode().IsRegular() || st.Size() <= removeStep {
		return
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Nlink != 1 {
		return
	}
	// Pebble's vfs has no truncation, so this goes to the OS by path; on
	// any other FS it fails at once and Remove unlinks as before. The
	// recorded size goes first: a crash amid the steps leaves a shorter
	// file that is not a truncated WAL.
	unix.Removexattr(name, SizeAttr)
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
