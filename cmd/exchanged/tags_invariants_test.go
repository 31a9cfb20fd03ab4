//go:build invariants

package main

// serverTags builds the server under test with the engine's invariant
// checks when the tests themselves run with -tags invariants (make test).
const serverTags = "invariants"
