package core

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/weexcore/exchange/journal"
)

// committer is group commit while syncs are paced (pace.go): shards hand
// it their built batches and go on applying; it waits for the next sync
// slot (paceGap after the previous sync started), seals every batch
// queued by then (a shard's newest batch is open to its next segments
// until then: shard.go), commits them with one fdatasync (journal.Group)
// and marks each handed batch durable; the shard then answers it. Without
// pacing (and with none of its batches in flight) a shard commits its
// batches itself.
type committer struct {
	store   *journal.Store
	pace    *syncPace
	metrics *metrics
	repl    *replicated // nil: a single node; else runReplicated runs instead

	mu    sync.Mutex
	queue []*pendingCommit
	wake  chan struct{} // capacity 1
	stop  chan struct{}
	done  chan struct{}
}

type pendingCommit struct {
	seal func() // finishes b (the shard's open batch) before it is taken
	b    *journal.Batch
	err  error
	fin  atomic.Bool   // set, with err, once the batch is durable (or failed)
	done chan struct{} // capacity 1: signalled after fin is set
}

func newCommitter(store *journal.Store, pace *syncPace, m *metrics) *committer {
	return &committer{store: store, pace: pace, metrics: m, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// enqueue hands p to the committer; p.fin is set once p.b is durable.
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
	if c.repl != nil {
		c.runReplicated() // replicated.go
		return
	}
	defer close(c.done)
	sl := newSleeper()
	defer sl.close()
	group := c.store.NewGroup()
	defer group.Close()
	var batch []*pendingCommit
	var bs []*journal.Batch
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
		bs = bs[:0]
		for _, p := range batch {
			bs = append(bs, p.b)
		}
		err := group.Commit(bs)
		c.metrics.commit(nanotime() - last)
		clear(bs)
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
