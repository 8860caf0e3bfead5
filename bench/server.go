package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is one running `hostd serve` child process.
type server struct {
	cmd       *exec.Cmd
	httpsAddr string
	httpAddr  string
	logMu     sync.Mutex
	logTail   []string // the last lines of its stderr
	exited    chan struct{}
}

var servingAddr = regexp.MustCompile(`\b(https?)=(127\.0\.0\.1:\d+)`)

// startServer starts hostd serve --config cfg pinned to cpus (nil: no
// pinning), dying with this process, and waits until it serves.
func startServer(ctx context.Context, hostd, cfg string, cpus []int) (*server, error) {
	cmd := exec.Command(hostd, "serve", "--config", cfg, "--log-level", "info")
	setDeathSignal(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := startPinned(cmd, cpus); err != nil {
		return nil, fmt.Errorf("start %s: %w", hostd, err)
	}
	s := &server{cmd: cmd, exited: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			s.logMu.Lock()
			s.logTail = append(s.logTail, line)
			if len(s.logTail) > 20 {
				s.logTail = s.logTail[len(s.logTail)-20:]
			}
			if !signalled && strings.Contains(line, "msg=serving") {
				for _, m := range servingAddr.FindAllStringSubmatch(line, -1) {
					if m[1] == "https" {
						s.httpsAddr = m[2]
					} else {
						s.httpAddr = m[2]
					}
				}
				signalled = true
				close(ready)
			}
			s.logMu.Unlock()
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(s.exited)
	}()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case <-ready:
	case <-s.exited:
		return nil, fmt.Errorf("hostd serve exited: %s", s.tail())
	case <-timer.C:
		s.stop()
		return nil, fmt.Errorf("hostd serve not serving after 20s: %s", s.tail())
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
	s.logMu.Lock()
	addr := s.httpsAddr
	s.logMu.Unlock()
	if addr == "" {
		s.stop()
		return nil, errors.New("hostd serve: no https address in the serving line")
	}
	// The serving line comes just before Serve; make sure the port answers.
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if i == 50 {
			s.stop()
			return nil, fmt.Errorf("hostd serve: %s not accepting: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s, nil
}

// tail is the end of the server's log, for error messages.
func (s *server) tail() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	t := s.logTail
	if len(t) > 5 {
		t = t[len(t)-5:]
	}
	return strings.Join(t, " | ")
}

// alive reports whether the process still runs.
func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop ends the server by its PID and waits for it: SIGTERM first, so
// that hostd stops its tenants' php-fpm pools and CGI scripts itself, then
// SIGKILL after stopGrace (a hostd or peer that does not stop). A SIGKILLed
// hostd leaves nothing behind either where the kernel gives its children
// PID namespaces (sandbox.Containment), but a bench run must not depend on
// that.
func (s *server) stop() {
	if s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return
	case <-time.After(stopGrace):
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
	}
}

// stopGrace is how long stop waits after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// pid is the server's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }
