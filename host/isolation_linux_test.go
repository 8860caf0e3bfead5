package host_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// Test tenants: numeric ids with no passwd entries.
const (
	aliceUID = 31001
	bobUID   = 31002
)

func requireRoot(t testing.TB) {
	t.Helper()
	sandboxtest.RequireRoot(t)
}

// isolationSite builds two tenants in mode: alice and bob, each owning a
// docroot with a 0600 file only its owner can read, a CGI directory and
// a Lua hook; alice's root also holds a hard link to bob's secret, a file
// owned by bob, a root-owned 0600 file and symbolic links out of it
// (to bob's secret, and to /proc/self/fd/N of bob's root), which a
// root-identity open confined to the root would happily open (or follow):
// only the kernel, checking the tenant's identity, and the file gate keep
// them out. Both tenants list shared/ as an io_root, where bob owns a 0600
// file and root a 0644 one. Extra lines go at the top level of both vhost
// files.
func isolationSite(t *testing.T, mode string, extra ...string) *hosttest.Server {
	t.Helper()
	dir := tenantDir(t)
	vhost := func(name string, uid int) string {
		return fmt.Sprintf(`server_name = %q
root = "../%s"
user = "%d"
sandbox = %q
io_roots = ["../shared"]
%s
[limits]
worker_idle = "300ms"
max_workers = 16
script_timeout = "20s" # the stress test runs 400 requests at once under -race
max_concurrent_per_client = -1 # ... all from 127.0.0.1
[cgi]
enabled = true
[[hooks]]
phase = "content"
file = "../hooks/%s/probe.lua"
path = "/probe"
`, name+".example", name, uid, mode, strings.Join(extra, "\n"), name)
	}
	probe := `
local what = r.args.what
if what == "read" then
  local f = io.open(r.args.file, "r")
  if f then r:write("READ:" .. f:read("*a")) f:close() else r:write("DENIED") end
elseif what == "write" then
  local f = io.open(r.args.file, "w")
  if f then f:write("x") f:close() r:write("WROTE") else r:write("DENIED") end
elseif what == "rename" then
  local ok = os.rename(r.args.file, r.args.to)
  r:write(ok and "RENAMED" or "DENIED")
elseif what == "remove" then
  local ok = os.remove(r.args.file)
  r:write(ok and "REMOVED" or "DENIED")
elseif what == "require" then
  local ok, m = pcall(require, r.args.mod)
  r:write(ok and ("LOADED:" .. tostring(m)) or ("FAILED:" .. tostring(m)))
end`
	hosttest.Write(t, dir, hosttest.Files{
		// Admission control and the per-IP limit off: the stress test opens
		// hundreds of connections at once (Go dials one per request until ALPN
		// says h2).
		"hostd.toml":            hosttest.MainConfig + "max_handshakes = -1\naccept_rate = -1\nmax_conns_per_ip = -1\n",
		"vhosts.d/alice.toml":   vhost("alice", aliceUID),
		"vhosts.d/bob.toml":     vhost("bob", bobUID),
		"alice/index.html":      "alice home\n",
		"alice/whoami.txt":      "alice\n",
		"alice/rootonly.txt":    "root's secret\n",
		"alice/cgi/id.cgi":      "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nid -u\ncat \"$QUERY_STRING\" 2>/dev/null || echo DENIED\n",
		"bob/index.html":        "bob home\n",
		"bob/whoami.txt":        "bob\n",
		"bob/secret.txt":        "bob secret\n",
		"bob/cgi/id.cgi":        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nid -u\n",
		"hooks/alice/probe.lua": probe,
		"hooks/bob/probe.lua":   probe,
		"shared/bob.txt":        "bob's shared secret\n",
		"shared/open.txt":       "open\n",
		"outside/":              "",
	})
	own := func(uid int, mode os.FileMode, paths ...string) { chown(t, dir, uid, mode, paths...) }
	own(aliceUID, 0o755, "alice", "alice/cgi", "alice/cgi/id.cgi")
	own(aliceUID, 0o600, "alice/whoami.txt")
	own(aliceUID, 0o644, "alice/index.html")
	own(0, 0o600, "alice/rootonly.txt")
	own(bobUID, 0o755, "bob", "bob/cgi", "bob/cgi/id.cgi")
	own(bobUID, 0o600, "bob/whoami.txt", "bob/secret.txt", "shared/bob.txt")
	own(bobUID, 0o644, "bob/index.html")
	if err := os.Link(filepath.Join(dir, "bob/secret.txt"), filepath.Join(dir, "alice/hardlink.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alice/bobs.txt"), []byte("bob's file in alice's root\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	own(bobUID, 0o600, "alice/bobs.txt")
	if err := os.Symlink(filepath.Join(dir, "bob/secret.txt"), filepath.Join(dir, "alice/symlink.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/shadow", filepath.Join(dir, "hooks/alice/shadow.lua")); err != nil {
		t.Fatal(err)
	}
	s := hosttest.StartDir(t, dir)
	// The server holds a descriptor of bob's root: alice's symbolic link
	// to it through /proc/self/fd must lead nowhere.
	if fd := fdOf(t, filepath.Join(dir, "bob")); fd >= 0 {
		if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", fd), filepath.Join(dir, "alice/procfd")); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// fdOf returns a descriptor of this process open on path, or -1.
func fdOf(t *testing.T, path string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == path {
			n, _ := strconv.Atoi(e.Name())
			return n
		}
	}
	return -1
}

// tenantDir returns a temp dir that the test tenants can traverse
// (t.TempDir makes 0700 directories).
func tenantDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for p := dir; p != "/"; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o111); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// checkingModes are the modes in which the kernel checks a tenant's file
// operations against the tenant's identity.
var checkingModes = []string{"uring", "thread", "thread-per-request", "inline"}

func TestTenantIsolation(t *testing.T) {
	requireRoot(t)
	for _, mode := range checkingModes {
		t.Run(mode, func(t *testing.T) {
			s := isolationSite(t, mode)
			alice, bob := s.Client("alice.example", true), s.Client("bob.example", false)
			secret := filepath.Join(s.Dir, "bob/secret.txt")
			get := func(c *http.Client, host, path string) hosttest.Response {
				return hosttest.Get(t, c, "https://"+host+path)
			}
			probe := func(what string, args ...string) string {
				q := url.Values{"what": {what}}
				for i := 0; i+1 < len(args); i += 2 {
					q.Set(args[i], args[i+1])
				}
				return get(alice, "alice.example", "/probe?"+q.Encode()).Body
			}
			// Each tenant reads its own 0600 file: the kernel saw its uid.
			if r := get(alice, "alice.example", "/whoami.txt"); r.StatusCode != 200 || r.Body != "alice\n" {
				t.Errorf("alice's own 0600 file: %d %q", r.StatusCode, r.Body)
			}
			if r := get(bob, "bob.example", "/secret.txt"); r.StatusCode != 200 || r.Body != "bob secret\n" {
				t.Errorf("bob's own secret: %d %q", r.StatusCode, r.Body)
			}
			// Static: a hard link and a bob-owned file inside alice's
			// root, a root-owned 0600 file (no CAP_DAC_OVERRIDE), a
			// symlink out of the root and one through /proc/self/fd.
			for _, p := range []string{"/hardlink.txt", "/bobs.txt", "/rootonly.txt", "/symlink.txt", "/procfd/secret.txt"} {
				r := get(alice, "alice.example", p)
				if r.StatusCode != 403 && r.StatusCode != 404 || strings.Contains(r.Body, "secret") {
					t.Errorf("alice GET %s: %d %q", p, r.StatusCode, r.Body)
				}
			}
			// CGI: runs as alice, cannot read bob's file.
			r := get(alice, "alice.example", "/cgi/id.cgi?"+secret)
			if r.StatusCode != 200 || r.Body != fmt.Sprintf("%d\nDENIED\n", aliceUID) {
				t.Errorf("alice's CGI: %d %q", r.StatusCode, r.Body)
			}
			if r := get(bob, "bob.example", "/cgi/id.cgi"); r.Body != fmt.Sprintf("%d\n", bobUID) {
				t.Errorf("bob's CGI: %q", r.Body)
			}
			// Lua io: alice's own files and her io_roots yes...
			for file, want := range map[string]string{
				"whoami.txt":                             "READ:alice\n",
				filepath.Join(s.Dir, "alice/whoami.txt"): "READ:alice\n",
				filepath.Join(s.Dir, "shared/open.txt"):  "READ:open\n",
			} {
				if got := probe("read", "file", file); got != want {
					t.Errorf("alice's hook reading %s: %q, want %q", file, got, want)
				}
			}
			// ... but nothing of bob's, root's or the server's, inside
			// her directories (the kernel) or outside them (the gate).
			fd := fdOf(t, filepath.Join(s.Dir, "bob"))
			for _, file := range []string{
				secret, "hardlink.txt", "bobs.txt", "rootonly.txt", "symlink.txt", "procfd/secret.txt",
				filepath.Join(s.Dir, "shared/bob.txt"),
				fmt.Sprintf("/proc/self/fd/%d/secret.txt", fd),
				fmt.Sprintf("/proc/thread-self/fd/%d/secret.txt", fd),
				"/proc/self/maps", "/proc/self/task/1/comm", "/etc/shadow",
				filepath.Join(s.Config.StateDir, "ticket.keys"),
				filepath.Join(s.Config.StateDir, "certs/alice.example.key"),
			} {
				if got := probe("read", "file", file); got != "DENIED" {
					t.Errorf("alice's hook reading %s: %q", file, got)
				}
			}
			if r := get(bob, "bob.example", "/probe?what=read&file="+secret); r.Body != "READ:bob secret\n" {
				t.Errorf("bob's hook reading his secret: %q", r.Body)
			}
			// Writes, renames and removals outside her own files fail.
			out := filepath.Join(s.Dir, "outside/x")
			for _, tc := range []struct{ what, file, to string }{
				{"write", out, ""},
				{"write", "/tmp/hostd-isolation-test", ""},
				{"write", filepath.Join(s.Dir, "bob/planted.txt"), ""},
				{"write", filepath.Join(s.Dir, "shared/planted.txt"), ""}, // root's 0755 directory
				{"rename", "hardlink.txt", "mine.txt"},                    // bob's file, alice's directory: allowed by the kernel
				{"rename", filepath.Join(s.Dir, "shared/bob.txt"), "stolen.txt"},
				{"rename", "whoami.txt", out},
				{"remove", secret, ""},
				{"remove", filepath.Join(s.Dir, "shared/open.txt"), ""},
			} {
				got := probe(tc.what, "file", tc.file, "to", tc.to)
				want := "DENIED"
				if tc.file == "hardlink.txt" {
					want = "RENAMED" // a rename in her own directory; the file stays bob's and unreadable
				}
				if got != want {
					t.Errorf("alice's hook: %s %s %s: %q, want %q", tc.what, tc.file, tc.to, got, want)
				}
			}
			if got := probe("read", "file", "mine.txt"); got != "DENIED" {
				t.Errorf("alice reading bob's renamed hard link: %q", got)
			}
			for _, p := range []string{out, "/tmp/hostd-isolation-test", filepath.Join(s.Dir, "bob/planted.txt"), filepath.Join(s.Dir, "shared/planted.txt")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s exists", p)
				}
			}
			for _, p := range []string{secret, filepath.Join(s.Dir, "shared/open.txt"), filepath.Join(s.Dir, "shared/bob.txt")} {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
			// A module that is a link to /etc/shadow is not read: no line
			// of it can end up in an error message.
			if got := probe("require", "mod", "shadow"); !strings.HasPrefix(got, "FAILED:") || strings.Contains(got, "root:") {
				t.Errorf("require of a link to /etc/shadow: %q", got)
			}
		})
	}
}

// TestNoneModeIsTheBaseline shows what the kernel check adds: in mode
// suexec (as in none) the server's (root) identity opens the hard link to
// bob's secret; hooks running as the server must be accepted with
// run_as_server. The file gate still applies: nothing outside the tenant's
// directories, no /proc.
func TestNoneModeIsTheBaseline(t *testing.T) {
	requireRoot(t)
	s := isolationSite(t, "suexec", "run_as_server = true")
	alice := s.Client("alice.example", false)
	if r := hosttest.Get(t, alice, "https://alice.example/hardlink.txt"); r.StatusCode != 200 || r.Body != "bob secret\n" {
		t.Errorf("suexec static file as server identity: %d %q", r.StatusCode, r.Body)
	}
	// CGI children still switch in suexec mode.
	secret := filepath.Join(s.Dir, "bob/secret.txt")
	if r := hosttest.Get(t, alice, "https://alice.example/cgi/id.cgi?"+secret); r.Body != fmt.Sprintf("%d\nDENIED\n", aliceUID) {
		t.Errorf("suexec CGI: %d %q", r.StatusCode, r.Body)
	}
	for _, file := range []string{secret, "/etc/shadow", "/proc/self/maps", "symlink.txt", "procfd/secret.txt", filepath.Join(s.Config.StateDir, "ticket.keys")} {
		if r := hosttest.Get(t, alice, "https://alice.example/probe?what=read&file="+url.QueryEscape(file)); r.Body != "DENIED" {
			t.Errorf("suexec hook reading %s: %q", file, r.Body)
		}
	}
	if r := hosttest.Get(t, alice, "https://alice.example/probe?what=read&file=hardlink.txt"); r.Body != "READ:bob secret\n" {
		t.Errorf("suexec hook reading the hard link as the server: %q", r.Body)
	}
}

// tenantThreads counts this process's threads whose effective uid is uid.
func tenantThreads(t *testing.T, uid int) int {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	n := 0
	for _, st := range tasks {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // the thread exited
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 5 && f[0] == "Uid:" && f[2] == strconv.Itoa(uid) {
				n++
			}
		}
	}
	return n
}

func TestTenantStress(t *testing.T) {
	requireRoot(t)
	for _, mode := range checkingModes {
		t.Run(mode, func(t *testing.T) {
			s := isolationSite(t, mode)
			var wg sync.WaitGroup
			var mu sync.Mutex
			bad := map[string]int{}
			for _, tn := range []string{"alice", "bob"} {
				c := s.Client(tn+".example", true)
				for i := 0; i < 200; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						path := "/whoami.txt"
						if i%2 == 1 {
							path = "/probe?what=read&file=" + filepath.Join(s.Dir, tn, "whoami.txt")
						}
						resp, err := c.Get("https://" + tn + ".example" + path)
						if err != nil {
							mu.Lock()
							bad["error: "+err.Error()]++
							mu.Unlock()
							return
						}
						defer resp.Body.Close()
						b, _ := io.ReadAll(resp.Body)
						body := strings.TrimPrefix(string(b), "READ:")
						if resp.StatusCode != 200 || body != tn+"\n" {
							mu.Lock()
							bad[fmt.Sprintf("%s got %d %q", tn, resp.StatusCode, body)]++
							mu.Unlock()
						}
					}()
				}
			}
			wg.Wait()
			for k, n := range bad {
				t.Errorf("%d x %s", n, k)
			}
			// Worker threads exit after worker_idle; no thread keeps a
			// tenant's uid.
			sandboxtest.WaitFor(t, "no thread with a tenant uid", func() bool { return tenantThreads(t, aliceUID)+tenantThreads(t, bobUID) == 0 })
		})
	}
}

// TestInlineSharedConnection: in inline mode the thread serving an
// HTTP/1.1 keep-alive connection is switched for each request and back
// after it, so a connection whose requests name two tenants (no SNI: the
// Host header decides) serves each with its own identity, and no thread
// keeps a tenant's uid between requests.
func TestInlineSharedConnection(t *testing.T) {
	requireRoot(t)
	s := isolationSite(t, "inline")
	conn, err := tls.Dial("tcp", s.HTTPSAddr(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	get := func(host, path string) (int, string) {
		t.Helper()
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	for i := 0; i < 3; i++ {
		if code, body := get("alice.example", "/whoami.txt"); code != 200 || body != "alice\n" {
			t.Fatalf("alice request %d: %d %q", i, code, body)
		}
		if n := tenantThreads(t, aliceUID); n != 0 {
			t.Errorf("between requests: %d threads with alice's uid", n)
		}
	}
	for _, tc := range []struct{ host, body string }{{"bob.example", "bob\n"}, {"alice.example", "alice\n"}, {"bob.example", "bob\n"}} {
		if code, body := get(tc.host, "/whoami.txt"); code != 200 || body != tc.body {
			t.Errorf("%s on a shared connection: %d %q", tc.host, code, body)
		}
		if code, body := get(tc.host, "/hardlink.txt"); tc.host == "alice.example" && (code == 200 || strings.Contains(body, "bob")) {
			t.Errorf("alice reached bob's secret on a shared connection: %d %q", code, body)
		}
	}
	conn.Close()
	sandboxtest.WaitFor(t, "no thread with a tenant uid after close", func() bool { return tenantThreads(t, aliceUID)+tenantThreads(t, bobUID) == 0 })
}
