package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/weexcore/exchange/engine"
)

// Record format (see doc.go for the byte-by-byte description).
const (
	recVersion   = 1
	recHeaderLen = 24
	recTrailer   = 4
	// cmdFixedLen is an encoded command without its client id bytes.
	cmdFixedLen = 4 + 2 + 2 + 4 + 8*5 + 1 + 1 + 8 + 1
)

var (
	castagnoli      = crc32.MakeTable(crc32.Castagnoli)
	errNotSubmitted = errors.New("journal: request was not submitted")
	errCorrupt      = errors.New("journal: corrupt record")
)

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

// appendCmd encodes c field by field (little-endian).
func appendCmd(dst []byte, c *engine.Cmd) []byte {
	dst = append(dst, byte(c.Kind), byte(c.Side), byte(c.Type), byte(c.TIF))
	dst = le.AppendUint16(dst, uint16(c.Market))
	dst = le.AppendUint16(dst, uint16(c.Coin))
	dst = le.AppendUint32(dst, uint32(c.User))
	dst = le.AppendUint64(dst, uint64(c.UID))
	dst = le.AppendUint64(dst, uint64(c.Price))
	dst = le.AppendUint64(dst, uint64(c.Qty))
	dst = le.AppendUint64(dst, uint64(c.OrderID))
	dst = le.AppendUint64(dst, uint64(c.Amount))
	var flags byte
	if c.Broker {
		flags |= 1
	}
	dst = append(dst, flags)
	dst = le.AppendUint64(dst, uint64(c.Referrer))
	var dec byte
	if c.Dec.Recorded {
		dec |= 1
	}
	if c.Dec.Reserved {
		dec |= 2
	}
	dst = append(dst, dec)
	dst = append(dst, c.Text.N)
	return append(dst, c.Text.B[:c.Text.N]...)
}

// decodeCmd decodes one command from b and returns the rest.
func decodeCmd(b []byte, c *engine.Cmd) ([]byte, error) {
	if len(b) < cmdFixedLen {
		return nil, errCorrupt
	}
	*c = engine.Cmd{
		Kind: engine.CmdKind(b[0]), Side: engine.Side(b[1]), Type: engine.OrderType(b[2]), TIF: engine.TIF(b[3]),
		Market:  engine.MarketID(le.Uint16(b[4:])),
		Coin:    engine.CoinID(le.Uint16(b[6:])),
		User:    engine.UserIdx(le.Uint32(b[8:])),
		UID:     int64(le.Uint64(b[12:])),
		Price:   engine.Price(le.Uint64(b[20:])),
		Qty:     engine.Qty(le.Uint64(b[28:])),
		OrderID: int64(le.Uint64(b[36:])),
		Amount:  engine.Amount(le.Uint64(b[44:])),
	}
	flags := b[52]
	c.Broker = flags&1 != 0
	c.Referrer = int64(le.Uint64(b[53:]))
	dec := b[61]
	c.Dec.Recorded = dec&1 != 0
	c.Dec.Reserved = dec&2 != 0
	n := int(b[62])
	if flags&^1 != 0 || dec&^3 != 0 || n > engine.ClientIDMax || len(b) < cmdFixedLen+n {
		return nil, errCorrupt
	}
	c.Text.N = uint8(n)
	copy(c.Text.B[:], b[cmdFixedLen:cmdFixedLen+n])
	return b[cmdFixedLen+n:], nil
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
		return record{}, fmt.Errorf("%w: %d bytes", errCorrupt, len(v))
	}
	n := len(v) - recTrailer
	if got, want := crc32.Checksum(v[:n], castagnoli), le.Uint32(v[n:]); got != want {
		return record{}, fmt.Errorf("%w: checksum %08x, want %08x", errCorrupt, got, want)
	}
	if v[0] != recVersion {
		return record{}, fmt.Errorf("journal: record version %d not supported", v[0])
	}
	r := record{shard: int(v[1]), firstSeq: le.Uint64(v[4:]), count: int(le.Uint32(v[12:])),
		timeMs: int64(le.Uint64(v[16:])), body: v[recHeaderLen:n]}
	if r.count == 0 || len(r.body) < r.count*cmdFixedLen {
		return record{}, fmt.Errorf("%w: %d commands in %d bytes", errCorrupt, r.count, len(r.body))
	}
	return r, nil
}

// --- history values ---------------------------------------------------------

func appendOrderView(dst []byte, o *engine.OrderView) []byte {
	dst = le.AppendUint64(dst, uint64(o.OrderID))
	dst = le.AppendUint64(dst, uint64(o.UID))
	dst = le.AppendUint32(dst, uint32(o.User))
	dst = le.AppendUint16(dst, uint16(o.Market))
	dst = append(dst, byte(o.Side), byte(o.Type), byte(o.TIF), byte(o.Status))
	dst = le.AppendUint64(dst, uint64(o.Price))
	dst = le.AppendUint64(dst, uint64(o.OrigQty))
	dst = le.AppendUint64(dst, uint64(o.ExecutedQty))
	dst = le.AppendUint64(dst, uint64(o.CumQuote))
	dst = le.AppendUint64(dst, uint64(o.TimeMs))
	dst = le.AppendUint64(dst, uint64(o.UpdateTimeMs))
	dst = append(dst, o.ClientID.N)
	return append(dst, o.ClientID.B[:o.ClientID.N]...)
}

func decodeOrderView(b []byte, o *engine.OrderView) bool {
	if len(b) < 75 {
		return false
	}
	*o = engine.OrderView{
		OrderID: int64(le.Uint64(b)), UID: int64(le.Uint64(b[8:])), User: engine.UserIdx(le.Uint32(b[16:])),
		Market: engine.MarketID(le.Uint16(b[20:])), Side: engine.Side(b[22]), Type: engine.OrderType(b[23]),
		TIF: engine.TIF(b[24]), Status: engine.Status(b[25]),
		Price: engine.Price(le.Uint64(b[26:])), OrigQty: engine.Qty(le.Uint64(b[34:])),
		ExecutedQty: engine.Qty(le.Uint64(b[42:])), CumQuote: engine.Amount(le.Uint64(b[50:])),
		TimeMs: int64(le.Uint64(b[58:])), UpdateTimeMs: int64(le.Uint64(b[66:])),
	}
	n := int(b[74])
	if n > engine.ClientIDMax || len(b) < 75+n {
		return false
	}
	o.ClientID.N = uint8(n)
	copy(o.ClientID.B[:], b[75:75+n])
	return true
}

const tradeLen = 8 + 2 + 8*3 + 8 + 1 + 8*6

func appendTrade(dst []byte, t *engine.Trade) []byte {
	dst = le.AppendUint64(dst, uint64(t.TradeID))
	dst = le.AppendUint16(dst, uint16(t.Market))
	dst = le.AppendUint64(dst, uint64(t.TimeMs))
	dst = le.AppendUint64(dst, uint64(t.Price))
	dst = le.AppendUint64(dst, uint64(t.Qty))
	dst = le.AppendUint64(dst, uint64(t.Quote))
	dst = append(dst, byte(t.TakerSide))
	dst = le.AppendUint64(dst, uint64(t.MakerOrder))
	dst = le.AppendUint64(dst, uint64(t.TakerOrder))
	dst = le.AppendUint64(dst, uint64(t.MakerUID))
	dst = le.AppendUint64(dst, uint64(t.TakerUID))
	dst = le.AppendUint64(dst, uint64(t.MakerFee))
	return le.AppendUint64(dst, uint64(t.TakerFee))
}

func decodeTrade(b []byte, t *engine.Trade) bool {
	if len(b) < tradeLen {
		return false
	}
	*t = engine.Trade{TradeID: int64(le.Uint64(b)), Market: engine.MarketID(le.Uint16(b[8:])),
		TimeMs: int64(le.Uint64(b[10:])), Price: engine.Price(le.Uint64(b[18:])), Qty: engine.Qty(le.Uint64(b[26:])),
		Quote: engine.Amount(le.Uint64(b[34:])), TakerSide: engine.Side(b[42]),
		MakerOrder: int64(le.Uint64(b[43:])), TakerOrder: int64(le.Uint64(b[51:])),
		MakerUID: int64(le.Uint64(b[59:])), TakerUID: int64(le.Uint64(b[67:])),
		MakerFee: engine.Amount(le.Uint64(b[75:])), TakerFee: engine.Amount(le.Uint64(b[83:]))}
	return true
}

const billLen = 8 + 8 + 4 + 2 + 1 + 2 + 8*6

func appendBill(dst []byte, x *engine.Bill) []byte {
	dst = le.AppendUint64(dst, x.BillID)
	dst = le.AppendUint64(dst, uint64(x.UID))
	dst = le.AppendUint32(dst, uint32(x.User))
	dst = le.AppendUint16(dst, uint16(x.Coin))
	dst = append(dst, byte(x.Biz))
	dst = le.AppendUint16(dst, uint16(x.Market))
	dst = le.AppendUint64(dst, uint64(x.FillQty))
	dst = le.AppendUint64(dst, uint64(x.FillQuote))
	dst = le.AppendUint64(dst, uint64(x.Delta))
	dst = le.AppendUint64(dst, uint64(x.After))
	dst = le.AppendUint64(dst, uint64(x.Fee))
	return le.AppendUint64(dst, uint64(x.TimeMs))
}

func decodeBill(b []byte, x *engine.Bill) bool {
	if len(b) < billLen {
		return false
	}
	*x = engine.Bill{BillID: le.Uint64(b), UID: int64(le.Uint64(b[8:])), User: engine.UserIdx(le.Uint32(b[16:])),
		Coin: engine.CoinID(le.Uint16(b[20:])), Biz: engine.BizType(b[22]), Market: engine.MarketID(le.Uint16(b[23:])),
		FillQty: engine.Qty(le.Uint64(b[25:])), FillQuote: engine.Amount(le.Uint64(b[33:])),
		Delta: engine.Amount(le.Uint64(b[41:])), After: engine.Amount(le.Uint64(b[49:])),
		Fee: engine.Amount(le.Uint64(b[57:])), TimeMs: int64(le.Uint64(b[65:]))}
	return true
}
