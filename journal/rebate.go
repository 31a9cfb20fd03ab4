package journal

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
)

// Broker rebates in history (docs/JOURNAL.md, "Rebates"):
//
//   - accrual rows: every fee a referred user pays, valued in the market's
//     quote coin (a fee in the base coin at its trade's price), with the
//     trade's value, summed per batch and (broker, product, market), in
//     the batch of the trades;
//   - rebate records: one per (broker, day, product, market), written with
//     the CmdRebate that pays it.
//
// Settlement (package core) reads a day's accrual rows once the day has
// ended and every shard has synced past it, and submits a CmdRebate per
// (broker, product, market) that records the amount to pay: replay
// applies the recorded amount, not history.

// Referrals tells the Writer who referred a trade's users.
type Referrals interface {
	Referral(u engine.UserIdx) (broker engine.UserIdx, rate int64, ok bool)
}

// ProductSpot and ProductFutures are the products a rebate is paid on.
const (
	ProductSpot    uint8 = 0
	ProductFutures uint8 = 1
)

// DayOf returns the UTC day (days since 1970-01-01) of timeMs.
func DayOf(timeMs int64) int32 { return int32(timeMs / 86_400_000) }

// accrualKey is one accrual row's group within a batch.
type accrualKey struct {
	broker  engine.UserIdx
	product uint8
	market  engine.MarketID
}

// Accrual is what a broker earned a commission on: the value traded and
// the fees paid (both in the market's quote coin) by its referred users.
type Accrual struct {
	Broker  engine.UserIdx
	Product uint8
	Market  engine.MarketID
	Deal    engine.Amount
	Fee     engine.Amount
}

// accrue adds the referral fees of o's trades to w's batch (specs: the
// markets, for a fee's value in the quote coin).
func (w *Writer) accrue(o *engine.Out) {
	for i := range o.Trades {
		t := &o.Trades[i]
		s := w.specs[t.Market]
		buyerFee, sellerFee := t.TakerFee, t.MakerFee // spot: the buyer's is in the base coin, the seller's in quote
		if t.TakerSide == engine.Sell {
			buyerFee, sellerFee = t.MakerFee, t.TakerFee
		}
		product := ProductSpot
		if s.Contract { // both fees in the margin coin, the quote coin
			product = ProductFutures
		} else {
			buyerFee, _ = s.BaseValue(buyerFee, t.Price) // a fee is far below an overflow
		}
		if b, _, ok := w.refs.Referral(t.BuyerUser); ok {
			w.addAccrual(accrualKey{b, product, t.Market}, t.Quote, buyerFee)
		}
		if b, _, ok := w.refs.Referral(t.SellerUser); ok {
			w.addAccrual(accrualKey{b, product, t.Market}, t.Quote, sellerFee)
		}
	}
}

func (w *Writer) addAccrual(k accrualKey, deal, fee engine.Amount) {
	for i := range w.accruals {
		if w.accruals[i].Broker == k.broker && w.accruals[i].Product == k.product && w.accruals[i].Market == k.market {
			w.accruals[i].Deal += deal
			w.accruals[i].Fee += fee
			return
		}
	}
	w.accruals = append(w.accruals, Accrual{k.broker, k.product, k.market, deal, fee})
}

// writeAccruals writes the batch's accrual rows into b.
func (w *Writer) writeAccruals(b *Batch) {
	day := DayOf(w.timeMs)
	for _, a := range w.accruals {
		w.key = accrualKey_(w.key[:0], day, a.Broker, a.Product, a.Market, w.shard, w.first)
		w.val = binary.AppendUvarint(binary.AppendUvarint(append(w.val[:0], histVersion), uint64(a.Deal)), uint64(a.Fee))
		b.b.Set(w.key, w.val, nil)
	}
}

// accrualKey_ is "a" day(4) broker(4) product(1) market(2) shard(1) firstSeq(8).
func accrualKey_(dst []byte, day int32, broker engine.UserIdx, product uint8, m engine.MarketID, shard int, firstSeq uint64) []byte {
	dst = be.AppendUint32(append(dst, pfxAccrual), uint32(day))
	dst = be.AppendUint32(dst, uint32(broker))
	dst = be.AppendUint16(append(dst, product), uint16(m))
	return be.AppendUint64(append(dst, byte(shard)), firstSeq)
}

// Accruals returns the sums of day's accrual rows per (broker, product,
// market), in key order. Every shard must have synced past the day.
func (s *Store) Accruals(day int32) ([]Accrual, error) {
	lower := be.AppendUint32([]byte{pfxAccrual}, uint32(day))
	upper := be.AppendUint32([]byte{pfxAccrual}, uint32(day)+1)
	var out []Accrual
	err := s.scan(lower, upper, false, func(k, v []byte) bool {
		if len(k) != 21 || len(v) < 3 || v[0] != histVersion {
			return false
		}
		a := Accrual{Broker: engine.UserIdx(be.Uint32(k[5:])), Product: k[9], Market: engine.MarketID(be.Uint16(k[10:]))}
		r := reader{b: v[1:]}
		a.Deal, a.Fee = engine.Amount(r.uvarint()), engine.Amount(r.uvarint())
		if r.bad {
			return false
		}
		if n := len(out); n > 0 && out[n-1].Broker == a.Broker && out[n-1].Product == a.Product && out[n-1].Market == a.Market {
			out[n-1].Deal += a.Deal
			out[n-1].Fee += a.Fee
		} else {
			out = append(out, a)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RebateRecord is a broker's commission for one day, product and market
// (the seed's record 2.12): written with the CmdRebate that paid it.
type RebateRecord struct {
	BrokerUID  int64
	Day        int32
	Product    uint8
	Market     engine.MarketID
	Coin       engine.CoinID // the commission's coin: the market's quote coin
	Deal       engine.Amount // value traded by the referred users, in Coin
	Fee        engine.Amount // fees they paid, valued in Coin
	Rate       int64         // the rebate rate (engine.RateOne = 100%)
	Commission engine.Amount // Fee * Rate, rounded down
	USDT       engine.Amount // Commission valued in USDT (at USDT's scale), when it can be
	SettledMs  int64         // when it was paid
}

// rebateKey is "b" brokerUID(8) day(4) product(1) market(2).
func rebateKey(dst []byte, uid int64, day int32, product uint8, m engine.MarketID) []byte {
	dst = be.AppendUint32(be.AppendUint64(append(dst, pfxRebate), s64(uid)), uint32(day))
	return be.AppendUint16(append(dst, product), uint16(m))
}

// AddRebate writes r's row into b (the batch of the CmdRebate that paid it).
func (w *Writer) AddRebate(b *Batch, r *RebateRecord) {
	w.key = rebateKey(w.key[:0], r.BrokerUID, r.Day, r.Product, r.Market)
	v := append(w.val[:0], histVersion)
	v = binary.AppendUvarint(v, uint64(r.Coin))
	for _, x := range [...]int64{int64(r.Deal), int64(r.Fee), r.Rate, int64(r.Commission), int64(r.USDT), r.SettledMs} {
		v = binary.AppendVarint(v, x)
	}
	w.val = v
	b.b.Set(w.key, w.val, nil)
}

// RebateRecords calls f with broker uid's records of days [from, to],
// newest day first (within a day: product, then market), until f returns
// false.
func (s *Store) RebateRecords(uid int64, from, to int32, f func(*RebateRecord) bool) error {
	lower := be.AppendUint32(be.AppendUint64([]byte{pfxRebate}, s64(uid)), uint32(from))
	upper := be.AppendUint32(be.AppendUint64([]byte{pfxRebate}, s64(uid)), uint32(to)+1)
	var bad error
	err := s.viewIter(lower, upper, func(it *pebble.Iterator) error {
		// Days newest first; within a day, keys in order: a day's records
		// are read backwards, then given in reverse.
		var day []*RebateRecord
		flush := func() bool {
			for i := len(day) - 1; i >= 0; i-- {
				if !f(day[i]) {
					return false
				}
			}
			day = day[:0]
			return true
		}
		for valid := it.Last(); valid; valid = it.Prev() {
			r, err := decodeRebate(it.Key(), it.Value())
			if err != nil {
				bad = err
				return nil
			}
			if len(day) > 0 && day[0].Day != r.Day && !flush() {
				return nil
			}
			day = append(day, r)
		}
		flush()
		return nil
	})
	if err == nil {
		err = bad
	}
	return err
}

func decodeRebate(k, v []byte) (*RebateRecord, error) {
	if len(k) != 16 || len(v) < 2 || v[0] != histVersion {
		return nil, fmt.Errorf("%w: rebate record %x", ErrCorrupt, k)
	}
	r := &RebateRecord{BrokerUID: int64(be.Uint64(k[1:]) ^ 1<<63), Day: int32(be.Uint32(k[9:])), Product: k[13],
		Market: engine.MarketID(be.Uint16(k[14:]))}
	rd := reader{b: v[1:]}
	r.Coin = engine.CoinID(rd.uvarint())
	r.Deal, r.Fee, r.Rate = engine.Amount(rd.varint()), engine.Amount(rd.varint()), rd.varint()
	r.Commission, r.USDT, r.SettledMs = engine.Amount(rd.varint()), engine.Amount(rd.varint()), rd.varint()
	if rd.bad || len(rd.b) != 0 {
		return nil, fmt.Errorf("%w: rebate record %x", ErrCorrupt, k)
	}
	return r, nil
}
