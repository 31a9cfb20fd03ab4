package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
)

// Replication (docs/REPLICATION.md): the rows of a committed batch that a
// follower cannot recompute travel in a raft entry, and the follower
// replays them through its own shards. These helpers are used only by a
// replicated node; a single node never calls them.

// DB returns the store's Pebble DB, which replica's raft storage shares
// (its keys start with a byte the journal's never do).
func (s *Store) DB() *pebble.DB { return s.db }

// AppendRows appends to dst the rows of b a follower needs to replay it:
// its journal records, the rules a CmdSetRules installed and the rebate
// records a CmdRebate wrote (the settler's, not recomputable), each as
// uvarint key length, key, uvarint value length, value.
func (b *Batch) AppendRows(dst []byte) ([]byte, error) {
	r := b.b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return dst, fmt.Errorf("journal: read batch: %w", err)
		}
		if !ok {
			return dst, nil
		}
		if kind != pebble.InternalKeyKindSet || len(k) == 0 {
			continue
		}
		switch k[0] {
		case pfxJournal, pfxRules, pfxRebate:
			dst = binary.AppendUvarint(dst, uint64(len(k)))
			dst = append(dst, k...)
			dst = binary.AppendUvarint(dst, uint64(len(v)))
			dst = append(dst, v...)
		}
	}
}

// Replayed is one journal record of a replicated entry, decoded.
type ReplRecord struct {
	Shard  int
	First  uint64
	TimeMs int64
	Cmds   []engine.Cmd
	// Rules: the spec each CmdSetRules of the record installed, by seq.
	Rules map[uint64]*engine.MarketSpec
	// Rows: raw rows to write with the record (rebate records).
	Rows [][2][]byte
}

// DecodeRows decodes rows made by AppendRows: the records, in the order
// they came, with the rules and rebate rows of the entry attached to the
// record of the shard that wrote them (rebates to the ledger's).
func DecodeRows(data []byte, ledger int) ([]ReplRecord, error) {
	var recs []ReplRecord
	var rules []struct {
		m   engine.MarketID
		seq uint64
		s   *engine.MarketSpec
	}
	var rebates [][2][]byte
	for len(data) > 0 {
		kl, n := binary.Uvarint(data)
		if n <= 0 || uint64(len(data)-n) < kl {
			return nil, fmt.Errorf("%w: replicated rows: bad key length", ErrCorrupt)
		}
		k := data[n : n+int(kl)]
		data = data[n+int(kl):]
		vl, n := binary.Uvarint(data)
		if n <= 0 || uint64(len(data)-n) < vl {
			return nil, fmt.Errorf("%w: replicated rows: bad value length", ErrCorrupt)
		}
		v := data[n : n+int(vl)]
		data = data[n+int(vl):]
		switch k[0] {
		case pfxJournal:
			if len(k) != 10 {
				return nil, fmt.Errorf("%w: replicated journal key %x", ErrCorrupt, k)
			}
			shard, seq := int(k[1]), be.Uint64(k[2:])
			cmds, err := decodeRecord(v, shard, seq, nil)
			if err != nil {
				return nil, fmt.Errorf("journal: replicated record shard %d seq %d: %w", shard, seq, err)
			}
			recs = append(recs, ReplRecord{Shard: shard, First: seq, TimeMs: int64(le.Uint64(v[16:])), Cmds: cmds})
		case pfxRules:
			if len(k) != 11 {
				return nil, fmt.Errorf("%w: replicated rules key %x", ErrCorrupt, k)
			}
			s, err := decodeRules(v)
			if err != nil {
				return nil, err
			}
			rules = append(rules, struct {
				m   engine.MarketID
				seq uint64
				s   *engine.MarketSpec
			}{engine.MarketID(be.Uint16(k[1:])), be.Uint64(k[3:]), s})
		case pfxRebate:
			rebates = append(rebates, [2][]byte{k, v})
		default:
			return nil, fmt.Errorf("%w: replicated row %x", ErrCorrupt, k)
		}
	}
	for _, r := range rules {
		found := false
		for i := range recs {
			rec := &recs[i]
			if r.seq >= rec.First && r.seq < rec.First+uint64(len(rec.Cmds)) && rec.Cmds[r.seq-rec.First].Market == r.m {
				if rec.Rules == nil {
					rec.Rules = map[uint64]*engine.MarketSpec{}
				}
				rec.Rules[r.seq] = r.s
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: replicated rules of market %d at seq %d without their record", ErrCorrupt, r.m, r.seq)
		}
	}
	if len(rebates) > 0 {
		for i := range recs {
			if recs[i].Shard == ledger {
				recs[i].Rows = append(recs[i].Rows, rebates...)
				rebates = nil
				break
			}
		}
		if rebates != nil {
			return nil, fmt.Errorf("%w: replicated rebate rows without a ledger record", ErrCorrupt)
		}
	}
	return recs, nil
}

// SetRow writes a raw row (from DecodeRows) into b.
func (b *Batch) SetRow(k, v []byte) { b.b.Set(k, v, nil) }

// CommitRows writes every batch of bs and the rows extra atomically,
// synced or not. A replicated node commits with it: the raft log already
// holds the entry durably, so the journal's copy need not be synced (a
// crash loses it with the applied index written in the same batch, and
// raft hands the entry over again). An error is ErrWriteFailed, as for
// Batch.Commit.
func (g *Group) CommitRows(bs []*Batch, extra [][2][]byte, sync bool) (err error) {
	s := g.s
	if e := s.failed.Load(); e != nil {
		return *e
	}
	g.merged.Reset()
	for _, b := range bs {
		if err := g.merged.Apply(b.b, nil); err != nil {
			return wrapPebble("commit", err)
		}
	}
	for _, kv := range extra {
		g.merged.Set(kv[0], kv[1], nil)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fatalErr(p)
		} else if err != nil {
			err = fmt.Errorf("%w: %w", ErrWriteFailed, wrapPebble("commit", err))
		}
		if err != nil && s.setFailed(err) && errors.Is(err, syscall.ENOSPC) {
			s.dropBallast()
		}
	}()
	o := pebble.NoSync
	if sync {
		o = pebble.Sync
	}
	return g.merged.Commit(o)
}

// WriteSnapshotRows stores v (a snapshot another member took, received
// through raft) as the newest snapshot, with the rows extra (the applied
// index) in the same synced batch, so that a restart loads it and knows
// which entry it follows. The batch also marks it installed ("i"): the
// journal records it covers are not on this member, so it is never
// pruned and a full replay continues from it (recover).
func (s *Store) WriteSnapshotRows(v []byte, extra [][2][]byte) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return 0, ErrClosed
	}
	b := s.db.NewBatch()
	defer b.Close()
	no := s.snapNo + 1
	b.Set(snapshotKey(nil, no), v, nil)
	b.Set(installKey(nil, no), nil, nil)
	for _, kv := range extra {
		b.Set(kv[0], kv[1], nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, wrapPebble("write snapshot", err)
	}
	s.snapNo = no
	s.installed = append(s.installed, no)
	return no, nil
}

// CommitUnsynced writes b without a sync: a replicated follower's replay
// of a committed entry, which the raft log holds durably (a crash that
// loses it loses the applied index written after it too, and the entry is
// applied again; replay skips the records a shard holds). An error is
// ErrWriteFailed, as for Commit.
func (b *Batch) CommitUnsynced() (err error) {
	s := b.s
	if e := s.failed.Load(); e != nil {
		return *e
	}
	defer func() {
		if p := recover(); p != nil {
			err = fatalErr(p)
		} else if err != nil {
			err = fmt.Errorf("%w: %w", ErrWriteFailed, wrapPebble("commit", err))
		}
		if err != nil && s.setFailed(err) && errors.Is(err, syscall.ENOSPC) {
			s.dropBallast()
		}
	}()
	return b.b.Commit(pebble.NoSync)
}
