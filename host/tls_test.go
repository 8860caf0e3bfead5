package host_test

import (
	"crypto/tls"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// tlsFiles are two vhosts: one on the server's (intermediate) profile with
// HSTS, one with tls_profile = "modern".
var tlsFiles = hosttest.Files{
	"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../pub\"\nhsts = true\n",
	"vhosts.d/m.toml": "server_name = \"m.example\"\nroot = \"../pub\"\ntls_profile = \"modern\"\nhsts = \"max-age=63072000; includeSubDomains\"\n",
	"pub/index.html":  "hello\n",
}

func TestTLSProfiles(t *testing.T) {
	s := hosttest.Start(t, tlsFiles)
	dial := func(sni string, mod func(*tls.Config)) (*tls.ConnectionState, error) {
		cfg := hosttest.TLSConfig(sni)
		mod(cfg)
		c, err := tls.Dial("tcp", s.HTTPSAddr(), cfg)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		cs := c.ConnectionState()
		return &cs, nil
	}
	tls12 := func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }
	cbc := func(c *tls.Config) {
		c.MaxVersion = tls.VersionTLS12
		c.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256}
	}
	if cs, err := dial("a.example", tls12); err != nil || cs.Version != tls.VersionTLS12 {
		t.Errorf("intermediate, TLS 1.2: %v", err)
	}
	if _, err := dial("a.example", cbc); err == nil {
		t.Error("intermediate accepted a CBC suite")
	}
	if _, err := dial("m.example", tls12); err == nil {
		t.Error("modern accepted TLS 1.2")
	}
	if cs, err := dial("m.example", func(*tls.Config) {}); err != nil || cs.Version != tls.VersionTLS13 {
		t.Errorf("modern, TLS 1.3: %v", err)
	}
	// HSTS on HTTPS responses only, off unless set.
	r := hosttest.Get(t, s.Client("a.example", false), "https://a.example/")
	if got := r.Header.Get("Strict-Transport-Security"); got != "max-age=31536000" {
		t.Errorf("a.example HSTS %q", got)
	}
	r = hosttest.Get(t, s.Client("m.example", true), "https://m.example/")
	if got := r.Header.Get("Strict-Transport-Security"); got != "max-age=63072000; includeSubDomains" {
		t.Errorf("m.example HSTS %q", got)
	}
	resp, err := http.Get("http://" + s.HTTPAddr() + "/")
	if err == nil {
		resp.Body.Close()
		if resp.Header.Get("Strict-Transport-Security") != "" {
			t.Error("HSTS sent over plain HTTP")
		}
	}
}

// TestTestSSL runs testssl.sh (Debian package testssl.sh) against a vhost
// with a generated certificate: protocols, cipher categories, server
// defaults, HTTP headers and vulnerabilities. Nothing may be "NOT ok" or
// "VULNERABLE" but what a self-signed certificate without revocation
// information implies.
func TestTestSSL(t *testing.T) {
	bin, err := exec.LookPath("testssl")
	if err != nil {
		if bin, err = exec.LookPath("testssl.sh"); err != nil {
			sandboxtest.Skipf(t, "testssl.sh not installed (make deps installs it)")
		}
	}
	if testing.Short() {
		t.Skip("testssl takes about 30 s")
	}
	s := hosttest.Start(t, tlsFiles)
	run := func(name string, args ...string) string {
		_, port, _ := strings.Cut(s.HTTPSAddr(), ":")
		cmd := exec.Command(bin, append([]string{"--quiet", "--color", "0", "--warnings", "off", "--ip", "127.0.0.1"}, append(args, name+":"+port)...)...)
		cmd.Env = append(os.Environ(), "TERM=dumb")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("testssl %s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	report := run("a.example", "-p", "-s", "-S", "-h", "-U")
	allowed := []string{"Chain of trust               NOT ok (self signed)", "NOT ok -- neither CRL nor OCSP URI provided"}
	for _, l := range strings.Split(report, "\n") {
		if !strings.Contains(l, "NOT ok") && !strings.Contains(l, "VULNERABLE") {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || strings.Contains(l, a)
		}
		if !ok {
			t.Errorf("testssl: %s", strings.TrimSpace(l))
		}
	}
	for _, want := range []string{
		"TLS 1      not offered", "TLS 1.1    not offered", "TLS 1.2    offered (OK)", "TLS 1.3    offered (OK)",
		"Obsolete CBC ciphers (AES, ARIA etc.)         not offered", "Strong encryption (AEAD ciphers)              offered (OK)",
		"LUCKY13 (CVE-2013-0169), experimental     not vulnerable (OK)", "Strict Transport Security    365 days",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("testssl report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("testssl report:\n%s", report)
	}
	if p := run("m.example", "-p"); !strings.Contains(p, "TLS 1.2    not offered") || !strings.Contains(p, "TLS 1.3    offered (OK)") {
		t.Errorf("modern vhost protocols:\n%s", p)
	}
}
