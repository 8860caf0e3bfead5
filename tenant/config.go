package tenant

import (
	"fmt"
	"strings"
	"time"

	"github.com/hostd/hostd/host/cgi"
)

// Duration is a TOML string such as "30s" or "1m30s".
type Duration time.Duration

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (use e.g. \"30s\", \"5m\")", b)
	}
	if v < 0 {
		return fmt.Errorf("duration %q must not be negative", b)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalTOML accepts only strings: a bare integer would silently mean
// nanoseconds.
func (d *Duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a duration string such as \"30s\", not %v", v)
	}
	return d.UnmarshalText([]byte(s))
}

// MarshalText prints the duration as Go does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Size is a byte count: a TOML integer or a string such as "64KiB", "1MiB", "2MB".
type Size int64

// UnmarshalTOML accepts integers and strings with a unit.
func (s *Size) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return fmt.Errorf("size %d must not be negative", x)
		}
		*s = Size(x)
		return nil
	case string:
		n, err := parseSize(x)
		if err != nil {
			return err
		}
		*s = Size(n)
		return nil
	}
	return fmt.Errorf("size must be an integer or a string like \"1MiB\", not %T", v)
}

func parseSize(str string) (int64, error) {
	s := strings.TrimSpace(str)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != s {
		return 0, fmt.Errorf("invalid size %q (use e.g. 65536, \"64KiB\", \"1MiB\")", str)
	}
	return n * mult, nil
}

// Server is the [server] table of the main file.
type Server struct {
	// ListenHTTPS is the HTTPS listen address (required).
	ListenHTTPS string `toml:"listen_https,omitempty"`
	// ListenHTTP is the plain HTTP listen address; "" disables it. It
	// redirects to HTTPS unless a vhost sets allow_http.
	ListenHTTP string `toml:"listen_http,omitempty"`
	// StateDir holds generated certificates and ticket keys (default
	// "state", relative to the main file).
	StateDir string `toml:"state_dir,omitempty"`
	// VHosts is a glob of per-tenant files (default "vhosts.d/*.toml").
	VHosts string `toml:"vhosts,omitempty"`
	// DefaultSandbox is the sandbox mode of vhosts that set none: none,
	// suexec, uring, thread, thread-per-request, inline or auto (uring
	// where io_uring works, else thread). Default: "auto" when hostd runs
	// with CAP_SETUID and CAP_SETGID (root), applied to the vhosts that
	// name a user (the others keep "none"); else "none".
	DefaultSandbox string `toml:"default_sandbox,omitempty"`
	// AccessLog is the combined-format access log; "-" is stderr, "" is off.
	AccessLog string `toml:"access_log,omitempty"`
	// User is an unprivileged identity the whole process switches to after
	// binding its listeners (name or numeric uid); "" keeps the start identity.
	User string `toml:"user,omitempty"`
	// Group is User's group (default: its primary group).
	Group string `toml:"group,omitempty"`
	// MinUID is the lowest uid a sandboxed vhost may run as (default 1000).
	MinUID *int64 `toml:"min_uid,omitempty"`

	ReadHeaderTimeout Duration `toml:"read_header_timeout,omitzero"` // default 10s
	ReadTimeout       Duration `toml:"read_timeout,omitzero"`        // default 60s
	WriteTimeout      Duration `toml:"write_timeout,omitzero"`       // default 60s, per write progress; "0s" = none
	IdleTimeout       Duration `toml:"idle_timeout,omitzero"`        // default 120s
	ShutdownTimeout   Duration `toml:"shutdown_timeout,omitzero"`    // default 10s
	MaxHeaderBytes    Size     `toml:"max_header_bytes,omitzero"`    // default 64KiB

	// AdminListen is the optional admin HTTP listener serving /metrics
	// (Prometheus) and /status (HTML); "" = off. Keep it on loopback.
	AdminListen string `toml:"admin_listen,omitempty"`
	// LogFormat is the access logs' format: "combined" (default) or "json".
	LogFormat string `toml:"log_format,omitempty"`
	// ACMEDirectory is the ACME directory URL for vhosts with tls = "acme"
	// (default Let's Encrypt production).
	ACMEDirectory string `toml:"acme_directory,omitempty"`
	// ACMEEmail is the contact address of the ACME account (optional).
	ACMEEmail string `toml:"acme_email,omitempty"`
	// ACMECARoot is a PEM file of extra roots trusted for the ACME
	// directory's HTTPS, for a private or test CA (optional).
	ACMECARoot string `toml:"acme_ca_root,omitempty"`

	// Overload protection (docs/overload.md). For the three limits, 0
	// means the default and -1 means unlimited.
	//
	// MaxHandshakes bounds the full TLS handshakes in progress at once
	// (default 4 per CPU); excess new connections are closed before the
	// handshake.
	MaxHandshakes int `toml:"max_handshakes,omitzero"`
	// AcceptRate bounds new full handshakes per second per CPU (default
	// 1000); the burst is one second's worth.
	AcceptRate int `toml:"accept_rate,omitzero"`
	// MaxConnsPerIP bounds the open connections of one client IP
	// (default 512).
	MaxConnsPerIP int `toml:"max_conns_per_ip,omitzero"`
	// HandshakeWait is how long a new full handshake may wait for one of
	// the max_handshakes slots before it is shed (default 2s).
	HandshakeWait Duration `toml:"handshake_wait,omitzero"`
	// TicketRotation is the TLS session ticket key rotation period
	// (default 24h); the previous key still decrypts for one more period.
	TicketRotation Duration `toml:"ticket_rotation,omitzero"`
	// HookCheckInterval is how long a hook file's version, once checked,
	// is trusted before it is stat'ed again (default 0: at every run, a
	// saved hook is live at the next request; e.g. "1s" saves a stat per
	// hook run, docs/performance.md).
	HookCheckInterval Duration `toml:"hook_check_interval,omitzero"`

	// TLSProfile is the TLS profile of every vhost that sets none:
	// "intermediate" (default: Mozilla's intermediate, TLS 1.2 with
	// ECDHE and AEAD suites only, and TLS 1.3) or "modern" (TLS 1.3 only).
	TLSProfile string `toml:"tls_profile,omitempty"`

	// Tenant policy (policy.go): what a vhost file may claim, for
	// operators whose tenants can edit their own vhost files.
	//
	// VHostFilesTrusted (default true) requires the main file, every
	// vhost file and the directories holding them to be owned by root (or
	// the server's own user) and writable by no one else, like sshd's
	// StrictModes; false switches that check off.
	VHostFilesTrusted *bool `toml:"vhost_files_trusted,omitempty"`
	// TenantRoots are the directories a vhost's root must lie in (empty:
	// anywhere).
	TenantRoots []string `toml:"tenant_roots,omitempty"`
	// AllowedLogDirs are the directories a vhost's error_log and
	// access_log must lie in (empty: anywhere).
	AllowedLogDirs []string `toml:"allowed_log_dirs,omitempty"`
	// MinGID is the lowest gid a vhost may run as (default: min_uid).
	MinGID *int64 `toml:"min_gid,omitempty"`
	// ForbiddenGroups are groups (names or gids) a vhost may never run as
	// (default: root, shadow, disk, adm, sudo, kmem, tty, docker, lxd,
	// wheel, systemd-journal, where they exist).
	ForbiddenGroups []string `toml:"forbidden_groups,omitempty"`
	// AllowedSandboxes are the modes a vhost's sandbox key may choose
	// (default: all of them).
	AllowedSandboxes []string `toml:"allowed_sandboxes,omitempty"`
	// VHostSessionStore (default true) lets a vhost's [sessions] choose
	// its store (store, url, servers, backup); false allows only cookie,
	// ttl and max_bytes there.
	VHostSessionStore *bool `toml:"vhost_session_store,omitempty"`
	// NestedNames (default false) lets a vhost claim names under another
	// user's vhost names (www.dave.example, *.dave.example) or a wildcard
	// that covers them.
	NestedNames bool `toml:"nested_names,omitempty"`
	// RequireTenantOwned (default false) requires a vhost with a user to
	// have its root and hook files owned by that user, so a vhost file
	// cannot borrow another tenant's uid.
	RequireTenantOwned bool `toml:"require_tenant_owned,omitempty"`

	// SessionKeys is the file of the secrets session values are sealed
	// with (default state_dir/session.keys, 0600); servers that share
	// sessions share it. SessionKeyRotation is its rotation period
	// (default 24h; the previous secret opens for one more period).
	SessionKeys        string   `toml:"session_keys,omitempty"`
	SessionKeyRotation Duration `toml:"session_key_rotation,omitzero"`
	// AdminTokenFile holds the bearer token admin_listen requires
	// (default state_dir/admin.token, 0600, made on first start).
	AdminTokenFile string `toml:"admin_token_file,omitempty"`
	// LogRedactQuery are query parameters whose values access logs and
	// traces replace by "REDACTED" (default: DefaultRedactQuery; [] = off).
	LogRedactQuery *[]string `toml:"log_redact_query,omitempty"`
	// MaxThreads is the server-wide budget of OS threads the switching
	// modes may hold for tenants (default 4096); past it requests wait up
	// to handshake_wait, then get 503.
	MaxThreads int `toml:"max_threads,omitzero"`
	// H2MaxStreams is HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS (default:
	// the largest max_concurrent_per_client, 100 to 250).
	H2MaxStreams int `toml:"h2_max_streams,omitzero"`
	// TenantCPUShare is the share of the CPUs one tenant's hooks, CGI and
	// PHP may hold while another tenant waits (default 0.5; 1 = off).
	TenantCPUShare float64 `toml:"tenant_cpu_share,omitzero"`
}

// Limits is a vhost's [limits] table.
type Limits struct {
	// MaxWorkers bounds the tenant's worker threads in thread mode (default
	// 4 per CPU, at least 4).
	MaxWorkers int `toml:"max_workers,omitzero"`
	// WorkerIdle is how long an idle worker thread lives (default 30s).
	WorkerIdle Duration `toml:"worker_idle,omitzero"`
	// ScriptTimeout is the time limit of one hook run (default 1s).
	ScriptTimeout Duration `toml:"script_timeout,omitzero"`
	// ScriptMemory is the memory limit of a hook VM where the engine
	// enforces one (default 64MiB).
	ScriptMemory Size `toml:"script_memory,omitzero"`
	// MaxScriptSize is the largest hook or required module file (default
	// 1MiB, at most 16MiB).
	MaxScriptSize Size `toml:"max_script_size,omitzero"`
	// SharedDictSize is the byte budget of the vhost's shared dictionary
	// (hostd.shared): keys and values (default 16MiB).
	SharedDictSize Size `toml:"shared_dict_size,omitzero"`
	// CGITimeout is the time limit of a CGI process group (default 30s).
	CGITimeout Duration `toml:"cgi_timeout,omitzero"`
	// MaxBody is the largest request body hooks and CGI accept (default 1MiB).
	MaxBody Size `toml:"max_body,omitzero"`
	// MaxFormPart is the largest part of a multipart/form-data body a
	// hook's r:post_args accepts (default: max_body); a larger one fails
	// the hook with 413.
	MaxFormPart Size `toml:"max_form_part,omitzero"`
	// MaxResponse is the largest response a hook may write (default 16MiB).
	MaxResponse Size `toml:"max_response,omitzero"`
	// MaxConcurrent bounds the vhost's requests in progress (default 256,
	// -1 = unlimited); excess requests get 503 with Retry-After.
	MaxConcurrent int `toml:"max_concurrent,omitzero"`
	// MaxConcurrentPerClient bounds the requests in progress of one
	// client (an IPv4 address, an IPv6 /64) on this vhost (default
	// max_concurrent/8, at least 4; -1 = unlimited).
	MaxConcurrentPerClient int `toml:"max_concurrent_per_client,omitzero"`
	// MaxRanges bounds the byte ranges of one Range request for a static
	// file (default 16, -1 = unlimited); with more, the whole file is sent.
	MaxRanges int `toml:"max_ranges,omitzero"`
	// OpenFileCacheValid keeps the descriptors of static files the gate
	// opened for this long, like nginx's open_file_cache_valid (default
	// "0s": off, every request opens the file through the gate). A hit
	// still fstat(2)s the kept descriptor and opens the file again when
	// it changed (content, mode, owner, links); what may be served for up
	// to this long is a file whose path changed around it (a parent
	// directory made unreadable, moved or replaced). See host/openfiles.go.
	OpenFileCacheValid Duration `toml:"open_file_cache_valid,omitzero"`
	// OpenFileCacheMax bounds the descriptors the vhost's open-file cache
	// keeps (default 1000, -1 = only the server's budget, a quarter of its
	// RLIMIT_NOFILE); the least recently used one is closed first.
	OpenFileCacheMax int `toml:"open_file_cache_max,omitzero"`

	// CGI containment, set in every CGI process before it runs.
	//
	// CGICPU is RLIMIT_CPU (default: cgi_timeout).
	CGICPU Duration `toml:"cgi_cpu,omitzero"`
	// CGIMemory is RLIMIT_DATA, the writable memory of each process
	// (default 512MiB).
	CGIMemory Size `toml:"cgi_memory,omitzero"`
	// CGIProcesses is RLIMIT_NPROC: processes of the tenant's uid in all,
	// so a fork bomb gets EAGAIN (default 512, -1 = unlimited).
	CGIProcesses int `toml:"cgi_processes,omitzero"`
	// CGIOpenFiles is RLIMIT_NOFILE (default 1024, -1 = unlimited).
	CGIOpenFiles int `toml:"cgi_open_files,omitzero"`
	// CGIGrace is how long the processes a CGI script left behind (a
	// setsid daemon, a double fork) may outlive its request (default 2s)
	// when they may outlive the script at all: with CGIBackground, or where
	// the kernel refuses hostd PID namespaces.
	CGIGrace Duration `toml:"cgi_grace,omitzero"`
	// CGIBackground lets what a CGI script leaves behind live until
	// cgi_grace after its request, as Apache's suEXEC lets it live: the
	// script runs in hostd's PID namespace. By default (false) each script
	// is PID 1 of a PID namespace of its own, and the kernel kills what it
	// started when it exits.
	CGIBackground bool `toml:"cgi_background,omitempty"`
}

// CGI is a vhost's [cgi] table.
type CGI struct {
	Enabled bool `toml:"enabled,omitempty"`
	// Extensions run as CGI scripts (default [".cgi"]).
	Extensions []string `toml:"extensions,omitempty"`
	// Interpreters maps an extension to the program that runs it, e.g.
	// { ".php" = "/usr/bin/php-cgi" }.
	Interpreters map[string]string `toml:"interpreters,omitempty"`
}

// Hook is one [[hooks]] entry of a vhost.
type Hook struct {
	Phase string `toml:"phase,omitempty"`
	// File is the script, relative to the vhost file; made absolute on load.
	File string `toml:"file,omitempty"`
	// Path, when set, limits the hook to matching request paths: an exact
	// path, or a prefix ending in "*".
	Path string `toml:"path,omitempty"`

	line int
}

// Line returns the line of the hook's table in its vhost file.
func (h Hook) Line() int { return h.line }

// Matches reports whether the hook applies to the request path p.
func (h Hook) Matches(p string) bool {
	switch {
	case h.Path == "":
		return true
	case strings.HasSuffix(h.Path, "*"):
		return strings.HasPrefix(p, strings.TrimSuffix(h.Path, "*"))
	default:
		return p == h.Path
	}
}

// Respond is one [[respond]] entry of a vhost: a fixed response served
// natively (no script, no file), like Caddy's respond or nginx's return.
type Respond struct {
	// Path is an exact path, or a prefix ending in "*" (required).
	Path string `toml:"path,omitempty"`
	// Status defaults to 200.
	Status int `toml:"status,omitzero"`
	// Body is sent as is.
	Body string `toml:"body,omitempty"`
	// ContentType defaults to "text/plain; charset=utf-8".
	ContentType string `toml:"content_type,omitempty"`
}

// Matches reports whether the entry applies to the request path p.
func (r Respond) Matches(p string) bool { return Hook{Path: r.Path}.Matches(p) }

// VHost is one tenant's file.
type VHost struct {
	ServerName string   `toml:"server_name,omitempty"`
	Aliases    []string `toml:"aliases,omitempty"`
	// Root is the document root, relative to the vhost file; made absolute.
	Root string `toml:"root,omitempty"`
	// User is the tenant's user name or numeric uid; Group its group name
	// or gid (default: the user's primary group, or the uid's number when
	// it has no passwd entry).
	User  string `toml:"user,omitempty"`
	Group string `toml:"group,omitempty"`
	// TLSCert and TLSKey are PEM files (relative to the vhost file);
	// without both, hostd generates a self-signed certificate.
	TLSCert string `toml:"tls_cert,omitempty"`
	TLSKey  string `toml:"tls_key,omitempty"`
	// TLS = "acme" obtains and renews the certificate from the ACME CA of
	// server.acme_directory (TLS-ALPN-01 on listen_https, HTTP-01 on
	// listen_http); "" uses tls_cert/tls_key or a generated one.
	TLS string `toml:"tls,omitempty"`
	// Index files tried for a directory (default ["index.html"]).
	Index []string `toml:"index,omitempty"`
	// AllowHTTP serves this vhost on the plain listener instead of redirecting.
	AllowHTTP bool `toml:"allow_http,omitempty"`
	// DirectoryListing lists directories without an index file (default off).
	DirectoryListing bool `toml:"directory_listing,omitempty"`
	// Sandbox overrides server.default_sandbox.
	Sandbox string `toml:"sandbox,omitempty"`
	// IORoots are further directories (relative to the vhost file) the
	// Lua io and os functions may reach, besides the document root and
	// the hook directories.
	IORoots []string `toml:"io_roots,omitempty"`
	// Outbound lists where the vhost's hooks may send HTTP requests
	// (hostd.http.request): host names ("api.example.com", or
	// "*.example.com" for any name below it), IP addresses and CIDR
	// prefixes. Empty: none. Loopback, link-local, private and other
	// special addresses, and those of the server's session stores, are
	// reachable only through an address entry that names them.
	Outbound []string `toml:"outbound,omitempty"`
	// ErrorLog receives the tenant's hook and CGI errors (default: the
	// server's log).
	ErrorLog string `toml:"error_log,omitempty"`
	// AccessLog is the vhost's own access log (relative to the vhost file),
	// in server.log_format, in addition to the server's; "" = none.
	AccessLog string `toml:"access_log,omitempty"`
	// RunAsServer accepts that this vhost's hooks (sandbox none or suexec)
	// or CGI scripts (sandbox none) run with the server's identity when the
	// server is privileged (root or CAP_SETUID); without it such a vhost is
	// refused. Only for code the operator trusts as much as hostd itself.
	RunAsServer bool `toml:"run_as_server,omitempty"`

	Limits Limits `toml:"limits,omitempty"`
	CGI    CGI    `toml:"cgi,omitempty"`
	PHP    PHP    `toml:"php,omitempty"` // php.go
	Hooks  []Hook `toml:"hooks,omitempty"`
	// Sessions overrides the main file's [sessions] keys it sets; after
	// Load it is the effective session configuration.
	Sessions Sessions `toml:"sessions,omitempty"`
	// Respond are fixed native responses, tried after the content hooks.
	Respond []Respond `toml:"respond,omitempty"`

	// TLSProfile overrides server.tls_profile for this vhost's names
	// ("intermediate" or "modern"); after Load it is the effective one.
	TLSProfile string `toml:"tls_profile,omitempty"`
	// HSTS is the Strict-Transport-Security header of the vhost's HTTPS
	// responses: true for "max-age=31536000", or the header value
	// (e.g. "max-age=63072000; includeSubDomains; preload"). Off by
	// default: once a browser saw it, the site cannot go back to HTTP.
	HSTS HSTS `toml:"hsts,omitempty"`

	// Set by Load (no keys: Encode does not write them).
	File   string   `toml:"-"` // the vhost file
	UID    uint32   `toml:"-"` // resolved User (0 when User is "")
	GID    uint32   `toml:"-"` // resolved Group
	Groups []uint32 `toml:"-"` // supplementary groups: none (a tenant gets only its gid)
	Mode   string   `toml:"-"` // effective sandbox mode ("auto" resolved)
	// AutoSandbox is true when Mode was chosen by "auto".
	AutoSandbox bool `toml:"-"`
	line        int  // line of server_name
	// aliasLine is the line of aliases (0 when absent).
	aliasLine int
}

// Names returns the server name followed by the aliases.
func (v *VHost) Names() []string {
	return append([]string{v.ServerName}, v.Aliases...)
}

// Config is a loaded, validated configuration. It is immutable: reloads
// build a new Config.
type Config struct {
	// File is the absolute path of the main file.
	File   string
	Server Server
	// VHosts in file name order.
	VHosts []*VHost
	// Dir is the directory of the main file.
	Dir string
	// StateDir, AccessLog and VHostGlob are absolute.
	StateDir  string
	AccessLog string
	VHostGlob string
	// ServerUID and ServerGID are the resolved server.user (valid when
	// HasServerUser).
	ServerUID, ServerGID uint32
	HasServerUser        bool
	// Sessions is the main file's [sessions] table (the vhosts' default).
	Sessions Sessions

	mainLoc *locator // key positions in the main file (ServerKeyPos)
	// implicitSandbox is true when the main file sets no default_sandbox.
	implicitSandbox bool
	policy          *policy // the resolved tenant policy (policy.go)
}

// MinUID returns server.min_uid or its default.
func (c *Config) MinUID() int64 {
	if c.Server.MinUID != nil {
		return *c.Server.MinUID
	}
	return cgi.DefaultMinUID
}

// Lookup returns the vhost serving host name, or nil.
func (c *Config) Lookup(name string) *VHost {
	for _, v := range c.VHosts {
		for _, n := range v.Names() {
			if strings.EqualFold(n, name) {
				return v
			}
		}
	}
	return nil
}
