//go:build cgo

package journal

/*
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

// The sync thread's protocol, one request at a time over two eventfds:
// the journal writes fd+1 to req, the thread fdatasyncs fd and writes
// errno+1 to done (1: no error). RTSYNC_STOP ends the thread, which
// acknowledges on done. At its start the thread writes its thread id + 1
// to done.
#define RTSYNC_STOP ((uint64_t)1 << 40)

struct rtsync_fds { int req, done; };

static void rtsync_put(int fd, uint64_t v) {
	while (write(fd, &v, 8) < 0 && errno == EINTR) {}
}

static void *rtsync_loop(void *arg) {
	struct rtsync_fds fds = *(struct rtsync_fds *)arg;
	free(arg);
	pthread_setname_np(pthread_self(), "walsync");
	rtsync_put(fds.done, (uint64_t)syscall(SYS_gettid) + 1);
	for (;;) {
		uint64_t v;
		ssize_t n = read(fds.req, &v, 8);
		if (n != 8) {
			if (n < 0 && errno == EINTR) continue;
			return NULL; // the journal closed req: nobody to answer
		}
		if (v >= RTSYNC_STOP) {
			rtsync_put(fds.done, 1);
			return NULL;
		}
		uint64_t r = 1;
		if (fdatasync((int)(v - 1)) != 0) r = (uint64_t)errno + 1;
		rtsync_put(fds.done, r);
	}
}

// rtsync_start starts the thread, under SCHED_FIFO at prio if prio > 0;
// it returns pthread_create's error (EPERM: not permitted).
static int rtsync_start(int req, int done, int prio) {
	struct rtsync_fds *fds = malloc(sizeof *fds);
	if (fds == NULL) return ENOMEM;
	fds->req = req;
	fds->done = done;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (prio > 0) {
		struct sched_param sp = { .sched_priority = prio };
		pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&a, SCHED_FIFO);
		pthread_attr_setschedparam(&a, &sp);
	}
	pthread_t t;
	int e = pthread_create(&t, &a, rtsync_loop, fds);
	pthread_attr_destroy(&a);
	if (e != 0) free(fds);
	return e;
}
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// syncThread is an OS thread of its own, outside Go's scheduler, that
// does the WAL's fdatasyncs at real-time priority (SCHED_FIFO 1) when the
// process may use it (root, CAP_SYS_NICE or an RLIMIT_RTPRIO above 0).
//
// Through AIO (walsync.go) an fdatasync is done by a kernel worker of the
// submitting CPU, an ordinary thread: each time it wakes (to start the
// sync, after the data write, after the flush) it waits for the server's
// thread, which holds that CPU, to sleep or to be preempted at a timer
// tick (4 ms on the VM the benchmark runs on). A real-time thread runs as
// soon as it is woken. It is woken through an eventfd and answers through
// another, which the netpoller watches, so the syncing goroutine parks,
// as it does on AIO. Without the priority the thread would be an ordinary
// thread like the kernel's worker, and the WAL keeps AIO.
//
// Measured before it was built, with CPU 0's kernel workers moved to
// SCHED_FIFO 1 by hand (chrt): bench/README.md, "The WAL's fdatasync at
// real-time priority".
type syncThread struct {
	req  int      // blocking eventfd the thread reads
	done *os.File // non-blocking eventfd it answers on, read through the netpoller
	tid  int      // the thread's id
	buf  [8]byte
}

// rtSyncPrio is the SCHED_FIFO priority of the sync thread: the lowest.
const rtSyncPrio = 1

// startSyncThread starts a sync thread at prio (0: an ordinary thread, for
// tests). It fails with EPERM when real-time priority is not permitted.
func startSyncThread(prio int) (*syncThread, error) {
	req, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	done, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(req)
		return nil, err
	}
	if e := C.rtsync_start(C.int(req), C.int(done), C.int(prio)); e != 0 {
		unix.Close(req)
		unix.Close(done)
		return nil, syscall.Errno(e)
	}
	t := &syncThread{req: req, done: os.NewFile(uintptr(done), "walsync-eventfd")}
	v, err := t.answer()
	if err != nil { // cannot happen short of a broken eventfd; the thread exits when req closes
		t.release()
		return nil, err
	}
	t.tid = int(v - 1)
	return t, nil
}

func (t *syncThread) ask(v uint64) error {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	for {
		_, err := unix.Write(t.req, b[:])
		if err != unix.EINTR {
			return err
		}
	}
}

// answer parks until the thread answers, and returns the value.
func (t *syncThread) answer() (uint64, error) {
	if _, err := t.done.Read(t.buf[:]); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint64(t.buf[:]), nil
}

var errSyncThread = errors.New("journal: WAL sync thread: unexpected answer")

// syncData fdatasyncs fd on the thread. One call at a time (asyncSync.mu).
func (t *syncThread) syncData(fd uintptr) error {
	if err := t.ask(uint64(fd) + 1); err != nil {
		return err
	}
	v, err := t.answer()
	switch {
	case err != nil:
		return err
	case v == 1:
		return nil
	case v > 1 && v < 1<<32:
		return syscall.Errno(v - 1)
	}
	return errSyncThread
}

// stop ends the thread and releases its eventfds.
func (t *syncThread) stop() {
	if t.ask(C.RTSYNC_STOP) == nil {
		t.answer()
	}
	t.release()
}

func (t *syncThread) release() {
	unix.Close(t.req)
	t.done.Close()
}
