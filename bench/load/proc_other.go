//go:build !linux

package load

import "errors"

// AllowedCPUs lists the CPUs this process may run on: unknown here.
func AllowedCPUs() ([]int, error) { return nil, nil }

// SetAffinity does nothing here.
func SetAffinity(int, []int) error { return nil }

// PinProcess does nothing here.
func PinProcess([]int) (restore func(), err error) { return func() {}, nil }

// TicksPerSecond is the unit of ProcessTicks.
const TicksPerSecond = 100

// ProcessTicks is not measured here.
func ProcessTicks(int, bool) (int64, error) {
	return 0, errors.New("load: CPU time is measured on Linux only")
}

// TreeTicks is not measured here.
func TreeTicks(int) (int64, error) { return 0, errors.New("load: CPU accounting needs linux") }
