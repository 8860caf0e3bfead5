package load

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// AllowedCPUs lists the CPUs this process may run on: what the
// benchmarks split between the server and the load generator.
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for i := range 1024 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// SetAffinity sets the affinity of every thread of process pid to cpus
// (new threads inherit it from their creator). It tries every thread and
// returns the first error; a thread that exited meanwhile is none.
func SetAffinity(pid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return err
	}
	var first error
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && first == nil && err != unix.ESRCH {
			first = fmt.Errorf("sched_setaffinity %d: %w", tid, err)
		}
	}
	return first
}

// PinProcess sets the affinity of every thread of this process to cpus
// and returns a function that restores the previous mask.
func PinProcess(cpus []int) (restore func(), err error) {
	old, err := AllowedCPUs()
	if err != nil {
		return func() {}, err
	}
	if err := SetAffinity(os.Getpid(), cpus); err != nil {
		return func() {}, err
	}
	return func() { SetAffinity(os.Getpid(), old) }, nil
}

// TicksPerSecond is USER_HZ, the unit of the CPU times in /proc (100 on
// Linux).
const TicksPerSecond = 100

// ProcessTicks is process pid's user and system CPU time so far, in
// clock ticks (TicksPerSecond), from /proc/PID/stat; with children, that
// of its waited-for children (CGI processes) too.
func ProcessTicks(pid int, children bool) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// After the command: state(0) ppid ... utime(11) stime(12) cutime(13) cstime(14).
	fields := []int{11, 12}
	if children {
		fields = append(fields, 13, 14)
	}
	if len(f) <= fields[len(fields)-1] {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	var ticks int64
	for _, k := range fields {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/%d/stat", pid)
		}
		ticks += v
	}
	return ticks, nil
}

// TreeTicks is the CPU time so far of process pid, of its descendants
// that are still running (the workers of a php-fpm pool the server
// started) and of every process of that tree that was waited for, in
// clock ticks (TicksPerSecond).
func TreeTicks(pid int) (int64, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	type proc struct {
		ppid  int
		ticks int64
	}
	procs := map[int]proc{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) <= 14 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		var t int64
		for _, k := range []int{11, 12, 13, 14} {
			v, _ := strconv.ParseInt(f[k], 10, 64)
			t += v
		}
		procs[p] = proc{ppid: ppid, ticks: t}
	}
	if _, ok := procs[pid]; !ok {
		return 0, fmt.Errorf("no process %d", pid)
	}
	var total int64
	for p, pr := range procs {
		// Walk up to pid or the top; ppid chains are short.
		for q := p; ; {
			if q == pid {
				total += pr.ticks
				break
			}
			up, ok := procs[q]
			if !ok || up.ppid == 0 || up.ppid == q {
				break
			}
			q = up.ppid
		}
	}
	return total, nil
}
