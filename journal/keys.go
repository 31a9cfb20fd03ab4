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
//	"i" snapNo(8)                                 (empty) snapshot snapNo was installed from
//	                                              the replicated group, not taken here
//	"o" uid(8) market(2) firstOrderID(8)          orders uid created in market in one batch
//	                                              and that finished in it
//	"l" uid(8) market(2) orderID(8)               an order that finished after the batch
//	                                              that created it
//	"c" uid(8) market(2) clientID                 -> orderID of the latest finished order
//	                                              with that client-supplied id
//	"h" uid(8) timeMs(8) shard(1) firstSeq(8)     uid's fills and finance records of one batch
//	"p" market(2) firstTradeID(8)                 market's public trades of one batch
//	"u" user(4)                                   the CmdAddUser that registered user index
//	                                              (record encoding), for OnAddUser after a snapshot
//	"r" market(2) seq(8)                          the rules (JSON MarketSpec) the CmdSetRules at
//	                                              seq of market's shard installed
//	"a" day(4) broker(4) product(1) market(2)     a batch's referral fees of one broker (rebate.go)
//	    shard(1) firstSeq(8)
//	"b" brokerUID(8) day(4) product(1) market(2)  a broker's rebate record (rebate.go)
//	"k" market(2) interval(1) openMs(8)           a market's 1m, 1h or 1d candle (candle.go)
//
// The values of "o", "l", "h" and "p" are history blocks (hist.go, doc.go;
// an "l" row is an "o" block of one order). An order still working has no
// row: the engine holds it.
const (
	pfxMeta     = 'm'
	pfxJournal  = 'j'
	pfxSnapshot = 's'
	pfxInstall  = 'i'
	pfxOrder    = 'o'
	pfxLater    = 'l'
	pfxClientID = 'c'
	pfxHistory  = 'h'
	pfxPublic   = 'p'
	pfxUser     = 'u'
	pfxRules    = 'r'
	pfxAccrual  = 'a'
	pfxRebate   = 'b'
	pfxCandle   = 'k'
	pfxFunding  = 'f'
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

func installKey(dst []byte, n uint64) []byte {
	return be.AppendUint64(append(dst, pfxInstall), n)
}

func orderBlockKey(dst []byte, uid int64, m engine.MarketID, first int64) []byte {
	return userOrderKey(dst, pfxOrder, uid, m, first)
}

func laterKey(dst []byte, uid int64, m engine.MarketID, id int64) []byte {
	return userOrderKey(dst, pfxLater, uid, m, id)
}

func userOrderKey(dst []byte, pfx byte, uid int64, m engine.MarketID, id int64) []byte {
	dst = be.AppendUint64(append(dst, pfx), s64(uid))
	dst = be.AppendUint16(dst, uint16(m))
	return be.AppendUint64(dst, s64(id))
}

// orderBlockFirst returns the first order id of an "o" or "l" key.
func orderBlockFirst(k []byte) (int64, bool) {
	if len(k) != 19 || k[0] != pfxOrder && k[0] != pfxLater {
		return 0, false
	}
	return int64(be.Uint64(k[11:]) ^ 1<<63), true
}

func clientIDKey(dst []byte, uid int64, m engine.MarketID, cid []byte) []byte {
	dst = be.AppendUint64(append(dst, pfxClientID), s64(uid))
	dst = be.AppendUint16(dst, uint16(m))
	return append(dst, cid...)
}

func userBlockKey(dst []byte, uid int64, timeMs int64, shard int, firstSeq uint64) []byte {
	dst = be.AppendUint64(append(dst, pfxHistory), s64(uid))
	dst = be.AppendUint64(dst, s64(timeMs))
	dst = append(dst, byte(shard))
	return be.AppendUint64(dst, firstSeq)
}

func parseUserBlockKey(k []byte) (uid, timeMs int64, shard int, firstSeq uint64, ok bool) {
	if len(k) != 26 || k[0] != pfxHistory {
		return 0, 0, 0, 0, false
	}
	return int64(be.Uint64(k[1:]) ^ 1<<63), int64(be.Uint64(k[9:]) ^ 1<<63), int(k[17]), be.Uint64(k[18:]), true
}

// userBlockRange returns the bounds of uid's "h" blocks with time in [from, to).
func userBlockRange(uid, from, to int64) (lower, upper []byte) {
	lower = be.AppendUint64(be.AppendUint64([]byte{pfxHistory}, s64(uid)), s64(from))
	return lower, be.AppendUint64(be.AppendUint64([]byte{pfxHistory}, s64(uid)), s64(to))
}

func publicKey(dst []byte, m engine.MarketID, first int64) []byte {
	dst = be.AppendUint16(append(dst, pfxPublic), uint16(m))
	return be.AppendUint64(dst, s64(first))
}

func parsePublicKey(k []byte) (engine.MarketID, int64, bool) {
	if len(k) != 11 || k[0] != pfxPublic {
		return 0, 0, false
	}
	return engine.MarketID(be.Uint16(k[1:])), int64(be.Uint64(k[3:]) ^ 1<<63), true
}

func userKey(dst []byte, u engine.UserIdx) []byte {
	return be.AppendUint32(append(dst, pfxUser), uint32(u))
}

func rulesKey(dst []byte, m engine.MarketID, seq uint64) []byte {
	return be.AppendUint64(be.AppendUint16(append(dst, pfxRules), uint16(m)), seq)
}
