package host

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/hostd/hostd/tenant"
)

// acmeALPN is the TLS-ALPN-01 protocol the CA's validation handshakes
// offer; the HTTPS listener always lists it after h2 and http/1.1.
const acmeALPN = acme.ALPNProto

// errNotACME is the host policy's refusal for names that are not served
// by a vhost with tls = "acme".
var errNotACME = errors.New("host: no vhost with tls = \"acme\" serves this name")

// usesACME reports whether any vhost of cfg has tls = "acme".
func usesACME(cfg *tenant.Config) bool {
	return slices.ContainsFunc(cfg.VHosts, func(v *tenant.VHost) bool { return v.TLS == "acme" })
}

// newACMEManager returns the autocert manager of the server: certificates
// and the account key are cached in state_dir/acme, and only names of the
// current routes' acme vhosts are ever requested.
func (s *Server) newACMEManager(cfg *tenant.Config) (*autocert.Manager, error) {
	dir := cfg.Server.ACMEDirectory
	if dir == "" {
		dir = autocert.DefaultACMEDirectory
	}
	hc := &http.Client{Timeout: 60 * time.Second}
	if cfg.Server.ACMECARoot != "" {
		pem, err := os.ReadFile(cfg.Server.ACMECARoot)
		if err != nil {
			return nil, fmt.Errorf("acme_ca_root: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("acme_ca_root %s: no PEM certificate", cfg.Server.ACMECARoot)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		hc.Transport = tr
	}
	cacheDir := filepath.Join(cfg.StateDir, "acme")
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("acme cache: %w", err)
	}
	return &autocert.Manager{
		Prompt: autocert.AcceptTOS,
		Cache:  autocert.DirCache(cacheDir),
		Email:  cfg.Server.ACMEEmail,
		Client: &acme.Client{DirectoryURL: dir, HTTPClient: hc, UserAgent: "hostd"},
		HostPolicy: func(_ context.Context, host string) error {
			if v := s.routes.Load().lookup(host); v != nil && v.cfg.TLS == "acme" {
				return nil
			}
			return errNotACME
		},
	}, nil
}

// setupACME makes the ACME manager when cfg first needs one and enables
// the TLS-ALPN-01 protocol. apply (start-up and Reload) calls it.
func (s *Server) setupACME(cfg *tenant.Config) error {
	if s.ops.acme.Load() != nil || !usesACME(cfg) {
		return nil
	}
	m, err := s.newACMEManager(cfg)
	if err != nil {
		return err
	}
	s.ops.acme.Store(m)
	return nil
}

// acmeCertificate answers a ClientHello for an acme vhost, including the
// TLS-ALPN-01 challenge handshakes of the CA.
func (s *Server) acmeCertificate(hello *tls.ClientHelloInfo, v *vhost) (*tls.Certificate, error) {
	m := s.ops.acme.Load()
	if m == nil {
		return v.cert, nil
	}
	hello.ServerName = strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	c, err := m.GetCertificate(hello)
	if err != nil {
		v.logger.Warn("acme certificate", "name", hello.ServerName, "err", err)
		return nil, err
	}
	return c, nil
}

// serveACMEChallenge answers HTTP-01 challenges on the plain listener; it
// returns false for every other request.
func (s *Server) serveACMEChallenge(w http.ResponseWriter, r *http.Request) bool {
	m := s.ops.acme.Load()
	if m == nil || !strings.HasPrefix(r.URL.Path, "/.well-known/acme-challenge/") {
		return false
	}
	m.HTTPHandler(nil).ServeHTTP(w, r)
	return true
}
