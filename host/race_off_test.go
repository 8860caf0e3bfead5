//go:build !race

package host_test

// raceMemFactor scales memory bounds under the race detector (off here).
const raceMemFactor = 1
