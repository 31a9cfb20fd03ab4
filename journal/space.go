package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// The reserve keeps a full disk from crashing the store. Pebble cannot go
// on after a failed WAL write, and a memtable flush that meets a full disk
// can crash the process (Pebble v2.1.7 aborts a blob file it has already
// closed). So:
//
//   - Open makes a ballast file of the reserve's size (allocated, not
//     written) and refuses to start, saying so, when the disk has no room
//     for it and as much again free;
//   - while the store runs, once the free space falls below the reserve,
//     commits fail (ErrWriteFailed, wrapping ENOSPC) before Pebble meets a
//     full disk, and the ballast is deleted, so that the flushes Pebble
//     has started, and the one at Close, have room;
//   - HasRoom says when there is room to start again.

// defaultReserve is one memtable: what a flush may need.
const defaultReserve = memTableSize

const ballastName = "journal-ballast"

var errLowSpace = fmt.Errorf("the disk is nearly full: %w", syscall.ENOSPC)

// reserve returns the reserve of o (0: the default; negative: none).
func (o *Options) reserve() int64 {
	switch {
	case o.Reserve < 0:
		return 0
	case o.Reserve == 0:
		return defaultReserve
	}
	return o.Reserve
}

// freeBytes returns the bytes an unprivileged writer may still use in dir.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// makeBallast allocates dir's ballast of size bytes (keeping a large
// enough one) and checks that as much again is free.
func makeBallast(dir string, size int64) error {
	if size == 0 {
		return nil
	}
	name := filepath.Join(dir, ballastName)
	if st, err := os.Stat(name); err != nil || st.Size() < size {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			err = unix.Fallocate(int(f.Fd()), 0, 0, size)
			if errors.Is(err, unix.EOPNOTSUPP) { // no fallocate: write it
				err = f.Truncate(0)
				for off := int64(0); err == nil && off < size; off += 1 << 20 {
					_, err = f.WriteAt(make([]byte, min(1<<20, size-off)), off)
				}
			}
			if err == nil {
				err = f.Sync()
			}
			f.Close()
		}
		if err != nil {
			os.Remove(name)
			return fmt.Errorf("journal: %s has no room for its reserve of %d MB (%s): %w; free some space: the journal needs it to stop cleanly when the disk fills",
				dir, size>>20, ballastName, err)
		}
	}
	free, err := freeBytes(dir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if free < size {
		return fmt.Errorf("journal: %s has %d MB free, less than its reserve of %d MB: %w; free some space first",
			dir, free>>20, size>>20, syscall.ENOSPC)
	}
	return nil
}

// checkSpace fails the store's commits (ErrWriteFailed) once the free
// space falls below the reserve, and deletes the ballast for Pebble's
// flushes. It is called by the store's watcher.
func (s *Store) checkSpace() {
	if s.reserve == 0 || s.Failed() != nil {
		return
	}
	if free, err := freeBytes(s.dir); err == nil && free < s.reserve {
		if s.setFailed(fmt.Errorf("%w: %d MB free in %s, reserve %d MB: %w", ErrWriteFailed, free>>20, s.dir, s.reserve>>20, errLowSpace)) {
			s.dropBallast()
		}
	}
}

// dropBallast deletes the ballast: the space it held is for Pebble's last
// flushes once commits have stopped.
func (s *Store) dropBallast() {
	if s.reserve > 0 {
		if err := os.Remove(filepath.Join(s.dir, ballastName)); err == nil {
			s.log.Warn("journal: ballast deleted to leave room for the store's last flushes", "mb", s.reserve>>20)
		}
	}
}

// HasRoom reports whether the disk has room to start the store again: its
// reserve and as much again.
func (s *Store) HasRoom() bool {
	free, err := freeBytes(s.dir)
	return err == nil && free >= 2*s.reserve
}
