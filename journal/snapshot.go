package journal

import (
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
)

// Snapshot value (version 1), little-endian:
//
//	version u8, shards u8 (market shards; the ledger is one more)
//	per shard: seq u64, timeMs i64
//	accounts: len u32, bytes (engine.Accounts.AppendSnapshot)
//	per shard: len u32, bytes (engine.Engine.AppendSnapshot)
//	crc32c u32 of everything before it
const snapVersion = 1

// keepSnapshots is how many of the newest snapshots are kept: the journal
// is kept in full, and the newest ones are enough to fall back on if one
// is unreadable.
const keepSnapshots = 2

// SnapshotHead encodes a snapshot up to the engines: the header, each
// shard's sequence and time, and the accounts. Every shard must be
// stopped between two commands with its credits flushed.
func SnapshotHead(st *State) []byte {
	v := []byte{snapVersion, byte(st.MarketShards())}
	for i := range st.Engines {
		v = le.AppendUint64(v, st.Seqs[i])
		v = le.AppendUint64(v, uint64(st.Times[i]))
	}
	at := len(v)
	return lenAt(st.Accounts.AppendSnapshot(le.AppendUint32(v, 0)), at)
}

// AppendSnapshotEngines appends each engine's section (of an engine, or of
// its frozen copy) and the checksum to a snapshot's head.
func AppendSnapshotEngines[E interface{ AppendSnapshot([]byte) []byte }](v []byte, engines []E) []byte {
	for _, e := range engines {
		at := len(v)
		v = lenAt(e.AppendSnapshot(le.AppendUint32(v, 0)), at)
	}
	return le.AppendUint32(v, crc32.Checksum(v, castagnoli))
}

// encodeSnapshot encodes the snapshot of st, which must be quiet.
func encodeSnapshot(st *State) []byte {
	return AppendSnapshotEngines(SnapshotHead(st), st.Engines)
}

// lenAt fills in the u32 length at v[at:] of the bytes after it.
func lenAt(v []byte, at int) []byte {
	le.PutUint32(v[at:], uint32(len(v)-at-4))
	return v
}

// WriteSnapshot stores the snapshot v, durably, as the newest, and prunes
// the older ones. It returns the snapshot's number. One goroutine writes
// snapshots at a time.
func (s *Store) WriteSnapshot(v []byte) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return 0, ErrClosed
	}
	s.snapNo++
	if err := s.db.Set(snapshotKey(nil, s.snapNo), v, pebble.Sync); err != nil {
		return 0, wrapPebble("write snapshot", err)
	}
	if s.snapNo > keepSnapshots {
		if err := s.prune(s.snapNo - keepSnapshots + 1); err != nil {
			s.log.Warn("journal: prune snapshots", "err", err)
		}
	}
	return s.snapNo, nil
}

// prune deletes the snapshots numbered below end but the installed ones:
// those stand for journal records this member never wrote (recover).
func (s *Store) prune(end uint64) error {
	lo := uint64(0)
	for _, n := range s.installed {
		if n >= end {
			break
		}
		if lo < n {
			if err := s.db.DeleteRange(snapshotKey(nil, lo), snapshotKey(nil, n), pebble.NoSync); err != nil {
				return err
			}
		}
		lo = n + 1
	}
	if lo < end {
		return s.db.DeleteRange(snapshotKey(nil, lo), snapshotKey(nil, end), pebble.NoSync)
	}
	return nil
}

// HasSnapshot reports whether the store holds a snapshot.
func (s *Store) HasSnapshot() bool { return s.snapNo > 0 }

// loadSnapshot restores the newest valid snapshot into st and returns
// each shard's sequence to replay from, and whether it loaded one. Without
// one (or with full), every shard replays from seq 1.
func (s *Store) loadSnapshot(st *State, full bool) ([]uint64, bool, error) {
	from := make([]uint64, len(st.Engines))
	for i := range from {
		from[i] = 1
	}
	if err := s.readInstalled(); err != nil {
		return nil, false, err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxSnapshot}, UpperBound: []byte{pfxSnapshot + 1}})
	if err != nil {
		return nil, false, wrapPebble("read snapshots", err)
	}
	defer it.Close()
	for valid := it.Last(); valid; valid = it.Prev() {
		no := be.Uint64(it.Key()[1:])
		if s.snapNo == 0 {
			s.snapNo = no
		}
		if full {
			break
		}
		v, err := it.ValueAndErr()
		if err == nil {
			err = checkSnapshot(v, st.MarketShards())
		}
		if err != nil {
			s.log.Warn("journal: snapshot unusable, trying an older one", "snapshot", no, "err", err)
			continue
		}
		if err := restoreSnapshot(st, v); err != nil {
			return nil, false, fmt.Errorf("journal: snapshot %d: %w", no, err)
		}
		for i := range from {
			from[i] = st.Seqs[i] + 1
		}
		s.log.Info("journal: loaded snapshot", "snapshot", no, "seqs", st.Seqs)
		return from, true, nil
	}
	if err := it.Error(); err != nil {
		return nil, false, wrapPebble("read snapshots", err)
	}
	return from, false, nil
}

// readInstalled reads the numbers of the snapshots marked installed.
func (s *Store) readInstalled() error {
	s.installed = s.installed[:0]
	return s.viewIter([]byte{pfxInstall}, []byte{pfxInstall + 1}, func(it *pebble.Iterator) error {
		for valid := it.First(); valid; valid = it.Next() {
			if len(it.Key()) != 9 {
				return fmt.Errorf("%w: bad install key %x", ErrCorrupt, it.Key())
			}
			s.installed = append(s.installed, be.Uint64(it.Key()[1:]))
		}
		return nil
	})
}

// installJumps returns, in order, the numbers and sequences of the
// installed snapshots the journal stops short of: on some shard the
// records up to the snapshot's sequence end before it. That the records
// go on right after it is left to the replay, which refuses a gap there
// as anywhere.
func (s *Store) installJumps(shards int) ([]uint64, [][]uint64, error) {
	var nos []uint64
	var seqs [][]uint64
	for _, no := range s.installed {
		var sq []uint64
		bad := errors.New("missing")
		found, err := s.get(snapshotKey(nil, no), func(v []byte) {
			if bad = checkSnapshot(v, shards); bad == nil {
				sq, bad = snapshotSeqs(v, shards)
			}
		})
		if err != nil {
			return nil, nil, err
		}
		if !found || bad != nil {
			s.log.Warn("journal: installed snapshot unusable for a full replay", "snapshot", no, "err", bad)
			continue
		}
		short := false
		for i, seq := range sq {
			end, err := s.journalEnd(i, seq)
			if err != nil {
				return nil, nil, err
			}
			short = short || end < seq
		}
		if short {
			nos, seqs = append(nos, no), append(seqs, sq)
		}
	}
	return nos, seqs, nil
}

// journalEnd returns the last sequence of shard's records that start at
// or before seq (0: none).
func (s *Store) journalEnd(shard int, seq uint64) (uint64, error) {
	var end uint64
	err := s.viewIter(journalKey(nil, shard, 0), journalKey(nil, shard, seq+1), func(it *pebble.Iterator) error {
		if !it.Last() {
			return nil
		}
		if len(it.Key()) != 10 {
			return fmt.Errorf("%w: shard %d: bad key %x", ErrCorrupt, shard, it.Key())
		}
		first := be.Uint64(it.Key()[2:])
		v, err := it.ValueAndErr()
		var r record
		if err == nil {
			r, err = checkRecord(v)
		}
		if err != nil {
			return fmt.Errorf("%w: shard %d: record at seq %d: %w", ErrCorrupt, shard, first, err)
		}
		end = first + uint64(r.count) - 1
		return nil
	})
	return end, err
}

// loadInstalled restores installed snapshot no into the new state st.
func (s *Store) loadInstalled(st *State, no uint64) error {
	err := fmt.Errorf("%w: missing", ErrCorrupt)
	if _, gerr := s.get(snapshotKey(nil, no), func(v []byte) {
		if err = checkSnapshot(v, st.MarketShards()); err == nil {
			err = restoreSnapshot(st, v)
		}
	}); gerr != nil {
		err = gerr
	}
	if err != nil {
		return fmt.Errorf("journal: installed snapshot %d: %w", no, err)
	}
	return nil
}

// snapshotSeqs returns each shard's sequence in the checked snapshot v.
func snapshotSeqs(v []byte, shards int) ([]uint64, error) {
	seqs := make([]uint64, shards+1)
	if len(v) < 2+16*len(seqs)+4 {
		return nil, fmt.Errorf("%w: snapshot header", ErrCorrupt)
	}
	for i := range seqs {
		seqs[i] = le.Uint64(v[2+16*i:])
	}
	return seqs, nil
}

func checkSnapshot(v []byte, shards int) error {
	if len(v) < 6 {
		return fmt.Errorf("%w: snapshot of %d bytes", ErrCorrupt, len(v))
	}
	n := len(v) - 4
	if crc32.Checksum(v[:n], castagnoli) != le.Uint32(v[n:]) {
		return fmt.Errorf("%w: snapshot checksum", ErrCorrupt)
	}
	if v[0] != snapVersion {
		return fmt.Errorf("journal: snapshot version %d not supported", v[0])
	}
	if int(v[1]) != shards {
		return fmt.Errorf("journal: snapshot of %d shards, want %d", v[1], shards)
	}
	return nil
}

// restoreSnapshot loads the checked snapshot v into st.
func restoreSnapshot(st *State, v []byte) error {
	v = v[2 : len(v)-4]
	if len(v) < 16*len(st.Engines) {
		return fmt.Errorf("%w: snapshot header", ErrCorrupt)
	}
	for i := range st.Engines {
		st.Seqs[i], st.Times[i] = le.Uint64(v), int64(le.Uint64(v[8:]))
		v = v[16:]
	}
	part := func() ([]byte, error) {
		if len(v) < 4 || int(le.Uint32(v)) > len(v)-4 {
			return nil, fmt.Errorf("%w: snapshot section length", ErrCorrupt)
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
	if err := st.Accounts.LoadSnapshot(p); err != nil {
		return fmt.Errorf("%w: snapshot accounts: %w", ErrCorrupt, err)
	}
	for i, e := range st.Engines {
		if p, err = part(); err != nil {
			return err
		}
		if err := e.LoadSnapshot(p); err != nil {
			return fmt.Errorf("%w: snapshot of shard %d: %w", ErrCorrupt, i, err)
		}
	}
	if len(v) != 0 {
		return fmt.Errorf("%w: %d bytes after the snapshot", ErrCorrupt, len(v))
	}
	return nil
}

// announceUsers calls onAddUser, in user order, for every user from index
// from on that the loaded snapshot registered: their CmdAddUser is before
// the snapshot and is not replayed, but the caller needs it (credentials).
// The commands come from the "u" rows written with them.
func (s *Store) announceUsers(st *State, from int, onAddUser func(*engine.Cmd)) error {
	n := st.Accounts.NumUsers()
	if from >= n {
		return nil
	}
	seen := from
	err := s.scan(userKey(nil, engine.UserIdx(from)), userKey(nil, engine.UserIdx(n)), false, func(k, v []byte) bool {
		var c engine.Cmd
		if _, err := decodeCmd(v, &c); err != nil || c.Kind != engine.CmdAddUser {
			s.log.Warn("journal: bad user row", "key", fmt.Sprintf("%x", k))
			return true
		}
		seen++
		onAddUser(&c)
		return true
	})
	if err != nil {
		return err
	}
	if seen != n {
		s.log.Warn("journal: users in the snapshot without a registration row", "users", n, "rows", seen)
	}
	return nil
}
