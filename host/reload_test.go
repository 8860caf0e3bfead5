package host_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

func adminOf(s *hosttest.Server) admin.Client {
	return admin.Client{Socket: admin.SocketPath(s.Config.StateDir)}
}

func vhostStatus(t *testing.T, st *admin.Status, name string) admin.VHostStatus {
	t.Helper()
	v, ok := st.VHosts[name]
	if !ok {
		t.Fatalf("vhost %s not in status", name)
	}
	return v
}

// TestReloadBrokenFileIsolated: a new vhost file with errors is not added
// and reported with FILE:LINE, while the reload applies and every other
// vhost keeps serving; a name claimed by the broken file keeps serving
// its owner's previous version.
func TestReloadBrokenFileIsolated(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\n",
		"alice/index.html":    "alice home\n",
		"bob/index.html":      "bob home\n",
	})
	ctx := context.Background()
	c := s.Client("alice.example", false)
	if r := hosttest.Get(t, c, "https://alice.example/"); r.StatusCode != 200 || r.Body != "alice home\n" {
		t.Fatalf("before: %d %q", r.StatusCode, r.Body)
	}
	cases := []struct {
		name, file, want string
		aliceKept        bool
	}{
		{"unknown key", "server_name = \"bob.example\"\nrooot = \"../bob\"\n", "bob.toml:2:1: unknown key", false},
		{"syntax", "server_name = \"bob.example\"\nroot = \"../bob\n", "bob.toml:2:", false},
		{"missing root", "server_name = \"bob.example\"\nroot = \"../nowhere\"\n", "bob.toml:2:", false},
		{"duplicate name", "server_name = \"alice.example\"\nroot = \"../bob\"\n", "bob.toml:1: server name \"alice.example\" is already claimed by", true},
	}
	bobFile := filepath.Join(s.Dir, "vhosts.d", "bob.toml")
	gen := uint64(1)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(bobFile, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := adminOf(s).Reload(ctx)
			if err != nil {
				t.Fatalf("reload: %v", err)
			}
			gen++
			if !res.Partial() || res.NotAdded != 1 || res.Added != 0 || res.Generation != gen {
				t.Errorf("result %+v", res)
			}
			var bob *admin.VHostChange
			for i := range res.VHosts {
				if res.VHosts[i].File == bobFile {
					bob = &res.VHosts[i]
				}
			}
			if bob == nil || bob.Action != admin.ChangeNotAdded || len(bob.Errors) == 0 || !strings.Contains(bob.Errors[0], tc.want) {
				t.Fatalf("bob: %+v, want an error containing %q", bob, tc.want)
			}
			if tc.aliceKept != (res.Kept == 1) || (!tc.aliceKept && res.Unchanged != 1) {
				t.Errorf("alice: kept %d unchanged %d", res.Kept, res.Unchanged)
			}
			if r := hosttest.Get(t, c, "https://alice.example/"); r.StatusCode != 200 || r.Body != "alice home\n" {
				t.Errorf("alice after the reload: %d %q", r.StatusCode, r.Body)
			}
			st, err := adminOf(s).Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if errs := st.ConfigErrors[bobFile]; len(errs) == 0 || !strings.Contains(errs[0], tc.want) {
				t.Errorf("status config_errors %v", st.ConfigErrors)
			}
		})
	}
	// Fixed: bob is served with his own certificate, alice keeps her state.
	if err := os.WriteFile(bobFile, []byte("server_name = \"bob.example\"\nroot = \"../bob\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := adminOf(s).Reload(ctx)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if res.Unchanged != 1 || res.Added != 1 || res.Removed != 0 || res.Changed != 0 || res.Partial() {
		t.Errorf("reload result %+v", res)
	}
	if r := hosttest.Get(t, s.Client("bob.example", false), "https://bob.example/"); r.StatusCode != 200 || r.Body != "bob home\n" {
		t.Errorf("bob after reload: %d %q", r.StatusCode, r.Body)
	}
	if cert := s.PeerCertificate(t, "bob.example"); !slices.Contains(cert.DNSNames, "bob.example") {
		t.Errorf("bob's certificate names %v", cert.DNSNames)
	}
	st, err := adminOf(s).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// alice kept her counters (the same vhost state): 1 + 4 requests.
	if a := vhostStatus(t, st, "alice.example"); a.Requests != 5 || st.Generation != gen+1 {
		t.Errorf("alice requests %d generation %d, want 5 and %d", a.Requests, st.Generation, gen+1)
	}
	if st.Reloads.Partial != uint64(len(cases)) || st.Reloads.Failed != 0 || len(st.ConfigErrors) != 0 {
		t.Errorf("reloads %+v, config errors %v", st.Reloads, st.ConfigErrors)
	}
}

// TestReloadMainFileErrorRefused: an error in the main file refuses the
// whole reload, listing the vhost files' errors too.
func TestReloadMainFileErrorRefused(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\n",
		"alice/index.html":    "alice home\n",
	})
	hosttest.Write(t, s.Dir, hosttest.Files{
		"hostd.toml":        hosttest.MainConfig + "read_timeout = 60\n",
		"vhosts.d/bob.toml": "server_name = \"bob.example\"\nroot = 1\n",
	})
	_, err := adminOf(s).Reload(context.Background())
	if err == nil || !strings.Contains(err.Error(), "hostd.toml:7:16: server.read_timeout") || !strings.Contains(err.Error(), "bob.toml:2:8: root: want a string") {
		t.Fatalf("reload error = %v", err)
	}
	if s.Generation() != 1 {
		t.Errorf("generation %d", s.Generation())
	}
	if r := hosttest.Get(t, s.Client("alice.example", false), "https://alice.example/"); r.StatusCode != 200 {
		t.Errorf("alice: %d", r.StatusCode)
	}
}

// TestReloadUnderLoad adds, changes and removes vhosts while clients keep
// requesting over keep-alive connections (HTTP/1.1 and HTTP/2): no request
// may fail, and each reload takes effect for new requests.
func TestReloadUnderLoad(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\n",
		"vhosts.d/bob.toml":   "server_name = \"bob.example\"\nroot = \"../bob\"\n",
		"alice/index.html":    "alice home\n",
		"bob/index.html":      "bob home\n",
		"carol/index.html":    "carol home\n",
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	for i := range 8 {
		c := s.Client("alice.example", i%2 == 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := c.Get("https://alice.example/")
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				b := make([]byte, 64)
				n, _ := resp.Body.Read(b)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.HasPrefix(string(b[:n]), "alice") {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%d %q", resp.StatusCode, b[:n]))
					continue
				}
				ok.Add(1)
			}
		}()
	}
	// progress waits until the clients complete a few more requests, so
	// that each reload happens while requests run (not a throughput test).
	progress := func() {
		t.Helper()
		want := ok.Load() + 8
		sandboxtest.WaitFor(t, "the clients' next requests", func() bool { return ok.Load() >= want || failed.Load() > 0 })
	}
	reload := func(want func(admin.ReloadResult) bool) {
		t.Helper()
		progress()
		res, err := adminOf(s).Reload(ctx)
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
		if !want(*res) {
			t.Errorf("reload result %+v", *res)
		}
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(s.Dir, "vhosts.d", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("carol.toml", "server_name = \"carol.example\"\nroot = \"../carol\"\n")
	reload(func(r admin.ReloadResult) bool { return r.Added == 1 && r.Unchanged == 2 })
	os.Remove(filepath.Join(s.Dir, "vhosts.d", "bob.toml"))
	reload(func(r admin.ReloadResult) bool { return r.Removed == 1 && r.Unchanged == 2 })
	// alice's settings change: she is rebuilt while her requests run.
	write("alice.toml", "server_name = \"alice.example\"\naliases = [\"www.alice.example\"]\nroot = \"../alice\"\n")
	reload(func(r admin.ReloadResult) bool { return r.Changed == 1 && r.Unchanged == 1 })
	for range 3 {
		reload(func(r admin.ReloadResult) bool { return r.Unchanged == 2 })
	}
	progress()
	cancel()
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed (first: %v), %d ok", failed.Load(), firstErr.Load(), ok.Load())
	}
	t.Logf("%d requests during 6 reloads, none failed", ok.Load())
	if r := hosttest.Get(t, s.Client("carol.example", false), "https://carol.example/"); r.StatusCode != 200 {
		t.Errorf("carol: %d", r.StatusCode)
	}
	if r := hosttest.Get(t, s.Client("bob.example", false), "https://bob.example/"); r.StatusCode != 404 {
		t.Errorf("bob after removal: %d, want 404", r.StatusCode)
	}
	if r := hosttest.Get(t, s.Client("www.alice.example", false), "https://www.alice.example/"); r.StatusCode != 200 {
		t.Errorf("alice's new alias: %d", r.StatusCode)
	}
	if g := s.Generation(); g != 7 {
		t.Errorf("generation %d, want 7", g)
	}
}

// TestReloadKeepsWarmWorkers checks, as root, that an unchanged thread-mode
// tenant keeps its worker threads across a reload and that a removed
// tenant's workers exit.
func TestReloadKeepsWarmWorkers(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\nuser = \"31001\"\nsandbox = \"thread\"\n",
		"vhosts.d/bob.toml":   "server_name = \"bob.example\"\nroot = \"../bob\"\nuser = \"31002\"\nsandbox = \"thread\"\n",
		"alice/index.html":    "alice home\n",
		"bob/index.html":      "bob home\n",
	})
	// bob's worker thread id, from the trace line of his request.
	tctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	go func() { adminOf(s).Trace(tctx, "bob.example", pw); pw.Close() }()
	lines := bufio.NewScanner(pr)
	lines.Scan() // header
	for _, n := range []string{"alice", "bob"} {
		if r := hosttest.Get(t, s.Client(n+".example", false), "https://"+n+".example/"); r.StatusCode != 200 {
			t.Fatalf("%s: %d %q", n, r.StatusCode, r.Body)
		}
	}
	if !lines.Scan() {
		t.Fatal("no trace line")
	}
	m := traceLineRE.FindStringSubmatch(lines.Text())
	if m == nil || m[2] != "31002" {
		t.Fatalf("trace line %q: want bob's uid 31002", lines.Text())
	}
	bobTask := "/proc/self/task/" + m[3]
	if _, err := os.Stat(bobTask); err != nil {
		t.Fatalf("bob's worker thread: %v", err)
	}
	cancel()
	ctx := context.Background()
	before, err := adminOf(s).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a0 := vhostStatus(t, before, "alice.example")
	if a0.Workers < 1 {
		t.Fatalf("alice has %d workers after a request", a0.Workers)
	}
	os.Remove(filepath.Join(s.Dir, "vhosts.d", "bob.toml"))
	if _, err := adminOf(s).Reload(ctx); err != nil {
		t.Fatal(err)
	}
	hosttest.Get(t, s.Client("alice.example", false), "https://alice.example/")
	after, err := adminOf(s).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a1 := vhostStatus(t, after, "alice.example")
	if a1.Threads != a0.Threads || a1.Workers < 1 {
		t.Errorf("alice's workers: started %d -> %d, live %d: a reload must keep them warm", a0.Threads, a1.Threads, a1.Workers)
	}
	if len(after.VHosts) != 1 {
		t.Errorf("vhosts after removing bob: %d", len(after.VHosts))
	}
	// bob's worker thread exits.
	sandboxtest.WaitFor(t, bobTask+" to go: bob's worker exits", func() bool {
		_, err := os.Stat(bobTask)
		return os.IsNotExist(err)
	})
}

// TestReloadRenewedCertificate replaces a vhost's tls_cert file without
// touching the vhost file: the reload serves the new certificate.
func TestReloadRenewedCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "a.pem"), filepath.Join(dir, "a.key")
	writeListenerCert(t, certFile, keyFile)
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/alice.toml": fmt.Sprintf("server_name = \"alice.example\"\nroot = \"../alice\"\ntls_cert = %q\ntls_key = %q\n", certFile, keyFile),
		"vhosts.d/bob.toml":   "server_name = \"bob.example\"\nroot = \"../alice\"\n",
		"alice/index.html":    "alice home\n",
	})
	first := s.PeerCertificate(t, "alice.example")
	writeListenerCert(t, certFile, keyFile) // renewed: a new key and serial
	res, err := s.Reload(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed != 1 || res.Unchanged != 1 {
		t.Errorf("reload result %+v, want alice changed and bob kept", res)
	}
	if again := s.PeerCertificate(t, "alice.example"); again.Equal(first) {
		t.Error("the renewed certificate is not served after reload")
	}
}
