package sessiontest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a store process a test started.
type Server struct {
	// Addr is its "127.0.0.1:port".
	Addr string
	name string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

// Redis starts a redis-server without persistence on a free loopback port,
// with extra arguments appended (e.g. "--requirepass", "pw"); it is killed
// when the test ends.
func Redis(t testing.TB, extra ...string) *Server {
	return start(t, "redis-server", func(port int) []string {
		return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "no", "--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning"}, extra...)
	})
}

// Memcached starts a memcached on a free loopback port, with extra
// arguments appended (e.g. "-Y", authFile); it is killed when the test
// ends.
func Memcached(t testing.TB, extra ...string) *Server {
	return start(t, "memcached", func(port int) []string {
		args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0", "-m", "64"}
		if os.Geteuid() == 0 {
			args = append(args, "-u", "root")
		}
		return append(args, extra...)
	})
}

func start(t testing.TB, name string, args func(port int) []string) *Server {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (apt-get install %s)", name, map[string]string{"redis-server": "redis-server", "memcached": "memcached"}[name])
	}
	port := freePort(t)
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), name: bin, args: args(port)}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start (re)starts the process on its address and waits until it accepts
// connections.
func (s *Server) Start() error {
	s.cmd = exec.Command(s.name, s.args...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	s.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); close(done) }(s.cmd, s.done)
	return WaitPort(s.Addr, 5*time.Second)
}

// Kill stops the process with SIGKILL (by its PID) and waits for it.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// WaitPort waits until addr accepts TCP connections.
func WaitPort(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not accepting connections after %v: %w", addr, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PID returns the process id (0 when stopped).
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// CPU returns the user and system CPU time the process used so far, from
// /proc (0 when unknown).
func (s *Server) CPU() time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID()) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 { // f[0] is field 3 (state); utime and stime are 14 and 15
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
