package tenant

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// TestRunAsServer: on a privileged server (CI runs as root), hooks in none
// or suexec and CGI in none run as the server, so they are refused at
// FILE:LINE unless the vhost says run_as_server = true.
func TestRunAsServer(t *testing.T) {
	if !sandbox.Privileged() {
		sandboxtest.Skipf(t, "needs root or CAP_SETUID (CI runs as root)")
	}
	const hook = "[[hooks]]\nphase = \"content\"\nfile = \"../hooks/a.lua\"\n"
	tests := []struct {
		name, vhost string
		line        int // 0: accepted
		want        string
	}{
		{"hooks in none (the default)", "server_name = \"a.example\"\nroot = \"../public\"\n" + hook, 1, `sandbox "none" runs this vhost's hooks with the server's identity`},
		{"hooks in suexec", "server_name = \"a.example\"\nroot = \"../public\"\nuser = \"31001\"\nsandbox = \"suexec\"\n" + hook, 4, `sandbox "suexec" runs this vhost's hooks`},
		{"CGI in none", "server_name = \"a.example\"\nroot = \"../public\"\nsandbox = \"none\"\n[cgi]\nenabled = true\n", 3, "runs this vhost's CGI scripts with the server's identity"},
		{"hooks and CGI in none", "server_name = \"a.example\"\nroot = \"../public\"\n[cgi]\nenabled = true\n" + hook, 1, "hooks and CGI scripts"},
		{"CGI in suexec switches", "server_name = \"a.example\"\nroot = \"../public\"\nuser = \"31001\"\nsandbox = \"suexec\"\n[cgi]\nenabled = true\n", 0, ""},
		{"hooks in thread", "server_name = \"a.example\"\nroot = \"../public\"\nuser = \"31001\"\nsandbox = \"thread\"\n" + hook, 0, ""},
		{"static only in none", "server_name = \"a.example\"\nroot = \"../public\"\n", 0, ""},
		{"opted in", "server_name = \"a.example\"\nroot = \"../public\"\nrun_as_server = true\n[cgi]\nenabled = true\n" + hook, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{"hostd.toml": mainOK, "vhosts.d/a.toml": tc.vhost, "hooks/a.lua": "return nil\n"})
			cfg, err := Load(filepath.Join(dir, "hostd.toml"))
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				v := cfg.VHosts[0]
				w := v.Identities(cfg.ServerIdentity())
				if v.RunAsServer != (len(w.AsServer) > 0) {
					t.Errorf("Identities = %+v for run_as_server = %v", w, v.RunAsServer)
				}
				return
			}
			errs := Errors(err)
			if len(errs) != 1 || errs[0].File != filepath.Join(dir, "vhosts.d/a.toml") || errs[0].Line != tc.line ||
				!strings.Contains(errs[0].Msg, tc.want) || !strings.Contains(errs[0].Msg, "run_as_server = true") {
				t.Fatalf("want one error at a.toml:%d with %q, got %v", tc.line, tc.want, err)
			}
		})
	}
}

// TestLogPathRefused: a log in a directory the tenant owns is the first step
// of the log-symlink attack; it is a configuration error at FILE:LINE.
func TestLogPathRefused(t *testing.T) {
	sandboxtest.RequireRoot(t)
	dir := writeTree(t, map[string]string{
		"hostd.toml":      mainOK,
		"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\nuser = \"31001\"\nsandbox = \"thread\"\nerror_log = \"../home/logs/error.log\"\naccess_log = \"../safe/access.log\"\n",
	})
	if err := os.MkdirAll(filepath.Join(dir, "home/logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(dir, "home"), 31001, 31001); err != nil {
		t.Fatal(err)
	}
	_, err := Load(filepath.Join(dir, "hostd.toml"))
	errs := Errors(err)
	if len(errs) != 1 || errs[0].File != filepath.Join(dir, "vhosts.d/a.toml") || errs[0].Line != 5 ||
		!strings.Contains(errs[0].Msg, "error_log") || !strings.Contains(errs[0].Msg, "owned by uid 31001") {
		t.Fatalf("want one error_log error at a.toml:5, got %v", err)
	}
}
