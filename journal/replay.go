package journal

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
)

// MaxMarketShards keeps every engine shard number (market shards and the
// ledger) below 64: shard numbers are packed into bill ids.
const MaxMarketShards = 63

// State is the exchange state a data directory holds, in memory: the
// accounts, one engine per shard (the market shards, then the ledger) and
// each shard's last applied sequence and batch time.
type State struct {
	Accounts *engine.Accounts
	Engines  []*engine.Engine
	Markets  []*engine.MarketSpec // every market, indexed by ID
	FeeUID   int64
	Seqs     []uint64
	Times    []int64
	// FromInstalled is, after a full replay, the number of the snapshot
	// the replay had to continue from: one this member installed from its
	// replicated group, whose journal records it never wrote. 0: none.
	FromInstalled uint64
}

// MarketShards returns the number of market shards; the ledger is shard
// MarketShards().
func (st *State) MarketShards() int { return len(st.Engines) - 1 }

// MarketShard returns the shard that owns market m: spot markets are
// spread over the market shards by id, contract markets all belong to the
// ledger shard, which alone writes futures wallets (engine/contract.go).
func (st *State) MarketShard(m engine.MarketID) int {
	if m >= engine.ContractBase {
		return st.MarketShards()
	}
	return int(m) % st.MarketShards()
}

// Hash returns the state hash (engine.StateHash). The shards must be quiet.
func (st *State) Hash() [32]byte { return engine.StateHash(st.Accounts, st.Engines) }

// newState builds the accounts and engines for nMarket market shards and
// the markets specs (placed by MarketShard), at sequence 0.
func newState(nMarket int, coins []engine.Coin, specs []*engine.MarketSpec, feeUID, insuranceUID int64) *State {
	st := &State{Accounts: engine.NewAccounts(coins), Markets: append([]*engine.MarketSpec(nil), specs...), FeeUID: feeUID,
		Engines: make([]*engine.Engine, nMarket+1), Seqs: make([]uint64, nMarket+1), Times: make([]int64, nMarket+1)}
	per := make([][]*engine.MarketSpec, nMarket+1)
	for _, s := range specs {
		if s != nil {
			per[st.MarketShard(s.ID)] = append(per[st.MarketShard(s.ID)], s)
		}
	}
	for i := 0; i <= nMarket; i++ {
		st.Engines[i] = engine.New(i, st.Accounts, per[i], feeUID)
	}
	st.Engines[nMarket].SetInsuranceUID(insuranceUID)
	return st
}

// LoadOptions configures Load.
type LoadOptions struct {
	Shards  int // market shards of a new directory; 0: runtime.NumCPU(). A directory keeps the count it was created with.
	Coins   []engine.Coin
	Markets []*engine.MarketSpec // all markets, indexed by ID
	FeeUID  int64
	// InsuranceUID pays contract losses beyond a position's margin (0: none).
	InsuranceUID int64
	// FullReplay ignores snapshots: every shard's journal is replayed
	// from seq 1 (audit), but across a snapshot installed from the
	// replicated group (State.FromInstalled).
	FullReplay bool
	// OnAddUser is called for every registered user: those a loaded
	// snapshot holds, then every CmdAddUser replayed, in order.
	OnAddUser func(c *engine.Cmd)
}

// Load reads the meta, checks the configuration against it, loads the
// newest snapshot and replays the journal after it, and returns the
// state, every market under the rules its journal last set (rules.go):
// the configuration's rules are not applied here (core.Open does that,
// with commands). On a read-only store the coins, markets and fee account
// come from the meta when none are given.
func (s *Store) Load(o LoadOptions) (*State, error) {
	m, err := s.readMeta()
	if err != nil {
		return nil, err
	}
	if m == nil {
		if hasMarker(s.dir) {
			return nil, fmt.Errorf("%w: %s has held an exchange's state (its %s file says so) but Pebble found no meta in it: "+
				"its data was lost (a WAL or table it could not read); restore it from a backup or a replica", ErrCorrupt, s.dir, markerName)
		}
		if s.readOnly {
			return nil, fmt.Errorf("journal: %s holds no journal", s.dir)
		}
		s.fresh = true
		n := o.Shards
		if n <= 0 {
			n = runtime.NumCPU()
		}
		if n > MaxMarketShards {
			return nil, fmt.Errorf("journal: %d shards, at most %d", n, MaxMarketShards)
		}
		m = &meta{Version: metaVersion, Shards: n, Seeding: true}
	}
	if s.readOnly && len(o.Coins) == 0 && len(o.Markets) == 0 {
		o.Coins, o.Markets = m.Coins, m.Markets
	}
	if s.readOnly && o.FeeUID == 0 {
		o.FeeUID = m.FeeUID
	}
	if s.readOnly && o.InsuranceUID == 0 {
		o.InsuranceUID = m.InsuranceUID
	}
	nm, err := m.merge(o.Coins, o.Markets, o.FeeUID, o.InsuranceUID)
	if err != nil {
		return nil, err
	}
	if o.Shards > 0 && o.Shards != m.Shards {
		s.log.Warn("journal: the data directory keeps its shard count", "dir", s.dir, "shards", m.Shards, "asked", o.Shards)
	}
	st, err := s.recover(func() *State { return newState(m.Shards, o.Coins, nm.Markets, o.FeeUID, o.InsuranceUID) },
		o.FullReplay, o.OnAddUser)
	if err != nil {
		return nil, err
	}
	if !s.readOnly {
		if err := s.writeMeta(nm); err != nil {
			return nil, err
		}
		if !hasMarker(s.dir) {
			if err := writeMarker(s.dir); err != nil {
				return nil, err
			}
		}
	}
	s.metaMu.Lock()
	s.meta = nm
	s.metaMu.Unlock()
	return st, nil
}

// recover loads the newest valid snapshot into a new state (from fresh)
// and replays every shard's journal after it: the ledger first (market
// commands refer to users it registered), then the market shards in
// parallel. Recorded decisions make the result independent of the order
// shards replay in.
//
// With full, no snapshot is loaded, except one installed from the
// replicated group: the member's journal stops short of it and goes on
// after it. The records up to it are replayed (checked), then the replay
// goes on from it. A gap it does not cover is a missing record.
func (s *Store) recover(fresh func() *State, full bool, onAddUser func(*engine.Cmd)) (*State, error) {
	t0 := time.Now()
	st := fresh()
	from, loaded, err := s.loadSnapshot(st, full)
	if err != nil {
		return nil, err
	}
	var jumps []uint64      // installed snapshots to go on from, in order
	var jumpSeqs [][]uint64 // and their sequences
	if full {
		if jumps, jumpSeqs, err = s.installJumps(st.MarketShards()); err != nil {
			return nil, err
		}
	}
	total, announced := 0, 0
	for k := 0; ; k++ {
		if loaded {
			if err := s.installRules(st); err != nil {
				return nil, err
			}
			if onAddUser != nil {
				if err := s.announceUsers(st, announced, onAddUser); err != nil {
					return nil, err
				}
			}
		}
		var upto []uint64 // before a jump: the records up to its sequences
		if k < len(jumps) {
			upto = jumpSeqs[k]
		}
		n, err := s.replayShards(st, from, upto, onAddUser)
		total += n
		if err != nil {
			return nil, err
		}
		if k == len(jumps) {
			break
		}
		announced = st.Accounts.NumUsers()
		st = fresh()
		if err := s.loadInstalled(st, jumps[k]); err != nil {
			return nil, err
		}
		for i := range from {
			from[i] = st.Seqs[i] + 1
		}
		loaded, st.FromInstalled = true, jumps[k]
		s.log.Warn("journal: full replay goes on from a snapshot this member installed from its group: the journal records it covers were not written here",
			"snapshot", jumps[k], "seqs", st.Seqs)
	}
	for _, e := range st.Engines {
		e.Flush()
	}
	s.replayed, s.replayDur = total, time.Since(t0)
	if engine.Invariants {
		if err := engine.CheckInvariants(st.Accounts, st.Engines); err != nil {
			return nil, fmt.Errorf("journal: invariant violated after replay: %w", err)
		}
	}
	if total > 0 || !s.fresh {
		s.log.Info("journal: replayed", "commands", total, "shards", len(st.Engines), "took", time.Since(t0).Round(time.Millisecond))
	}
	return st, nil
}

// replayShards replays each shard's journal from from (up to its records
// starting at or before upto, when given): the ledger first, then the
// market shards in parallel.
func (s *Store) replayShards(st *State, from, upto []uint64, onAddUser func(*engine.Cmd)) (int, error) {
	end := func(i int) uint64 {
		if upto == nil {
			return 0
		}
		return upto[i] + 1
	}
	ledger := st.MarketShards()
	total, err := s.replay(st, ledger, from[ledger], end(ledger), onAddUser)
	if err != nil {
		return total, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make([]error, ledger)
	for i := 0; i < ledger; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			k, err := s.replay(st, i, from[i], end(i), onAddUser)
			errs[i] = err
			mu.Lock()
			total += k
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// Replayed returns how many journaled commands Load replayed and how long
// loading the snapshot and replaying took.
func (s *Store) Replayed() (int, time.Duration) { return s.replayed, s.replayDur }

// replayProgress is how many commands a shard replays between progress
// lines.
const replayProgress = 1 << 22

// replay applies shard's journal from seq from on (its records starting
// before below, if not 0) to its engine. A record that fails its checks is
// refused wherever it is: Pebble writes a batch atomically (a torn write
// is dropped with the WAL's tail, checkWALs), so a bad record is damage,
// never a batch cut short.
func (s *Store) replay(st *State, shard int, from, below uint64, onAddUser func(*engine.Cmd)) (int, error) {
	t0 := time.Now()
	e := st.Engines[shard]
	lower := journalKey(nil, shard, from)
	upper := []byte{pfxJournal, byte(shard + 1)}
	if below != 0 {
		if below <= from {
			return 0, nil
		}
		upper = journalKey(nil, shard, below)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, wrapPebble(fmt.Sprintf("shard %d", shard), err)
	}
	defer it.Close()
	var cmds []engine.Cmd
	var out engine.Out
	expect := from
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		key := it.Key()
		if len(key) != 10 {
			return n, fmt.Errorf("%w: shard %d: bad key %x", ErrCorrupt, shard, key)
		}
		seq := be.Uint64(key[2:])
		if seq != expect {
			return n, fmt.Errorf("%w: shard %d: gap: record at seq %d, want %d", ErrCorrupt, shard, seq, expect)
		}
		v, err := it.ValueAndErr()
		if err == nil {
			cmds, err = decodeRecord(v, shard, seq, cmds[:0])
		}
		if err != nil {
			return n, fmt.Errorf("%w: shard %d: record at seq %d: %w", ErrCorrupt, shard, seq, err)
		}
		timeMs := int64(le.Uint64(v[16:]))
		for i := range cmds {
			c := &cmds[i]
			var rules *engine.MarketSpec
			if c.Kind == engine.CmdSetRules {
				if rules, err = s.rulesAt(c.Market, seq+uint64(i)); err != nil {
					return n, err
				}
				e.StageRules(rules)
			}
			e.PrefetchAhead(cmds, i)
			e.Apply(c, seq+uint64(i), timeMs, &out)
			if c.Kind == engine.CmdSetRules {
				if (rules != nil) != (out.Reject == engine.OK) {
					return n, fmt.Errorf("%w: shard %d seq %d: rules change %v with rules row %v", ErrCorrupt, shard, seq+uint64(i), out.Reject, rules != nil)
				}
				if rules != nil {
					st.Markets[rules.ID] = rules
				}
			}
			if c.Kind == engine.CmdAddUser && out.Reject == engine.OK && onAddUser != nil {
				onAddUser(c)
			}
		}
		e.Flush() // as the live shard does after each batch: keeps the pending credits short
		if n/replayProgress != (n+len(cmds))/replayProgress {
			s.log.Info("journal: replaying", "shard", shard, "commands", n+len(cmds), "seq", seq, "took", time.Since(t0).Round(time.Millisecond))
		}
		n += len(cmds)
		st.Seqs[shard] = seq + uint64(len(cmds)) - 1
		st.Times[shard] = timeMs
		expect = st.Seqs[shard] + 1
	}
	if err := it.Error(); err != nil {
		return n, wrapPebble(fmt.Sprintf("shard %d: read journal", shard), err)
	}
	if n > 0 {
		s.log.Info("journal: shard replayed", "shard", shard, "commands", n, "seq", st.Seqs[shard], "took", time.Since(t0).Round(time.Millisecond))
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
		return cmds, fmt.Errorf("%w: header says shard %d seq %d", ErrCorrupt, r.shard, r.firstSeq)
	}
	b := r.body
	for i := 0; i < r.count; i++ {
		cmds = append(cmds, engine.Cmd{})
		if b, err = decodeCmd(b, &cmds[len(cmds)-1]); err != nil {
			return cmds, fmt.Errorf("%w: command %d", err, i)
		}
		if !cmds[len(cmds)-1].Dec.Recorded {
			return cmds, fmt.Errorf("%w: command %d has no recorded decision", ErrCorrupt, i)
		}
	}
	if len(b) != 0 {
		return cmds, fmt.Errorf("%w: %d bytes after the last command", ErrCorrupt, len(b))
	}
	return cmds, nil
}

// Records calls f with every journal record in key order (shard, then
// sequence): its shard, first sequence, time and decoded commands (valid
// during the call). It fails on a gap in a shard's sequences or a record
// that fails its checks. For auditors and tests.
func (s *Store) Records(f func(shard int, firstSeq uint64, timeMs int64, cmds []engine.Cmd) error) error {
	var cmds []engine.Cmd
	last := make([]uint64, MaxMarketShards+1)
	return s.viewIter([]byte{pfxJournal}, []byte{pfxJournal + 1}, func(it *pebble.Iterator) error {
		for valid := it.First(); valid; valid = it.Next() {
			k := it.Key()
			if len(k) != 10 || int(k[1]) > MaxMarketShards {
				return fmt.Errorf("%w: bad journal key %x", ErrCorrupt, k)
			}
			shard, seq := int(k[1]), be.Uint64(k[2:])
			if seq != last[shard]+1 {
				return fmt.Errorf("%w: shard %d: gap: record at seq %d after seq %d", ErrCorrupt, shard, seq, last[shard])
			}
			v, err := it.ValueAndErr()
			if err != nil {
				return wrapPebble(fmt.Sprintf("shard %d seq %d", shard, seq), err)
			}
			if cmds, err = decodeRecord(v, shard, seq, cmds[:0]); err != nil {
				return fmt.Errorf("journal: shard %d seq %d: %w", shard, seq, err)
			}
			if err := f(shard, seq, int64(le.Uint64(v[16:])), cmds); err != nil {
				return err
			}
			last[shard] = seq + uint64(len(cmds)) - 1
		}
		return nil
	})
}
