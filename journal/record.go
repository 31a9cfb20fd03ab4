package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/weexcore/exchange/engine"
)

// Record format (docs/JOURNAL.md has the byte-by-byte description).
const (
	recVersion   = 2
	recHeaderLen = 24
	recTrailer   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var le = binary.LittleEndian

// appendRecordHeader starts a record; finishRecord fills count and adds the
// checksum.
func appendRecordHeader(dst []byte, shard int, firstSeq uint64, timeMs int64) []byte {
	dst = append(dst, recVersion, byte(shard), 0, 0)
	dst = le.AppendUint64(dst, firstSeq)
	dst = le.AppendUint32(dst, 0)
	dst = le.AppendUint64(dst, uint64(timeMs))
	return dst
}

func finishRecord(rec []byte, count int) []byte {
	le.PutUint32(rec[12:], uint32(count))
	return le.AppendUint32(rec, crc32.Checksum(rec, castagnoli))
}

// Command encoding (version 2): a kind byte (kind in bits 0-3 and, for
// kinds 16-31, bit 7; bit 4 Broker, bit 5 Dec.Recorded, bit 6
// Dec.Reserved), an order byte (side in
// bits 0-1, type in bits 2-3, TIF in bits 4-7; 0xFF escapes to three raw
// bytes when one does not fit), a 16-bit presence mask of the fields below
// that are not zero, then each present field as a varint (zigzag for
// signed fields), in mask bit order.
const (
	cmdBroker   = 1 << 4
	cmdRecorded = 1 << 5
	cmdReserved = 1 << 6
	cmdMinLen   = 4
)

// Presence mask bits of a command's fields.
const (
	fMarket = 1 << iota
	fCoin
	fUser
	fUID
	fPrice
	fQty
	fOrderID
	fAmount
	fReferrer
	fText
	fFlags // contracts: Pos | Mode<<8 | TrigMark<<16
	fTP    // contracts: preset take-profit price
	fSL    // contracts: preset stop-loss price
	fExec  // contracts: a plan's execute price
	fAll   = 1<<14 - 1
)

// appendCmd encodes c.
func appendCmd(dst []byte, c *engine.Cmd) []byte {
	k := byte(c.Kind&15) | byte(c.Kind>>4&1)<<7 // kinds 16-31: bit 7 is the kind's bit 4
	if c.Broker {
		k |= cmdBroker
	}
	if c.Dec.Recorded {
		k |= cmdRecorded
	}
	if c.Dec.Reserved {
		k |= cmdReserved
	}
	dst = append(dst, k)
	if c.Side < 4 && c.Type < 4 && c.TIF < 15 {
		dst = append(dst, byte(c.Side)|byte(c.Type)<<2|byte(c.TIF)<<4)
	} else {
		dst = append(dst, 0xFF, byte(c.Side), byte(c.Type), byte(c.TIF))
	}
	var mask uint16
	set := func(bit uint16, v int64) {
		if v != 0 {
			mask |= bit
		}
	}
	set(fMarket, int64(c.Market))
	set(fCoin, int64(c.Coin))
	set(fUser, int64(c.User))
	set(fUID, c.UID)
	set(fPrice, int64(c.Price))
	set(fQty, int64(c.Qty))
	set(fOrderID, c.OrderID)
	set(fAmount, int64(c.Amount))
	set(fReferrer, c.Referrer)
	set(fText, int64(c.Text.N))
	flags := uint64(c.Pos) | uint64(c.Mode)<<8 | uint64(c.TrigMark)<<16 | uint64(c.PlanKind)<<24
	set(fFlags, int64(flags))
	set(fTP, int64(c.TP))
	set(fSL, int64(c.SL))
	set(fExec, int64(c.Exec))
	dst = le.AppendUint16(dst, mask)
	if mask&fMarket != 0 {
		dst = binary.AppendUvarint(dst, uint64(c.Market))
	}
	if mask&fCoin != 0 {
		dst = binary.AppendUvarint(dst, uint64(c.Coin))
	}
	if mask&fUser != 0 {
		dst = binary.AppendUvarint(dst, uint64(c.User))
	}
	if mask&fUID != 0 {
		dst = binary.AppendVarint(dst, c.UID)
	}
	if mask&fPrice != 0 {
		dst = binary.AppendVarint(dst, int64(c.Price))
	}
	if mask&fQty != 0 {
		dst = binary.AppendVarint(dst, int64(c.Qty))
	}
	if mask&fOrderID != 0 {
		dst = binary.AppendVarint(dst, c.OrderID)
	}
	if mask&fAmount != 0 {
		dst = binary.AppendVarint(dst, int64(c.Amount))
	}
	if mask&fReferrer != 0 {
		dst = binary.AppendVarint(dst, c.Referrer)
	}
	if mask&fText != 0 {
		dst = append(dst, c.Text.N)
		dst = append(dst, c.Text.B[:c.Text.N]...)
	}
	if mask&fFlags != 0 {
		dst = binary.AppendUvarint(dst, flags)
	}
	if mask&fTP != 0 {
		dst = binary.AppendVarint(dst, int64(c.TP))
	}
	if mask&fSL != 0 {
		dst = binary.AppendVarint(dst, int64(c.SL))
	}
	if mask&fExec != 0 {
		dst = binary.AppendVarint(dst, int64(c.Exec))
	}
	return dst
}

// decodeCmd decodes one command from b and returns the rest.
func decodeCmd(b []byte, c *engine.Cmd) ([]byte, error) {
	if len(b) < cmdMinLen {
		return nil, ErrCorrupt
	}
	*c = engine.Cmd{Kind: engine.CmdKind(b[0]&15 | b[0]>>7<<4), Broker: b[0]&cmdBroker != 0}
	c.Dec.Recorded, c.Dec.Reserved = b[0]&cmdRecorded != 0, b[0]&cmdReserved != 0
	if b[1] == 0xFF {
		if len(b) < cmdMinLen+3 {
			return nil, ErrCorrupt
		}
		c.Side, c.Type, c.TIF = engine.Side(b[2]), engine.OrderType(b[3]), engine.TIF(b[4])
		b = b[5:]
	} else {
		c.Side, c.Type, c.TIF = engine.Side(b[1]&3), engine.OrderType(b[1]>>2&3), engine.TIF(b[1]>>4)
		b = b[2:]
	}
	mask := le.Uint16(b)
	if mask&^fAll != 0 {
		return nil, ErrCorrupt
	}
	r := reader{b: b[2:]}
	if mask&fMarket != 0 {
		c.Market = engine.MarketID(r.uvarint())
	}
	if mask&fCoin != 0 {
		c.Coin = engine.CoinID(r.uvarint())
	}
	if mask&fUser != 0 {
		c.User = engine.UserIdx(r.uvarint())
	}
	if mask&fUID != 0 {
		c.UID = r.varint()
	}
	if mask&fPrice != 0 {
		c.Price = engine.Price(r.varint())
	}
	if mask&fQty != 0 {
		c.Qty = engine.Qty(r.varint())
	}
	if mask&fOrderID != 0 {
		c.OrderID = r.varint()
	}
	if mask&fAmount != 0 {
		c.Amount = engine.Amount(r.varint())
	}
	if mask&fReferrer != 0 {
		c.Referrer = r.varint()
	}
	if mask&fText != 0 {
		n := int(r.byte1())
		if n > engine.ClientIDMax {
			return nil, ErrCorrupt
		}
		c.Text.N = uint8(copy(c.Text.B[:], r.bytes(n)))
	}
	if mask&fFlags != 0 {
		f := r.uvarint()
		c.Pos, c.Mode, c.TrigMark, c.PlanKind = engine.PosSide(f&0xFF), engine.MarginMode(f>>8&0xFF), uint8(f>>16&0xFF), uint8(f>>24&0xFF)
		if f>>32 != 0 {
			return nil, ErrCorrupt
		}
	}
	if mask&fTP != 0 {
		c.TP = engine.Price(r.varint())
	}
	if mask&fSL != 0 {
		c.SL = engine.Price(r.varint())
	}
	if mask&fExec != 0 {
		c.Exec = engine.Price(r.varint())
	}
	if r.bad {
		return nil, ErrCorrupt
	}
	return r.b, nil
}

// record is a decoded journal value.
type record struct {
	shard    int
	firstSeq uint64
	count    int
	timeMs   int64
	body     []byte // the encoded commands
}

// checkRecord verifies v's version, checksum and header.
func checkRecord(v []byte) (record, error) {
	if len(v) < recHeaderLen+recTrailer {
		return record{}, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(v))
	}
	n := len(v) - recTrailer
	if got, want := crc32.Checksum(v[:n], castagnoli), le.Uint32(v[n:]); got != want {
		return record{}, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	if v[0] != recVersion {
		return record{}, fmt.Errorf("journal: record version %d not supported", v[0])
	}
	r := record{shard: int(v[1]), firstSeq: le.Uint64(v[4:]), count: int(le.Uint32(v[12:])),
		timeMs: int64(le.Uint64(v[16:])), body: v[recHeaderLen:n]}
	if r.count == 0 || len(r.body) < r.count*cmdMinLen {
		return record{}, fmt.Errorf("%w: %d commands in %d bytes", ErrCorrupt, r.count, len(r.body))
	}
	return r, nil
}
