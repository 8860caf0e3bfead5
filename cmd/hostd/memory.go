package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
)

// memoryOptions are `hostd bench --memory`'s settings.
type memoryOptions struct {
	binary  string
	tenants int
	modes   []string
	uidBase int
	conns   int
}

// memoryResult is one mode's row.
type memoryResult struct {
	mode             string
	startup          time.Duration // start to "serving"
	served, failed   int
	rssIdle, rssWarm int64 // kB, after start and after every tenant's hook ran once
	hwm              int64 // kB, peak
	threads          int
	err              error
}

// cmdMemory runs `hostd bench --memory`: for each mode, N generated tenants
// (own uid, own hook: Lua and mruby alternately) are served by a fresh
// `hostd serve`, every tenant's hook is requested once over HTTPS, and the
// server's RSS and thread count are read from /proc (docs/bench.md).
func cmdMemory(o memoryOptions, stdout, stderr io.Writer) int {
	if o.tenants <= 0 {
		o.tenants = 10000
	}
	if o.uidBase == 0 {
		o.uidBase = 40000
	}
	if o.conns <= 0 {
		o.conns = 8
	}
	if o.binary == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(stderr, "hostd bench:", err)
			return 1
		}
		o.binary = exe
	}
	// Each vhost holds a descriptor per root of its file gate: raise the
	// limit the servers inherit as far as this process may.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		want := uint64(4*o.tenants + 1024)
		if lim.Max < want && os.Geteuid() == 0 {
			lim.Max = want
		}
		lim.Cur = lim.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	var results []memoryResult
	for _, mode := range o.modes {
		fmt.Fprintf(stderr, "memory: %d tenants in mode %s ...\n", o.tenants, mode)
		results = append(results, memoryRun(o, mode))
	}
	fmt.Fprintf(stdout, "hostd bench --memory: %d tenants, each with its own uid and one warm hook (Lua and mruby alternately), one shared document root\n", o.tenants)
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tstartup s\tserved\tfailed\tRSS idle MB\tRSS warm MB\tpeak MB\tper tenant KB\tthreads\t")
	failed := false
	for _, r := range results {
		if r.err != nil {
			failed = true
			fmt.Fprintf(tw, "%s\tFAILED: %v\t\t\t\t\t\t\t\t\n", r.mode, r.err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.1f\t%d\t\n", r.mode, r.startup.Seconds(), r.served, r.failed,
			float64(r.rssIdle)/1024, float64(r.rssWarm)/1024, float64(r.hwm)/1024, float64(r.rssWarm)/float64(o.tenants), r.threads)
	}
	tw.Flush()
	if failed {
		return 1
	}
	return 0
}

func memoryRun(o memoryOptions, mode string) (res memoryResult) {
	res.mode = mode
	dir, err := os.MkdirTemp("", "hostd-memory-")
	if err != nil {
		res.err = err
		return res
	}
	defer os.RemoveAll(dir)
	uidBase := o.uidBase
	if mode == "none" {
		uidBase = 0
	}
	if err := genVHosts(dir, o.tenants, "127.0.0.1:0", "", genOptions{sandbox: mode, uidBase: uidBase, hooks: true}); err != nil {
		res.err = err
		return res
	}
	// Generated certificates are made once, before the measured start.
	if out, err := exec.Command(o.binary, "check", "--config", filepath.Join(dir, "hostd.toml")).CombinedOutput(); err != nil {
		res.err = fmt.Errorf("check: %v: %s", err, firstLine(string(out)))
		return res
	}
	if err := warmCertificates(o.binary, dir); err != nil {
		res.err = err
		return res
	}
	start := time.Now()
	cmd := exec.Command(o.binary, "serve", "--config", filepath.Join(dir, "hostd.toml"))
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		res.err = err
		return res
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	logTail := &tailWriter{max: 20}
	addr, err := servingAddr(io.TeeReader(stderr, logTail), 10*time.Minute)
	if err != nil {
		res.err = err
		return res
	}
	res.startup = time.Since(start)
	pid := cmd.Process.Pid
	time.Sleep(time.Second)
	res.rssIdle, _, _ = procMemory(pid)

	var next, served, failed atomic.Int64
	var wg sync.WaitGroup
	for range o.conns {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < o.tenants; i = int(next.Add(1) - 1) {
				name := fmt.Sprintf("v%05d", i)
				if hookGet(addr, name+".test", "hello from "+name+"\n") {
					served.Add(1)
				} else {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res.served, res.failed = int(served.Load()), int(failed.Load())
	time.Sleep(time.Second)
	res.rssWarm, res.hwm, res.threads = procMemory(pid)
	if res.rssWarm == 0 {
		res.err = fmt.Errorf("the server died: %s", logTail.String())
	}
	return res
}

// tailWriter keeps the last max lines written to it; it is safe for
// concurrent use.
type tailWriter struct {
	mu    sync.Mutex
	max   int
	lines []string
	part  string
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.part + string(p)
	parts := strings.Split(s, "\n")
	t.part = parts[len(parts)-1]
	for _, l := range parts[:len(parts)-1] {
		t.lines = append(t.lines, l)
		if len(t.lines) > t.max {
			t.lines = t.lines[1:]
		}
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(append(t.lines, t.part), " | ")
}

// warmCertificates starts the server once so that it generates and stores
// every vhost's certificate, then stops it.
func warmCertificates(binary, dir string) error {
	cmd := exec.Command(binary, "serve", "--config", filepath.Join(dir, "hostd.toml"))
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return err
	}
	_, err := servingAddr(stderr, 10*time.Minute)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	return err
}

// servingAddr reads a server's log until its "serving" line and returns
// the HTTPS address; the rest of the log is drained.
func servingAddr(r io.Reader, timeout time.Duration) (string, error) {
	addrc := make(chan string, 1)
	var last atomic.Value
	go func() {
		sc := bufio.NewScanner(r)
		sent := false
		for sc.Scan() {
			l := sc.Text()
			last.Store(l)
			if !sent && strings.Contains(l, "msg=serving") {
				for _, f := range strings.Fields(l) {
					if a, ok := strings.CutPrefix(f, "https="); ok {
						addrc <- a
						sent = true
					}
				}
			}
		}
		if !sent {
			close(addrc)
		}
	}()
	select {
	case a, ok := <-addrc:
		if !ok {
			l, _ := last.Load().(string)
			return "", fmt.Errorf("server exited before serving: %s", l)
		}
		return a, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("server did not start within %s", timeout)
	}
}

// hookGet requests /hook of vhost sni on a new connection and checks the
// body.
func hookGet(addr, sni, want string) bool {
	c := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		TLSClientConfig:   &tls.Config{ServerName: sni, InsecureSkipVerify: true},
		DisableKeepAlives: true,
	}, Timeout: 30 * time.Second}
	resp, err := c.Get("https://" + sni + "/hook")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == 200 && string(b) == want
}

// procMemory returns a process's VmRSS and VmHWM (kB) and thread count.
func procMemory(pid int) (rss, hwm int64, threads int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = n
		case "VmHWM:":
			hwm = n
		case "Threads:":
			threads = int(n)
		}
	}
	return rss, hwm, threads
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
