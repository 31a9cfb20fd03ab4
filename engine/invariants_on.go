//go:build invariants

package engine

// Invariants is true in builds with -tags invariants: the shard runtime
// (package core) then runs CheckInvariants after every command it
// applies, and tests after theirs.
const Invariants = true
