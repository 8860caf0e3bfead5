package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/hostd/hostd/host/internal/statefile"
)

// OCSP stapling bounds.
const (
	ocspTimeout    = 10 * time.Second // one responder request
	ocspMaxBytes   = 1 << 20          // one response
	ocspMinRefresh = time.Minute      // earliest refresh, and the first retry after a failure
	ocspMaxRefresh = 24 * time.Hour   // latest refresh of a good response
	ocspIdleDrop   = 48 * time.Hour   // a certificate no handshake used for this long is forgotten
	ocspTick       = time.Minute      // how often the refresher looks for due responses
)

// ocspStapler staples OCSP responses to the certificates that name an OCSP
// responder (operator-provided and ACME alike): the first handshake with
// such a certificate registers it, a background loop fetches the
// response, refreshes it halfway through its validity (sooner after a
// failure, with backoff), and keeps it in state_dir/ocsp so a restart
// staples at once. Handshakes never wait for a responder: until a good
// response is there, the certificate goes out without a staple. A revoked
// or expired response is never stapled. It is safe for concurrent use.
type ocspStapler struct {
	dir    string
	client *http.Client
	logger *slog.Logger
	wake   chan struct{}

	certs sync.Map // *tls.Certificate -> *ocspEntry
}

// ocspEntry is one certificate's stapling state.
type ocspEntry struct {
	cert     *tls.Certificate
	leaf     *x509.Certificate
	issuer   *x509.Certificate // nil: no OCSP (no responder URL, or no issuer in the chain)
	stapled  atomic.Pointer[tls.Certificate]
	lastUsed atomic.Int64 // unix seconds

	// Owned by the refresher goroutine.
	next    time.Time
	expires time.Time // the stapled response's NextUpdate
	backoff time.Duration
}

func newOCSPStapler(stateDir string, logger *slog.Logger) *ocspStapler {
	return &ocspStapler{
		dir:    filepath.Join(stateDir, "ocsp"),
		client: &http.Client{Timeout: ocspTimeout},
		logger: logger,
		wake:   make(chan struct{}, 1),
	}
}

// staple returns c, or its copy carrying a current OCSP response.
func (st *ocspStapler) staple(c *tls.Certificate) *tls.Certificate {
	if c == nil {
		return nil
	}
	v, ok := st.certs.Load(c)
	if !ok {
		var loaded bool
		if v, loaded = st.certs.LoadOrStore(c, st.newEntry(c)); !loaded && v.(*ocspEntry).issuer != nil {
			// Wake the refresher only now that it can find the entry.
			select {
			case st.wake <- struct{}{}:
			default:
			}
		}
	}
	e := v.(*ocspEntry)
	if now := time.Now().Unix(); e.lastUsed.Load() != now {
		e.lastUsed.Store(now)
	}
	if sc := e.stapled.Load(); sc != nil {
		return sc
	}
	return c
}

// newEntry makes c's entry; one that can be stapled is fetched at once
// once stored (and stapled from the disk cache meanwhile, when a valid
// response is there).
func (st *ocspStapler) newEntry(c *tls.Certificate) *ocspEntry {
	e := &ocspEntry{cert: c, leaf: c.Leaf}
	if e.leaf == nil && len(c.Certificate) > 0 {
		e.leaf, _ = x509.ParseCertificate(c.Certificate[0])
	}
	if e.leaf == nil || len(e.leaf.OCSPServer) == 0 || len(c.Certificate) < 2 {
		return e
	}
	issuer, err := x509.ParseCertificate(c.Certificate[1])
	if err != nil {
		return e
	}
	e.issuer = issuer
	if der, err := os.ReadFile(st.cacheFile(e)); err == nil {
		if resp, err := st.check(e, der, time.Now()); err == nil {
			st.install(e, der, resp)
		}
	}
	return e
}

func (st *ocspStapler) cacheFile(e *ocspEntry) string {
	sum := sha256.Sum256(e.leaf.Raw)
	return filepath.Join(st.dir, hex.EncodeToString(sum[:16])+".der")
}

// check parses der as e's response and accepts only a good, current one.
func (st *ocspStapler) check(e *ocspEntry, der []byte, now time.Time) (*ocsp.Response, error) {
	resp, err := ocsp.ParseResponseForCert(der, e.leaf, e.issuer)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.Status == ocsp.Revoked:
		return nil, errRevoked
	case resp.Status != ocsp.Good:
		return nil, errors.New("certificate status unknown to the responder")
	case now.Before(resp.ThisUpdate.Add(-5 * time.Minute)):
		return nil, errors.New("response not valid yet (thisUpdate in the future)")
	case !resp.NextUpdate.IsZero() && !now.Before(resp.NextUpdate):
		return nil, errors.New("response expired (nextUpdate passed)")
	}
	return resp, nil
}

// errRevoked is a responder's answer that the certificate is revoked.
var errRevoked = errors.New("the certificate is revoked")

// install staples der to a copy of e's certificate and schedules the next
// refresh halfway through the response's validity.
func (st *ocspStapler) install(e *ocspEntry, der []byte, resp *ocsp.Response) {
	sc := *e.cert
	sc.OCSPStaple = der
	e.stapled.Store(&sc)
	e.expires = resp.NextUpdate
	life := ocspMaxRefresh * 2
	if !resp.NextUpdate.IsZero() {
		life = resp.NextUpdate.Sub(resp.ThisUpdate)
	}
	e.next = resp.ThisUpdate.Add(min(max(life/2, ocspMinRefresh), ocspMaxRefresh))
	e.backoff = 0
}

// run refreshes the due responses until ctx is done.
func (st *ocspStapler) run(ctx context.Context) {
	t := time.NewTicker(ocspTick)
	defer t.Stop()
	for {
		st.refresh(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-st.wake:
		}
	}
}

// refresh fetches every response due at now, drops the staples that
// expired and forgets certificates no handshake used for ocspIdleDrop.
func (st *ocspStapler) refresh(ctx context.Context, now time.Time) {
	st.certs.Range(func(k, v any) bool {
		e := v.(*ocspEntry)
		if now.Sub(time.Unix(e.lastUsed.Load(), 0)) > ocspIdleDrop {
			st.certs.Delete(k)
			return true
		}
		if e.issuer == nil || now.Before(e.next) || ctx.Err() != nil {
			return true
		}
		if err := st.fetch(ctx, e, now); err != nil {
			e.backoff = min(max(2*e.backoff, ocspMinRefresh), time.Hour)
			e.next = now.Add(e.backoff)
			st.logger.Warn("ocsp stapling: fetch failed", "names", e.leaf.DNSNames, "responder", e.leaf.OCSPServer[0],
				"retry_in", e.backoff, "err", err)
			if !e.expires.IsZero() && !now.Before(e.expires) {
				e.stapled.Store(nil) // never staple an expired response
			}
		}
		return true
	})
}

// fetch asks e's responder for its certificate's status and staples a
// good answer.
func (st *ocspStapler) fetch(ctx context.Context, e *ocspEntry, now time.Time) error {
	req, err := ocsp.CreateRequest(e.leaf, e.issuer, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ocspTimeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.leaf.OCSPServer[0], bytes.NewReader(req))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/ocsp-request")
	hr.Header.Set("Accept", "application/ocsp-response")
	resp, err := st.client.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("responder answered %s", resp.Status)
	}
	der, err := io.ReadAll(io.LimitReader(resp.Body, ocspMaxBytes))
	if err != nil {
		return err
	}
	r, err := st.check(e, der, now)
	if errors.Is(err, errRevoked) {
		e.stapled.Store(nil)
		st.logger.Error("ocsp stapling: the certificate is revoked; replace it", "names", e.leaf.DNSNames)
	}
	if err != nil {
		return err
	}
	st.install(e, der, r)
	if err := os.MkdirAll(st.dir, 0o700); err == nil {
		if err := statefile.WriteAtomic(st.cacheFile(e), der, 0o600); err != nil {
			st.logger.Warn("ocsp stapling: cache", "err", err)
		}
	}
	st.logger.Info("ocsp stapling: response stapled", "names", e.leaf.DNSNames, "next_update", r.NextUpdate, "refresh_at", e.next)
	return nil
}
