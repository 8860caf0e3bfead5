package main

import (
	"path/filepath"
	"testing"

	"github.com/hostd/hostd/tenant"
)

// TestGenVHosts: what gen-vhosts writes loads, with every vhost's name,
// alias, uid, sandbox and hook.
func TestGenVHosts(t *testing.T) {
	dir := t.TempDir()
	if err := genVHosts(dir, 3, "127.0.0.1:0", "127.0.0.1:0", genOptions{sandbox: "thread", uidBase: 41000, hooks: true}); err != nil {
		t.Fatal(err)
	}
	cfg, err := tenant.Load(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.AdminListen != "127.0.0.1:0" || len(cfg.VHosts) != 3 {
		t.Fatalf("admin_listen %q, %d vhosts", cfg.Server.AdminListen, len(cfg.VHosts))
	}
	for i, v := range cfg.VHosts {
		if v.UID != uint32(41000+i) || v.Sandbox != "thread" || len(v.Hooks) != 1 || v.Root != filepath.Join(dir, "www") ||
			cfg.Lookup("www."+v.ServerName) != v {
			t.Errorf("vhost %d: %s uid %d sandbox %q hooks %v root %s", i, v.ServerName, v.UID, v.Sandbox, v.Hooks, v.Root)
		}
	}
}
