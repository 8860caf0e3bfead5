package tenant

import (
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Sessions is a [sessions] table: where r.session keeps its data. In the
// main file it is the default of every vhost; a vhost's table overrides
// the keys it sets (changing store drops the main file's url, servers and
// backup). After Load, VHost.Sessions is complete: its store is set, and
// cookie, ttl and max_bytes are zero where no file sets them, which
// host/session's Options read as their defaults (session.DefaultCookie,
// DefaultTTL, DefaultMaxBytes), the one place those numbers are written.
type Sessions struct {
	// Store is "memory" (default: one node, lost on restart), "redis" or
	// "memcached".
	Store string `toml:"store,omitempty"`
	// URL is the Redis to use (store = "redis"): redis://host:port/db,
	// rediss://..., a Sentinel URL with ?master_name=NAME&addr=..., or
	// redis+cluster://host:port?addr=... .
	URL string `toml:"url,omitempty"`
	// Servers are the memcached servers, "host:port" (store = "memcached").
	Servers []string `toml:"servers,omitempty"`
	// Backup are memcached servers every session is written to as well,
	// read when a primary is down.
	Backup []string `toml:"backup,omitempty"`
	// Cookie is the session cookie's name (default "hostd_session").
	Cookie string `toml:"cookie,omitempty"`
	// TTL is the sliding expiry of an unused session (default 30m).
	TTL Duration `toml:"ttl,omitzero"`
	// MaxBytes bounds a session's JSON encoding (default 4096).
	MaxBytes Size `toml:"max_bytes,omitzero"`
	// PasswordFile holds the store's password, so that it sits in a file
	// only root reads rather than in a configuration file: for Redis the
	// password (AUTH, or the ACL user's, the user named in url); for
	// memcached "USER:PASSWORD" (memcached -Y). Main file only; it goes
	// with the main file's store, never with a vhost's own.
	PasswordFile string `toml:"password_file,omitempty"`

	line int // line of the [sessions] header, 0 when absent
}

// Session stores.
const (
	StoreMemory    = "memory"
	StoreRedis     = "redis"
	StoreMemcached = "memcached"
)

// maxSessionBytes is the largest max_bytes: memcached's default item size.
const maxSessionBytes = 1 << 20

// checkSessions validates the keys a [sessions] table sets, reporting each
// problem at its line in file.
func (l *loader) checkSessions(file string, loc *locator, s *Sessions) {
	s.line = loc.line("sessions", -1, "")
	line := func(key string) int { return nonzero(loc.line("sessions", -1, key), s.line) }
	switch s.Store {
	case "", StoreMemory, StoreRedis, StoreMemcached:
	default:
		l.add(file, line("store"), "sessions.store %q: want \"memory\", \"redis\" or \"memcached\"", s.Store)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		switch {
		case err != nil:
			l.add(file, line("url"), "sessions.url: %v", err)
		case u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "redis+cluster" && u.Scheme != "rediss+cluster":
			l.add(file, line("url"), "sessions.url %q: want redis://host:port/db (or rediss://, redis+cluster://)", s.URL)
		case u.Host == "":
			l.add(file, line("url"), "sessions.url %q: no host (e.g. redis://127.0.0.1:6379/0)", s.URL)
		}
	}
	for key, addrs := range map[string][]string{"servers": s.Servers, "backup": s.Backup} {
		for _, a := range addrs {
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
				l.add(file, line(key), "sessions.%s: %q: want host:port (e.g. \"127.0.0.1:11211\")", key, a)
			}
		}
	}
	if s.Cookie != "" && !validCookieName(s.Cookie) {
		l.add(file, line("cookie"), "sessions.cookie %q: want letters, digits, '-' and '_'", s.Cookie)
	}
	if s.TTL != 0 && s.TTL.Std() < time.Second {
		l.add(file, line("ttl"), "sessions.ttl %s: want at least 1s", s.TTL.Std())
	}
	if s.MaxBytes != 0 && (s.MaxBytes < 16 || s.MaxBytes > maxSessionBytes) {
		l.add(file, line("max_bytes"), "sessions.max_bytes %d: want 16 to %d", s.MaxBytes, maxSessionBytes)
	}
}

// effectiveSessions merges a vhost's [sessions] over the main file's,
// fills in the store and checks that the store has what it needs.
func (l *loader) effectiveSessions(cfg *Config, file string, v *Sessions) Sessions {
	base, e := cfg.Sessions, *v
	where, at := file, v.line
	e.PasswordFile = "" // a vhost never names one (loadVHost refuses it)
	if e.Store == "" || e.Store == base.Store {
		if e.URL == "" {
			e.URL = base.URL
		}
		if e.Servers == nil {
			e.Servers = base.Servers
		}
		if e.Backup == nil {
			e.Backup = base.Backup
		}
		if e.Store == "" {
			e.Store = base.Store
			if at == 0 {
				where, at = cfg.File, base.line
			}
		}
	}
	if e.Cookie == "" {
		e.Cookie = base.Cookie
	}
	if e.TTL == 0 {
		e.TTL = base.TTL
	}
	if e.MaxBytes == 0 {
		e.MaxBytes = base.MaxBytes
	}
	if e.Store == base.Store && e.URL == base.URL && slices.Equal(e.Servers, base.Servers) && slices.Equal(e.Backup, base.Backup) {
		// The main file's password goes to the main file's store only.
		e.PasswordFile = base.PasswordFile
	}
	if e.Store == "" {
		e.Store = StoreMemory
	}
	if where != file {
		e.line = at
		return e // the main file's own table was checked with it
	}
	switch e.Store {
	case StoreRedis:
		if e.URL == "" {
			l.add(where, nonzero(at, 1), "sessions: store = \"redis\" needs url (e.g. url = \"redis://127.0.0.1:6379/0\")")
		}
		if len(e.Servers) > 0 || len(e.Backup) > 0 {
			l.add(where, nonzero(at, 1), "sessions: servers and backup are for store = \"memcached\"; redis uses url")
		}
	case StoreMemcached:
		if len(e.Servers) == 0 {
			l.add(where, nonzero(at, 1), "sessions: store = \"memcached\" needs servers (e.g. servers = [\"127.0.0.1:11211\"])")
		}
		if e.URL != "" {
			l.add(where, nonzero(at, 1), "sessions: url is for store = \"redis\"; memcached uses servers and backup")
		}
	case StoreMemory:
		if e.URL != "" || len(e.Servers) > 0 || len(e.Backup) > 0 {
			l.add(where, nonzero(at, 1), "sessions: url, servers and backup need store = \"redis\" or \"memcached\"")
		}
	}
	e.line = at
	return e
}

func validCookieName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return !strings.HasPrefix(s, "-")
}

// StoreHosts returns the hosts (names or addresses, without ports) of the
// session stores s names: the Redis URL's host and its addr parameters,
// the memcached servers and backups.
func (s Sessions) StoreHosts() []string {
	var hosts []string
	if u, err := url.Parse(s.URL); err == nil && u.Host != "" {
		hosts = append(hosts, u.Hostname())
		for _, a := range u.Query()["addr"] {
			if h, _, err := net.SplitHostPort(a); err == nil {
				hosts = append(hosts, h)
			}
		}
	}
	for _, a := range append(slices.Clone(s.Servers), s.Backup...) {
		if h, _, err := net.SplitHostPort(a); err == nil {
			hosts = append(hosts, h)
		}
	}
	return hosts
}
