package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
)

// TestReloadUnregistersPersonalities: a uring-mode vhost's personality is
// unregistered from the rings (the kernel's count agrees) once a reload
// removed or replaced the vhost and its requests drained, and registered
// again when a reload adds it back.
func TestReloadUnregistersPersonalities(t *testing.T) {
	requireRoot(t)
	dir := tenantDir(t)
	vhost := func(name string, uid int, alias string) string {
		return "server_name = \"" + name + ".example\"\naliases = [" + alias + "]\nroot = \"../" + name +
			"\"\nuser = \"" + strconv.Itoa(uid) + "\"\nsandbox = \"uring\"\n"
	}
	hosttest.Write(t, dir, hosttest.Files{
		"hostd.toml":          hosttest.MainConfig,
		"vhosts.d/alice.toml": vhost("alice", aliceUID, ""),
		"vhosts.d/bob.toml":   vhost("bob", bobUID, ""),
		"alice/whoami.txt":    "alice\n",
		"bob/whoami.txt":      "bob\n",
	})
	for name, uid := range map[string]int{"alice": aliceUID, "bob": bobUID} {
		for _, p := range []string{name, name + "/whoami.txt"} {
			if err := os.Chown(filepath.Join(dir, p), uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		os.Chmod(filepath.Join(dir, name, "whoami.txt"), 0o600)
	}
	s := hosttest.StartDir(t, dir)
	ctx := context.Background()
	// want waits until hostd's and the kernel's counts are n (retired
	// vhosts close in the background once drained).
	want := func(step string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			counted, kernel, err := s.URingPersonalities(256)
			if err != nil {
				t.Fatal(err)
			}
			if counted == n && kernel == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d personalities counted, %d registered in the kernel; want %d", step, counted, kernel, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	serves := func(step, name string) {
		t.Helper()
		c := s.Client(name+".example", false)
		if r := hosttest.Get(t, c, "https://"+name+".example/whoami.txt"); r.StatusCode != 200 || r.Body != name+"\n" {
			t.Fatalf("%s: %s's own 0600 file: %d %q", step, name, r.StatusCode, r.Body)
		}
	}
	want("start", 2)
	serves("start", "bob")

	bobFile := filepath.Join(dir, "vhosts.d/bob.toml")
	if err := os.Remove(bobFile); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Reload(ctx); err != nil || res.Removed != 1 {
		t.Fatalf("reload removing bob: %+v %v", res, err)
	}
	want("bob removed", 1)
	serves("bob removed", "alice")

	if err := os.WriteFile(bobFile, []byte(vhost("bob", bobUID, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Reload(ctx); err != nil || res.Added != 1 {
		t.Fatalf("reload adding bob back: %+v %v", res, err)
	}
	want("bob added back", 2)
	serves("bob added back", "bob")

	// A changed vhost is rebuilt: a new personality, the old one dropped.
	if err := os.WriteFile(filepath.Join(dir, "vhosts.d/alice.toml"), []byte(vhost("alice", aliceUID, `"www.alice.example"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Reload(ctx); err != nil || res.Changed != 1 {
		t.Fatalf("reload changing alice: %+v %v", res, err)
	}
	want("alice changed", 2)
	serves("alice changed", "alice")
}
