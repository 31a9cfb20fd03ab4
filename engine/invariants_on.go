//go:build invariants

package engine

// Invariants is true in builds with -tags invariants: callers (tests, the
// shard runtime at barriers) run CheckInvariants after every command.
const Invariants = true
