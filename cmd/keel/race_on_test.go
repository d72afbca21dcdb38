//go:build race

package main

// raceEnabled: the keel that TestAgentSDK builds is race-enabled too, so a data race on the
// control protocol's paths fails the suite.
const raceEnabled = true
