//go:build !race

package lua

// raceSlowdown scales time bounds under the race detector (off here).
const raceSlowdown = 1
