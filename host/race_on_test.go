//go:build race

package host_test

// raceMemFactor scales memory bounds under the race detector, whose
// shadow memory and slower collection multiply what a heap costs.
const raceMemFactor = 4
