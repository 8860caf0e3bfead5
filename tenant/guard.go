package tenant

import (
	"path/filepath"
	"runtime"
	"time"
)

// DefaultRedactQuery are the query parameters whose values access logs,
// per-vhost logs and traces replace by "REDACTED" unless
// server.log_redact_query says otherwise. Names match without regard to
// case.
var DefaultRedactQuery = []string{
	"token", "access_token", "refresh_token", "id_token", "auth", "authorization", "code",
	"password", "passwd", "pass", "pwd", "secret", "client_secret", "api_key", "apikey", "key",
	"session", "sessionid", "session_id", "sid", "signature", "sig", "jwt", "otp",
}

// Defaults of the capacity keys.
const (
	// DefaultWriteTimeout is server.write_timeout: a client that takes
	// no response bytes for this long is dropped.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultMaxThreads is server.max_threads.
	DefaultMaxThreads = 4096
	// DefaultTenantCPUShare is server.tenant_cpu_share.
	DefaultTenantCPUShare = 0.5
)

// DefaultMaxWorkers is [limits] max_workers when a vhost sets none: four
// worker threads per CPU (at least 4), so that one tenant's hooks cannot
// hold many more threads than there are CPUs to run them.
func DefaultMaxWorkers() int { return max(4, 4*runtime.NumCPU()) }

// DefaultPerClient is [limits] max_concurrent_per_client for a vhost's
// max_concurrent (-1: unlimited).
func DefaultPerClient(maxConcurrent int) int {
	if maxConcurrent <= 0 {
		return -1
	}
	return max(4, maxConcurrent/8)
}

// checkServerExtras fills in and checks the [server] keys of sealing,
// the admin token, log redaction and capacity.
func (l *loader) checkServerExtras(file string, loc *locator, cfg *Config) {
	s := &cfg.Server
	line := func(key string) int { return loc.line("server", -1, key) }
	if at := loc.line("server", -1, "write_timeout"); s.WriteTimeout == 0 && (at == 0 || at == loc.line("server", -1, "")) {
		// Not set ("0s" turns it off).
		s.WriteTimeout = Duration(DefaultWriteTimeout)
	}
	if s.SessionKeys == "" {
		s.SessionKeys = filepath.Join(cfg.StateDir, "session.keys")
	} else {
		s.SessionKeys = rel(cfg.Dir, s.SessionKeys)
	}
	if s.SessionKeyRotation == 0 {
		s.SessionKeyRotation = Duration(24 * time.Hour)
	} else if s.SessionKeyRotation.Std() < time.Second {
		l.add(file, line("session_key_rotation"), "session_key_rotation must be at least 1s (e.g. \"24h\")")
	}
	if s.AdminTokenFile == "" {
		s.AdminTokenFile = filepath.Join(cfg.StateDir, "admin.token")
	} else {
		s.AdminTokenFile = rel(cfg.Dir, s.AdminTokenFile)
	}
	if s.LogRedactQuery == nil {
		d := DefaultRedactQuery
		s.LogRedactQuery = &d
	}
	switch {
	case s.MaxThreads < -1:
		l.add(file, line("max_threads"), "max_threads must be positive, 0 (default %d) or -1 (unlimited)", DefaultMaxThreads)
	case s.MaxThreads == 0:
		s.MaxThreads = DefaultMaxThreads
	}
	if s.H2MaxStreams < 0 {
		l.add(file, line("h2_max_streams"), "h2_max_streams must not be negative")
	}
	switch {
	case s.TenantCPUShare < 0 || s.TenantCPUShare > 1:
		l.add(file, line("tenant_cpu_share"), "tenant_cpu_share %g: want a share between 0 and 1 (1 = off)", s.TenantCPUShare)
	case s.TenantCPUShare == 0:
		s.TenantCPUShare = DefaultTenantCPUShare
	}
}

// RedactQuery returns the query parameters logs redact.
func (c *Config) RedactQuery() []string {
	if c.Server.LogRedactQuery == nil {
		return DefaultRedactQuery
	}
	return *c.Server.LogRedactQuery
}
