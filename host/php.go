package host

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/host/cgi"
	"github.com/hostd/hostd/host/phpfpm"
	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/tenant"
)

// newPHPPool builds the vhost's php-fpm pool; it starts no process (the
// first PHP request does).
func newPHPPool(s *Server, v *vhost) (*phpfpm.Pool, error) {
	vc := v.cfg
	var errW io.Writer
	if v.errF != nil {
		errW = v.errF
	}
	return s.phpPools().NewPool(phpfpm.Config{
		Name:          vc.ServerName,
		Identity:      sandbox.Identity{UID: vc.UID, GID: vc.GID, Groups: vc.Groups},
		Root:          vc.Root,
		FS:            v.static,
		FPM:           vc.PHP.FPM,
		Extensions:    vc.PHP.Extensions,
		Workers:       vc.PHP.Workers,
		MaxRequests:   vc.PHP.MaxRequests,
		IdleTimeout:   vc.PHP.IdleTimeout.Std(),
		PoolIdle:      vc.PHP.PoolIdle.Std(),
		Timeout:       vc.PHP.Timeout.Std(),
		TmpDir:        vc.PHP.TmpDir,
		Settings:      vc.PHP.Settings,
		MaxBody:       int64(vc.Limits.MaxBody),
		Logger:        v.errLog,
		ErrorLog:      errW,
		LocalRedirect: http.HandlerFunc(v.serveLocal),
	})
}

// phpPools returns the server's pool manager. The spawner exists: New and
// Reload create it when a vhost enables [php].
func (s *Server) phpPools() *phpfpm.Manager {
	s.phpOnce.Do(func() { s.php = phpfpm.NewManager(s.cfg.StateDir, s.spawner) })
	return s.php
}

// servePHP serves path through the vhost's PHP pool when it names a PHP
// script and reports whether it did.
func (v *vhost) servePHP(w http.ResponseWriter, r *http.Request, path string) bool {
	script, err := v.php.Resolve(path)
	switch {
	case err == nil:
		v.cpuRun(w, r, func(w http.ResponseWriter, r *http.Request) { v.php.ServeScript(w, r, script) }) // cpugate.go
		return true
	case errors.Is(err, cgi.ErrForbidden):
		httpError(w, http.StatusForbidden, "access denied")
		return true
	}
	return false
}

// ensureSpawner makes the server's process spawner when a vhost of cfg
// starts processes and it does not exist yet. It lives until Close.
func (s *Server) ensureSpawner(cfg *tenant.Config) error {
	if s.spawner != nil || !needsSpawner(cfg.VHosts) {
		return nil
	}
	sp, err := sandbox.NewSpawner(s.logger)
	if err != nil {
		return fmt.Errorf("cgi spawner: %w", err)
	}
	c := sp.Containment()
	if !c.Rlimits {
		s.logger.Warn("CGI resource limits cannot be enforced", "reason", c.RlimitsWhyNot)
	}
	if !c.PIDNamespace {
		s.logger.Warn("CGI scripts and php-fpm pools run without PID namespaces: processes they detach outlive a killed hostd, php-fpm workers a crashed one",
			"reason", c.PIDNamespaceWhyNot)
	}
	s.spawner = sp
	s.containment.Store(&c)
	return nil
}

// needsSpawner reports whether any of the vhosts starts processes (CGI
// scripts or php-fpm pools).
func needsSpawner(vcs []*tenant.VHost) bool {
	for _, vc := range vcs {
		if vc.CGI.Enabled || vc.PHP.Enabled {
			return true
		}
	}
	return false
}

// phpStatus returns the pool's state, or nil without [php].
func (v *vhost) phpStatus() *admin.PHPStatus {
	if v.php == nil {
		return nil
	}
	st := v.php.Stats()
	return &admin.PHPStatus{State: st.State, PID: st.PID, Starts: st.Starts, Crashes: st.Crashes,
		Requests: st.Requests, Busy: st.Busy, IdleConns: st.Idle}
}

// phpCollector exports the PHP pools to Prometheus, read at scrape time
// like metricsCollector.
type phpCollector struct{ s *Server }

var (
	phpUpDesc       = prometheus.NewDesc("hostd_php_pool_up", "1 while the vhost's php-fpm master runs, else 0.", []string{"vhost"}, nil)
	phpStartsDesc   = prometheus.NewDesc("hostd_php_pool_starts_total", "php-fpm masters started.", []string{"vhost"}, nil)
	phpCrashesDesc  = prometheus.NewDesc("hostd_php_pool_crashes_total", "php-fpm masters that died without being stopped by hostd.", []string{"vhost"}, nil)
	phpRequestsDesc = prometheus.NewDesc("hostd_php_requests_total", "Requests sent to the php-fpm pool.", []string{"vhost"}, nil)
	phpConnsDesc    = prometheus.NewDesc("hostd_php_connections", "FastCGI connections to the pool, by state: busy, idle.", []string{"vhost", "state"}, nil)
)

func (phpCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{phpUpDesc, phpStartsDesc, phpCrashesDesc, phpRequestsDesc, phpConnsDesc} {
		ch <- d
	}
}

func (c phpCollector) Collect(ch chan<- prometheus.Metric) {
	for _, v := range c.s.routes.Load().all {
		st := v.phpStatus()
		if st == nil {
			continue
		}
		name := v.cfg.ServerName
		up := 0.0
		if st.State == phpfpm.StateRunning {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(phpUpDesc, prometheus.GaugeValue, up, name)
		ch <- prometheus.MustNewConstMetric(phpStartsDesc, prometheus.CounterValue, float64(st.Starts), name)
		ch <- prometheus.MustNewConstMetric(phpCrashesDesc, prometheus.CounterValue, float64(st.Crashes), name)
		ch <- prometheus.MustNewConstMetric(phpRequestsDesc, prometheus.CounterValue, float64(st.Requests), name)
		ch <- prometheus.MustNewConstMetric(phpConnsDesc, prometheus.GaugeValue, float64(st.Busy), name, "busy")
		ch <- prometheus.MustNewConstMetric(phpConnsDesc, prometheus.GaugeValue, float64(st.IdleConns), name, "idle")
	}
}
