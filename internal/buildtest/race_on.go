//go:build race

package buildtest

// RaceEnabled says the running binary was built with -race.
const RaceEnabled = true
