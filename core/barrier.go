package core

import (
	"fmt"
	"sync"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// barrier stops every shard between two batches: each shard, having synced
// and flushed everything before the barrier, arrives and waits for release.
type barrier struct {
	arrived sync.WaitGroup
	release chan struct{}
}

func (b *barrier) arrive() {
	b.arrived.Done()
	<-b.release
}

// stopAll pushes a barrier through every ring and waits until every shard
// has reached it. The caller holds barMu and must close b.release. A zero
// deadline waits for ever.
func (n *Node) stopAll(deadline time.Time) (*barrier, error) {
	b := &barrier{release: make(chan struct{})}
	for _, s := range n.shards {
		r := &Request{}
		r.rt.op, r.rt.bar = opBarrier, b
		b.arrived.Add(1)
		for !s.q.push(r) {
			if !deadline.IsZero() && time.Now().After(deadline) {
				b.arrived.Add(-1)
				close(b.release) // shards already past the push go on at once
				return nil, ErrTimeout
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	done := make(chan struct{})
	go func() { b.arrived.Wait(); close(done) }()
	var tc <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-done:
		return b, nil
	case <-tc:
		close(b.release)
		return nil, ErrTimeout
	}
}

// atBarrier runs f with every shard stopped at a barrier.
func (n *Node) atBarrier(deadline time.Time, f func()) error {
	if n.closed.Load() {
		return ErrClosed
	}
	if n.failed.Load() != nil {
		return ErrUnavailable // the memory is ahead of the journal
	}
	n.barMu.Lock()
	defer n.barMu.Unlock()
	b, err := n.stopAll(deadline)
	if err != nil {
		return err
	}
	defer close(b.release)
	f()
	return nil
}

// State returns the state hash (engine.StateHash, taken at a barrier
// through every ring) and each shard's last applied sequence.
func (n *Node) State(deadline time.Time) (h [32]byte, seqs []uint64, err error) {
	err = n.atBarrier(deadline, func() {
		n.checkAtBarrier()
		h, seqs = n.st.Hash(), n.seqsNow()
	})
	return h, seqs, err
}

// Check runs engine.CheckInvariants at a barrier through every ring.
func (n *Node) Check(deadline time.Time) error {
	var cerr error
	if err := n.atBarrier(deadline, func() { cerr = engine.CheckInvariants(n.st.Accounts, n.st.Engines) }); err != nil {
		return err
	}
	return cerr
}

// checkAtBarrier runs the whole-state invariant check in builds with
// -tags invariants; a violation panics loudly. Every shard is stopped at
// a barrier.
func (n *Node) checkAtBarrier() {
	if engine.Invariants {
		if err := engine.CheckInvariants(n.st.Accounts, n.st.Engines); err != nil {
			panic(fmt.Sprintf("core: invariant violated at seqs %v: %v", n.seqsNow(), err))
		}
	}
}

// seqsNow returns each shard's last applied sequence; the shards must be
// stopped.
func (n *Node) seqsNow() []uint64 {
	s := make([]uint64, len(n.shards))
	for i, sh := range n.shards {
		s[i] = sh.seq
	}
	return s
}

// Snapshot writes a snapshot now (at a barrier through every ring).
func (n *Node) Snapshot() error {
	if n.closed.Load() {
		return ErrClosed
	}
	n.barMu.Lock()
	defer n.barMu.Unlock()
	return n.snapshotLocked()
}

// snapshotLocked takes a snapshot at a barrier; the caller holds barMu.
// The shards wait only while the accounts are encoded and each engine's
// book is copied (engine.Frozen); the books' encoding, the write and its
// sync happen after they have been released, from the copies.
func (n *Node) snapshotLocked() error {
	if n.failed.Load() != nil {
		return ErrUnavailable // the memory is ahead of the journal
	}
	b, err := n.stopAll(time.Time{})
	if err != nil {
		return err
	}
	var ridx uint64 // replicated: the raft index of the state at the barrier
	if n.repl != nil {
		if n.repl.isDeposed() || n.repl.restored.Load() {
			close(b.release)
			return errDeposed // the memory may be ahead of the journal
		}
		ridx = n.repl.applied.Load()
	}
	t0 := time.Now()
	n.checkAtBarrier()
	v, seqs, since, err := n.freezeAtBarrier()
	close(b.release)
	if err != nil || v == nil {
		return err
	}
	pause := time.Since(t0)
	if v, err = n.finishSnapshot(v); err != nil {
		n.sinceSnap.Add(since) // not taken: the next check tries again
		return err
	}
	no, err := n.store.WriteSnapshot(v)
	if err != nil {
		n.sinceSnap.Add(since)
		return err
	}
	if n.repl != nil {
		n.repl.snapshotted(ridx, v) // in the background: barMu is held
	}
	n.log.Info("core: snapshot", "snapshot", no, "bytes", len(v), "seqs", seqs,
		"shardsPaused", pause.Round(time.Microsecond), "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// freezeAtBarrier, while every shard is stopped, encodes the snapshot's
// head (sequences, times, accounts) and copies every engine's book into
// n.frozen; nil when nothing changed since the last snapshot. since is
// the count of commands the snapshot covers, taken from n.sinceSnap.
func (n *Node) freezeAtBarrier() (v []byte, seqs []uint64, since int64, err error) {
	defer func() {
		if p := recover(); p != nil { // engine snapshot code broken: report, keep running
			v, err = nil, fmt.Errorf("core: snapshot: %v", p)
		}
	}()
	if n.sinceSnap.Load() == 0 && n.store.HasSnapshot() {
		return nil, nil, 0, nil
	}
	for i, s := range n.shards {
		n.st.Seqs[i], n.st.Times[i] = s.seq, s.timeMs
	}
	v = journal.SnapshotHead(n.st)
	for i, e := range n.st.Engines {
		n.frozen[i] = e.Freeze(n.frozen[i])
	}
	return v, n.seqsNow(), n.sinceSnap.Swap(0), nil
}

// finishSnapshot appends the frozen engines and the checksum to head.
func (n *Node) finishSnapshot(head []byte) (v []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("core: snapshot: %v", p)
		}
	}()
	return journal.AppendSnapshotEngines(head, n.frozen), nil
}

// snapshotter takes a snapshot every SnapshotEvery commands, or every
// SnapshotInterval when any command came since the last one.
func (n *Node) snapshotter() {
	defer n.wg.Done()
	every := int64(n.opt.SnapshotEvery)
	if every <= 0 {
		every = defaultSnapshotEvery
	}
	interval := n.opt.SnapshotInterval
	if interval <= 0 {
		interval = defaultSnapshotInterval
	}
	tick := min(interval, 100*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-n.stopSnap:
			return
		case <-t.C:
		}
		k := n.sinceSnap.Load()
		if k >= every || k > 0 && time.Since(last) >= interval {
			n.barMu.Lock()
			if !n.closed.Load() {
				if err := n.snapshotLocked(); err != nil {
					n.log.Error("core: snapshot", "err", err)
				}
			}
			n.barMu.Unlock()
			last = time.Now()
		}
	}
}
