package admin

import "time"

// Status is a snapshot of a server for `hostd status --json` and the admin
// listener's /status.json: snake_case keys, maps keyed by name.
type Status struct {
	Version    string         `json:"version"`
	ConfigFile string         `json:"config_file"`
	Generation uint64         `json:"generation"`
	Started    time.Time      `json:"started"`
	Uptime     float64        `json:"uptime_seconds"`
	Threads    int            `json:"threads"` // OS threads of the process
	Handshakes HandshakeStats `json:"tls_handshakes"`
	Reloads    ReloadStats    `json:"reloads"`
	Requests   ServerRequests `json:"requests"`
	// VHosts are the vhosts served, by server_name.
	VHosts map[string]VHostStatus `json:"vhosts"`
	// ConfigErrors are the errors of vhost files not applied, by file:
	// vhosts kept on their previous version, or not served.
	ConfigErrors map[string][]string `json:"config_errors,omitempty"`
	// Containment is what the server enforces on the processes it starts
	// (CGI scripts, php-fpm pools); nil until a vhost enables either.
	Containment *ContainmentStatus `json:"containment,omitempty"`
}

// ContainmentStatus is what the server's process spawner enforces, as
// probed at its start (sandbox.Containment).
type ContainmentStatus struct {
	// PIDNamespace: every CGI script (but with cgi_background) and
	// php-fpm master is PID 1 of its own PID namespace, so what it starts
	// dies with it, and with hostd.
	PIDNamespace       bool   `json:"pid_namespace"`
	PIDNamespaceWhyNot string `json:"pid_namespace_why_not,omitempty"`
	// Rlimits: the cgi_* resource limits are set in every CGI process.
	Rlimits       bool   `json:"rlimits"`
	RlimitsWhyNot string `json:"rlimits_why_not,omitempty"`
}

// ReloadStats count reloads since the start.
type ReloadStats struct {
	Failed  uint64 `json:"failed"`  // refused: the main file had errors
	Partial uint64 `json:"partial"` // applied without some vhost files
}

// ServerRequests count what no vhost answered.
type ServerRequests struct {
	UnknownHost       uint64 `json:"unknown_host"` // 404: no vhost for the host name
	Misdirected       uint64 `json:"misdirected"`  // 421: Host and SNI name different vhosts
	ConnsRefusedPerIP uint64 `json:"connections_refused_per_ip"`
}

// VHostStatus is one vhost's counters.
type VHostStatus struct {
	File         string            `json:"file"`
	Mode         string            `json:"sandbox"`
	Requests     uint64            `json:"requests"`
	ByClass      map[string]uint64 `json:"by_class"` // "2xx": n
	ByCode       map[string]uint64 `json:"by_code"`  // "200": n
	Errors       uint64            `json:"errors"`   // 5xx answers
	Active       int64             `json:"active"`   // requests in progress
	Bytes        uint64            `json:"bytes"`    // kept when metrics are on
	Workers      int               `json:"workers"`  // live worker threads
	Busy         int               `json:"busy"`     // workers running a request
	Threads      uint64            `json:"threads_started"`
	HookErrors   uint64            `json:"hook_errors"`
	HookTimeouts uint64            `json:"hook_timeouts"`
	CGISpawns    uint64            `json:"cgi_spawns"`
	Redirects    uint64            `json:"https_redirects"`         // 308 to HTTPS on the plain listener
	Rejected     uint64            `json:"max_concurrent_rejected"` // 503: max_concurrent reached
	SessionErrs  uint64            `json:"session_store_errors"`
	// SharedDict is the use of the vhost's shared dictionary (hostd.shared);
	// nil without hooks.
	SharedDict *SharedDictStatus `json:"shared_dict,omitempty"`
	// ConfigErrors are set when the vhost serves its previous version
	// because its new files have errors.
	ConfigErrors []string `json:"config_errors,omitempty"`

	// PHP is the state of the vhost's php-fpm pool; nil without [php]
	// (php.go).
	PHP *PHPStatus `json:"php,omitempty"`
}

// SharedDictStatus is the use of a vhost's shared dictionary.
type SharedDictStatus struct {
	Keys     int   `json:"keys"`
	Bytes    int64 `json:"bytes"`     // keys and values counted against the budget
	MaxBytes int64 `json:"max_bytes"` // [limits] shared_dict_size
}

// HandshakeStats is a snapshot of the TLS handshake counters.
type HandshakeStats struct {
	Full    uint64 `json:"full"`
	Resumed uint64 `json:"resumed"`
	Failed  uint64 `json:"failed"`
	Shed    uint64 `json:"shed"`
}

// PHPStatus is the state of a vhost's php-fpm pool.
type PHPStatus struct {
	State     string `json:"state"`         // idle, running, failed or closed
	PID       int    `json:"pid,omitempty"` // the master's, while running
	Starts    uint64 `json:"starts"`        // masters started
	Crashes   uint64 `json:"crashes"`       // masters that died unasked
	Requests  uint64 `json:"requests"`      // FastCGI requests sent
	Busy      int    `json:"busy"`          // connections carrying a request
	IdleConns int    `json:"idle_conns"`    // kept connections
}

// ReloadResult describes a reload that was applied, wholly or in part.
type ReloadResult struct {
	Generation uint64 `json:"generation"` // the new configuration generation
	Unchanged  int    `json:"unchanged"`  // vhosts whose settings did not change: same state, warm workers
	Added      int    `json:"added"`      // new vhosts
	Changed    int    `json:"changed"`    // vhosts rebuilt because their settings changed
	Removed    int    `json:"removed"`    // vhosts dropped; they drain and close in the background
	// Kept counts vhosts whose new files have errors: they keep serving
	// their previous version (hooks, VMs, shared dictionary included).
	Kept int `json:"kept"`
	// NotAdded counts new vhost files with errors: they are not served.
	NotAdded int `json:"not_added"`
	// VHosts lists every vhost the reload added, changed, removed, kept
	// or did not add (unchanged ones are only counted), in file order.
	VHosts []VHostChange `json:"vhosts,omitempty"`
	// Warnings are what the reload could not apply and needs a restart
	// ([server] settings), one sentence each.
	Warnings []string      `json:"warnings,omitempty"`
	Duration time.Duration `json:"duration_ns"` // load, validation and swap
}

// Partial reports whether some vhost files were not applied (Kept or
// NotAdded): `hostd reload` then exits with status 3.
func (r *ReloadResult) Partial() bool { return r.Kept > 0 || r.NotAdded > 0 }

// VHostChange is what a reload did with one vhost file.
type VHostChange struct {
	// Name is the vhost's server_name ("" for a new file that could not
	// be read).
	Name string `json:"name"`
	File string `json:"file"`
	// Action is ChangeAdded, ChangeChanged, ChangeRemoved, ChangeKept or
	// ChangeNotAdded.
	Action string `json:"action"`
	// Errors say why a vhost was kept on its previous version or not
	// added: FILE:LINE: message, one per entry.
	Errors []string `json:"errors,omitempty"`
}

// VHostChange actions.
const (
	ChangeAdded    = "added"
	ChangeChanged  = "changed"
	ChangeRemoved  = "removed"
	ChangeKept     = "kept"      // the new files have errors: the previous version keeps serving
	ChangeNotAdded = "not added" // a new file with errors
)
