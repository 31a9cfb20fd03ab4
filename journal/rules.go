package journal

import (
	"encoding/json"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
)

// A market's rules change through a CmdSetRules in its shard's journal;
// the spec it installed is kept beside it, under "r" market seq (a Cmd is
// a plain value and cannot carry it). Replay stages the row's spec before
// it applies the command, so a full replay applies every command under
// the rules it was applied with. The meta keeps each market's rules as
// they were when the market was created.

func encodeRules(s *engine.MarketSpec) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic("journal: rules: " + err.Error())
	}
	return b
}

func decodeRules(v []byte) (*engine.MarketSpec, error) {
	var s engine.MarketSpec
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, fmt.Errorf("%w: rules: %w", ErrCorrupt, err)
	}
	return &s, nil
}

// rulesAt returns the rules market m's CmdSetRules at seq installed, or
// nil when there is none (the command was rejected).
func (s *Store) rulesAt(m engine.MarketID, seq uint64) (*engine.MarketSpec, error) {
	var spec *engine.MarketSpec
	var derr error
	_, err := s.get(rulesKey(nil, m, seq), func(v []byte) { spec, derr = decodeRules(v) })
	if err == nil {
		err = derr
	}
	return spec, err
}

// installRules puts into st the newest rules of each market whose change
// a loaded snapshot covers: the snapshot holds books and balances, the
// "r" rows the rules.
func (s *Store) installRules(st *State) error {
	return s.viewIter([]byte{pfxRules}, []byte{pfxRules + 1}, func(it *pebble.Iterator) error {
		for valid := it.First(); valid; valid = it.Next() {
			k := it.Key()
			if len(k) != 11 {
				return fmt.Errorf("%w: rules key %x", ErrCorrupt, k)
			}
			m, seq := engine.MarketID(be.Uint16(k[1:])), be.Uint64(k[3:])
			if int(m) >= len(st.Markets) || st.Markets[m] == nil {
				return fmt.Errorf("%w: rules of unknown market %d", ErrCorrupt, m)
			}
			if seq > st.Seqs[st.MarketShard(m)] {
				continue // after the snapshot: replay installs it
			}
			spec, err := decodeRules(it.Value())
			if err != nil {
				return err
			}
			if err := st.setRules(spec); err != nil {
				return err
			}
		}
		return nil
	})
}

// setRules installs spec in its market's engine and in st.Markets, out of
// the command stream (a snapshot's rules).
func (st *State) setRules(spec *engine.MarketSpec) error {
	e := st.Engines[st.MarketShard(spec.ID)]
	if !e.InstallRules(spec) {
		return fmt.Errorf("%w: rules of %s change a stored scale", ErrCorrupt, spec.Symbol)
	}
	st.Markets[spec.ID] = spec
	return nil
}
