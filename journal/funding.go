package journal

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
)

// Funding history: one row per contract funding settlement (a CmdFunding
// that paid), "f" market(2) time(8) -> version | rate | mark | index
// (varints), written in the batch of the command.

func fundingKey(dst []byte, m engine.MarketID, timeMs int64) []byte {
	return be.AppendUint64(be.AppendUint16(append(dst, pfxFunding), uint16(m)), uint64(timeMs))
}

func appendFunding(dst []byte, f *engine.FundingRecord) []byte {
	dst = binary.AppendVarint(append(dst, histVersion), f.Rate)
	dst = binary.AppendVarint(dst, int64(f.Mark))
	return binary.AppendVarint(dst, int64(f.Index))
}

// FundingRecords calls f with contract m's funding settlements whose time
// is in [startMs, endMs], newest first, until f returns false.
func (s *Store) FundingRecords(m engine.MarketID, startMs, endMs int64, f func(*engine.FundingRecord) bool) error {
	if endMs < startMs || startMs < 0 {
		return nil
	}
	lower, upper := fundingKey(nil, m, startMs), fundingKey(nil, m, endMs)
	upper = append(upper, 0) // endMs included
	var bad error
	err := s.viewIter(lower, upper, func(it *pebble.Iterator) error {
		for valid := it.Last(); valid; valid = it.Prev() {
			k, v := it.Key(), it.Value()
			if len(k) != 11 || len(v) < 4 || v[0] != histVersion {
				bad = fmt.Errorf("%w: funding row %x", ErrCorrupt, k)
				return nil
			}
			r := reader{b: v[1:]}
			rec := engine.FundingRecord{Market: m, TimeMs: int64(be.Uint64(k[3:])), Rate: r.varint()}
			rec.Mark, rec.Index = engine.Price(r.varint()), engine.Price(r.varint())
			if r.bad {
				bad = fmt.Errorf("%w: funding row %x", ErrCorrupt, k)
				return nil
			}
			if !f(&rec) {
				return nil
			}
		}
		return nil
	})
	if err == nil {
		err = bad
	}
	return err
}
