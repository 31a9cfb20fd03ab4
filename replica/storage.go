// Package replica runs one raft group (go.etcd.io/raft/v3) of a few nodes:
// the raft log and hard state in the node's Pebble DB (Storage), an
// authenticated TCP transport between the nodes (Transport), and the loop that
// drives raft and hands committed entries, in index order, to a state machine
// (Group). It knows nothing of what the entries mean; see docs/REPLICATION.md.
package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// KeyPrefix is the first byte of every key Storage writes. The journal's key
// space (journal/keys.go) uses the lower-case letters m j s o l c h p u r a b
// k; 'R' (0x52) is none of them, so the raft state can live in the journal's
// Pebble DB without a key of one ever being read as the other's.
const KeyPrefix byte = 'R'

// Keys: 'R' group(4, big-endian) kind(1) [index(8, big-endian)]. Big-endian
// indexes make byte order numeric order, so a group's entries are one
// contiguous, ordered range.
const (
	kindEntry    = 'e' // index(8) -> raftpb.Entry
	kindHard     = 'h' // raftpb.HardState
	kindSnapMeta = 'm' // raftpb.SnapshotMetadata of the newest snapshot
	kindSnapData = 'd' // the newest snapshot's data (the state machine's bytes)
	kindTrunc    = 't' // index(8) term(8) of the last entry removed from the log
)

const keyHead = 1 + 4 + 1

func groupKey(group uint32, kind byte) []byte {
	k := make([]byte, keyHead, keyHead+8)
	k[0] = KeyPrefix
	binary.BigEndian.PutUint32(k[1:5], group)
	k[5] = kind
	return k
}

func entryKey(group uint32, index uint64) []byte {
	return binary.BigEndian.AppendUint64(groupKey(group, kindEntry), index)
}

// Cache bounds: the newest entries are kept in memory because raft reads the
// tail of its log again and again (Term on every append it receives, Entries
// for every follower a little behind); older entries are read from Pebble.
const (
	cacheEntries = 4096
	cacheBytes   = 64 << 20
)

// Storage is raft's Storage on a Pebble DB, for one group: the log, the hard
// state and the newest snapshot, under keys of KeyPrefix and the group's
// number (so several groups may share one DB). It is safe for concurrent use.
//
// Invariants, held in memory and on disk alike:
//   - the log holds exactly the entries trunc+1 .. last, contiguous;
//   - Term(trunc) is known (truncTerm) although entry trunc is gone, because
//     raft checks the term of the entry before any it appends;
//   - the newest snapshot's index is >= trunc: entries are removed only once a
//     snapshot covers them.
type Storage struct {
	db    *pebble.DB
	group uint32

	mu        sync.Mutex
	hard      raftpb.HardState
	snap      raftpb.SnapshotMetadata
	trunc     uint64
	truncTerm uint64
	last      uint64
	// tail is a cache of the entries tail[0].Index .. last, never shared with
	// a writer: every change builds a new backing array past the kept prefix,
	// because raft may still hold slices Entries returned.
	tail      []raftpb.Entry
	tailBytes int
}

// ErrNotEmpty is returned by Bootstrap when the group already has state.
var ErrNotEmpty = errors.New("replica: storage already holds raft state")

// NewStorage loads group's raft state from db. A group with no state yet has
// an empty log and must be given its members with Bootstrap before raft runs.
func NewStorage(db *pebble.DB, group uint32) (*Storage, error) {
	s := &Storage{db: db, group: group}
	if v, ok, err := s.get(groupKey(group, kindHard)); err != nil {
		return nil, err
	} else if ok {
		if err := s.hard.Unmarshal(v); err != nil {
			return nil, fmt.Errorf("replica: group %d hard state: %w", group, err)
		}
	}
	if v, ok, err := s.get(groupKey(group, kindSnapMeta)); err != nil {
		return nil, err
	} else if ok {
		if err := s.snap.Unmarshal(v); err != nil {
			return nil, fmt.Errorf("replica: group %d snapshot metadata: %w", group, err)
		}
	}
	if v, ok, err := s.get(groupKey(group, kindTrunc)); err != nil {
		return nil, err
	} else if ok {
		if len(v) != 16 {
			return nil, fmt.Errorf("replica: group %d truncated state is %d bytes, want 16", group, len(v))
		}
		s.trunc = binary.BigEndian.Uint64(v)
		s.truncTerm = binary.BigEndian.Uint64(v[8:])
	}
	s.last = s.trunc
	it, err := db.NewIter(&pebble.IterOptions{
		LowerBound: entryKey(group, 0),
		UpperBound: entryKey(group, math.MaxUint64),
	})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if it.First() {
		first := binary.BigEndian.Uint64(it.Key()[keyHead:])
		it.Last()
		last := binary.BigEndian.Uint64(it.Key()[keyHead:])
		if first != s.trunc+1 {
			return nil, fmt.Errorf("replica: group %d log starts at %d, want %d (after the truncated index)", group, first, s.trunc+1)
		}
		s.last = last
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if s.snap.Index < s.trunc {
		return nil, fmt.Errorf("replica: group %d snapshot at %d is older than the truncated index %d", group, s.snap.Index, s.trunc)
	}
	return s, nil
}

func (s *Storage) get(key []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, true, nil
}

// Bootstrap gives an empty group its voters: a snapshot at index 0 whose
// configuration names them, which is how raft starts a group without
// configuration-change entries. Every member must be bootstrapped with the
// same voters.
func (s *Storage) Bootstrap(voters []uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !raft.IsEmptyHardState(s.hard) || s.last != 0 || len(s.snap.ConfState.Voters) != 0 {
		return ErrNotEmpty
	}
	meta := raftpb.SnapshotMetadata{ConfState: raftpb.ConfState{Voters: append([]uint64(nil), voters...)}}
	mb, err := meta.Marshal()
	if err != nil {
		return err
	}
	if err := s.db.Set(groupKey(s.group, kindSnapMeta), mb, pebble.Sync); err != nil {
		return err
	}
	s.snap = meta
	return nil
}

// Empty reports whether the group has no raft state (never bootstrapped).
func (s *Storage) Empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return raft.IsEmptyHardState(s.hard) && s.last == 0 && len(s.snap.ConfState.Voters) == 0
}

// InitialState implements raft.Storage.
func (s *Storage) InitialState() (raftpb.HardState, raftpb.ConfState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hard, s.snap.ConfState, nil
}

// HardState is the hard state last saved.
func (s *Storage) HardState() raftpb.HardState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hard
}

// FirstIndex implements raft.Storage.
func (s *Storage) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trunc + 1, nil
}

// LastIndex implements raft.Storage.
func (s *Storage) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, nil
}

// Term implements raft.Storage.
func (s *Storage) Term(i uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case i == s.trunc:
		return s.truncTerm, nil
	case i < s.trunc:
		return 0, raft.ErrCompacted
	case i > s.last:
		return 0, raft.ErrUnavailable
	}
	if len(s.tail) > 0 && i >= s.tail[0].Index {
		return s.tail[i-s.tail[0].Index].Term, nil
	}
	e, err := s.readEntry(i)
	if err != nil {
		return 0, err
	}
	return e.Term, nil
}

func (s *Storage) readEntry(i uint64) (raftpb.Entry, error) {
	var e raftpb.Entry
	v, ok, err := s.get(entryKey(s.group, i))
	if err != nil {
		return e, err
	}
	if !ok {
		return e, fmt.Errorf("replica: group %d entry %d missing from a log that holds %d..%d", s.group, i, s.trunc+1, s.last)
	}
	if err := e.Unmarshal(v); err != nil {
		return e, fmt.Errorf("replica: group %d entry %d: %w", s.group, i, err)
	}
	if e.Index != i {
		return e, fmt.Errorf("replica: group %d key of entry %d holds entry %d", s.group, i, e.Index)
	}
	return e, nil
}

// Entries implements raft.Storage: the entries lo..hi-1, as many as fit in
// maxSize bytes but at least one.
func (s *Storage) Entries(lo, hi, maxSize uint64) ([]raftpb.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lo <= s.trunc {
		return nil, raft.ErrCompacted
	}
	if hi > s.last+1 {
		return nil, fmt.Errorf("replica: entries up to %d asked of a log ending at %d: %w", hi-1, s.last, raft.ErrUnavailable)
	}
	if lo >= hi {
		return nil, nil
	}
	if len(s.tail) > 0 && lo >= s.tail[0].Index {
		off := s.tail[0].Index
		ents := s.tail[lo-off : hi-off : hi-off]
		return limitSize(ents, maxSize), nil
	}
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: entryKey(s.group, lo),
		UpperBound: entryKey(s.group, hi),
	})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var ents []raftpb.Entry
	var size uint64
	next := lo
	for ok := it.First(); ok; ok = it.Next() {
		var e raftpb.Entry
		if err := e.Unmarshal(it.Value()); err != nil {
			return nil, fmt.Errorf("replica: group %d entry %d: %w", s.group, next, err)
		}
		if e.Index != next {
			return nil, fmt.Errorf("replica: group %d log has entry %d where %d belongs", s.group, e.Index, next)
		}
		size += uint64(e.Size())
		if len(ents) > 0 && size > maxSize {
			break
		}
		ents = append(ents, e)
		next++
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if len(ents) == 0 {
		return nil, fmt.Errorf("replica: group %d entry %d missing from a log that holds %d..%d", s.group, lo, s.trunc+1, s.last)
	}
	return ents, nil
}

func limitSize(ents []raftpb.Entry, maxSize uint64) []raftpb.Entry {
	var size uint64
	for i := range ents {
		size += uint64(ents[i].Size())
		if i > 0 && size > maxSize {
			return ents[:i:i]
		}
	}
	return ents
}

// Snapshot implements raft.Storage: the newest snapshot, data included.
func (s *Storage) Snapshot() (raftpb.Snapshot, error) {
	s.mu.Lock()
	meta := s.snap
	s.mu.Unlock()
	snap := raftpb.Snapshot{Metadata: meta}
	if meta.Index == 0 {
		return snap, nil
	}
	data, _, err := s.get(groupKey(s.group, kindSnapData))
	if err != nil {
		return snap, err
	}
	snap.Data = data
	return snap, nil
}

// SnapshotMeta is the newest snapshot's metadata (its index 0 until the
// first snapshot).
func (s *Storage) SnapshotMeta() raftpb.SnapshotMetadata {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap
}

// Save writes what one raft Ready asks to persist, in one Pebble batch (synced
// unless it only moves the commit index), so a crash keeps all of it or none: a snapshot received from the leader
// (which replaces the whole log), then entries (which replace any entries at
// their indexes and after), then the hard state. Only once Save returns may
// the messages that depend on it be sent.
func (s *Storage) Save(hard raftpb.HardState, ents []raftpb.Entry, snap raftpb.Snapshot) error {
	return s.save(hard, ents, snap, nil)
}

// save is Save; written, if not nil, is called once the batch is in the
// WAL, before it is synced: whatever is committed to the DB after that
// comes after it in the WAL, so a crash that keeps the later write keeps
// this one. The storage's lock is not held while the batch is written and
// synced: raft may read the log meanwhile (its entries before this
// Ready's, which it holds as stable; the new ones it reads from its own
// memory until Advance), and the new state is installed once the write is
// durable. One save at a time, and no snapshot or compaction during one
// (Group.run).
func (s *Storage) save(hard raftpb.HardState, ents []raftpb.Entry, snap raftpb.Snapshot, written func()) error {
	s.mu.Lock()
	locked := true
	defer func() {
		if locked {
			s.mu.Unlock()
		}
	}()
	b := s.db.NewBatch()
	defer b.Close()

	trunc, truncTerm, last, meta := s.trunc, s.truncTerm, s.last, s.snap
	tail := s.tail
	tailBytes := s.tailBytes

	if !raft.IsEmptySnap(snap) {
		if snap.Metadata.Index <= s.snap.Index {
			return raft.ErrSnapOutOfDate
		}
		mb, err := snap.Metadata.Marshal()
		if err != nil {
			return err
		}
		if err := b.DeleteRange(entryKey(s.group, 0), entryKey(s.group, math.MaxUint64), nil); err != nil {
			return err
		}
		if err := b.Set(groupKey(s.group, kindSnapMeta), mb, nil); err != nil {
			return err
		}
		if err := b.Set(groupKey(s.group, kindSnapData), snap.Data, nil); err != nil {
			return err
		}
		meta = snap.Metadata
		trunc, truncTerm, last = meta.Index, meta.Term, meta.Index
		if err := b.Set(groupKey(s.group, kindTrunc), truncValue(trunc, truncTerm), nil); err != nil {
			return err
		}
		tail, tailBytes = nil, 0
	}

	if len(ents) > 0 && ents[len(ents)-1].Index > trunc {
		if ents[0].Index <= trunc {
			ents = ents[trunc+1-ents[0].Index:]
		}
		first, newLast := ents[0].Index, ents[len(ents)-1].Index
		if first > last+1 {
			return fmt.Errorf("replica: group %d append at %d leaves a gap after %d", s.group, first, last)
		}
		for i := range ents {
			v, err := ents[i].Marshal()
			if err != nil {
				return err
			}
			if err := b.Set(entryKey(s.group, ents[i].Index), v, nil); err != nil {
				return err
			}
		}
		if last > newLast {
			if err := b.DeleteRange(entryKey(s.group, newLast+1), entryKey(s.group, last+1), nil); err != nil {
				return err
			}
		}
		// The cache keeps its entries before first, if it reaches that far
		// back, and takes the new ones. Appending after its last entry
		// writes only past len(tail), where no slice raft holds reaches
		// (Entries caps what it returns), so it reuses the spare capacity:
		// a copy of the whole cache per Save was most of a member's CPU.
		// Replacing entries copies (a full slice expression) rather than
		// overwrite entries raft may hold.
		if len(tail) > 0 && first == tail[0].Index+uint64(len(tail)) {
			tail = append(tail, ents...)
		} else if len(tail) > 0 && first >= tail[0].Index && first < tail[0].Index+uint64(len(tail)) {
			keep := first - tail[0].Index
			for _, e := range tail[keep:] {
				tailBytes -= e.Size()
			}
			tail = append(tail[:keep:keep], ents...)
		} else {
			tail = append([]raftpb.Entry(nil), ents...)
			tailBytes = 0
		}
		for i := range ents {
			tailBytes += ents[i].Size()
		}
		for len(tail) > 1 && (len(tail) > cacheEntries || tailBytes > cacheBytes) {
			tailBytes -= tail[0].Size()
			tail = tail[1:]
		}
		last = newLast
	}

	if !raft.IsEmptyHardState(hard) {
		v, err := hard.Marshal()
		if err != nil {
			return err
		}
		if err := b.Set(groupKey(s.group, kindHard), v, nil); err != nil {
			return err
		}
	}
	if b.Empty() {
		return nil
	}
	// A Ready that only moves the commit index need not be synced (raft's
	// MustSync): a commit index lost in a crash is learnt again from the
	// leader, and it is never behind what was applied, since everything
	// applied was written after it in the same WAL, which a crash cuts
	// only at its end. Entries, a vote, a term and a snapshot are synced.
	sync := !raft.IsEmptySnap(snap) || raft.MustSync(hard, s.hard, len(ents))
	s.mu.Unlock()
	locked = false
	switch {
	case written == nil:
		opt := pebble.NoSync
		if sync {
			opt = pebble.Sync
		}
		if err := b.Commit(opt); err != nil {
			return err
		}
	default: // written, then synced
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		written()
		if sync {
			if err := s.db.LogData(nil, pebble.Sync); err != nil {
				return err
			}
		}
	}
	s.mu.Lock()
	locked = true
	if !raft.IsEmptyHardState(hard) {
		s.hard = hard
	}
	s.trunc, s.truncTerm, s.last, s.snap = trunc, truncTerm, last, meta
	s.tail, s.tailBytes = tail, tailBytes
	return nil
}

func truncValue(index, term uint64) []byte {
	v := binary.BigEndian.AppendUint64(nil, index)
	return binary.BigEndian.AppendUint64(v, term)
}

// CreateSnapshot records data as the state machine's state after entry index
// (which must be in the log or be the truncated index), with the group's
// configuration cs, and keeps it as the snapshot raft sends a follower that
// needs entries no longer in the log. It is written without a sync: a later
// synced write makes it durable, and losing it in a crash only keeps an older
// snapshot, which still covers every removed entry.
func (s *Storage) CreateSnapshot(index uint64, cs raftpb.ConfState, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.snap.Index {
		return raft.ErrSnapOutOfDate
	}
	if index > s.last {
		return fmt.Errorf("replica: snapshot at %d is past the log's last entry %d", index, s.last)
	}
	term := s.truncTerm
	if index != s.trunc {
		e, err := s.entryLocked(index)
		if err != nil {
			return err
		}
		term = e.Term
	}
	meta := raftpb.SnapshotMetadata{Index: index, Term: term, ConfState: cs}
	mb, err := meta.Marshal()
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(groupKey(s.group, kindSnapMeta), mb, nil); err != nil {
		return err
	}
	if err := b.Set(groupKey(s.group, kindSnapData), data, nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	s.snap = meta
	return nil
}

func (s *Storage) entryLocked(i uint64) (raftpb.Entry, error) {
	if len(s.tail) > 0 && i >= s.tail[0].Index {
		return s.tail[i-s.tail[0].Index], nil
	}
	return s.readEntry(i)
}

// Compact removes the entries up to and including index, which the newest
// snapshot must cover. Like CreateSnapshot it is not synced: if a crash loses
// it the entries are simply still there.
func (s *Storage) Compact(index uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.trunc {
		return raft.ErrCompacted
	}
	if index > s.snap.Index {
		return fmt.Errorf("replica: compaction to %d passes the snapshot at %d", index, s.snap.Index)
	}
	e, err := s.entryLocked(index)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(entryKey(s.group, 0), entryKey(s.group, index+1), nil); err != nil {
		return err
	}
	if err := b.Set(groupKey(s.group, kindTrunc), truncValue(index, e.Term), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	s.trunc, s.truncTerm = index, e.Term
	if len(s.tail) > 0 && s.tail[0].Index <= index {
		n := index + 1 - s.tail[0].Index
		for _, e := range s.tail[:n] {
			s.tailBytes -= e.Size()
		}
		s.tail = s.tail[n:]
	}
	return nil
}
