package phpfpm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/host/cgi"
	"github.com/hostd/hostd/sandbox"
)

// process is one running php-fpm master.
type process struct {
	pid     int
	started time.Time
	exited  chan struct{} // closed once the master was reaped and its group killed
	err     error         // cmd.Wait's result, valid after exited
}

// status describes how the master ended (after exited).
func (pr *process) status() string {
	var ee *exec.ExitError
	if errors.As(pr.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + ws.Signal().String()
		}
		return "exit " + strconv.Itoa(ee.ExitCode())
	}
	if pr.err != nil {
		return pr.err.Error()
	}
	return "exit 0"
}

// stop ends the master: SIGTERM (php-fpm stops its workers and exits),
// then SIGKILL to the whole group if it is still there after stopTimeout.
// It returns once the master was reaped.
func (pr *process) stop() {
	_ = unix.Kill(pr.pid, unix.SIGTERM)
	select {
	case <-pr.exited:
	case <-time.After(stopTimeout):
		_ = sandbox.KillProcessGroup(pr.pid)
		<-pr.exited
	}
}

// listenUnix creates a listening unix socket at path (replacing a stale
// one) with raw syscalls: the descriptor stays in blocking mode, as
// php-fpm's workers expect of the socket they accept on.
func listenUnix(path string) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", os.NewSyscallError("socket", err))
	}
	f := os.NewFile(uintptr(fd), path)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.Close()
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		f.Close()
		return nil, fmt.Errorf("socket %s: %w", path, os.NewSyscallError("bind", err))
	}
	if err := unix.Fchmodat(unix.AT_FDCWD, path, 0o600, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("socket %s: %w", path, os.NewSyscallError("chmod", err))
	}
	if err := unix.Listen(fd, 511); err != nil {
		f.Close()
		return nil, fmt.Errorf("socket %s: %w", path, os.NewSyscallError("listen", err))
	}
	return f, nil
}

// spawn starts a master on the listening socket ln. It must run with the
// server's identity (not on a tenant thread).
func (p *Pool) spawn(ln *os.File) (*process, error) {
	conf, err := os.Open(p.conf)
	if err != nil {
		return nil, fmt.Errorf("phpfpm: pool file: %w", err)
	}
	defer conf.Close()
	// php-fpm's own log: --force-stderr writes it to the inherited
	// stderr, a pipe hostd reads (error_log is /dev/null: reopening the
	// pipe by path would need it to be the tenant's).
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("phpfpm: pipe: %w", err)
	}
	defer wr.Close()
	id := p.cfg.Identity
	// fd 3: the socket, found by php-fpm through FPM_SOCKETS; fd 4: the
	// pool file, which the tenant could not open by its path.
	cmd := exec.Command(p.cfg.FPM, "--nodaemonize", "--force-stderr", "--fpm-config", "/proc/self/fd/4")
	cmd.Env = []string{"FPM_SOCKETS=" + p.sock + "=3", "PATH=" + cgi.DefaultPath}
	cmd.ExtraFiles = []*os.File{ln, conf}
	cmd.Dir = p.cfg.Root
	cmd.Stdout, cmd.Stderr = wr, wr
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.m.spawner.Start(ctx, cmd, &id); err != nil {
		rd.Close()
		return nil, fmt.Errorf("phpfpm: start %s: %w", p.cfg.FPM, err)
	}
	p.starts.Add(1)
	pr := &process{pid: cmd.Process.Pid, started: time.Now(), exited: make(chan struct{})}
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		defer rd.Close()
		p.copyLog(rd)
	}()
	go func() {
		pr.err = cmd.Wait()
		// Workers left behind by a master that died go with its group;
		// then the log pipe has no writer left.
		_ = sandbox.KillProcessGroup(pr.pid)
		<-logDone
		close(pr.exited)
	}()
	p.logger.Info("php: pool started", "pid", pr.pid, "uid", id.UID)
	return pr, nil
}

// copyLog writes php-fpm's own log lines to the tenant's error log until
// the pipe closes.
func (p *Pool) copyLog(rd *os.File) {
	w, flush := cgi.StderrLines(func(line []byte) {
		p.logLine("php-fpm", line)
	})
	buf := make([]byte, 4096)
	for {
		n, err := rd.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
		}
		if err != nil {
			flush()
			return
		}
	}
}

// logLine writes one escaped line to the tenant's error log.
func (p *Pool) logLine(prefix string, line []byte) {
	if p.cfg.ErrorLog != nil {
		cgi.LogLine(p.cfg.ErrorLog, prefix, line)
		return
	}
	p.logger.Warn("php: "+prefix, "line", strings.ToValidUTF8(string(line), "?"))
}
