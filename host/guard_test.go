package host_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostd/hostd/host"
	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/tenant"
)

// adminTarget reaches a server's admin_listen with its bearer token.
type adminTarget struct{ addr, token string }

func (a adminTarget) get(path string) (*http.Response, error) {
	req, err := http.NewRequest("GET", "http://"+a.addr+path, nil)
	if err != nil {
		return nil, err
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	return http.DefaultClient.Do(req)
}

// TestAdminRequiresToken: /metrics, /status and /status.json answer 401
// without the bearer token of state_dir/admin.token (0600), which tenant
// code cannot read; the admin socket (hostd status) still works.
func TestAdminRequiresToken(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"hostd.toml":          adminMain,
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\n",
		"alice/index.html":    "alice\n",
	})
	for _, path := range []string{"/metrics", "/status", "/status.json", "/"} {
		for _, tok := range []string{"", "wrong-token-0123456789"} {
			resp, err := adminTarget{s.AdminAddr(), tok}.get(path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") ||
				strings.Contains(string(body), "alice") {
				t.Errorf("%s with token %q: %d %q", path, tok, resp.StatusCode, body)
			}
		}
	}
	file := filepath.Join(s.Dir, "state", "admin.token")
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin.token: %v %v", fi, err)
	}
	b, _ := os.ReadFile(file)
	if strings.TrimSpace(string(b)) != s.AdminToken() || len(s.AdminToken()) < 32 {
		t.Fatalf("token file %q, server token %q", b, s.AdminToken())
	}
	mfs := scrape(t, adminTarget{s.AdminAddr(), s.AdminToken()})
	if v, _ := metricValue(mfs, "hostd_admin_unauthorized_total", nil); v != 8 {
		t.Errorf("hostd_admin_unauthorized_total = %v, want 8", v)
	}
	if _, err := adminOf(s).Status(context.Background()); err != nil {
		t.Fatalf("admin socket: %v", err)
	}
}

// TestAdminTokenFileChecked: a token file others can read is refused.
func TestAdminTokenFileChecked(t *testing.T) {
	dir := t.TempDir()
	hosttest.Write(t, dir, hosttest.Files{
		"hostd.toml":          adminMain,
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\n",
		"alice/index.html":    "alice\n",
		"state/admin.token":   "0123456789abcdef0123456789abcdef\n",
	})
	os.Chmod(filepath.Join(dir, "state/admin.token"), 0o644)
	cfg, err := tenant.Load(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := host.New(cfg, host.Options{}); err == nil || !strings.Contains(err.Error(), "mode 0600") {
		t.Fatalf("New: %v", err)
	}
}

// TestLogRedaction: a token or password in the query string (or the
// Referer) reaches no log: the server's access log, the vhost's own
// access log (combined and JSON), its error log and `hostd trace`.
func TestLogRedaction(t *testing.T) {
	for _, format := range []string{"combined", "json"} {
		t.Run(format, func(t *testing.T) {
			s := hosttest.Start(t, hosttest.Files{
				"hostd.toml": hosttest.MainConfig + "log_format = \"" + format + "\"\n",
				"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\nrun_as_server = true\n" +
					"access_log = \"../logs/alice.access.log\"\nerror_log = \"../logs/alice.error.log\"\n" +
					"[[hooks]]\nphase = \"access\"\nfile = \"../hooks/h.lua\"\n",
				"alice/index.html": "alice\n",
				"hooks/h.lua":      "if r.path == '/fail' then error('boom') end\n",
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pr, pw := io.Pipe()
			go func() { adminOf(s).Trace(ctx, "", pw); pw.Close() }()
			lines := bufio.NewScanner(pr)
			lines.Scan() // header
			c := s.Client("alice.example", false)
			var trace []string
			for _, path := range []string{"/", "/fail"} {
				req, _ := http.NewRequest("GET", "https://alice.example"+path+
					"?user=ann&token=SECRET-1&Password=SECRET-2&%74oken=SECRET-3&api_key=SECRET-4;sid=SECRET-5", nil)
				req.Header.Set("Referer", "https://idp.example/cb?code=SECRET-6&state=xyz")
				hosttest.Do(t, c, req)
				if !lines.Scan() {
					t.Fatal("no trace line")
				}
				trace = append(trace, lines.Text())
			}
			all := strings.Join(trace, "\n") + s.Logs.String()
			for _, f := range []string{"access.log", "alice.access.log", "alice.error.log"} {
				b, err := os.ReadFile(filepath.Join(s.Dir, "logs", f))
				if err != nil {
					t.Fatal(err)
				}
				all += "\n" + string(b)
			}
			if strings.Contains(all, "SECRET") {
				t.Fatalf("a secret reached a log:\n%s", all)
			}
			for _, want := range []string{"user=ann", "token=REDACTED", "Password=REDACTED", "state=xyz", "code=REDACTED"} {
				if !strings.Contains(all, want) {
					t.Errorf("logs lack %q:\n%s", want, all)
				}
			}
		})
	}
}
