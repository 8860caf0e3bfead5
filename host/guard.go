package host

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hostd/hostd/host/internal/statefile"
	"github.com/hostd/hostd/host/session"
	"github.com/hostd/hostd/host/tickets"
	"github.com/hostd/hostd/tenant"
)

// guardState is what keeps tenants from reaching each other through the
// parts of the server they share: the session sealing secrets, the admin
// token, log redaction, the thread budget, the CPU gate and the
// per-client limits. Its fields are safe for concurrent use.
type guardState struct {
	sessKeys *tickets.Keys    // state_dir/session.keys, rotated like the ticket keys
	sessRing *session.Keyring // what the vhosts' session managers seal with

	adminToken string    // bearer token of admin_listen ("" when it is off)
	redact     *redactor // log_redact_query
	threads    *threadBudget
	cpu        *cpuGate
	clients    clientLimits // per-client max_concurrent_per_client

	sealBroken        atomic.Uint64 // session values that failed authentication
	adminDenied       atomic.Uint64 // admin_listen requests without the token
	perClientRejected atomic.Uint64
	ticketMismatch    atomic.Uint64 // tickets presented for another vhost (full handshake)
}

// initGuard prepares the guard state; New calls it before building the
// vhosts.
func (s *Server) initGuard(cfg *tenant.Config) error {
	g := &s.guard
	sc := &cfg.Server
	file := sc.SessionKeys
	if file == "" { // a Config not made by tenant.Load
		file = filepath.Join(cfg.StateDir, "session.keys")
	}
	g.sessKeys = tickets.New(file, sc.SessionKeyRotation.Std(), s.logger)
	keys, _, err := g.sessKeys.Sync(time.Now())
	if err != nil {
		return fmt.Errorf("session keys: %w", err)
	}
	g.sessRing = session.NewKeyring(keys...)
	if sc.AdminListen != "" {
		tf := sc.AdminTokenFile
		if tf == "" {
			tf = filepath.Join(cfg.StateDir, "admin.token")
		}
		if g.adminToken, err = loadOrCreateToken(tf); err != nil {
			return fmt.Errorf("admin token: %w", err)
		}
	}
	g.redact = newRedactor(cfg.RedactQuery())
	g.threads = newThreadBudget(sc.MaxThreads, sc.HandshakeWait.Std())
	g.cpu = newCPUGate(sc.TenantCPUShare)
	return nil
}

// runGuard rotates the session secrets until ctx is done.
func (s *Server) runGuard(ctx context.Context) {
	s.guard.sessKeys.Watch(ctx, s.guard.sessRing.Set)
}

// AdminToken returns the bearer token admin_listen requires ("" when
// admin_listen is off).
func (s *Server) AdminToken() string { return s.guard.adminToken }

// loadOrCreateToken reads the token in file, or writes a new random one
// (0600). An existing file must be a regular file of the server's own
// that no one else can read.
func loadOrCreateToken(file string) (string, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return "", err
		}
		var b [32]byte
		rand.Read(b[:])
		tok := hex.EncodeToString(b[:])
		if err := statefile.WriteAtomic(file, []byte(tok+"\n"), 0o600); err != nil {
			return "", err
		}
		return tok, nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	st := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s must be a regular file of uid %d with mode 0600 (it is %v, uid %d)", file, os.Geteuid(), fi.Mode(), st.Uid)
	}
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	tok := strings.TrimSpace(string(b[:n]))
	if len(tok) < 16 {
		return "", fmt.Errorf("%s: the token must have at least 16 characters", file)
	}
	return tok, nil
}

// adminAuth requires "Authorization: Bearer TOKEN" on every admin_listen
// request: tenant code on the same host can reach a loopback port.
func (s *Server) adminAuth(h http.Handler) http.Handler {
	want := []byte("Bearer " + s.guard.adminToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if s.guard.adminToken == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			s.guard.adminDenied.Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer realm="hostd"`)
			httpError(w, http.StatusUnauthorized, "a bearer token is required (state_dir/admin.token)")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// guardCollector exports the guard state to Prometheus at scrape time.
type guardCollector struct{ s *Server }

var (
	guardSealDesc      = prometheus.NewDesc("hostd_session_seal_failures_total", "Session values that failed authentication (changed, forged or copied in the store) and were replaced by a fresh session.", nil, nil)
	guardAdminDesc     = prometheus.NewDesc("hostd_admin_unauthorized_total", "admin_listen requests refused for a missing or wrong bearer token.", nil, nil)
	guardClientDesc    = prometheus.NewDesc("hostd_client_concurrency_rejections_total", "Requests answered 503 by max_concurrent_per_client.", nil, nil)
	guardTicketDesc    = prometheus.NewDesc("hostd_tls_ticket_vhost_mismatch_total", "TLS session tickets presented on a connection for another vhost (full handshake instead).", nil, nil)
	guardThreadsDesc   = prometheus.NewDesc("hostd_tenant_threads", "OS threads held for requests by the switching modes.", nil, nil)
	guardBudgetDesc    = prometheus.NewDesc("hostd_tenant_threads_budget", "server.max_threads (0: unlimited).", nil, nil)
	guardThreadRejDesc = prometheus.NewDesc("hostd_tenant_thread_rejections_total", "Requests answered 503 because server.max_threads stayed reached.", nil, nil)
	guardOSThreadsDesc = prometheus.NewDesc("hostd_os_threads", "OS threads of the hostd process (/proc/self/status).", nil, nil)
	guardCPUWaitDesc   = prometheus.NewDesc("hostd_cpu_gate_waits_total", "Hook, CGI and PHP runs that queued for their tenant's CPU share.", nil, nil)
	guardCPURejDesc    = prometheus.NewDesc("hostd_cpu_gate_rejections_total", "Runs answered 503 after waiting for their tenant's CPU share.", nil, nil)
)

func (guardCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{guardSealDesc, guardAdminDesc, guardClientDesc, guardTicketDesc, guardThreadsDesc,
		guardBudgetDesc, guardThreadRejDesc, guardOSThreadsDesc, guardCPUWaitDesc, guardCPURejDesc} {
		ch <- d
	}
}

func (c guardCollector) Collect(ch chan<- prometheus.Metric) {
	g := &c.s.guard
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter(guardSealDesc, g.sealBroken.Load())
	counter(guardAdminDesc, g.adminDenied.Load())
	counter(guardClientDesc, g.perClientRejected.Load())
	counter(guardTicketDesc, g.ticketMismatch.Load())
	gauge(guardThreadsDesc, float64(g.threads.inUse.Load()))
	gauge(guardBudgetDesc, float64(g.threads.limit()))
	counter(guardThreadRejDesc, g.threads.rejected.Load())
	gauge(guardOSThreadsDesc, float64(osThreads()))
	var waits, rej uint64
	if g.cpu != nil {
		waits, rej = g.cpu.waits.Load(), g.cpu.rejected.Load()
	}
	counter(guardCPUWaitDesc, waits)
	counter(guardCPURejDesc, rej)
}

// redisURL returns the [sessions] url with the password of password_file
// (first line) when one is set.
func redisURL(sc tenant.Sessions) (string, error) {
	if sc.PasswordFile == "" {
		return sc.URL, nil
	}
	b, err := os.ReadFile(sc.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("password_file: %w", err)
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	u, err := url.Parse(sc.URL)
	if err != nil {
		return "", fmt.Errorf("url: %w", err)
	}
	u.User = url.UserPassword(u.User.Username(), strings.TrimSpace(pw))
	return u.String(), nil
}

// memcachedAuth sets up memcached's ASCII authentication when [sessions]
// password_file is set: its first line is "USER:PASSWORD", as in
// memcached's own -Y file.
func memcachedAuth(mc *session.Memcached, sc tenant.Sessions) error {
	if sc.PasswordFile == "" {
		return nil
	}
	b, err := os.ReadFile(sc.PasswordFile)
	if err != nil {
		return fmt.Errorf("password_file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	user, pw, ok := strings.Cut(strings.TrimSpace(line), ":")
	if !ok || user == "" {
		return fmt.Errorf("password_file %s: want USER:PASSWORD for memcached", sc.PasswordFile)
	}
	mc.SetAuth(user, pw)
	return nil
}
