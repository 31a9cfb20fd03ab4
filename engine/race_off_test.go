//go:build !race

package engine_test

// raceEnabled: the race detector allocates on its own; allocation gates skip.
const raceEnabled = false
