package sandbox

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Sweep pacing: a sweep kills what it finds, waits sweepPause for the
// killed to die (and their children to be reparented to the server), and
// looks again, at most sweepRounds times.
const (
	sweepPause  = 10 * time.Millisecond
	sweepRounds = 300
)

// reaper tracks a Spawner's children and kills the orphans they leave.
//
// The server is a child subreaper, so an orphan (a process whose parent
// died, descended from a child) is reparented to the server's main thread,
// the first live thread of its thread group; the children the spawner
// thread forks are its own children, not the main thread's, and nothing
// else in hostd forks from the main thread, whose goroutine stays locked to
// it (cmd/hostd's init; the tests' TestMain). So the main thread's children
// that are not running children of the Spawner are orphans. A sweep for a
// uid kills those running as that uid, with all their descendants, and
// reaps them (only ever waiting for these pids, never for -1: exec.Cmd
// waits for its own children).
type reaper struct {
	logger    *slog.Logger
	subreaper bool

	mu          sync.Mutex
	live        map[int]child // started, unfinished children by pid
	seen        map[int64]bool
	timers      map[int64]*time.Timer // pending sweep per uid
	closed      bool
	sweeps      sync.WaitGroup
	containment Containment // what StartLimited can enforce (probed at NewSpawner)
}

// child is a started child of the Spawner.
type child struct {
	uid       int64 // -1: the server's
	contained bool  // PID 1 of its own PID namespace: leaves no orphans
}

func (r *reaper) init(logger *slog.Logger) {
	r.logger = logger
	r.live = make(map[int]child)
	r.seen = make(map[int64]bool)
	r.timers = make(map[int64]*time.Timer)
}

// finished forgets the child pid and schedules the sweep of its user's
// orphans after grace (one pending sweep per user covers every run that
// ended before it fires). A child that had its own PID namespace needs
// none: what it started died with it.
func (r *reaper) finished(pid int, grace time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.live[pid]
	if !ok {
		return
	}
	delete(r.live, pid)
	uid := c.uid
	if c.contained || !r.subreaper || r.closed || r.timers[uid] != nil {
		return
	}
	r.sweeps.Add(1)
	r.timers[uid] = time.AfterFunc(grace, func() {
		defer r.sweeps.Done()
		r.mu.Lock()
		delete(r.timers, uid)
		r.mu.Unlock()
		r.sweep(uid)
	})
}

// closeAll stops the pending sweeps and sweeps every user at once.
func (r *reaper) closeAll() {
	r.mu.Lock()
	r.closed = true
	uids := make([]int64, 0, len(r.seen))
	for uid := range r.seen {
		uids = append(uids, uid)
	}
	for uid, t := range r.timers {
		if t.Stop() {
			r.sweeps.Done()
		}
		delete(r.timers, uid)
	}
	r.mu.Unlock()
	r.sweeps.Wait()
	if !r.subreaper {
		return
	}
	for _, uid := range uids {
		r.sweep(uid)
	}
}

// sweep kills and reaps the orphans running as uid (-1: the server's real
// uid) and their descendants.
func (r *reaper) sweep(uid int64) {
	if uid < 0 {
		uid = int64(os.Getuid())
	}
	killed := 0
	for round := 0; round < sweepRounds; round++ {
		orphans := r.orphans(uint32(uid))
		if len(orphans) == 0 {
			if killed > 0 {
				r.logger.Info("killed the processes CGI scripts left behind", "uid", uid, "processes", killed)
			}
			return
		}
		if round == 0 || round%10 == 0 {
			killed += killDescendants(orphans, uint32(uid))
		}
		for _, pid := range orphans {
			// Our own child: its pid cannot be reused before we reap it.
			if st, ok := readStatus(pid); ok && !st.zombie && unix.Kill(pid, unix.SIGKILL) == nil {
				killed++
			}
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil)
		}
		time.Sleep(sweepPause)
	}
	r.logger.Error("orphaned CGI processes survive repeated SIGKILL", "uid", uid)
}

// orphans returns the server's children running as uid that the Spawner
// did not start (or that it started and were already finished).
func (r *reaper) orphans(uid uint32) []int {
	pids := mainThreadChildren()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, pid := range pids {
		if _, live := r.live[pid]; live {
			continue
		}
		if st, ok := readStatus(pid); ok && st.uid == uid && st.ppid == os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// mainThreadChildren lists the children of the server's main thread, where
// orphans land (/proc/PID/task/PID/children); without that file
// (CONFIG_PROC_CHILDREN), every process whose parent is the server.
func mainThreadChildren() []int {
	self := strconv.Itoa(os.Getpid())
	b, err := os.ReadFile("/proc/" + self + "/task/" + self + "/children")
	if err == nil {
		var pids []int
		for _, f := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(f)); err == nil {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	var pids []int
	forEachProcess(func(pid int, st procStatus) {
		if st.ppid == os.Getpid() {
			pids = append(pids, pid)
		}
	})
	return pids
}

// procStatus is what a sweep reads of /proc/PID/status.
type procStatus struct {
	ppid   int
	uid    uint32 // real uid
	zombie bool
}

func readStatus(pid int) (procStatus, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return procStatus{}, false
	}
	var st procStatus
	found := 0
	for line := range bytes.Lines(b) {
		switch {
		case bytes.HasPrefix(line, []byte("State:")):
			st.zombie = bytes.Contains(line, []byte("(zombie)"))
		case bytes.HasPrefix(line, []byte("PPid:")):
			f := bytes.Fields(line[5:])
			if len(f) > 0 {
				st.ppid, _ = strconv.Atoi(string(f[0]))
				found++
			}
		case bytes.HasPrefix(line, []byte("Uid:")):
			f := bytes.Fields(line[4:])
			if len(f) > 0 {
				u, _ := strconv.ParseUint(string(f[0]), 10, 32)
				st.uid = uint32(u)
				found++
			}
		}
		if found == 2 {
			return st, true
		}
	}
	return st, false
}

func forEachProcess(fn func(pid int, st procStatus)) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStatus(pid); ok {
			fn(pid, st)
		}
	}
}

// killDescendants sends SIGKILL to every descendant of roots running as uid
// and returns how many it signalled. They are not the server's children, so
// each is signalled through a pidfd opened and then checked again, so that a
// pid reused meanwhile by another process is never hit.
func killDescendants(roots []int, uid uint32) int {
	children := make(map[int][]int)
	forEachProcess(func(pid int, st procStatus) {
		if st.uid == uid {
			children[st.ppid] = append(children[st.ppid], pid)
		}
	})
	n := 0
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, pid := range children[parent] {
			queue = append(queue, pid)
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			if st, ok := readStatus(pid); ok && st.uid == uid && st.ppid == parent {
				if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
					n++
				}
			}
			unix.Close(fd)
		}
	}
	return n
}

// register records a started child; r.mu must be held.
func (r *reaper) register(cmd *exec.Cmd, uid int64) {
	r.live[cmd.Process.Pid] = child{uid: uid, contained: cmd.SysProcAttr.Cloneflags&unix.CLONE_NEWPID != 0}
	r.seen[uid] = true
}

// setSubreaper makes the server process a child subreaper.
func (r *reaper) setSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_CHILD_SUBREAPER)", err)
	}
	r.subreaper = true
	return nil
}

var errNoProbe = errors.New("no /bin/true to probe with")
