package walio

import (
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// asyncSync is a WAL fdatasync that does not hold an OS thread. A plain
// fdatasync blocks its thread, with the goroutine's P, for the whole sync;
// Go's sysmon sees the P in a system call and hands it to another thread
// (waking one), and, finding one to take every few ticks, keeps polling
// every 20 µs instead of backing off. Submitted through Linux AIO
// (IOCB_CMD_FDSYNC, done by a kernel worker), with its completion
// signalled on an eventfd that the netpoller watches, the syncing
// goroutine parks instead, as it does on a socket.
type asyncSync struct {
	mu   sync.Mutex
	ctx  uintptr  // aio_context_t; 0: AIO unavailable, sync in place
	ev   *os.File // the eventfd completions are signalled on
	cb   iocb
	cbp  [1]*iocb
	done [1]ioEvent
	buf  [8]byte
	n    int // syncs done through AIO (tests)
}

// struct iocb and struct io_event of linux/aio_abi.h (little-endian).
type iocb struct {
	data     uint64
	key      uint32
	rwFlags  int32
	opcode   uint16
	reqprio  int16
	fd       uint32
	buf      uint64
	nbytes   uint64
	offset   int64
	reserved uint64
	flags    uint32
	resfd    uint32
}

type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const (
	iocbCmdFdsync = 3
	iocbFlagResfd = 1
)

// newAsyncSync sets up the AIO context and the eventfd, or leaves the
// syncs in place if the kernel refuses either.
func newAsyncSync() *asyncSync {
	s := &asyncSync{}
	var ctx uintptr
	if _, _, e := syscall.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		return s
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		syscall.Syscall(unix.SYS_IO_DESTROY, ctx, 0, 0)
		return s
	}
	s.ctx, s.ev = ctx, os.NewFile(uintptr(fd), "aio-eventfd")
	s.cbp[0] = &s.cb
	return s
}

// syncData syncs f's data, through AIO when it can.
func (s *asyncSync) syncData(f vfs.File) error {
	fd := f.Fd()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == 0 || fd == vfs.InvalidFd {
		return f.SyncData()
	}
	s.cb = iocb{opcode: iocbCmdFdsync, fd: uint32(fd), flags: iocbFlagResfd, resfd: uint32(s.ev.Fd())}
	if n, _, e := syscall.Syscall(unix.SYS_IO_SUBMIT, s.ctx, 1, uintptr(unsafe.Pointer(&s.cbp[0]))); e != 0 || n != 1 {
		return f.SyncData() // not submitted: sync in place
	}
	// Park until the eventfd counts the completion; if reading it fails,
	// wait for the event in the kernel instead.
	var timeout *unix.Timespec
	if _, err := s.ev.Read(s.buf[:]); err == nil {
		timeout = &unix.Timespec{} // completed: reap without waiting
	}
	for {
		n, _, e := syscall.Syscall6(unix.SYS_IO_GETEVENTS, s.ctx, 1, 1, uintptr(unsafe.Pointer(&s.done[0])), uintptr(unsafe.Pointer(timeout)), 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 || n == 1 && s.done[0].obj != uint64(uintptr(unsafe.Pointer(&s.cb))) {
			// An error, or the event of another request: which sync is
			// done is no longer known. Stop using the context (destroying
			// it waits for what is in flight) and sync in place.
			s.closeLocked()
			return f.SyncData()
		}
		if n == 1 {
			break
		}
		timeout = nil // signalled but not yet reapable: wait for it
	}
	s.n++
	if r := s.done[0].res; r < 0 {
		return syscall.Errno(-r)
	}
	return nil
}

func (s *asyncSync) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
}

// closeLocked destroys the context, after what is in flight on it, and
// leaves later syncs in place. s.mu is held.
func (s *asyncSync) closeLocked() {
	if s.ctx != 0 {
		syscall.Syscall(unix.SYS_IO_DESTROY, s.ctx, 0, 0)
		s.ev.Close()
		s.ctx = 0
	}
}

// aioFile is a file whose data syncs go through asyncSync: a WAL, and the
// table and blob files of flushes and compactions (under pacedFile).
type aioFile struct {
	vfs.File
	s *asyncSync
}

func (f aioFile) SyncData() error { return f.s.syncData(f.File) }
