package host_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// chown gives paths under dir to uid (group uid) with mode.
func chown(t *testing.T, dir string, uid int, mode os.FileMode, paths ...string) {
	t.Helper()
	for _, p := range paths {
		p = filepath.Join(dir, p)
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// asTenant runs a shell command as uid in dir, as a tenant's own process
// (an SSH session, a cron job) would.
func asTenant(t *testing.T, uid int, dir, script string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %s: %v %s", uid, script, err, out)
	}
}

// noControlBytes fails on a log line holding a byte that could end or
// forge a line or drive a terminal.
func noControlBytes(t *testing.T, file, line string) {
	t.Helper()
	for i := 0; i < len(line); i++ {
		if c := line[i]; c < 0x20 || c == 0x7f {
			t.Errorf("%s: line %q holds byte %#x", file, line, c)
			return
		}
	}
	if strings.ContainsAny(line, "\u009b\u202e\u2028") {
		t.Errorf("%s: line %q holds an invisible control character", file, line)
	}
}

// logSite is alice (uid 31001, thread mode) with her own error and access
// logs in a root-owned logs/ directory, a Lua hook that logs, and a CGI
// script in a directory whose name holds a newline and a cron line.
func logSite(t *testing.T, format string) *hosttest.Server {
	t.Helper()
	dir := tenantDir(t)
	cgiDir := "cgi\n* * * * * root touch /pwned"
	hosttest.Write(t, dir, hosttest.Files{
		"hostd.toml": hosttest.MainConfig + "log_format = \"" + format + "\"\n",
		"vhosts.d/alice.toml": `server_name = "alice.example"
root = "../alice"
user = "31001"
sandbox = "thread"
error_log = "../logs/alice.error.log"
access_log = "../logs/alice.access.log"
[cgi]
enabled = true
[[hooks]]
phase = "content"
file = "../hooks/log.lua"
path = "/log"
`,
		"hooks/log.lua": `hostd.log("warn", "hook said\nFAKE level=ERROR msg=\"root\"\27[2J\0end")
print("p\r\nq", "\226\128\174rtl")
r:write("ok")`,
		"alice/index.html":      "alice\n",
		"alice/" + cgiDir + "/": "",
		"alice/" + cgiDir + "/t.cgi": "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nok\\n'\n" +
			"printf 'err1\\n* * * * * root touch /pwned2\\033[2J\\r\\000end\\n' >&2\n",
	})
	chown(t, dir, aliceUID, 0o755, "alice", "alice/"+cgiDir, "alice/"+cgiDir+"/t.cgi")
	return hosttest.StartDir(t, dir)
}

// TestLogLinesAreData: a client and a tenant write what they like into
// every log (basic-auth user, user agent, hook messages, CGI stderr, a CGI
// directory name); each event stays one escaped line, in both access log
// formats.
func TestLogLinesAreData(t *testing.T) {
	requireRoot(t)
	for _, format := range []string{"combined", "json"} {
		t.Run(format, func(t *testing.T) {
			s := logSite(t, format)
			c := s.Client("alice.example", false)
			get := func(path string) {
				req, _ := http.NewRequest("GET", "https://alice.example"+path, nil)
				req.SetBasicAuth("ev\nil\x1b[31m", "pw")
				req.Header.Set("User-Agent", "ua\tx \u009b31m \u202eevil")
				if r := hosttest.Do(t, c, req); r.StatusCode != 200 {
					t.Fatalf("GET %s: %d %q", path, r.StatusCode, r.Body)
				}
			}
			get("/log")
			get("/cgi%0A*%20*%20*%20*%20*%20root%20touch%20%2Fpwned/t.cgi")
			get("/")
			s.Stop()
			logs := filepath.Join(s.Dir, "logs")
			for _, f := range []string{"access.log", "alice.access.log"} {
				b, err := os.ReadFile(filepath.Join(logs, f))
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
				if len(lines) != 3 {
					t.Fatalf("%s: %d lines for 3 requests:\n%s", f, len(lines), b)
				}
				for _, l := range lines {
					noControlBytes(t, f, l)
					if format == "json" && !json.Valid([]byte(l)) {
						t.Errorf("%s: not one JSON object: %q", f, l)
					}
				}
				if want := `ev\x0ail\x1b[31m`; !strings.Contains(strings.ReplaceAll(lines[0], `\\`, `\`), want) {
					t.Errorf("%s: %q lacks the escaped user %s", f, lines[0], want)
				}
				if want := `ua\x09x`; !strings.Contains(strings.ReplaceAll(lines[0], `\\`, `\`), want) {
					t.Errorf("%s: %q lacks the escaped user agent", f, lines[0])
				}
			}
			b, err := os.ReadFile(filepath.Join(logs, "alice.error.log"))
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			for _, want := range []string{`hook said\x0aFAKE level=ERROR msg=\x22root\x22\x1b[2J\x00end`, `p\x0d\x0aq\x09\u+202ertl`,
				`cgi\x0a* * * * * root touch /pwned/t.cgi: err1`, `cgi\x0a* * * * * root touch /pwned/t.cgi: * * * * * root touch /pwned2\x1b[2J\x0d\x00end`} {
				if !strings.Contains(text, want) {
					t.Errorf("error log lacks %s:\n%s", want, text)
				}
			}
			for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
				noControlBytes(t, "alice.error.log", l)
				if strings.HasPrefix(l, "*") || strings.HasPrefix(l, "FAKE") {
					t.Errorf("a tenant started a log line: %q", l)
				}
			}
			// The tenant can read its own error log, not write it.
			fi, _ := os.Stat(filepath.Join(logs, "alice.error.log"))
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != aliceUID || fi.Mode().Perm() != 0o640 {
				t.Errorf("alice.error.log: %d:%d %v, want root:%d 0640", st.Uid, st.Gid, fi.Mode(), aliceUID)
			}
		})
	}
}

// TestLogSymlinkAttack: the tenant's log directory became writable by the
// tenant after the server started (the configuration check refuses it at
// load, see tenant.TestLogPathRefused); the tenant replaces its logs with
// symbolic links to a file in a root-only directory and asks for a reopen
// (SIGUSR1 after logrotate). Nothing is created there, nothing is followed,
// and the lines go on into the files already open, escaped.
func TestLogSymlinkAttack(t *testing.T) {
	requireRoot(t)
	s := logSite(t, "combined")
	logs := filepath.Join(s.Dir, "logs")
	secret := filepath.Join(s.Dir, "secret")
	if err := os.Mkdir(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	c := s.Client("alice.example", false)
	hosttest.Get(t, c, "https://alice.example/log")
	chown(t, s.Dir, aliceUID, 0o755, "logs")
	asTenant(t, aliceUID, logs, "for f in alice.error.log alice.access.log; do mv $f $f.old && ln -s ../secret/cron $f; done")
	if err := s.ReopenLogs(); err == nil {
		t.Error("ReopenLogs followed the tenant's links without an error")
	}
	hosttest.Get(t, c, "https://alice.example/cgi%0A*%20*%20*%20*%20*%20root%20touch%20%2Fpwned/t.cgi")
	if _, err := os.Lstat(filepath.Join(secret, "cron")); err == nil {
		t.Fatal("the server created the file the tenant's link points to")
	}
	for _, f := range []string{"alice.error.log", "alice.access.log"} {
		if fi, err := os.Lstat(filepath.Join(logs, f)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s was replaced: %v", f, err)
		}
	}
	sandboxtest.WaitFor(t, "the CGI's stderr in the log file already open (alice.error.log.old)", func() bool {
		b, _ := os.ReadFile(filepath.Join(logs, "alice.error.log.old"))
		return strings.Contains(string(b), "touch /pwned/t.cgi: * * * * * root touch /pwned2")
	})
}

// procFDSite is carol (31001) and dave (31002, whose document root inside
// his 0700 home holds a 0644 file): the server holds dave's document root
// open; carol tries to reach it through /proc/self/fd, past dave's home,
// from her hook, her CGI script and a symlink.
func procFDSite(t *testing.T, mode string) (*hosttest.Server, string) {
	t.Helper()
	dir := tenantDir(t)
	extra := ""
	if mode == "none" || mode == "suexec" {
		extra = "run_as_server = true\n"
	}
	vhost := func(name, root string, uid int) string {
		return fmt.Sprintf("server_name = %q\nroot = \"../%s\"\nuser = \"%d\"\nsandbox = %q\n%s[cgi]\nenabled = %v\n"+
			"[[hooks]]\nphase = \"content\"\nfile = \"../hooks/probe.lua\"\npath = \"/probe\"\n",
			name+".example", root, uid, mode, extra, mode != "none")
	}
	hosttest.Write(t, dir, hosttest.Files{
		"hostd.toml":          hosttest.MainConfig,
		"vhosts.d/carol.toml": vhost("carol", "carol", aliceUID),
		"vhosts.d/dave.toml":  vhost("dave", "dave/public", bobUID),
		"hooks/probe.lua": `local f, err = io.open(r.args.file, r.args.mode or "r")
if not f then r:write("DENIED") return end
if r.args.mode == "w" then f:write("hostd-pwned") f:close() r:write("WROTE") return end
local s = f:read("*a") f:close() r:write("READ:" .. tostring(s))`,
		"carol/index.html":     "carol\n",
		"carol/cat.cgi":        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\ncat \"$QUERY_STRING\" 2>/dev/null || echo DENIED\n",
		"dave/public/semi.txt": "dave's semi-private file\n",
	})
	chown(t, dir, aliceUID, 0o755, "carol", "carol/cat.cgi")
	chown(t, dir, bobUID, 0o700, "dave")
	chown(t, dir, bobUID, 0o755, "dave/public")
	chown(t, dir, bobUID, 0o644, "dave/public/semi.txt")
	if err := syscall.Mkfifo(filepath.Join(dir, "carol/fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	chown(t, dir, aliceUID, 0o666, "carol/fifo")
	s := hosttest.StartDir(t, dir)
	// The server's descriptor of dave's root (his file gate's root).
	ents, _ := os.ReadDir("/proc/self/fd")
	daveRoot := filepath.Join(dir, "dave/public")
	for _, e := range ents {
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); target == daveRoot {
			return s, "/proc/self/fd/" + e.Name()
		}
	}
	t.Fatal("the server holds no descriptor of dave's root")
	return nil, ""
}

// TestProcSelfFDRoute: in every mode, no tenant path reaches another
// tenant's file through the directories the server holds open, nor
// /proc, /sys or /dev, nor blocks the server on a FIFO.
func TestProcSelfFDRoute(t *testing.T) {
	requireRoot(t)
	for _, mode := range []string{"uring", "thread", "thread-per-request", "inline", "suexec", "none"} {
		t.Run(mode, func(t *testing.T) {
			s, fd := procFDSite(t, mode)
			carol := s.Client("carol.example", false)
			semi := fd + "/semi.txt"
			probe := func(file, fmode string) string {
				return hosttest.Get(t, carol, "https://carol.example/probe?mode="+fmode+"&file="+file).Body
			}
			for _, p := range []string{semi, strings.Replace(fd, "self", "thread-self", 1) + "/semi.txt",
				"/proc/self/environ", "/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/comm", "/sys/kernel/hostname", "/dev/zero",
				filepath.Join(s.Dir, "carol/fifo")} {
				if got := probe(p, "r"); got != "DENIED" {
					t.Errorf("hook read %s: %.60q", p, got)
				}
			}
			tasks, _ := filepath.Glob("/proc/self/task/*/comm")
			for _, p := range append(tasks[:1], "/proc/thread-self/comm", semi) {
				if got := probe(p, "w"); got != "DENIED" {
					t.Errorf("hook write %s: %q", p, got)
				}
			}
			// A symlink in carol's root to dave's file through the fd.
			os.Symlink(semi, filepath.Join(s.Dir, "carol/link.txt"))
			if r := hosttest.Get(t, carol, "https://carol.example/link.txt"); r.StatusCode == 200 || strings.Contains(r.Body, "semi") {
				t.Errorf("static symlink through %s: %d %q", fd, r.StatusCode, r.Body)
			}
			if mode != "none" { // CGI as the server is not a tenant boundary
				pidFD := strings.Replace(fd, "self", strconv.Itoa(os.Getpid()), 1) + "/semi.txt"
				if r := hosttest.Get(t, carol, "https://carol.example/cat.cgi?"+pidFD); r.Body != "DENIED\n" {
					t.Errorf("CGI cat %s: %q", pidFD, r.Body)
				}
			}
			b, _ := os.ReadFile(filepath.Join(s.Dir, "dave/public/semi.txt"))
			if string(b) != "dave's semi-private file\n" {
				t.Errorf("dave's file now holds %q", b)
			}
			if r := hosttest.Get(t, carol, "https://carol.example/"); r.Body != "carol\n" {
				t.Errorf("carol after the probes: %q", r.Body)
			}
		})
	}
}

// cgiSite is alice (CGI, thread mode, tight limits) and bob (static).
func cgiSite(t *testing.T, limits string, scripts map[string]string) *hosttest.Server {
	t.Helper()
	dir := tenantDir(t)
	files := hosttest.Files{
		"hostd.toml": hosttest.MainConfig + "max_conns_per_ip = -1\n",
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\nuser = \"31001\"\nsandbox = \"thread\"\n" +
			"[limits]\n" + limits + "[cgi]\nenabled = true\n",
		"vhosts.d/bob.toml": "server_name = \"bob.example\"\nroot = \"../bob\"\n",
		"bob/index.html":    "bob\n",
		"alice/index.html":  "alice\n",
	}
	own := []string{"alice"}
	for name, body := range scripts {
		files["alice/"+name] = "#!/bin/sh\n" + body
		own = append(own, "alice/"+name)
	}
	hosttest.Write(t, dir, files)
	chown(t, dir, aliceUID, 0o755, own...)
	return hosttest.StartDir(t, dir)
}

// aliveAs reports whether pid is a live process of uid.
func aliveAs(pid string, uid int) bool {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	return err == nil && !strings.Contains(string(b), "(zombie)") && strings.Contains(string(b), "Uid:\t"+strconv.Itoa(uid)+"\t")
}

// processesOf counts the live processes of uid.
func processesOf(uid int) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil && aliveAs(e.Name(), uid) {
			n++
		}
	}
	return n
}

// TestCGIContainment: what a CGI script starts does not outlive its
// request by more than cgi_grace, its limits are in force, and a fork bomb
// leaves the server answering the other tenants.
func TestCGIContainment(t *testing.T) {
	requireRoot(t)
	const q = " >/dev/null 2>&1 </dev/null"
	s := cgiSite(t, "cgi_grace = \"300ms\"\ncgi_processes = 40\ncgi_timeout = \"10s\"\n", map[string]string{
		"daemon.cgi": "printf 'Content-Type: text/plain\\n\\n'\n" +
			"setsid sleep 600" + q + " & echo $!\n(setsid sleep 601" + q + " & echo $!)\n(sleep 602" + q + " & echo $!)\n",
		"limits.cgi": "printf 'Content-Type: text/plain\\n\\n'\ncat /proc/self/limits\n",
		"bomb.cgi":   "printf 'Content-Type: text/plain\\n\\n'\nexec 2>/dev/null\nb() { b | b & }\nb >/dev/null\nsleep 3\necho survived\n",
	})
	alice, bob := s.Client("alice.example", false), s.Client("bob.example", false)

	r := hosttest.Get(t, alice, "https://alice.example/daemon.cgi")
	pids := strings.Fields(r.Body)
	if r.StatusCode != 200 || len(pids) != 3 {
		t.Fatalf("daemon.cgi: %d %q", r.StatusCode, r.Body)
	}
	for _, pid := range pids {
		sandboxtest.WaitFor(t, "process "+pid+" the script started to end (cgi_grace 300ms)", func() bool { return !aliveAs(pid, aliceUID) })
	}

	r = hosttest.Get(t, alice, "https://alice.example/limits.cgi")
	for _, want := range []string{"Max processes 40", "Max cpu time 10", "Max data size 536870912", "Max open files 1024"} {
		found := false
		for _, l := range strings.Split(r.Body, "\n") {
			if f := strings.Fields(l); len(f) > 3 && strings.Join(f[:len(f)-2], " ") == want {
				found = true
			}
		}
		if !found {
			t.Errorf("limits.cgi lacks %q:\n%s", want, r.Body)
		}
	}

	// The bomb runs for 3s; bob is served meanwhile.
	done := make(chan hosttest.Response, 1)
	go func() {
		resp, err := alice.Get("https://alice.example/bomb.cgi")
		if err != nil {
			done <- hosttest.Response{}
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var body strings.Builder
		for sc.Scan() {
			body.WriteString(sc.Text())
		}
		done <- hosttest.Response{Response: resp, Body: body.String()}
	}()
	sandboxtest.WaitFor(t, "the fork bomb to fork", func() bool { return processesOf(aliceUID) > 1 })
	for i := 0; i < 20; i++ {
		if r := hosttest.Get(t, bob, "https://bob.example/"); r.StatusCode != 200 || r.Body != "bob\n" {
			t.Fatalf("bob during alice's fork bomb: %d %q", r.StatusCode, r.Body)
		}
		if n := processesOf(aliceUID); n > 40 {
			t.Errorf("alice has %d processes, over cgi_processes = 40", n)
		}
	}
	if r := <-done; r.Body != "survived" {
		t.Errorf("bomb.cgi: %q", r.Body)
	}
	sandboxtest.WaitFor(t, "the fork bomb's processes to end with its request", func() bool { return processesOf(aliceUID) == 0 })
}

// TestCGICutBodyIsCut: a script killed at cgi_timeout after sending part
// of its body gives the client a transfer error, never a complete-looking
// response (HTTP/1.1: no last chunk and the connection closed; HTTP/2:
// RST_STREAM), as curl sees it.
func TestCGICutBodyIsCut(t *testing.T) {
	requireRoot(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is not installed (make deps installs it)")
	}
	s := cgiSite(t, "cgi_timeout = \"1s\"\n", map[string]string{
		"cut.cgi": "printf 'Content-Type: text/plain\\n\\npart\\n'\nsleep 30\necho rest\n",
	})
	_, port, _ := strings.Cut(s.HTTPSAddr(), ":")
	for _, proto := range []string{"--http1.1", "--http2"} {
		cmd := exec.Command(curl, "-sS", "-k", proto, "--resolve", "alice.example:"+port+":127.0.0.1",
			"https://alice.example:"+port+"/cut.cgi")
		out, err := cmd.Output()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() == 0 {
			t.Errorf("curl %s: %v, body %q: want a transfer error", proto, err, out)
			continue
		}
		if string(out) != "part\n" {
			t.Errorf("curl %s (exit %d): body %q, want only what the script sent", proto, ee.ExitCode(), out)
		}
		t.Logf("curl %s: exit %d: %s", proto, ee.ExitCode(), strings.TrimSpace(string(ee.Stderr)))
	}
	// The Go client agrees, and the server goes on.
	if resp, err := s.Client("alice.example", false).Get("https://alice.example/cut.cgi"); err == nil {
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("Go client read %q and a clean end", b)
		}
	}
	if r := hosttest.Get(t, s.Client("alice.example", false), "https://alice.example/"); r.Body != "alice\n" {
		t.Errorf("after the cut: %q", r.Body)
	}
	if !strings.Contains(s.Logs.String(), "time limit exceeded while sending the body") {
		t.Errorf("server log lacks the cut:\n%s", s.Logs.String())
	}
}
