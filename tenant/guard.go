package tenant

import (
	"path/filepath"
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
	if s.SessionKeyRotation.Std() < time.Second {
		l.add(file, line("session_key_rotation"), "session_key_rotation must be at least 1s (e.g. \"24h\")")
	}
	if s.AdminTokenFile == "" {
		s.AdminTokenFile = filepath.Join(cfg.StateDir, "admin.token")
	} else {
		s.AdminTokenFile = rel(cfg.Dir, s.AdminTokenFile)
	}
	if s.MaxThreads < -1 {
		l.add(file, line("max_threads"), "max_threads must be positive, 0 (default %d) or -1 (unlimited)", DefaultMaxThreads)
	}
	if s.H2MaxStreams < 0 {
		l.add(file, line("h2_max_streams"), "h2_max_streams must not be negative")
	}
	if s.TenantCPUShare < 0 || s.TenantCPUShare > 1 {
		l.add(file, line("tenant_cpu_share"), "tenant_cpu_share %g: want a share between 0 and 1 (1 = off)", s.TenantCPUShare)
	}
}

// RedactQuery returns the query parameters logs redact.
func (c *Config) RedactQuery() []string {
	if c.Server.LogRedactQuery == nil {
		return DefaultRedactQuery
	}
	return *c.Server.LogRedactQuery
}
