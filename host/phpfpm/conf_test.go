package phpfpm

import (
	"strings"
	"testing"

	"github.com/hostd/hostd/sandbox"
)

func TestPoolFile(t *testing.T) {
	m := &Manager{dir: "/state/php-fpm", spawner: &sandbox.Spawner{}}
	p, err := m.NewPool(Config{
		Name: "*.alice.example", Identity: sandbox.Identity{UID: 31001, GID: 31001}, Root: "/srv/alice/public", FS: testGate(t),
		FPM: "/usr/sbin/php-fpm8.2", Extensions: []string{".php", ".php8"}, Workers: 3, MaxRequests: -1,
		TmpDir:   "/srv/alice/tmp",
		Settings: map[string]string{"memory_limit": "64M", "display_errors": "on", "date.timezone": "Europe/Paris"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := p.poolFile()
	for _, want := range []string{
		"[_.alice.example]\n",
		"listen = /state/php-fpm/1.sock\n",
		"pm = ondemand\n",
		"pm.max_children = 3\n",
		"pm.max_requests = 0\n",
		"pm.process_idle_timeout = 10s\n",
		"request_terminate_timeout = 30s\n",
		"security.limit_extensions = .php .php8\n",
		"php_admin_value[open_basedir] = /srv/alice/public/:/srv/alice/tmp/\n",
		"php_admin_value[upload_tmp_dir] = /srv/alice/tmp\n",
		"php_admin_value[memory_limit] = 64M\n",
		"php_admin_flag[display_errors] = on\n", // the setting overrides the default off
		"php_admin_value[date.timezone] = Europe/Paris\n",
		"clear_env = yes\n",
		"catch_workers_output = no\n",
	} {
		if !strings.Contains(f, want) {
			t.Errorf("pool file lacks %q:\n%s", want, f)
		}
	}
	// The master runs as the tenant: php-fpm's user directives would only
	// be ignored with a notice.
	for _, bad := range []string{"\nuser =", "\ngroup =", "listen.owner", "display_errors] = off"} {
		if strings.Contains(f, bad) {
			t.Errorf("pool file has %q:\n%s", bad, f)
		}
	}
}

func TestNewPoolRefuses(t *testing.T) {
	m := &Manager{dir: "/state/php-fpm", spawner: &sandbox.Spawner{}}
	ok := Config{Identity: sandbox.Identity{UID: 31001, GID: 31001}, Root: "/srv", FS: testGate(t), FPM: "/usr/sbin/php-fpm8.2"}
	for name, mod := range map[string]func(*Config){
		"root uid":      func(c *Config) { c.Identity.UID = 0 },
		"root gid":      func(c *Config) { c.Identity.GID = 0 },
		"root group":    func(c *Config) { c.Identity.Groups = []uint32{0} },
		"relative root": func(c *Config) { c.Root = "srv" },
		"no fpm":        func(c *Config) { c.FPM = "" },
		"no gate":       func(c *Config) { c.FS = nil },
	} {
		c := ok
		mod(&c)
		if _, err := m.NewPool(c); err == nil {
			t.Errorf("%s: NewPool accepted it", name)
		}
	}
	long := &Manager{dir: "/" + strings.Repeat("d", 100) + "/php-fpm", spawner: &sandbox.Spawner{}}
	if _, err := long.NewPool(ok); err == nil || !strings.Contains(err.Error(), "shorter state_dir") {
		t.Errorf("a socket path over 107 bytes: %v", err)
	}
}

// testGate returns a file gate over a temporary directory, for pools whose
// scripts the test does not resolve.
func testGate(t *testing.T) *sandbox.FS {
	t.Helper()
	g, err := sandbox.NewDirectFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}
