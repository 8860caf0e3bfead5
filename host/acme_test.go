package host_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// writeListenerCert writes a self-signed certificate for 127.0.0.1 and
// localhost (pebble's own HTTPS listener) and returns its PEM.
func writeListenerCert(t *testing.T, certFile, keyFile string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pebble test listener"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	os.WriteFile(certFile, certPEM, 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certPEM
}

func startProcess(t *testing.T, name string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	log := &hosttest.LogBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, log.String())
		}
	})
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	sandboxtest.WaitFor(t, addr+" to listen", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// TestACMEPebble obtains a certificate for a vhost with tls = "acme" from
// Debian's pebble ACME test server on loopback, and verifies it with
// pebble's root like a client would.
func TestACMEPebble(t *testing.T) {
	pebble, err := exec.LookPath("pebble")
	if err != nil {
		sandboxtest.Skipf(t, "pebble not installed (apt-get install -y pebble)")
	}
	challtest, err := exec.LookPath("pebble-challtestsrv")
	if err != nil {
		sandboxtest.Skipf(t, "pebble-challtestsrv not installed (apt-get install -y pebble)")
	}
	dir := t.TempDir()
	httpsPort, httpPort := freePort(t), freePort(t)
	dnsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	wfeAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	mgmtAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))

	challMgmt := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// Fake DNS: every name resolves to 127.0.0.1 only.
	startProcess(t, challtest, nil, "-dns01", dnsAddr, "-http01", "", "-https01", "", "-tlsalpn01", "",
		"-management", challMgmt, "-defaultIPv6", "")
	waitListening(t, challMgmt) // up after its DNS server
	listenerPEM := writeListenerCert(t, filepath.Join(dir, "pebble.crt"), filepath.Join(dir, "pebble.key"))
	pcfg, _ := json.Marshal(map[string]any{"pebble": map[string]any{
		"listenAddress": wfeAddr, "managementListenAddress": mgmtAddr,
		"certificate": filepath.Join(dir, "pebble.crt"), "privateKey": filepath.Join(dir, "pebble.key"),
		"httpPort": httpPort, "tlsPort": httpsPort, "ocspResponderURL": "", "externalAccountBindingRequired": false,
	}})
	os.WriteFile(filepath.Join(dir, "pebble.json"), pcfg, 0o644)
	startProcess(t, pebble, []string{"PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0"},
		"-config", filepath.Join(dir, "pebble.json"), "-dnsserver", dnsAddr)
	waitListening(t, wfeAddr)
	waitListening(t, mgmtAddr)

	s := hosttest.Start(t, hosttest.Files{
		"hostd.toml": fmt.Sprintf(`[server]
listen_https = "127.0.0.1:%d"
listen_http = "127.0.0.1:%d"
vhosts = "vhosts.d/*.toml"
acme_directory = "https://%s/dir"
acme_ca_root = "pebble-listener.pem"
acme_email = "ops@acme.test"
`, httpsPort, httpPort, wfeAddr),
		"pebble-listener.pem": string(listenerPEM),
		"vhosts.d/shop.toml":  "server_name = \"shop.acme.test\"\nroot = \"../shop\"\ntls = \"acme\"\n",
		"vhosts.d/plain.toml": "server_name = \"plain.test\"\nroot = \"../shop\"\n",
		"shop/index.html":     "shop\n",
	})

	// pebble's issuing root, from its management interface.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(listenerPEM)
	mc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	resp, err := mc.Get("https://" + mgmtAddr + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	rootPEM, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("pebble root: %q", rootPEM)
	}

	// The first handshake makes hostd obtain the certificate.
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 90 * time.Second}, "tcp", s.HTTPSAddr(),
		&tls.Config{ServerName: "shop.acme.test", RootCAs: roots, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatalf("TLS with pebble's root: %v", err)
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	if err := leaf.VerifyHostname("shop.acme.test"); err != nil {
		t.Error(err)
	}
	c := hosttest.ClientTo(s.HTTPSAddr(), &tls.Config{ServerName: "shop.acme.test", RootCAs: roots}, false)
	if r := hosttest.Get(t, c, "https://shop.acme.test/"); r.StatusCode != 200 || r.Body != "shop\n" {
		t.Errorf("GET with the ACME certificate: %d %q", r.StatusCode, r.Body)
	}
	if _, err := os.Stat(filepath.Join(s.Config.StateDir, "acme", "shop.acme.test")); err != nil {
		t.Errorf("certificate not cached in state_dir/acme: %v", err)
	}
	// A vhost without tls = "acme" keeps its own certificate.
	if cert := s.PeerCertificate(t, "plain.test"); cert.Issuer.CommonName == leaf.Issuer.CommonName {
		t.Errorf("plain.test got a certificate from %s", cert.Issuer.CommonName)
	}
}
