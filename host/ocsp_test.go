package host_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/hostd/hostd/host/hosttest"
)

// TestOCSPStapling serves a certificate whose issuer runs an OCSP
// responder (OpenSSL's `openssl ocsp`, answering each request the test's
// HTTP endpoint hands it): hostd fetches the response in the background,
// staples it, and keeps it in state_dir/ocsp.
func TestOCSPStapling(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is missing (make deps installs it)")
	}
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hostd test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)

	// The responder: each POST goes through `openssl ocsp` with the CA's
	// index, signed by the CA.
	var served atomic.Int64
	responder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, "req.der"), body, 0o600)
		out, err := exec.Command("openssl", "ocsp", "-index", filepath.Join(dir, "index.txt"),
			"-CA", filepath.Join(dir, "ca.pem"), "-rsigner", filepath.Join(dir, "ca.pem"), "-rkey", filepath.Join(dir, "ca.key"),
			"-reqin", filepath.Join(d, "req.der"), "-respout", filepath.Join(d, "resp.der"), "-ndays", "1").CombinedOutput()
		if err != nil {
			t.Errorf("openssl ocsp: %v\n%s", err, out)
			http.Error(w, "responder failed", 500)
			return
		}
		resp, _ := os.ReadFile(filepath.Join(d, "resp.der"))
		served.Add(1)
		w.Header().Set("Content-Type", "application/ocsp-response")
		w.Write(resp)
	}))
	defer responder.Close()

	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(0x1234), Subject: pkix.Name{CommonName: "o.example"}, DNSNames: []string{"o.example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		OCSPServer: []string{responder.URL},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pemOf := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	caKeyDER, _ := x509.MarshalPKCS8PrivateKey(caKey)
	leafKeyDER, _ := x509.MarshalPKCS8PrivateKey(leafKey)
	expiry := time.Now().Add(24 * time.Hour).UTC().Format("060102150405Z")
	hosttest.Write(t, dir, hosttest.Files{
		"ca.pem":    string(pemOf("CERTIFICATE", caDER)),
		"ca.key":    string(pemOf("PRIVATE KEY", caKeyDER)),
		"index.txt": fmt.Sprintf("V\t%s\t\t1234\tunknown\t/CN=o.example\n", expiry),
	})
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/o.toml": "server_name = \"o.example\"\nroot = \"../pub\"\ntls_cert = \"o.pem\"\ntls_key = \"o.key\"\n",
		"vhosts.d/o.pem":  string(pemOf("CERTIFICATE", leafDER)) + string(pemOf("CERTIFICATE", caDER)),
		"vhosts.d/o.key":  string(pemOf("PRIVATE KEY", leafKeyDER)),
		"pub/index.html":  "o\n",
	})
	staple := func() []byte {
		c, err := tls.Dial("tcp", s.HTTPSAddr(), hosttest.TLSConfig("o.example"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().OCSPResponse
	}
	staple() // registers the certificate; the fetch runs in the background
	var der []byte
	for deadline := time.Now().Add(30 * time.Second); der == nil; {
		if der = staple(); der == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no OCSP staple after 30s (responder answered %d times)\n%s", served.Load(), s.Logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	resp, err := ocsp.ParseResponseForCert(der, mustParse(t, leafDER), ca)
	if err != nil || resp.Status != ocsp.Good || resp.SerialNumber.Int64() != 0x1234 {
		t.Fatalf("stapled response: %v %+v", err, resp)
	}
	cached, _ := filepath.Glob(filepath.Join(s.Config.StateDir, "ocsp", "*.der"))
	if len(cached) != 1 {
		t.Errorf("cached responses %v", cached)
	}
	// One fetch for many handshakes; the refresh is due in half a day.
	if served.Load() != 1 {
		t.Errorf("responder asked %d times, want 1", served.Load())
	}
	// The default certificate (self-signed, no responder) has no staple.
	c, err := tls.Dial("tcp", s.HTTPSAddr(), hosttest.TLSConfig("nobody.example"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ConnectionState().OCSPResponse != nil {
		t.Error("a certificate without a responder got a staple")
	}
	c.Close()
}

func mustParse(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
