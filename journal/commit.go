package journal

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/sys/unix"
)

// committer is group commit while syncs are paced (pace.go): shards hand
// it their built batches and go on applying; it waits for the next sync
// slot (paceGap after the previous sync started), seals every batch
// queued by then (a shard's newest batch is open to its next segments
// until then: shard.go), merges them into one Pebble batch, commits it
// with one fdatasync and marks each handed batch durable; the shard then
// answers it. Without pacing (and with none of its batches in flight) a
// shard commits its batches itself.
type committer struct {
	db   *pebble.DB
	pace *syncPace

	mu    sync.Mutex
	queue []*pendingCommit
	wake  chan struct{} // capacity 1
	stop  chan struct{}
	done  chan struct{}
}

type pendingCommit struct {
	seal func() // finishes wb (the shard's open batch) before it is taken
	wb   *pebble.Batch
	err  error
	fin  atomic.Bool   // set, with err, once the batch is durable (or failed)
	done chan struct{} // capacity 1: signalled after fin is set
}

func newCommitter(db *pebble.DB, pace *syncPace) *committer {
	return &committer{db: db, pace: pace, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// enqueue hands p to the committer; p.fin is set once p.wb is durable.
func (c *committer) enqueue(p *pendingCommit) {
	c.mu.Lock()
	c.queue = append(c.queue, p)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *committer) run() {
	defer close(c.done)
	sl := newSleeper()
	defer sl.close()
	merged := c.db.NewBatch()
	defer merged.Close()
	var batch []*pendingCommit
	var last int64 // nanotime when the last sync started
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			return
		}
		if d := last + int64(c.pace.syncGap()) - nanotime(); d > 0 {
			sl.sleep(time.Duration(d)) // commits arriving meanwhile join this sync
		}
		c.mu.Lock()
		batch, c.queue = c.queue, batch[:0]
		c.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		last = nanotime()
		for _, p := range batch {
			p.seal()
		}
		var err error
		if len(batch) == 1 {
			err = batch[0].wb.Commit(pebble.Sync)
		} else {
			merged.Reset()
			for _, p := range batch {
				if err = merged.Apply(p.wb, nil); err != nil {
					break
				}
			}
			if err == nil {
				err = merged.Commit(pebble.Sync)
			}
		}
		for _, p := range batch {
			p.err = err
			p.fin.Store(true)
			select {
			case p.done <- struct{}{}:
			default:
			}
		}
		clear(batch)
	}
}

func (c *committer) close() {
	close(c.stop)
	<-c.done
}

// sleeper parks a goroutine for a precise short time: a non-blocking
// timerfd read, which the netpoller wakes when the timer expires (a Go
// timer would fire up to a millisecond late here).
type sleeper struct {
	fd  int
	f   *os.File // nil: timerfd unavailable, fall back to nanosleep
	buf [8]byte
}

func newSleeper() *sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &sleeper{fd: -1}
	}
	return &sleeper{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}

func (s *sleeper) sleep(d time.Duration) {
	if s.f != nil {
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
		if unix.TimerfdSettime(s.fd, 0, &spec, nil) == nil {
			if _, err := s.f.Read(s.buf[:]); err == nil {
				return
			}
		}
	}
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

func (s *sleeper) close() {
	if s.f != nil {
		s.f.Close()
	}
}
