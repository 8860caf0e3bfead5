package host

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/hostd/hostd/tenant"
)

// vhost is the serving state of one tenant: its certificate, its open
// document root and its handlers. It is built from an immutable
// tenant.VHost and is safe for concurrent use.
type vhost struct {
	cfg    *tenant.VHost
	cert   *tls.Certificate
	root   *os.Root
	logger *slog.Logger
}

func newVHost(s *Server, vc *tenant.VHost) (*vhost, error) {
	v := &vhost{cfg: vc, logger: s.logger.With("vhost", vc.ServerName)}
	var err error
	if vc.TLSCert != "" {
		c, lerr := tls.LoadX509KeyPair(vc.TLSCert, vc.TLSKey)
		if lerr != nil {
			return nil, fmt.Errorf("certificate: %w", lerr)
		}
		v.cert = &c
	} else {
		base := filepath.Join(s.cfg.StateDir, "certs", vc.ServerName)
		if v.cert, err = loadOrCreateCert(base+".crt", base+".key", vc.Names()); err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
	}
	if v.root, err = os.OpenRoot(vc.Root); err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	return v, nil
}

func (v *vhost) close() {
	v.root.Close()
}

// ServeHTTP serves a request routed to this vhost.
func (v *vhost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.serveStatic(w, r, r.URL.Path)
}
