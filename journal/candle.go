package journal

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/weexcore/exchange/engine"
)

// Candles (klines) are history rows like the others: each batch with
// trades writes, in its own synced Pebble batch, the whole current 1m, 1h
// and 1d candle of every market it traded in (key "k", docs/JOURNAL.md),
// overwriting the row the batch before wrote for the same candle. Longer
// and in-between intervals are summed from these at read time (Klines).
//
// A market's trades are all on its shard, in time order (a shard's batch
// times never go back, across restarts too), so the shard's Writer holds
// each market's current candles in memory and is their only writer; after
// a restart it reads a market's current candles back once, the first time
// the market trades.

// Base intervals: what is stored.
const (
	ivMinute = iota
	ivHour
	ivDay
	ivCount
)

var ivMs = [ivCount]int64{60_000, 3_600_000, 86_400_000}

// Candle is one interval's trades of a market.
type Candle struct {
	OpenMs                 int64 // the interval's start
	Open, High, Low, Close engine.Price
	Volume                 engine.Qty    // base, in steps
	QuoteVolume            engine.Amount // quote, in coin units
	Trades                 int64
	TakerBuyVolume         engine.Qty
	TakerBuyQuote          engine.Amount
}

func (c *Candle) add(t *engine.Trade) {
	if c.Trades == 0 {
		c.Open, c.High, c.Low = t.Price, t.Price, t.Price
	}
	c.High, c.Low, c.Close = max(c.High, t.Price), min(c.Low, t.Price), t.Price
	c.Volume += t.Qty
	c.QuoteVolume += t.Quote
	c.Trades++
	if t.TakerSide == engine.Buy {
		c.TakerBuyVolume += t.Qty
		c.TakerBuyQuote += t.Quote
	}
}

// merge adds the later candle d into c.
func (c *Candle) merge(d *Candle) {
	if c.Trades == 0 {
		c.Open, c.High, c.Low = d.Open, d.High, d.Low
	}
	c.High, c.Low, c.Close = max(c.High, d.High), min(c.Low, d.Low), d.Close
	c.Volume += d.Volume
	c.QuoteVolume += d.QuoteVolume
	c.Trades += d.Trades
	c.TakerBuyVolume += d.TakerBuyVolume
	c.TakerBuyQuote += d.TakerBuyQuote
}

// marketCandles are a market's current base candles in a Writer.
type marketCandles struct {
	cur   [ivCount]Candle
	read  bool // the store's rows were read (once per process)
	dirty bool // changed in this batch
}

// KeepCandles makes w keep the candles of the trades it is given, reading
// a market's current ones back from s the first time it trades.
func (w *Writer) KeepCandles(s *Store) { w.candleStore = s }

// candles adds o's trades to their markets' current candles.
func (w *Writer) candles(o *engine.Out) {
	for i := range o.Trades {
		t := &o.Trades[i]
		if t.Off { // a liquidation's takeover or ADL fill: not a market trade
			continue
		}
		for int(t.Market) >= len(w.mc) {
			w.mc = append(w.mc, nil)
		}
		mc := w.mc[t.Market]
		if mc == nil {
			mc = &marketCandles{}
			w.mc[t.Market] = mc
		}
		if !mc.dirty {
			mc.dirty = true
			w.dirty = append(w.dirty, t.Market)
		}
		for iv := range ivCount {
			c := &mc.cur[iv]
			if t.TimeMs >= c.OpenMs+ivMs[iv] || c.Trades == 0 { // times never go back
				*c = Candle{OpenMs: t.TimeMs - t.TimeMs%ivMs[iv]}
				if !mc.read {
					w.readCandle(t.Market, iv, c) // an earlier process's row of this candle
				}
			}
			c.add(t)
		}
		mc.read = true
	}
}

// readCandle loads the stored row of c (its market, interval and start)
// into c, if there is one. A read error leaves c empty: the row is then
// rewritten from this process's trades of the interval alone, the only
// cost being that candle's earlier trades, and it is logged by the read.
func (w *Writer) readCandle(m engine.MarketID, iv int, c *Candle) {
	if w.candleStore == nil {
		return
	}
	k := candleKey(nil, m, iv, c.OpenMs)
	open := c.OpenMs
	w.candleStore.get(k, func(v []byte) {
		if d, ok := decodeCandle(v); ok {
			*c = d
			c.OpenMs = open
		}
	})
}

// writeCandles writes the candles the batch changed into b.
func (w *Writer) writeCandles(b *Batch) {
	for _, m := range w.dirty {
		mc := w.mc[m]
		mc.dirty = false
		for iv := range ivCount {
			c := &mc.cur[iv]
			w.key = candleKey(w.key[:0], m, iv, c.OpenMs)
			w.val = appendCandle(append(w.val[:0], histVersion), c)
			b.b.Set(w.key, w.val, nil)
		}
	}
	w.dirty = w.dirty[:0]
}

// candleKey is "k" market(2) interval(1) openMs(8).
func candleKey(dst []byte, m engine.MarketID, iv int, openMs int64) []byte {
	dst = be.AppendUint16(append(dst, pfxCandle), uint16(m))
	return be.AppendUint64(append(dst, byte(iv)), s64(openMs))
}

func appendCandle(v []byte, c *Candle) []byte {
	for _, x := range [...]int64{int64(c.Open), int64(c.High), int64(c.Low), int64(c.Close), int64(c.Volume),
		int64(c.QuoteVolume), c.Trades, int64(c.TakerBuyVolume), int64(c.TakerBuyQuote)} {
		v = binary.AppendUvarint(v, uint64(x))
	}
	return v
}

func decodeCandle(v []byte) (Candle, bool) {
	if len(v) < 2 || v[0] != histVersion {
		return Candle{}, false
	}
	r := reader{b: v[1:]}
	var x [9]int64
	for i := range x {
		x[i] = int64(r.uvarint())
	}
	c := Candle{Open: engine.Price(x[0]), High: engine.Price(x[1]), Low: engine.Price(x[2]), Close: engine.Price(x[3]),
		Volume: engine.Qty(x[4]), QuoteVolume: engine.Amount(x[5]), Trades: x[6],
		TakerBuyVolume: engine.Qty(x[7]), TakerBuyQuote: engine.Amount(x[8])}
	return c, !r.bad && len(r.b) == 0 && c.Trades > 0
}

// Interval is a kline interval: 1m 5m 15m 30m 1h 2h 4h 6h 8h 12h 1d 1w 1M.
type Interval struct {
	Name string
	base int   // the stored interval it is summed from
	ms   int64 // its length; 0 for 1M (calendar months)
}

// Intervals are the kline intervals, shortest first.
var Intervals = []Interval{
	{"1m", ivMinute, 60_000}, {"5m", ivMinute, 300_000}, {"15m", ivMinute, 900_000}, {"30m", ivMinute, 1_800_000},
	{"1h", ivHour, 3_600_000}, {"2h", ivHour, 7_200_000}, {"4h", ivHour, 14_400_000}, {"6h", ivHour, 21_600_000},
	{"8h", ivHour, 28_800_000}, {"12h", ivHour, 43_200_000},
	{"1d", ivDay, 86_400_000}, {"1w", ivDay, 7 * 86_400_000}, {"1M", ivDay, 0},
}

// maxKlineMs bounds a kline query's times (9999-12-31T23:59:59.999Z).
const maxKlineMs = 253_402_300_799_999

// weekOffset puts weeks on Mondays: 1970-01-01 was a Thursday.
const weekOffset = 4 * 86_400_000

// Start returns the start of iv's interval that holds t (Unix ms, UTC).
func (iv *Interval) Start(t int64) int64 {
	switch {
	case iv.ms == 0:
		y, m, _ := time.UnixMilli(t).UTC().Date()
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	case iv.ms == 7*86_400_000:
		return floorDiv(t-weekOffset, iv.ms)*iv.ms + weekOffset
	}
	return floorDiv(t, iv.ms) * iv.ms
}

// End returns the start of the interval after the one starting at start.
func (iv *Interval) End(start int64) int64 {
	if iv.ms == 0 {
		return time.UnixMilli(start).UTC().AddDate(0, 1, 0).UnixMilli()
	}
	return start + iv.ms
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Klines returns up to limit candles of market m and interval iv, oldest
// first: those starting within [fromMs, toMs], the latest ones when there
// are more. An interval without trades has no candle.
func (s *Store) Klines(m engine.MarketID, iv *Interval, fromMs, toMs int64, limit int) ([]Candle, error) {
	if limit <= 0 || toMs < fromMs {
		return nil, nil
	}
	fromMs, toMs = max(fromMs, 0), min(toMs, maxKlineMs)
	lower := candleKey(nil, m, iv.base, iv.Start(fromMs))
	upper := candleKey(nil, m, iv.base, iv.End(iv.Start(toMs))) // the whole of the last candle
	var out []Candle                                            // newest first while reading
	var bad error
	err := s.scan(lower, upper, true, func(k, v []byte) bool {
		c, ok := decodeCandle(v)
		if len(k) != 12 || !ok {
			bad = fmt.Errorf("%w: candle %x", ErrCorrupt, k)
			return false
		}
		start := iv.Start(int64(be.Uint64(k[4:]) ^ 1<<63))
		if start < fromMs {
			return false
		}
		if n := len(out); n > 0 && out[n-1].OpenMs == start {
			c.merge(&out[n-1]) // c is earlier
			c.OpenMs = start
			out[n-1] = c
			return true
		}
		if len(out) == limit {
			return false
		}
		c.OpenMs = start
		out = append(out, c)
		return true
	})
	if err == nil {
		err = bad
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}

// Window sums market m's trades of the minutes from the one that holds
// fromMs to the one that holds toMs: 1m candles at the window's ends and
// 1h candles for the whole hours between, so a day's window reads at most
// 144 rows. OpenMs is the first minute's start; a window without trades
// has Trades 0.
func (s *Store) Window(m engine.MarketID, fromMs, toMs int64) (Candle, error) {
	var sum Candle
	fromMs, toMs = max(fromMs, 0), min(toMs, maxKlineMs)
	from := fromMs - fromMs%ivMs[ivMinute]
	sum.OpenMs = from
	if toMs < from {
		return sum, nil
	}
	h0 := (from + ivMs[ivHour] - 1) / ivMs[ivHour] * ivMs[ivHour]
	h1 := toMs - toMs%ivMs[ivHour]
	var err error
	add := func(iv int, lo, hi int64) { // rows starting in [lo, hi)
		if err != nil || lo >= hi {
			return
		}
		err = s.scan(candleKey(nil, m, iv, lo), candleKey(nil, m, iv, hi), false, func(k, v []byte) bool {
			c, ok := decodeCandle(v)
			if !ok {
				err = fmt.Errorf("%w: candle %x", ErrCorrupt, k)
				return false
			}
			sum.merge(&c)
			return true
		})
	}
	if h0 < h1 {
		add(ivMinute, from, h0)
		add(ivHour, h0, h1)
		add(ivMinute, h1, toMs+1)
	} else {
		add(ivMinute, from, toMs+1)
	}
	return sum, err
}
