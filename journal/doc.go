// Package journal is the exchange's storage: one Pebble DB per data
// directory (Store) holding
//
//   - the journal: one record per batch of commands a shard applied, with
//     every decision the command took from state its shard does not own,
//     so that replay re-applies rather than re-decides (Writer, replay.go);
//   - history rows: finished orders, fills, finance records and public
//     trades, written in the same synced batch as the record of the
//     commands that produced them, and read directly by queries
//     (history.go);
//   - snapshots of the whole state, and the meta (shard count, coins,
//     markets) that lets the audit tool replay without a config.
//
// Load rebuilds the state (accounts and one engine per shard) from the
// newest snapshot and the journal after it; tools/audit does the same
// read-only. The package knows nothing of the goroutines that apply
// commands live (package core). The byte formats, keys and their versions
// are in docs/JOURNAL.md.
//
// Damage is refused, not skipped: a WAL chunk, record, row, snapshot or
// Pebble file that fails its checks yields an error that matches
// ErrCorrupt. The one exception is a WAL's torn tail, a write cut short by
// a crash and so never acknowledged, which Pebble drops and Open logs
// (walcheck.go).
package journal
