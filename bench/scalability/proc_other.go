//go:build !linux

package scalability

import (
	"errors"
	"os/exec"
	"runtime"
	"time"
)

func numCPU() int                        { return runtime.NumCPU() }
func splitCPUs(int) (server, load []int) { return nil, nil }
func prepareChild(*exec.Cmd, []int)      {}
func pinChild(int, []int) error          { return nil }
func cpuTime(int) (time.Duration, error) {
	return 0, errors.New("scalability: CPU time is measured on Linux only")
}
