package scalability

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
const clockTicks = 100

func numCPU() int { return runtime.NumCPU() }

// splitCPUs gives the server n of the CPUs this process may use (default
// half) and the load generator the rest; nil, nil when there is only one.
func splitCPUs(n int) (server, load []int) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, nil
	}
	var cpus []int
	for i := range 1024 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		return nil, nil
	}
	if n <= 0 || n >= len(cpus) {
		n = len(cpus) / 2
	}
	return cpus[len(cpus)-n:], cpus[:len(cpus)-n]
}

func setAffinity(pid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("sched_setaffinity %d: %w", tid, err)
		}
	}
	return nil
}

// pinProcess pins every thread of this process to cpus (new threads
// inherit it) and returns a function restoring the previous mask.
func pinProcess(cpus []int) (restore func(), err error) {
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return func() {}, err
	}
	var oldCPUs []int
	for i := range 1024 {
		if old.IsSet(i) {
			oldCPUs = append(oldCPUs, i)
		}
	}
	if err := setAffinity(os.Getpid(), cpus); err != nil {
		return func() {}, err
	}
	return func() { setAffinity(os.Getpid(), oldCPUs) }, nil
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
		if err := setAffinity(pid, cpus); err != nil {
			return fmt.Errorf("scalability: pin server: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// cpuTime returns the user+system CPU time of process pid.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	// Fields after the command: state(0) ... utime(11) stime(12).
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return time.Duration(u+st) * time.Second / clockTicks, nil
}
