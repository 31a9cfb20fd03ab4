// Package journal runs the exchange core: one goroutine per shard, each
// with a bounded lock-free ring in front of it and a stream of journal
// records behind it, all in one Pebble DB.
//
// # Shards
//
// Options.Shards market shards (persisted at creation) own the markets m
// with int(m) % N == shard; one more shard, the ledger (number N), applies
// deposits, withdrawals and user registrations. Shard numbers are < 64
// because they are packed into bill ids.
//
// # The shard loop
//
// A shard drains up to 4096 requests from its ring, stamps the batch with
// timeMs = max(previous, wall clock), gives every command seq = previous+1,
// applies it to its engine (recording cross-shard decisions in Cmd.Dec;
// before each command it lets the engine prefetch what the next one will
// read, engine/prefetch.go), answers in-shard queries in order, then
// writes ONE journal record for the batch plus the history blocks the
// commands produced in ONE Pebble batch, commits it with Sync, calls
// Engine.Flush (credits become available only once durable) and only then
// wakes the waiting requests.
//
// Under load (pace.go) the shard hands the batch to the committer instead
// (commit.go), which syncs the batches of every shard together at most once
// per sync gap (500 us, growing to 750 us as the command rate goes from
// 32,000 to 40,000 per second), and goes on applying the next batches (up to
// maxFlights in flight). Until the committer takes the newest batch, the
// shard's next drained batches join it if they fall in the same millisecond
// (its timeMs): one record and one set of history blocks for all of them,
// which the committer finishes ("seals") when it takes the batch. Under load
// a drained batch is often a single request, so this saves most journal
// keys: at 8,500 req/s 1.6 Pebble keys and 92 bytes per request instead of
// 2.24 and 125. Batches are answered in order, each once its own sync is
// done, with Engine.FlushTo making only its credits available. A barrier
// waits for every batch in flight, so snapshots and state hashes see only
// durable state.
//
// Pebble writes through a journalFS (walspare.go): every WAL file it creates
// is a file of zeros written and synced ahead, so the WAL's fdatasyncs
// overwrite blocks rather than append; those fdatasyncs, and the spare
// writer's, go through Linux AIO so the syncing goroutine parks instead of
// holding a thread (walsync.go); and its flushes and compactions write at a
// paced rate (tablepace.go).
//
// # Keys
//
// See keys.go. Journal records are keyed "j" shard(1) firstSeq(8, big
// endian), so one shard's records are contiguous and in sequence order.
//
// # Journal record, version 2
//
// One Pebble value per batch; integers little-endian:
//
//	offset size  field
//	0      1     version (2)
//	1      1     shard
//	2      2     reserved, zero
//	4      8     firstSeq: seq of the first command; command i has firstSeq+i
//	12     4     count: number of commands (>= 1)
//	16     8     timeMs of the batch (int64)
//	24     ...   count commands, each:
//	              1  kind: bits 0-3 Kind, bit 4 Broker, bit 5 Dec.Recorded
//	                 (always set), bit 6 Dec.Reserved, bit 7 zero
//	              1  side (bits 0-1), type (bits 2-3), TIF (bits 4-7); or
//	                 0xFF then side, type and TIF as three bytes
//	              2  presence mask: the fields below that are not zero
//	              then, in this order, each present field as a varint
//	              (Go encoding/binary; signed ones zigzag): Market (u),
//	              Coin (u), User (u), UID, Price (ticks), Qty (steps),
//	              OrderID, Amount (coin scale), Referrer; then Text (the
//	              client id) as a length byte (<= 40) and its bytes
//	end-4  4     crc32c (Castagnoli) of every byte before it
//
// A reader refuses unknown versions, bad checksums, a header that does not
// match the key, unknown flag or mask bits, truncated varints, and trailing
// bytes. Version 1 (fixed 63-byte commands) is not read: its directories
// also carry meta version 1, which Open refuses.
//
// # Corruption and torn writes
//
// Pebble's own write-ahead log makes each batch atomic: on recovery it
// stops at an unclean end of the newest WAL file (a torn tail: the batch
// was never acknowledged). It can tell that from a corrupt chunk followed by
// synced ones, and refuse to open (ErrCorruption), only when the WAL
// carries sync offsets (FormatWALSyncChunks); without them it silently ends
// the log at the first bad chunk and drops everything after it. So the DB
// is created at that format (and reopened once at creation, because its
// first WAL predates the format ratchet); TestFlippedByteWAL and
// TestTornWALTail check both cases on the real files. On top of that every
// record carries its own checksum: a bad record that is the last of its shard is cut off and
// reported through Options.Logf; a bad record anywhere else refuses Open
// with an error naming the shard and sequence. Sequences are checked to be
// gap-free. Records before the newest snapshot are not read by a normal
// start; the audit tool's full replay (Options.FullReplay) reads them all.
//
// One corruption Pebble's WAL reader (v2.1.7) does not report: it checks a
// chunk's log number before its checksum, and takes a record's first chunk
// numbered one past its WAL, unverified, for the trailer it writes when it
// closes a WAL (an empty chunk): a clean end. One flipped bit there (the
// lowest of an even WAL number) would drop every record after it without
// an error. So Open first reads each WAL up to its first chunk of another
// number and refuses one that claims the next number with a payload
// (walcheck.go; TestWALTrailerFlip).
//
// # Snapshots
//
// A snapshot is taken at a barrier pushed through every ring: when every
// shard has synced and flushed everything before it and stopped, each
// shard's seq and time and the accounts are encoded and every engine's
// book is copied (engine.Frozen); then the shards go on, and the books are
// encoded from the copies and everything is written under "s" snapNo(8)
// (format in snapshot.go). Encoding a book walks every level's queue
// through memory, ~330-400 ns per resting order here, so the shards now
// wait for the copy only: with 300,000 resting orders, 29 ms on the first
// snapshot (the copy's memory is allocated; later ones reuse it, ~4 ms in
// BenchmarkSnapshot) instead of 259 ms. The copy is kept for the next
// snapshot: about as much memory again as the engines' order pools. The
// journal is kept: auditors
// replay it from the start, and a snapshot followed by the journal tail
// gives the same state hash as the full replay.
//
// # Meta
//
// "m" holds JSON: the shard count, the fee account and every coin and
// market spec, so the audit tool replays without a config. Open refuses a
// configuration that drops or renumbers a stored coin or market, or
// changes the fee account; new ones may be appended. When a stored market's
// rules (fees, bands, ...) changed, Open replays under the stored rules,
// writes a snapshot, and only then switches to the new rules and stores
// them. Only the newest rules are stored, so a full replay from seq 1
// (audit -full) of a directory whose rules changed uses the new rules for
// old commands: audit from the snapshot in that case (rule epochs by
// sequence are future work).
//
// # History blocks
//
// The queries' rows (finished orders, fills, finance records, public
// trades) are written in the same synced Pebble batch as the journal record
// of the batch that produced them, and never during replay. They are
// grouped per batch, not per event: one Pebble key costs about as much as
// 300 bytes of value, and a drained batch of 4096 commands would otherwise
// write ~30k keys. Per batch the shard writes:
//
//   - "o" uid market firstOrderID: the orders uid created in market in the
//     batch and that finished in it (filled, cancelled, expired);
//   - "l" uid market orderID: an order that finished in a later batch than
//     the one that created it;
//   - "c" uid market clientID -> orderID for a finished order with a
//     client-supplied id (a generated "x-<orderID>" needs no row: it names
//     its order);
//   - "h" uid timeMs shard firstSeq: uid's fills (its side of each trade)
//     and finance records, in the order they happened;
//   - "p" market firstTradeID: the market's trades.
//
// An order still working at the end of a batch gets no row: the shard's
// engine holds it, so a query for one order asks the shard first and reads
// history only for an order the shard no longer has, and allOrders merges
// the shard's working orders with the finished ones in history (the
// shard's answer comes after every earlier batch is durable, so an order is
// in one or the other, or in both when it finished in between, and then
// its row wins). So each order gets one row, written once, when it
// finishes: a maker's order placed and cancelled a few batches later costs
// one key instead of two ("o" at creation and a later-state row at the
// cancel, version 2 of this layout), which saved 4.5% of the server's CPU
// under REST load at 24,000 req/s (bench/LOG.md). An order a batch
// creates and finishes (a taker, an IOC) still shares its batch's "o"
// block. An "l" row's id can fall inside an "o" block's id range (the
// block of the batch that created it, when that batch finished others), so
// allOrders walks both key ranges merged by id and holds a block's orders
// until the next key's id passes them; an order's lookup by id reads its
// "l" row, or else the last "o" block whose first id is at or below it.
//
// Values start with a version byte (1) and use varints (zigzag for signed
// values) relative to the block's key and header: order ids as steps of
// 1024 from the block's first id, times as offsets, a bill's fill as a
// back-reference to a fill tuple (market, qty, quote) already in the block,
// a bill's balance after as the correction to the previous after of the
// same coin in the block plus its delta (zero unless another shard changed
// the balance in between). An "l" row is an "o" block of one order. The
// encoders and decoders are in hist.go; every query decodes blocks and
// filters (history.go). An order's creation time and its id grow together
// along its market's shard, so allOrders finds the first block or row of
// a time range by a binary search over order ids.
//
// # Other rows
//
// "u" user: the CmdAddUser that registered a user, so OnAddUser can be
// called for users a snapshot covers; written with its batch.
package journal
