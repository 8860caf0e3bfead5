package host_test

import (
	"path/filepath"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
)

// TestHookCheckInterval: with server.hook_check_interval set, a saved
// hook keeps its checked version for the interval (the vhost's script
// store gets the setting); the default, in every other test, runs a saved
// hook at the next request (TestReloadIsolatesTenants).
func TestHookCheckInterval(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"hostd.toml":          hosttest.MainConfig + "hook_check_interval = \"1h\"\n",
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../pub\"\nrun_as_server = true\n[[hooks]]\nphase = \"content\"\nfile = \"../hooks/hello.lua\"\npath = \"/hello\"\n",
		"hooks/hello.lua":     counterHook("v1"),
		"pub/index.html":      "home\n",
	})
	alice := s.Client("alice.example", false)
	if r := hosttest.Get(t, alice, "https://alice.example/hello"); r.StatusCode != 200 || r.Body != "v1 1\n" {
		t.Fatalf("first: %d %q", r.StatusCode, r.Body)
	}
	writeLater(t, filepath.Join(s.Dir, "hooks", "hello.lua"), counterHook("v2"))
	if r := hosttest.Get(t, alice, "https://alice.example/hello"); r.StatusCode != 200 || r.Body != "v1 2\n" {
		t.Fatalf("within the interval: %d %q, want the checked v1", r.StatusCode, r.Body)
	}
}
