package bench

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/bench/load"
)

// setDeathSignal makes the child die with the thread that starts it
// (threads of a Go program live as long as the program here).
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// splitCPUs divides the CPUs this process may use: the first half for
// the server, the rest for the load generator. With one CPU there is
// nothing to split and both are nil.
func splitCPUs() (server, loadgen []int) {
	cpus, _ := load.AllowedCPUs()
	if len(cpus) < 2 {
		return nil, nil
	}
	half := len(cpus) / 2
	return cpus[:half], cpus[half:]
}

func cpuSet(cpus []int) *unix.CPUSet {
	var s unix.CPUSet
	for _, c := range cpus {
		s.Set(c)
	}
	return &s
}

// startPinned starts cmd with its affinity set to cpus: the forking
// thread's mask is what the child inherits, so the thread is locked and
// its mask switched around the fork.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return cmd.Start()
	}
	if err := unix.SchedSetaffinity(0, cpuSet(cpus)); err != nil {
		return cmd.Start()
	}
	err := cmd.Start()
	unix.SchedSetaffinity(0, &old)
	return err
}

// sysInfo describes the machine.
func sysInfo() (cpuModel, kernel string) {
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpuModel = strings.TrimSpace(v)
				break
			}
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])
	}
	return cpuModel, kernel
}

// cpuBusy is the busy time of cpus so far in clock ticks (user, nice,
// system, steal, guest: all but idle, iowait, irq and softirq), from
// /proc/stat.
func cpuBusy(cpus []int) (int64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	want := map[string]bool{}
	for _, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = true
	}
	var busy int64
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 || !want[f[0]] {
			continue
		}
		n++
		for i, v := range f[1:] {
			// Skip idle and iowait, and irq and softirq: loopback
			// networking's softirq work is the benchmark's own, but the
			// kernel accounts it to no process.
			if i == 3 || i == 4 || i == 5 || i == 6 {
				continue
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, false
			}
			busy += x
		}
	}
	return busy, n == len(cpus) && n > 0
}
