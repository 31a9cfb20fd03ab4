package journal

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/weexcore/exchange/engine"
)

// recover loads the newest valid snapshot and replays every shard's journal
// after it: the ledger first (market commands refer to users it
// registered), then the market shards in parallel. Recorded decisions make
// the result independent of the order shards are replayed in.
func (x *impl) recover() error {
	t0 := time.Now()
	from, err := x.loadSnapshot()
	if err != nil {
		return err
	}
	ledger := x.shards[x.nMarket]
	n, err := ledger.replay(from[ledger.id])
	if err != nil {
		return err
	}
	total := n
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make([]error, x.nMarket)
	for i := 0; i < x.nMarket; i++ {
		wg.Add(1)
		go func(s *shard) {
			defer wg.Done()
			k, err := s.replay(from[s.id])
			errs[s.id] = err
			mu.Lock()
			total += k
			mu.Unlock()
		}(x.shards[i])
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, s := range x.shards {
		s.eng.Flush()
		s.applying.Store(s.seq)
		s.flushed.Store(s.seq)
	}
	x.replayed, x.replayDur = total, time.Since(t0)
	if engine.Invariants {
		if err := engine.CheckInvariants(x.acc, x.engines); err != nil {
			return fmt.Errorf("journal: invariant violated after replay: %v", err)
		}
	}
	if total > 0 || !x.fresh {
		x.logf("journal: replayed %d commands on %d shards in %v", total, len(x.shards), time.Since(t0).Round(time.Millisecond))
	}
	return nil
}

// replayProgress is how many commands a shard replays between progress
// lines.
const replayProgress = 1 << 22

// replay applies the shard's journal from seq from on. A record that fails
// its checks is cut off if it is the shard's last one (a batch that never
// finished), and refused anywhere else.
func (s *shard) replay(from uint64) (int, error) {
	x := s.x
	t0 := time.Now()
	lower := journalKey(nil, s.id, from)
	upper := []byte{pfxJournal, byte(s.id + 1)}
	it, err := x.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, fmt.Errorf("journal: shard %d: %v", s.id, err)
	}
	defer it.Close()
	var cmds []engine.Cmd
	expect := from
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		key := it.Key()
		if len(key) != 10 {
			return n, fmt.Errorf("journal: shard %d: bad key %x", s.id, key)
		}
		seq := be.Uint64(key[2:])
		if seq != expect {
			return n, fmt.Errorf("journal: shard %d: gap: record at seq %d, want %d", s.id, seq, expect)
		}
		v, err := it.ValueAndErr()
		if err == nil {
			cmds, err = decodeRecord(v, s.id, seq, cmds[:0])
		}
		if err != nil {
			k := append([]byte(nil), key...)
			if it.Next() {
				return n, fmt.Errorf("journal: shard %d: corrupt record at seq %d: %v", s.id, seq, err)
			}
			if x.opt.ReadOnly {
				x.logf("journal: shard %d: ignoring torn record at seq %d (read-only): %v", s.id, seq, err)
			} else {
				x.logf("journal: shard %d: cutting torn record at seq %d: %v", s.id, seq, err)
				if err := x.db.Delete(k, pebble.Sync); err != nil {
					return n, fmt.Errorf("journal: shard %d: cut record at seq %d: %v", s.id, seq, err)
				}
			}
			break
		}
		timeMs := int64(le.Uint64(v[16:]))
		for i := range cmds {
			c := &cmds[i]
			s.eng.PrefetchAhead(cmds, i)
			s.eng.Apply(c, seq+uint64(i), timeMs, &s.out)
			if c.Kind == engine.CmdAddUser && s.out.Reject == engine.OK && x.opt.OnAddUser != nil {
				x.opt.OnAddUser(c)
			}
		}
		s.eng.Flush() // as the live shard does after each batch: keeps the pending credits short
		if n/replayProgress != (n+len(cmds))/replayProgress {
			x.logf("journal: shard %d: replaying: %d commands, seq %d, %v", s.id, n+len(cmds), seq, time.Since(t0).Round(time.Millisecond))
		}
		n += len(cmds)
		s.seq = seq + uint64(len(cmds)) - 1
		s.timeMs = timeMs
		expect = s.seq + 1
	}
	if err := it.Error(); err != nil {
		return n, fmt.Errorf("journal: shard %d: read journal: %v", s.id, err)
	}
	if n > 0 {
		x.logf("journal: shard %d: replayed %d commands to seq %d in %v", s.id, n, s.seq, time.Since(t0).Round(time.Millisecond))
	}
	return n, nil
}

// decodeRecord checks v (the record keyed shard/seq) and decodes its
// commands into cmds, all before anything is applied.
func decodeRecord(v []byte, shard int, seq uint64, cmds []engine.Cmd) ([]engine.Cmd, error) {
	r, err := checkRecord(v)
	if err != nil {
		return cmds, err
	}
	if r.shard != shard || r.firstSeq != seq {
		return cmds, fmt.Errorf("%w: header says shard %d seq %d", errCorrupt, r.shard, r.firstSeq)
	}
	b := r.body
	for i := 0; i < r.count; i++ {
		cmds = append(cmds, engine.Cmd{})
		if b, err = decodeCmd(b, &cmds[len(cmds)-1]); err != nil {
			return cmds, fmt.Errorf("%w: command %d", err, i)
		}
		if !cmds[len(cmds)-1].Dec.Recorded {
			return cmds, fmt.Errorf("%w: command %d has no recorded decision", errCorrupt, i)
		}
	}
	if len(b) != 0 {
		return cmds, fmt.Errorf("%w: %d bytes after the last command", errCorrupt, len(b))
	}
	return cmds, nil
}
