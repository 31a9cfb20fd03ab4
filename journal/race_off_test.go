//go:build !race

package journal

// raceEnabled: the binary was built with -race.
const raceEnabled = false
