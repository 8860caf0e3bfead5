package tenant

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// policyTree is carol's and dave's configuration: dave is a fine tenant;
// each case changes carol's file (or the main file) the way a tenant who
// can edit her own vhost file would.
// "{DIR}" in server stands for the tree's directory.
func policyTree(t *testing.T, server, carol string) string {
	t.Helper()
	dir := writeTree(t, map[string]string{
		"hostd.toml": "[server]\nlisten_https = \"127.0.0.1:0\"\nvhosts = \"vhosts.d/*.toml\"\n" + server +
			"[sessions]\nstore = \"redis\"\nurl = \"redis://:pw@127.0.0.1:6379/0\"\n",
		"vhosts.d/carol.toml":      carol,
		"vhosts.d/dave.toml":       "server_name = \"dave.example\"\nroot = \"../tenants/dave\"\nuser = \"31004\"\nsandbox = \"thread\"\n",
		"tenants/carol/index.html": "carol\n",
		"tenants/dave/index.html":  "dave\n",
		"logs/.keep":               "",
		"hooks/carol.lua":          "return nil\n",
	})
	main := filepath.Join(dir, "hostd.toml")
	b, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, []byte(strings.ReplaceAll(string(b), "{DIR}", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const carolBase = "server_name = \"carol.example\"\nroot = \"../tenants/carol\"\nuser = \"31003\"\nsandbox = \"thread\"\n"

// TestTenantPolicy: every way issue 15 found for a vhost file to claim
// what is not its own is refused at check and reload, at FILE:LINE.
func TestTenantPolicy(t *testing.T) {
	sandboxtest.RequireRoot(t)
	tests := []struct {
		name   string
		server string
		carol  string
		setup  func(t *testing.T, dir string)
		want   string // "carol.toml:LINE: text"; "" = accepted
		also   string // more text of the same errors
		both   bool   // dave's file is refused too (their directory is)
	}{
		{name: "accepted", carol: carolBase},
		{name: "file writable by others", carol: carolBase,
			setup: func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "vhosts.d/carol.toml"), 0o666) },
			want:  "carol.toml:1: file ", also: "carol.toml is writable by group or others (mode 0666)",
		},
		{name: "file owned by a tenant", carol: carolBase,
			setup: func(t *testing.T, dir string) { os.Chown(filepath.Join(dir, "vhosts.d/carol.toml"), 31003, 31003) },
			want:  "carol.toml:1: file ", also: "carol.toml is owned by uid 31003, not by root or the server's user",
		},
		{name: "directory writable by others", carol: carolBase,
			setup: func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "vhosts.d"), 0o777) },
			want:  "carol.toml:1: directory ", also: "vhosts.d is writable by group or others (mode 0777)", both: true,
		},
		{name: "opt-out", server: "vhost_files_trusted = false\n", carol: carolBase,
			setup: func(t *testing.T, dir string) { os.Chown(filepath.Join(dir, "vhosts.d/carol.toml"), 31003, 31003) },
		},
		{name: "root outside tenant_roots", server: "tenant_roots = [\"{DIR}/tenants\"]\n",
			carol: "server_name = \"carol.example\"\nroot = \"/\"\nsandbox = \"none\"\n",
			want:  "carol.toml:2: root / is outside server.tenant_roots"},
		{name: "root via symlink out of tenant_roots", server: "tenant_roots = [\"{DIR}/tenants\"]\n",
			carol: "server_name = \"carol.example\"\nroot = \"../tenants/carol/etc\"\nuser = \"31003\"\n",
			setup: func(t *testing.T, dir string) { os.Symlink("/etc", filepath.Join(dir, "tenants/carol/etc")) },
			want:  "carol.toml:2: root ", also: "/etc is outside server.tenant_roots"},
		{name: "group shadow", carol: carolBase + "group = \"42\"\n",
			want: "carol.toml:5: gid 42"},
		{name: "group disk", carol: carolBase + "group = \"6\"\n",
			want: "carol.toml:5: gid 6"},
		{name: "forbidden group above min_gid", server: "forbidden_groups = [\"31500\"]\n", carol: carolBase + "group = \"31500\"\n",
			want: "carol.toml:5: gid 31500 (31500) is in server.forbidden_groups"},
		{name: "another tenant's uid", server: "require_tenant_owned = true\n",
			carol: "server_name = \"carol.example\"\nroot = \"../tenants/carol\"\nuser = \"31004\"\nsandbox = \"thread\"\n",
			setup: func(t *testing.T, dir string) {
				os.Chown(filepath.Join(dir, "tenants/carol"), 31003, 31003)
				os.Chown(filepath.Join(dir, "tenants/dave"), 31004, 31004)
			},
			want: "carol.toml:2: root ", also: "is owned by uid 31003, not by the vhost's user 31004 (server.require_tenant_owned)"},
		{name: "error_log anywhere", server: "allowed_log_dirs = [\"{DIR}/logs\"]\n", carol: carolBase + "error_log = \"/etc/cron.d/x\"\n",
			want: "carol.toml:5: error_log /etc/cron.d/x is outside server.allowed_log_dirs"},
		{name: "access_log anywhere", server: "allowed_log_dirs = [\"{DIR}/logs\"]\n", carol: carolBase + "access_log = \"/root/.bashrc\"\n",
			want: "carol.toml:5: access_log /root/.bashrc is outside server.allowed_log_dirs"},
		{name: "log inside allowed dir", server: "allowed_log_dirs = [\"{DIR}/logs\"]\n", carol: carolBase + "error_log = \"../logs/carol.log\"\n"},
		{name: "tls_key of another tenant", carol: carolBase + "tls_cert = \"../certs/d.pem\"\ntls_key = \"../certs/d.key\"\n",
			setup: func(t *testing.T, dir string) {
				writeCert(t, dir)
				os.Chown(filepath.Join(dir, "certs/d.key"), 31004, 31004)
			},
			want: "carol.toml:6: tls_key ", also: "d.key is owned by uid 31004: it must belong to root or to the vhost's user"},
		{name: "tls_key of her own", carol: carolBase + "tls_cert = \"../certs/d.pem\"\ntls_key = \"../certs/d.key\"\n",
			setup: func(t *testing.T, dir string) {
				writeCert(t, dir)
				os.Chown(filepath.Join(dir, "certs/d.key"), 31003, 31003)
			}},
		{name: "wildcard over dave", carol: strings.Replace(carolBase, "carol.example", "*.example", 1),
			want: `carol.toml:1: name "*.example" reaches into "dave.example"`},
		{name: "alias under dave", carol: carolBase + "aliases = [\"www.dave.example\"]\n",
			want: `carol.toml:5: name "www.dave.example" reaches into "dave.example"`},
		{name: "nested names allowed", server: "nested_names = true\n", carol: carolBase + "aliases = [\"www.dave.example\"]\n"},
		{name: "sessions url", server: "vhost_session_store = false\n",
			carol: carolBase + "[sessions]\nurl = \"redis://10.0.0.9:6379/0\"\n",
			want:  "carol.toml:6: sessions.url: server.vhost_session_store = false"},
		{name: "sessions password_file", carol: carolBase + "[sessions]\npassword_file = \"/etc/shadow\"\n",
			want: "carol.toml:6: sessions.password_file is set in the main file only"},
		{name: "sessions cookie still allowed", server: "vhost_session_store = false\n",
			carol: carolBase + "[sessions]\ncookie = \"sid\"\n"},
		{name: "sandbox none", server: "allowed_sandboxes = [\"thread\", \"inline\"]\ndefault_sandbox = \"thread\"\n",
			carol: "server_name = \"carol.example\"\nroot = \"../tenants/carol\"\nsandbox = \"none\"\n",
			want:  `carol.toml:3: sandbox "none" is not in server.allowed_sandboxes`},
		{name: "sandbox suexec", server: "allowed_sandboxes = [\"thread\"]\ndefault_sandbox = \"thread\"\n",
			carol: "server_name = \"carol.example\"\nroot = \"../tenants/carol\"\nuser = \"31003\"\nsandbox = \"suexec\"\n",
			want:  `carol.toml:4: sandbox "suexec" is not in server.allowed_sandboxes`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := policyTree(t, tc.server, tc.carol)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			cfg, broken, err := LoadPartial(filepath.Join(dir, "hostd.toml"))
			if err != nil {
				t.Fatalf("main file refused: %v", err)
			}
			if tc.want == "" {
				if len(broken) > 0 {
					t.Fatalf("refused: %v", broken[0].Errs)
				}
				return
			}
			if tc.both && len(broken) != 2 || !tc.both && (len(cfg.VHosts) != 1 || cfg.VHosts[0].ServerName != "dave.example" || len(broken) != 1) {
				t.Fatalf("want dave served (both refused: %v) and carol refused; vhosts %d, broken %d", tc.both, len(cfg.VHosts), len(broken))
			}
			errs := broken[0].Errs.Error()
			if !strings.Contains(errs, filepath.Join(dir, "vhosts.d")+"/"+tc.want) || !strings.Contains(errs, tc.also) {
				t.Fatalf("errors:\n%s\nwant %q ... %q", errs, tc.want, tc.also)
			}
		})
	}
}

// writeCert writes a self-signed pair to dir/certs/d.pem and d.key.
func writeCert(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "certs"), 0o755)
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"dave.example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(k)
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	if err := os.WriteFile(filepath.Join(dir, "certs/d.pem"), cert, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "certs/d.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMainFileTrusted: the main file itself must not be writable by
// others.
func TestMainFileTrusted(t *testing.T) {
	dir := policyTree(t, "", carolBase)
	os.Chmod(filepath.Join(dir, "hostd.toml"), 0o666)
	_, _, err := LoadPartial(filepath.Join(dir, "hostd.toml"))
	if err == nil || !strings.Contains(err.Error(), "hostd.toml:1: file ") || !strings.Contains(err.Error(), "writable by group or others") {
		t.Fatalf("err = %v", err)
	}
}
