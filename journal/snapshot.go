package journal

import (
	"fmt"
	"hash/crc32"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/weexcore/exchange/engine"
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
func (x *impl) stopAll(deadline time.Time) (*barrier, error) {
	b := &barrier{release: make(chan struct{})}
	for _, s := range x.shards {
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

func (x *impl) state(deadline time.Time) (h [32]byte, seqs []uint64, err error) {
	if x.opt.ReadOnly {
		return engine.StateHash(x.acc, x.engines), x.seqsNow(), nil
	}
	if x.closed.Load() {
		return h, nil, ErrClosed
	}
	x.barMu.Lock()
	defer x.barMu.Unlock()
	b, err := x.stopAll(deadline)
	if err != nil {
		return h, nil, err
	}
	defer close(b.release)
	x.checkAtBarrier()
	return engine.StateHash(x.acc, x.engines), x.seqsNow(), nil
}

// checkAtBarrier runs the whole-state invariant check in builds with
// -tags invariants (engine.Invariants); a violation panics loudly. The
// caller has every shard stopped at a barrier.
func (x *impl) checkAtBarrier() {
	if engine.Invariants {
		if err := engine.CheckInvariants(x.acc, x.engines); err != nil {
			panic(fmt.Sprintf("journal: invariant violated at seqs %v: %v", x.seqsNow(), err))
		}
	}
}

// Check runs engine.CheckInvariants at a barrier through every ring (or
// directly on a read-only node).
func (n *Node) Check(deadline time.Time) error {
	if n.opt.ReadOnly {
		return engine.CheckInvariants(n.acc, n.engines)
	}
	if n.closed.Load() {
		return ErrClosed
	}
	n.barMu.Lock()
	defer n.barMu.Unlock()
	b, err := n.stopAll(deadline)
	if err != nil {
		return err
	}
	defer close(b.release)
	return engine.CheckInvariants(n.acc, n.engines)
}

func (x *impl) seqsNow() []uint64 {
	s := make([]uint64, len(x.shards))
	for i, sh := range x.shards {
		s[i] = sh.seq
	}
	return s
}

// Snapshot writes a snapshot now (at a barrier through every ring).
func (n *Node) Snapshot() error {
	if n.opt.ReadOnly {
		return ErrClosed
	}
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
// sync happen after they have been released.
func (x *impl) snapshotLocked() error {
	b, err := x.stopAll(time.Time{})
	if err != nil {
		return err
	}
	t0 := time.Now()
	x.checkAtBarrier()
	v, seqs, since, err := x.freezeAtBarrier()
	close(b.release)
	if err != nil || v == nil {
		return err
	}
	pause := time.Since(t0)
	if v, err = x.finishSnapshot(v); err != nil {
		x.sinceSnap.Add(since) // not taken: the next check tries again
		return err
	}
	x.snapNo++
	if err := x.db.Set(snapshotKey(nil, x.snapNo), v, pebble.Sync); err != nil {
		return fmt.Errorf("journal: write snapshot: %v", err)
	}
	x.logf("journal: snapshot %d: %d bytes, seqs %v, shards paused %v, written in %v", x.snapNo, len(v), seqs,
		pause.Round(time.Microsecond), time.Since(t0).Round(time.Millisecond))
	if x.snapNo > keepSnapshots {
		// Older snapshots are not needed: the journal is kept in full, and
		// the newest ones are enough to fall back on if one is unreadable.
		if err := x.db.DeleteRange(snapshotKey(nil, 0), snapshotKey(nil, x.snapNo-keepSnapshots+1), pebble.NoSync); err != nil {
			x.logf("journal: prune snapshots: %v", err)
		}
	}
	return nil
}

// freezeAtBarrier, while every shard is stopped, encodes the snapshot's
// header and accounts and copies every engine's book into x.frozen; nil
// when nothing changed since the last one. since is the count of commands
// the snapshot covers that it took from x.sinceSnap.
func (x *impl) freezeAtBarrier() (v []byte, seqs []uint64, since int64, err error) {
	defer func() {
		if p := recover(); p != nil { // engine snapshot code broken: report, keep running
			v, err = nil, fmt.Errorf("journal: snapshot: %v", p)
		}
	}()
	if x.sinceSnap.Load() == 0 && x.snapNo > 0 {
		return nil, nil, 0, nil
	}
	v = encodeSnapshotHead(x)
	for i, e := range x.engines {
		x.frozen[i] = e.Freeze(x.frozen[i])
	}
	return v, x.seqsNow(), x.sinceSnap.Swap(0), nil
}

// finishSnapshot appends the frozen engines and the checksum to head.
func (x *impl) finishSnapshot(head []byte) (v []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("journal: snapshot: %v", p)
		}
	}()
	return appendEngines(head, x.frozen), nil
}

// keepSnapshots is how many of the newest snapshots are kept.
const keepSnapshots = 2

// Snapshot value (version 1), little-endian:
//
//	version u8, shards u8 (market shards; the ledger is one more)
//	per shard: seq u64, timeMs i64
//	accounts: len u32, bytes (engine.Accounts.AppendSnapshot)
//	per shard: len u32, bytes (engine.Engine.AppendSnapshot)
//	crc32c u32 of everything before it
const snapVersion = 1

// encodeSnapshot encodes the snapshot of x, which must be quiet.
func encodeSnapshot(x *impl) []byte {
	return appendEngines(encodeSnapshotHead(x), x.engines)
}

// appendEngines appends each engine's section (an engine, or its frozen
// copy) and the checksum to a snapshot's head.
func appendEngines[E interface{ AppendSnapshot([]byte) []byte }](v []byte, engines []E) []byte {
	for _, e := range engines {
		at := len(v)
		v = lenAt(e.AppendSnapshot(le.AppendUint32(v, 0)), at)
	}
	return le.AppendUint32(v, crc32.Checksum(v, castagnoli))
}

// encodeSnapshotHead encodes the snapshot up to the engines: the header
// and the accounts.
func encodeSnapshotHead(x *impl) []byte {
	v := []byte{snapVersion, byte(x.nMarket)}
	for _, s := range x.shards {
		v = le.AppendUint64(v, s.seq)
		v = le.AppendUint64(v, uint64(s.timeMs))
	}
	at := len(v)
	return lenAt(x.acc.AppendSnapshot(le.AppendUint32(v, 0)), at)
}

// lenAt fills in the u32 length at v[at:] of the bytes after it.
func lenAt(v []byte, at int) []byte {
	le.PutUint32(v[at:], uint32(len(v)-at-4))
	return v
}

// loadSnapshot restores the newest valid snapshot and returns each shard's
// sequence to replay from. Without one, every shard replays from seq 1.
func (x *impl) loadSnapshot() ([]uint64, error) {
	from := make([]uint64, len(x.shards))
	for i := range from {
		from[i] = 1
	}
	it, err := x.db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxSnapshot}, UpperBound: []byte{pfxSnapshot + 1}})
	if err != nil {
		return nil, fmt.Errorf("journal: %v", err)
	}
	defer it.Close()
	for valid := it.Last(); valid; valid = it.Prev() {
		no := be.Uint64(it.Key()[1:])
		if x.snapNo == 0 {
			x.snapNo = no
		}
		if x.opt.FullReplay {
			break
		}
		v, err := it.ValueAndErr()
		if err == nil {
			err = x.checkSnapshot(v)
		}
		if err != nil {
			x.logf("journal: snapshot %d unusable, trying an older one: %v", no, err)
			continue
		}
		if err := x.restoreSnapshot(v); err != nil {
			return nil, fmt.Errorf("journal: snapshot %d: %v", no, err)
		}
		for i, s := range x.shards {
			from[i] = s.seq + 1
		}
		x.logf("journal: loaded snapshot %d (seqs %v)", no, x.seqsNow())
		if err := x.announceUsers(); err != nil {
			return nil, err
		}
		return from, nil
	}
	return from, it.Error()
}

func (x *impl) checkSnapshot(v []byte) error {
	if len(v) < 6 {
		return errCorrupt
	}
	n := len(v) - 4
	if crc32.Checksum(v[:n], castagnoli) != le.Uint32(v[n:]) {
		return fmt.Errorf("%w: snapshot checksum", errCorrupt)
	}
	if v[0] != snapVersion {
		return fmt.Errorf("journal: snapshot version %d not supported", v[0])
	}
	if int(v[1]) != x.nMarket {
		return fmt.Errorf("journal: snapshot of %d shards, want %d", v[1], x.nMarket)
	}
	return nil
}

func (x *impl) restoreSnapshot(v []byte) error {
	v = v[2 : len(v)-4]
	if len(v) < 16*len(x.shards) {
		return errCorrupt
	}
	for _, s := range x.shards {
		s.seq, s.timeMs = le.Uint64(v), int64(le.Uint64(v[8:]))
		v = v[16:]
	}
	part := func() ([]byte, error) {
		if len(v) < 4 || int(le.Uint32(v)) > len(v)-4 {
			return nil, errCorrupt
		}
		n := int(le.Uint32(v))
		p := v[4 : 4+n]
		v = v[4+n:]
		return p, nil
	}
	p, err := part()
	if err != nil {
		return err
	}
	if err := x.acc.LoadSnapshot(p); err != nil {
		return err
	}
	for _, e := range x.engines {
		if p, err = part(); err != nil {
			return err
		}
		if err := e.LoadSnapshot(p); err != nil {
			return err
		}
	}
	if len(v) != 0 {
		return fmt.Errorf("%w: %d bytes after the snapshot", errCorrupt, len(v))
	}
	return nil
}

// snapshotter takes periodic snapshots.
func (x *impl) snapshotter() {
	defer x.wg.Done()
	every := int64(x.opt.SnapshotEvery)
	if every <= 0 {
		every = defaultSnapshotEvery
	}
	interval := x.opt.SnapshotInterval
	if interval <= 0 {
		interval = defaultSnapshotInterval
	}
	tick := interval
	if tick > 100*time.Millisecond {
		tick = 100 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-x.stopSnap:
			return
		case <-t.C:
		}
		n := x.sinceSnap.Load()
		if n >= every || n > 0 && time.Since(last) >= interval {
			x.barMu.Lock()
			if !x.closed.Load() {
				if err := x.snapshotLocked(); err != nil {
					x.logf("journal: %v", err)
				}
			}
			x.barMu.Unlock()
			last = time.Now()
		}
	}
}

// announceUsers calls OnAddUser, in user order, for every user the loaded
// snapshot registered: their CmdAddUser is before the snapshot and will not
// be replayed, but the edge needs it (credentials). The commands come from
// the "u" rows written with them.
func (x *impl) announceUsers() error {
	f := x.opt.OnAddUser
	if f == nil {
		return nil
	}
	n := x.acc.NumUsers()
	seen := 0
	err := x.scan([]byte{pfxUser}, userKey(nil, engine.UserIdx(n)), false, func(k, v []byte) bool {
		var c engine.Cmd
		if _, err := decodeCmd(v, &c); err != nil || c.Kind != engine.CmdAddUser {
			x.logf("journal: bad user row %x", k)
			return true
		}
		seen++
		f(&c)
		return true
	})
	if err != nil {
		return err
	}
	if seen != n {
		x.logf("journal: %d users in the snapshot, %d registration rows", n, seen)
	}
	return nil
}
