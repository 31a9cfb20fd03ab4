// Package core runs the exchange: one goroutine per shard, each with a
// bounded lock-free ring in front of it (ring.go) and the journal behind
// it (package journal). The edge submits pooled Requests and waits for
// them; a request is answered only once the journal batch holding its
// command is synced (docs/DESIGN.md, "The path of one order").
//
// # Shards
//
// The market shards (their count fixed when the data directory was
// created) own the markets m with int(m) % N == shard; one more shard, the
// ledger (number N), applies deposits, withdrawals and user registrations.
// Balances are shared by all shards (engine.Accounts).
//
// # The shard loop
//
// A shard drains up to maxBatch requests from its ring, stamps the batch
// with timeMs = max(previous, wall clock), gives every command seq =
// previous+1 and applies it to its engine (which records the decisions it
// took from state the shard does not own in Cmd.Dec), answers in-shard
// queries in order, then writes one journal record for the batch and the
// history rows its commands produced in one Pebble batch, commits it with
// a sync, makes the batch's credits available (Engine.Flush) and only then
// wakes the waiting requests. Invariants:
//
//   - timeMs never goes backwards;
//   - seq is gap-free per shard;
//   - applying is published before each Apply and flushed only after the
//     batch is synced and its credits flushed, so flushed <= applying and
//     anything read while applying > flushed may still be taken back by a
//     crash (Balances waits for flushed);
//   - no request of a batch is answered before the batch is synced,
//     queries included.
//
// # Group commit
//
// Under load (pace.go) a shard hands its batch to the committer
// (commit.go), which syncs the batches of every shard together at most
// once per sync gap, and goes on applying the next batches (up to
// maxFlights in flight). Until the committer takes a shard's newest batch,
// the shard's next drained batches join it if they fall in the same
// millisecond: one record and one set of history rows for all of them.
// Batches are answered in order, each once its own sync is done, with
// Engine.FlushTo making only its credits available. A barrier waits for
// every batch in flight, so snapshots and state hashes see only durable
// state.
//
// # Snapshots
//
// A snapshot is taken at a barrier pushed through every ring: once every
// shard has synced and flushed everything before it and stopped, the
// accounts are encoded and every engine's book is copied (engine.Frozen);
// the shards then go on, and the books are encoded from the copies and
// written (barrier.go).
//
// # Invariants build
//
// With -tags invariants the shards apply one command at a time across the
// node and check the whole state after each (invariants.go); make test
// runs that way.
package core

// testHooks enables test-only behaviour (set by the package's tests).
var testHooks bool
