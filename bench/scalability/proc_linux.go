package scalability

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/hostd/hostd/bench/load"
)

func numCPU() int { return runtime.NumCPU() }

// splitCPUs gives the server n of the CPUs this process may use (default
// half) and the load generator the rest; nil, nil when there is only one.
func splitCPUs(n int) (server, loadgen []int) {
	cpus, _ := load.AllowedCPUs()
	if len(cpus) < 2 {
		return nil, nil
	}
	if n <= 0 || n >= len(cpus) {
		n = len(cpus) / 2
	}
	return cpus[len(cpus)-n:], cpus[:len(cpus)-n]
}

// prepareChild makes the server die with the thread that started it.
func prepareChild(cmd *exec.Cmd, _ []int) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// pinChild pins the server's threads to cpus; twice, to catch threads
// the Go runtime was creating during the first pass.
func pinChild(pid int, cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	for range 2 {
		if err := load.SetAffinity(pid, cpus); err != nil {
			return fmt.Errorf("scalability: pin server: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// cpuTime returns the user+system CPU time of process pid.
func cpuTime(pid int) (time.Duration, error) {
	ticks, err := load.ProcessTicks(pid, false)
	return time.Duration(ticks) * time.Second / load.TicksPerSecond, err
}
