//go:build race

package web_test

// raceEnabled reports a -race build, whose instrumented frames are larger
// (so goroutine stacks are too).
const raceEnabled = true
