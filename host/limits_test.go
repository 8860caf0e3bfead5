package host_test

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/tenant"
)

// TestOverloadKeys checks the defaults and validation of the overload
// configuration keys (docs/overload.md).
func TestOverloadKeys(t *testing.T) {
	load := func(serverKeys, limits string) (*tenant.Config, error) {
		dir := t.TempDir()
		files := twoTenants()
		files["hostd.toml"] = hosttest.MainConfig + serverKeys
		files["vhosts.d/alice.toml"] += limits
		hosttest.Write(t, dir, files)
		return tenant.Load(filepath.Join(dir, "hostd.toml"))
	}
	cfg, err := load("", "")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Server
	if s.MaxHandshakes != 4*runtime.GOMAXPROCS(0) || s.AcceptRate != 1000 || s.MaxConnsPerIP != 512 ||
		s.HandshakeWait.Std() != 2*time.Second || s.TicketRotation.Std() != 24*time.Hour || cfg.VHosts[0].Limits.MaxConcurrent != 256 {
		t.Errorf("defaults: %+v, max_concurrent %d", s, cfg.VHosts[0].Limits.MaxConcurrent)
	}
	cfg, err = load("max_handshakes = -1\naccept_rate = -1\nmax_conns_per_ip = 7\nticket_rotation = \"1h\"\n", "[limits]\nmax_concurrent = -1\n")
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Server; s.MaxHandshakes != -1 || s.AcceptRate != -1 || s.MaxConnsPerIP != 7 || s.TicketRotation.Std() != time.Hour || cfg.VHosts[0].Limits.MaxConcurrent != -1 {
		t.Errorf("explicit values: %+v", s)
	}
	tests := []struct{ server, limits, want string }{
		{"max_handshakes = -2\n", "", "hostd.toml:7: max_handshakes must be positive"},
		{"accept_rate = -5\n", "", "hostd.toml:7: accept_rate must be positive"},
		{"ticket_rotation = \"10ms\"\n", "", "hostd.toml:7: ticket_rotation must be at least 1s"},
		{"max_conn_per_ip = 3\n", "", `unknown key "server.max_conn_per_ip" (did you mean "max_conns_per_ip"?)`},
		{"", "[limits]\nmax_concurrent = -3\n", "alice.toml:5: max_concurrent must be positive"},
	}
	for _, tt := range tests {
		_, err := load(tt.server, tt.limits)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q %q: error %v, want %q", tt.server, tt.limits, err, tt.want)
		}
	}
}
