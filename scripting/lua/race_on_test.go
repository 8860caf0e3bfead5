//go:build race

package lua

// raceSlowdown scales time bounds under the race detector.
const raceSlowdown = 10
