package journal

import (
	"github.com/weexcore/exchange/engine"
)

// Writer builds one shard's journal record and history rows, one batch of
// commands at a time: Begin, Add each applied command, Finish into the
// Batch that commits them. A shard owns its Writer.
type Writer struct {
	shard    int
	rec      []byte
	hist     *histBatch
	key, val []byte // scratch
	first    uint64
	timeMs   int64
	count    int

	// NoHistory skips the history rows (benchmarks: what the journal
	// record alone costs).
	NoHistory bool

	refs     Referrals            // nil: no referral accruals
	specs    []*engine.MarketSpec // by market id: the scales of the accruals' values
	accruals []Accrual            // this batch's (rebate.go)

	candleStore *Store            // nil: no candles (candle.go)
	mc          []*marketCandles  // by market: the current candles
	dirty       []engine.MarketID // markets whose candles this batch changed
}

// Accrue makes w keep referral accruals (rebate.go) of the trades it is
// given, for refs (the accounts) and the markets specs.
func (w *Writer) Accrue(refs Referrals, specs []*engine.MarketSpec) {
	w.refs, w.specs = refs, specs
}

// NewWriter returns the Writer of shard.
func NewWriter(shard int) *Writer {
	return &Writer{shard: shard, hist: newHistBatch()}
}

// Begin starts the record of the batch whose first command has seq
// firstSeq, all at timeMs.
func (w *Writer) Begin(firstSeq uint64, timeMs int64) {
	w.first, w.timeMs, w.count = firstSeq, timeMs, 0
	w.rec = appendRecordHeader(w.rec[:0], w.shard, firstSeq, timeMs)
	w.hist.reset()
	w.accruals = w.accruals[:0]
}

// Add records c, applied with seq first+Count() and producing o: its
// encoding (with its recorded decisions) in the record, its events in the
// history rows, the registration row of a user it added and the rules a
// CmdSetRules installed (into b).
func (w *Writer) Add(b *Batch, c *engine.Cmd, o *engine.Out) {
	w.rec = appendCmd(w.rec, c)
	if o.Rules != nil { // needed by replay, history or not
		w.key = rulesKey(w.key[:0], c.Market, w.first+uint64(w.count))
		b.b.Set(w.key, encodeRules(o.Rules), nil)
	}
	if !w.NoHistory {
		if w.refs != nil && len(o.Trades) > 0 {
			w.accrue(o)
		}
		if w.candleStore != nil && len(o.Trades) > 0 {
			w.candles(o)
		}
		w.hist.add(c, o, uint64(w.count))
		if o.Funding.Market != 0 {
			w.key = fundingKey(w.key[:0], o.Funding.Market, o.Funding.TimeMs)
			w.val = appendFunding(w.val[:0], &o.Funding)
			b.b.Set(w.key, w.val, nil)
		}
		if c.Kind == engine.CmdAddUser && o.Reject == engine.OK {
			w.key = userKey(w.key[:0], c.User)
			w.val = appendCmd(w.val[:0], c)
			b.b.Set(w.key, w.val, nil)
		}
	}
	w.count++
}

// Count returns how many commands the record holds so far.
func (w *Writer) Count() int { return w.count }

// Finish writes the batch's history rows and its record into b.
func (w *Writer) Finish(b *Batch) {
	w.rec = finishRecord(w.rec, w.count)
	w.key, w.val = w.hist.write(b.b, w.shard, w.first, w.timeMs, w.key, w.val)
	w.writeAccruals(b)
	w.writeCandles(b)
	w.key = journalKey(w.key[:0], w.shard, w.first)
	b.b.Set(w.key, w.rec, nil)
}
