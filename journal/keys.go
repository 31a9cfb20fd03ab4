package journal

import (
	"encoding/binary"

	"github.com/weexcore/exchange/engine"
)

// Key space of the one Pebble DB (every integer big-endian so that byte
// order is numeric order; signed values have their sign bit flipped):
//
//	"m"                                           meta: shard count, coins, markets
//	"j" shard(1) firstSeq(8)                      journal record of one batch
//	"s" snapNo(8)                                 snapshot
//	"o" uid(8) market(2) createMs(8) orderID(8)   latest OrderView of every order
//	"i" orderID(8)                                -> uid(8) market(2) createMs(8): the "o" key
//	"c" uid(8) market(2) clientID                 -> latest orderID(8) with that client id
//	"b" uid(8) timeMs(8) billID(8)                finance record (Bill)
//	"t" uid(8) market(2) timeMs(8) tradeID(8) role(1)   user trade (role 0 maker, 1 taker)
//	"p" market(2) tradeID(8)                      public trade
//	"u" user(4)                                   the CmdAddUser that registered user index
//	                                              (record encoding), for OnAddUser after a snapshot
const (
	pfxMeta     = 'm'
	pfxJournal  = 'j'
	pfxSnapshot = 's'
	pfxOrder    = 'o'
	pfxOrderID  = 'i'
	pfxClientID = 'c'
	pfxBill     = 'b'
	pfxTrade    = 't'
	pfxPublic   = 'p'
	pfxUser     = 'u'
)

var be = binary.BigEndian

func s64(x int64) uint64 { return uint64(x) ^ 1<<63 }

func journalKey(dst []byte, shard int, seq uint64) []byte {
	dst = append(dst, pfxJournal, byte(shard))
	return be.AppendUint64(dst, seq)
}

func snapshotKey(dst []byte, n uint64) []byte {
	return be.AppendUint64(append(dst, pfxSnapshot), n)
}

func orderKey(dst []byte, uid int64, m engine.MarketID, createMs, id int64) []byte {
	dst = be.AppendUint64(append(dst, pfxOrder), s64(uid))
	dst = be.AppendUint16(dst, uint16(m))
	dst = be.AppendUint64(dst, s64(createMs))
	return be.AppendUint64(dst, s64(id))
}

func orderIDKey(dst []byte, id int64) []byte {
	return be.AppendUint64(append(dst, pfxOrderID), s64(id))
}

func clientIDKey(dst []byte, uid int64, m engine.MarketID, cid []byte) []byte {
	dst = be.AppendUint64(append(dst, pfxClientID), s64(uid))
	dst = be.AppendUint16(dst, uint16(m))
	return append(dst, cid...)
}

func billKey(dst []byte, uid int64, timeMs int64, id uint64) []byte {
	dst = be.AppendUint64(append(dst, pfxBill), s64(uid))
	dst = be.AppendUint64(dst, s64(timeMs))
	return be.AppendUint64(dst, id)
}

func tradeKey(dst []byte, uid int64, m engine.MarketID, timeMs, id int64, taker bool) []byte {
	dst = be.AppendUint64(append(dst, pfxTrade), s64(uid))
	dst = be.AppendUint16(dst, uint16(m))
	dst = be.AppendUint64(dst, s64(timeMs))
	dst = be.AppendUint64(dst, s64(id))
	if taker {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func publicKey(dst []byte, m engine.MarketID, id int64) []byte {
	dst = be.AppendUint16(append(dst, pfxPublic), uint16(m))
	return be.AppendUint64(dst, s64(id))
}

func userKey(dst []byte, u engine.UserIdx) []byte {
	return be.AppendUint32(append(dst, pfxUser), uint32(u))
}
