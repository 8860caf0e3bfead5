package host_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
	"github.com/hostd/hostd/tenant"
)

func requirePHPFPM(t *testing.T) {
	t.Helper()
	requireRoot(t)
	if _, err := os.Stat(tenant.DefaultPHPFPM); err != nil {
		t.Fatalf("%s: %v (make deps installs %s)", tenant.DefaultPHPFPM, err, tenant.PHPFPMPackage)
	}
}

// phpScripts are the PHP pages every test tenant gets.
var phpScripts = map[string]string{
	"id.php":       `<?php header("Content-Type: text/plain"); echo posix_getuid(), " ", posix_geteuid(), " ", posix_getgid(), " ", posix_getegid(), "\n";`,
	"hello.php":    `<?php echo "Hello, world!\n";`,
	"read.php":     `<?php header("Content-Type: text/plain"); $s = @file_get_contents($_GET["f"]); echo $s === false ? "DENIED" : "READ:" . $s;`,
	"connect.php":  `<?php header("Content-Type: text/plain"); $c = @stream_socket_client("unix://" . $_GET["s"], $errno, $errstr, 2); echo $c ? "CONNECTED" : "REFUSED";`,
	"fatal.php":    "<?php\necho \"partial\";\nundefined_function_x(\"a\\nb\");\n",
	"post.php":     `<?php header("Content-Type: text/plain"); echo strlen(file_get_contents("php://input")), " ", $_SERVER["REQUEST_METHOD"], " ", $_SERVER["PATH_INFO"] ?? "-", " ", $_SERVER["HTTPS"] ?? "-";`,
	"redirect.php": `<?php header("Location: https://example.net/x", true, 301);`,
	"ini.php":      `<?php header("Content-Type: text/plain"); echo ini_get("memory_limit");`,
}

// phpSite starts a server with two PHP tenants: alice (thread mode) and
// bob (none mode: the pool still runs as bob). open_basedir is lifted for
// alice so that only the kernel stands between her PHP and bob's files and
// sockets. bob's root holds a 0600 secret; alice's root holds a hard link
// to it.
func phpSite(t *testing.T) *hosttest.Server {
	t.Helper()
	dir := tenantDir(t)
	vhost := func(name string, uid int, mode, extra string) string {
		return fmt.Sprintf(`server_name = %q
root = "../%s"
user = "%d"
sandbox = %q
error_log = "../logs/%s.error.log"
[php]
enabled = true
workers = 2
%s`, name+".example", name, uid, mode, name, extra)
	}
	files := hosttest.Files{
		"hostd.toml":          hosttest.MainConfig + "admin_listen = \"127.0.0.1:0\"\n",
		"vhosts.d/alice.toml": vhost("alice", aliceUID, "thread", "ini = { open_basedir = \"/\" }\n"),
		"vhosts.d/bob.toml":   vhost("bob", bobUID, "none", ""),
		"bob/secret.txt":      "bob secret\n",
		"logs/":               "",
	}
	for _, who := range []string{"alice", "bob"} {
		for name, src := range phpScripts {
			files[who+"/"+name] = src
		}
	}
	hosttest.Write(t, dir, files)
	for who, uid := range map[string]int{"alice": aliceUID, "bob": bobUID} {
		chownTree(t, filepath.Join(dir, who), uid)
	}
	if err := os.Chmod(filepath.Join(dir, "bob/secret.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "bob/secret.txt"), filepath.Join(dir, "alice/bobs-secret.txt")); err != nil {
		t.Fatal(err)
	}
	return hosttest.StartDir(t, dir)
}

func chownTree(t *testing.T, root string, uid int) {
	t.Helper()
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func phpStatus(t *testing.T, s *hosttest.Server, name string) admin.PHPStatus {
	t.Helper()
	if v, ok := s.Status().VHosts[name]; ok && v.PHP != nil {
		return *v.PHP
	}
	t.Fatalf("no PHP status for %s", name)
	return admin.PHPStatus{}
}

// procStatus returns the fields of /proc/PID/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return m
}

// groupMembers returns the live (not zombie) processes of group pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid && procStatus(t, pid)["State"][0] != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestPHPPoolPerTenant(t *testing.T) {
	requirePHPFPM(t)
	s := phpSite(t)
	alice, bob := s.Client("alice.example", true), s.Client("bob.example", false)
	get := func(c *http.Client, host, path string) hosttest.Response {
		return hosttest.Get(t, c, "https://"+host+path)
	}
	if st := phpStatus(t, s, "alice.example"); st.State != "idle" || st.Starts != 0 {
		t.Fatalf("before any request: %+v, want an idle pool that never started", st)
	}

	// Each tenant's PHP runs with all of its ids.
	for _, tc := range []struct {
		c    *http.Client
		host string
		uid  int
	}{{alice, "alice.example", aliceUID}, {bob, "bob.example", bobUID}} {
		r := get(tc.c, tc.host, "/id.php")
		want := fmt.Sprintf("%d %d %d %d\n", tc.uid, tc.uid, tc.uid, tc.uid)
		if r.StatusCode != 200 || r.Body != want {
			t.Fatalf("%s /id.php: %d %q, want %q", tc.host, r.StatusCode, r.Body, want)
		}
		// The master and its workers: the tenant's real, effective and
		// saved ids, no capabilities, no_new_privs.
		st := phpStatus(t, s, tc.host)
		if st.State != "running" || st.PID == 0 {
			t.Fatalf("%s pool after a request: %+v", tc.host, st)
		}
		members := groupMembers(t, st.PID)
		if len(members) < 2 {
			t.Fatalf("%s: pool group %v, want the master and a worker", tc.host, members)
		}
		for _, pid := range members {
			ps := procStatus(t, pid)
			ids := fmt.Sprintf("%d %d %d %d", tc.uid, tc.uid, tc.uid, tc.uid)
			if ps["Uid"] != ids || ps["Gid"] != ids || ps["CapEff"] != "0000000000000000" ||
				ps["CapPrm"] != "0000000000000000" || ps["NoNewPrivs"] != "1" || ps["Groups"] != "" {
				t.Errorf("%s pool process %d (%s): Uid %q Gid %q Groups %q CapEff %s CapPrm %s NoNewPrivs %s",
					tc.host, pid, ps["Name"], ps["Uid"], ps["Gid"], ps["Groups"], ps["CapEff"], ps["CapPrm"], ps["NoNewPrivs"])
			}
		}
	}

	// The pools in /metrics.
	mr, err := adminTarget{s.AdminAddr(), s.AdminToken()}.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mr.Body)
	mr.Body.Close()
	for _, want := range []string{`hostd_php_pool_up{vhost="alice.example"} 1`, `hostd_php_pool_starts_total{vhost="bob.example"} 1`,
		`hostd_php_requests_total{vhost="alice.example"} 1`, `hostd_php_connections{state="idle",vhost="alice.example"} 0`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Requests: body streamed, PATH_INFO, HTTPS; a connection per request.
	req, _ := http.NewRequest("POST", "https://alice.example/post.php/extra/info", strings.NewReader(strings.Repeat("x", 200000)))
	if r := hosttest.Do(t, alice, req); r.StatusCode != 200 || r.Body != "200000 POST /extra/info on" {
		t.Errorf("POST: %d %q", r.StatusCode, r.Body)
	}
	for range 5 {
		if r := get(alice, "alice.example", "/hello.php"); r.Body != "Hello, world!\n" {
			t.Fatalf("hello: %d %q", r.StatusCode, r.Body)
		}
	}
	if r := get(alice, "alice.example", "/redirect.php"); r.StatusCode != 301 || r.Header.Get("Location") != "https://example.net/x" {
		t.Errorf("redirect: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get(alice, "alice.example", "/bobs-secret.txt"); r.StatusCode == 200 {
		t.Errorf("static hard link to bob's 0600 file: %d %q", r.StatusCode, r.Body)
	}

	// Alice's PHP cannot read bob's 0600 file, through the hard link in
	// her own root or directly (open_basedir is lifted for her: this is
	// the kernel).
	for _, f := range []string{filepath.Join(s.Dir, "alice/bobs-secret.txt"), filepath.Join(s.Dir, "bob/secret.txt")} {
		if r := get(alice, "alice.example", "/read.php?f="+f); r.Body != "DENIED" {
			t.Errorf("alice's PHP reading %s: %d %q", f, r.StatusCode, r.Body)
		}
	}
	if r := get(alice, "alice.example", "/read.php?f="+filepath.Join(s.Dir, "alice/id.php")); !strings.HasPrefix(r.Body, "READ:") {
		t.Errorf("alice's PHP reading her own file: %q", r.Body)
	}
	// Nor connect to any pool's socket: bob's, nor even her own.
	socks, _ := filepath.Glob(filepath.Join(s.Config.StateDir, "php-fpm", "*.sock"))
	if len(socks) != 2 {
		t.Fatalf("pool sockets %v, want two", socks)
	}
	for _, sock := range socks {
		if r := get(alice, "alice.example", "/connect.php?s="+sock); r.Body != "REFUSED" {
			t.Errorf("alice's PHP connecting to %s: %q", sock, r.Body)
		}
	}

	// A fatal error: 500 and one line in the tenant's error log.
	if r := get(bob, "bob.example", "/fatal.php"); r.StatusCode != 500 {
		t.Errorf("fatal error: %d %q, want 500", r.StatusCode, r.Body)
	}
	logPath := filepath.Join(s.Dir, "logs/bob.error.log")
	sandboxtest.WaitFor(t, "the fatal error in bob's error log", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "undefined_function_x")
	})
	b, _ := os.ReadFile(logPath)
	t.Logf("bob's error log:\n%s", b)
	// One event, one line: the message and its stack trace, newlines
	// escaped, after the script's path.
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "undefined_function_x") {
			continue
		}
		n++
		if !strings.HasPrefix(line, filepath.Join(s.Dir, "bob/fatal.php")+": PHP message: PHP Fatal error:") || !strings.Contains(line, `\x0aStack trace:`) {
			t.Errorf("error log line %q: want the script's path, the message and its escaped stack trace", line)
		}
	}
	if n != 1 {
		t.Errorf("%d error log lines name the fatal error, want 1", n)
	}
	if strings.Contains(string(b), "\x1b") || strings.Contains(string(b), "\r") {
		t.Errorf("control bytes in the error log: %q", b)
	}

	// SIGKILL the master: hostd restarts it and the next request succeeds.
	st := phpStatus(t, s, "alice.example")
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if r := get(alice, "alice.example", "/hello.php"); r.StatusCode != 200 || r.Body != "Hello, world!\n" {
		t.Errorf("after SIGKILL: %d %q", r.StatusCode, r.Body)
	}
	sandboxtest.WaitFor(t, "a restarted master", func() bool {
		n := phpStatus(t, s, "alice.example")
		return n.State == "running" && n.PID != st.PID && n.Crashes == 1
	})
	if r := get(alice, "alice.example", "/id.php"); r.StatusCode != 200 || !strings.HasPrefix(r.Body, strconv.Itoa(aliceUID)) {
		t.Errorf("after the restart: %d %q", r.StatusCode, r.Body)
	}
	sandboxtest.WaitFor(t, "the killed master's group to empty", func() bool { return len(groupMembers(t, st.PID)) == 0 })

	// A reload that changes alice's [php] replaces her pool: the new
	// settings apply, the old master and its workers are gone.
	oldPID := phpStatus(t, s, "alice.example").PID
	alicePath := filepath.Join(s.Dir, "vhosts.d/alice.toml")
	ab, _ := os.ReadFile(alicePath)
	changed := strings.Replace(string(ab), `ini = { open_basedir = "/" }`, `ini = { open_basedir = "/", memory_limit = "77M" }`, 1)
	if err := os.WriteFile(alicePath, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Reload(context.Background()); err != nil || res.Changed != 1 {
		t.Fatalf("reload: %+v %v, want alice changed", res, err)
	}
	if r := get(alice, "alice.example", "/ini.php"); r.Body != "77M" {
		t.Errorf("memory_limit after the reload: %d %q, want 77M", r.StatusCode, r.Body)
	}
	sandboxtest.WaitFor(t, "alice's old pool to stop", func() bool { return len(groupMembers(t, oldPID)) == 0 })

	// Removing bob by reload stops his pool: no process of its group is
	// left and the socket is gone.
	bobPID := phpStatus(t, s, "bob.example").PID
	if err := os.Remove(filepath.Join(s.Dir, "vhosts.d/bob.toml")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	sandboxtest.WaitFor(t, "bob's pool to stop", func() bool { return len(groupMembers(t, bobPID)) == 0 })
	sandboxtest.WaitFor(t, "bob's socket to go", func() bool {
		socks, _ := filepath.Glob(filepath.Join(s.Config.StateDir, "php-fpm", "*.sock"))
		return len(socks) == 1 // alice's new pool's
	})
	if r := get(alice, "alice.example", "/hello.php"); r.StatusCode != 200 {
		t.Errorf("alice after bob's removal: %d", r.StatusCode)
	}
}

// phpChildren returns the php-fpm processes that are children of this
// process (the pools' masters: the spawner starts them).
func phpChildren(t *testing.T) []int {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var pids []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(field)
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && strings.Contains(exe, "php-fpm") {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestPHPTenThousandVHostsStartNothing: 10,000 vhosts with [php] enabled
// start no PHP process and create no socket until a request arrives, and
// then only the requested tenant's pool starts.
func TestPHPTenThousandVHostsStartNothing(t *testing.T) {
	requirePHPFPM(t)
	const n = 10000
	dir := tenantDir(t)
	files := hosttest.Files{
		"hostd.toml":     hosttest.MainConfig,
		"root/hello.php": phpScripts["hello.php"],
	}
	files["certs/"] = ""
	for i := range n {
		files[fmt.Sprintf("vhosts.d/v%05d.toml", i)] = fmt.Sprintf(`server_name = "v%05d.example"
root = "../root"
user = "%d"
tls_cert = "../certs/shared.pem"
tls_key = "../certs/shared.key"
[php]
enabled = true
`, i, 40000+i)
	}
	hosttest.Write(t, dir, files)
	writeListenerCert(t, filepath.Join(dir, "certs/shared.pem"), filepath.Join(dir, "certs/shared.key"))
	start := time.Now()
	s := hosttest.StartDir(t, dir)
	t.Logf("%d PHP vhosts loaded and built in %s", n, time.Since(start).Round(time.Millisecond))
	if pids := phpChildren(t); len(pids) != 0 {
		t.Fatalf("%d configured PHP vhosts, no request: php-fpm processes %v", n, pids)
	}
	if _, err := os.Stat(filepath.Join(s.Config.StateDir, "php-fpm")); !os.IsNotExist(err) {
		t.Fatalf("state_dir/php-fpm before any PHP request: %v, want it not to exist", err)
	}
	running := func() int {
		k := 0
		for name, v := range s.Status().VHosts {
			if v.PHP == nil {
				t.Fatalf("vhost %s without PHP status", name)
			}
			if v.PHP.State != "idle" {
				k++
			}
		}
		return k
	}
	if k := running(); k != 0 {
		t.Fatalf("%d pools not idle before any request", k)
	}
	c := s.Client("v01234.example", true)
	if r := hosttest.Get(t, c, "https://v01234.example/hello.php"); r.StatusCode != 200 || r.Body != "Hello, world!\n" {
		t.Fatalf("hello: %d %q", r.StatusCode, r.Body)
	}
	if pids := phpChildren(t); len(pids) != 1 {
		t.Fatalf("after one request: php-fpm masters %v, want exactly one", pids)
	}
	if k := running(); k != 1 {
		t.Fatalf("%d pools running after one request, want 1", k)
	}
}
