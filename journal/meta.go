package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
)

// meta is what the data directory remembers about its layout, under key
// "m": the shard count fixed at creation, and every coin and market spec
// (so the audit tool replays without a config, and a restart refuses a
// config that renumbers what the journal refers to).
type meta struct {
	Version int   `json:"version"`
	Shards  int   `json:"shards"`
	FeeUID  int64 `json:"feeUid"`
	// InsuranceUID is fixed once set, like FeeUID: replay pays losses from it.
	InsuranceUID int64                `json:"insuranceUid,omitempty"`
	Coins        []engine.Coin        `json:"coins"`
	Markets      []*engine.MarketSpec `json:"markets"`
	// Seeding is set when the directory is created and cleared by
	// Store.Seeded once its owner has applied its initial commands (the
	// config's deposits): a crash in between leaves it set.
	Seeding bool `json:"seeding,omitempty"`
}

// metaVersion 3: a row per finished order and none for working ones
// (keys.go). Version 2 (a block of the orders each batch created, and a
// later row per order that changed after) and version 1 (one row per
// order, trade and bill) are refused rather than half read.
const metaVersion = 3

func decodeMeta(b []byte) (*meta, error) {
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: meta: %w", ErrCorrupt, err)
	}
	if m.Version != metaVersion {
		return nil, fmt.Errorf("journal: data directory layout version %d not supported (this build reads version %d)", m.Version, metaVersion)
	}
	if m.Shards < 1 || m.Shards > MaxMarketShards {
		return nil, fmt.Errorf("journal: meta: %d shards", m.Shards)
	}
	return &m, nil
}

// merge checks the configured coins and markets against the stored ones:
// every stored one must still be configured under the same ID and scales;
// new ones may be appended. It returns the meta to store.
func (m *meta) merge(coins []engine.Coin, markets []*engine.MarketSpec, feeUID, insuranceUID int64) (*meta, error) {
	if m.FeeUID != 0 && feeUID != m.FeeUID {
		return nil, fmt.Errorf("journal: fee account uid %d in the journal, %d configured", m.FeeUID, feeUID)
	}
	if m.InsuranceUID != 0 && insuranceUID != m.InsuranceUID {
		return nil, fmt.Errorf("journal: insurance account uid %d in the journal, %d configured", m.InsuranceUID, insuranceUID)
	}
	cids := make(map[string]engine.CoinID, len(coins))
	for _, c := range coins {
		cids[c.Name] = c.ID
	}
	for _, c := range m.Coins {
		id, ok := cids[c.Name]
		if !ok {
			return nil, fmt.Errorf("journal: coin %s is in the journal but not configured", c.Name)
		}
		if id != c.ID {
			return nil, fmt.Errorf("journal: coin %s has id %d in the journal, %d configured", c.Name, c.ID, id)
		}
		if now := coins[id].Scale; now != c.Scale {
			return nil, fmt.Errorf("journal: coin %s: scale %d configured, but its stored amounts are at scale %d: "+
				"a scale is fixed once a coin has data", c.Name, now, c.Scale)
		}
	}
	mids := make(map[string]engine.MarketID, len(markets))
	for _, s := range markets {
		if s != nil {
			mids[s.Symbol] = s.ID
		}
	}
	for _, s := range m.Markets {
		if s == nil {
			continue
		}
		id, ok := mids[s.Symbol]
		if !ok {
			return nil, fmt.Errorf("journal: market %s is in the journal but not configured", s.Symbol)
		}
		if id != s.ID {
			return nil, fmt.Errorf("journal: market %s has id %d in the journal, %d configured", s.Symbol, s.ID, id)
		}
		if err := sameScale(s, markets[id]); err != nil {
			return nil, err
		}
	}
	// Stored markets keep the rules they were created with (their changes
	// are CmdSetRules in the journal, rules.go); new ones start with the
	// configured rules.
	specs := append([]*engine.MarketSpec(nil), markets...)
	for _, s := range m.Markets {
		if s != nil {
			specs[s.ID] = s
		}
	}
	return &meta{Version: metaVersion, Shards: m.Shards, FeeUID: feeUID, InsuranceUID: insuranceUID, Coins: coins, Markets: specs, Seeding: m.Seeding}, nil
}

// sameScale refuses a configured market whose stored integers would mean
// something else: prices are stored in ticks, quantities in steps, amounts
// at the coins' scales, so tickSize, stepSize and the two coins are fixed
// once a market has data.
func sameScale(stored, now *engine.MarketSpec) error {
	field := ""
	switch {
	case now.Base != stored.Base:
		field = "baseAsset"
	case now.Quote != stored.Quote:
		field = "quoteAsset"
	case now.PriceDecimals != stored.PriceDecimals || now.TickUnits != stored.TickUnits:
		field = "tickSize"
	case now.QtyDecimals != stored.QtyDecimals || now.StepUnits != stored.StepUnits:
		field = "stepSize"
	case now.BasePerStep != stored.BasePerStep || now.QuotePerTickStep != stored.QuotePerTickStep || now.QuoteScale != stored.QuoteScale:
		field = "the coins' scales"
	default:
		return nil
	}
	tick := func(s *engine.MarketSpec) string {
		return string(engine.AppendFixed(nil, s.TickUnits, s.PriceDecimals))
	}
	step := func(s *engine.MarketSpec) string { return string(engine.AppendFixed(nil, s.StepUnits, s.QtyDecimals)) }
	return fmt.Errorf("journal: market %s: %s differs from the journal's (stored tickSize %s, stepSize %s; configured %s, %s): "+
		"its stored prices and quantities are in ticks and steps of the stored sizes, which are fixed once a market has data",
		stored.Symbol, field, tick(stored), step(stored), tick(now), step(now))
}

func (m *meta) encode() []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic("journal: meta: " + err.Error())
	}
	return b
}

// markerName is a file written, and synced, once a directory's meta is
// stored. A directory that has it but no meta has lost data (a damaged WAL
// or table Pebble could not read): Load refuses it rather than start a
// new exchange over it and credit the demo deposits again.
const markerName = "EXCHANGE"

const markerText = "This directory holds an exchange's journal (docs/JOURNAL.md).\n" +
	"It is never started as a new exchange: without its meta, the server refuses it.\n"

// hasMarker reports whether dir has the marker.
func hasMarker(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, markerName))
	return err == nil
}

// writeMarker writes the marker durably (file and directory entry).
func writeMarker(dir string) error {
	p := filepath.Join(dir, markerName)
	f, err := os.Create(p + ".tmp")
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	_, err = f.WriteString(markerText)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(p+".tmp", p)
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(dir); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("journal: marker: %w", err)
	}
	return nil
}

// readMeta returns the stored meta, or nil in a new directory.
func (s *Store) readMeta() (*meta, error) {
	v, closer, err := s.db.Get([]byte{pfxMeta})
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, wrapPebble("read meta", err)
	}
	defer closer.Close()
	return decodeMeta(v)
}

// writeMeta stores m durably.
func (s *Store) writeMeta(m *meta) error {
	if err := s.db.Set([]byte{pfxMeta}, m.encode(), pebble.Sync); err != nil {
		return wrapPebble("write meta", err)
	}
	return nil
}

// Seeding reports whether the data directory is new: created by this
// Open, or by an earlier one whose owner did not get to call Seeded (it
// may have applied part of its initial commands before a crash).
func (s *Store) Seeding() bool {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	return s.meta != nil && s.meta.Seeding
}

// Seeded records, durably, that the owner has applied its initial
// commands: later Opens report Seeding false.
func (s *Store) Seeded() error {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	if s.meta == nil || !s.meta.Seeding {
		return nil
	}
	m := *s.meta
	m.Seeding = false
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	if err := s.writeMeta(&m); err != nil {
		return err
	}
	s.meta = &m
	return nil
}
