package bench

import (
	"path"
	"strings"
	"time"

	"github.com/hostd/hostd/bench/load"
)

// Handler is one request handler of the matrix.
type Handler struct {
	// Name is the matrix name: static, native, lua, mruby, cgi, and the
	// php family: php-cgi, php-fpm, phpinfo-cgi, phpinfo-fpm.
	Name string
	// Path is requested on every tenant.
	Path string
	// BodyLen is the wanted body length (-1: any).
	BodyLen int
	// CGI is true for handlers served by another process, a CGI child or
	// a php-fpm pool (the ones with a suexec cell: suexec mode changes
	// only CGI children, and the pools run as the tenant in every mode).
	CGI bool
	// Hello marks the handlers whose response must be byte-identical.
	Hello bool
	// KeepAliveOnly runs the handler on HTTPS keep-alive only: what it
	// measures does not depend on the transport.
	KeepAliveOnly bool
	// Cached handlers are requested on the tenants' twin vhosts
	// (site.cachedName): the same root and uid, with the open-file cache
	// on ([limits] open_file_cache_valid = OpenFileCacheValid).
	Cached bool
	// Desc is shown in reports.
	Desc string
	// MaxConns caps the closed loop's connections and MinDuration raises
	// its duration for a slow handler, so enough responses complete
	// within the measured time.
	MaxConns    int
	MinDuration time.Duration
}

// Hello is the body of every hello handler.
const Hello = "Hello, world!\n"

// Handlers are the handlers in report order.
var Handlers = []Handler{
	{Name: "static", Path: "/1k.txt", BodyLen: 1024, Desc: "static file, 1 KiB"},
	{Name: "static-cached", Path: "/1k.txt", BodyLen: 1024, Cached: true, KeepAliveOnly: true,
		Desc: "static file, 1 KiB, open_file_cache_valid = 1s"},
	{Name: "native", Path: "/native", BodyLen: len(Hello), Hello: true, Desc: "native Go hello ([[respond]])"},
	{Name: "lua", Path: "/lua", BodyLen: len(Hello), Hello: true, Desc: "Lua content hook hello"},
	{Name: "mruby", Path: "/mruby", BodyLen: len(Hello), Hello: true, Desc: "mruby content hook hello"},
	{Name: "cgi", Path: "/cgi/hello.cgi", BodyLen: len(Hello), CGI: true, Hello: true, Desc: "CGI /bin/sh hello"},
	// The php family: the same two scripts through php-cgi (a CGI process
	// per request) and through the tenant's php-fpm pool (FastCGI).
	{Name: "php-cgi", Path: "/cgi/hello.phpcgi", BodyLen: len(Hello), CGI: true, Desc: "PHP hello via php-cgi (CGI)",
		MaxConns: 8, MinDuration: 1500 * time.Millisecond, KeepAliveOnly: true},
	{Name: "php-fpm", Path: "/php/hello.php", BodyLen: len(Hello), CGI: true, Desc: "PHP hello via the tenant's php-fpm pool (FastCGI)",
		KeepAliveOnly: true},
	{Name: "phpinfo-cgi", Path: "/cgi/info.phpcgi", BodyLen: -1, CGI: true, Desc: "phpinfo(INFO_GENERAL) page via php-cgi (CGI)",
		MaxConns: 8, MinDuration: 1500 * time.Millisecond, KeepAliveOnly: true},
	{Name: "phpinfo-fpm", Path: "/php/info.php", BodyLen: -1, CGI: true, Desc: "phpinfo(INFO_GENERAL) page via the tenant's php-fpm pool",
		KeepAliveOnly: true},
}

// Modes are the sandbox modes in report order.
var Modes = []string{"none", "suexec", "uring", "thread", "thread-per-request", "inline"}

func handlerByName(name string) (Handler, bool) {
	for _, h := range Handlers {
		if h.Name == name {
			return h, true
		}
	}
	return Handler{}, false
}

// inMatrix reports whether mode applies to handler: suexec changes only
// CGI children (static files and hooks run as the server, as in none); the
// open-file cache is measured in none, uring and thread.
func inMatrix(h Handler, mode string) bool {
	if h.Cached {
		return mode == "none" || mode == "uring" || mode == "thread"
	}
	return mode != "suexec" || h.CGI
}

// selector matches cell names against --cells patterns.
type selector []string

func newSelector(spec string) selector {
	var s selector
	for _, p := range strings.Split(spec, ",") {
		if p = strings.TrimSpace(p); p != "" {
			s = append(s, p)
		}
	}
	return s
}

// match reports whether name ("lua/thread/https", "sweep/lua/thread")
// is selected: a pattern is a path.Match glob over the whole name or
// over its leading segments ("lua", "*/inline", "sweep").
func (s selector) match(name string) bool {
	if len(s) == 0 {
		return true
	}
	segs := strings.Split(name, "/")
	for _, p := range s {
		n := strings.Count(p, "/") + 1
		if n > len(segs) {
			continue
		}
		if ok, _ := path.Match(p, strings.Join(segs[:n], "/")); ok {
			return true
		}
	}
	return false
}

// closedName is a closed-loop cell's name.
func closedName(h, mode string, tr load.Transport) string { return h + "/" + mode + "/" + string(tr) }

// sweepName is a rate sweep's name.
func sweepName(h, mode string) string { return "sweep/" + h + "/" + mode }

// plannedCell is one cell to run.
type plannedCell struct {
	handler   Handler
	mode      string
	transport load.Transport
	sweep     bool
}

func (p plannedCell) name() string {
	if p.sweep {
		return sweepName(p.handler.Name, p.mode)
	}
	return closedName(p.handler.Name, p.mode, p.transport)
}

// plan lists the cells of a run in order: the closed-loop grid, then the
// sweeps.
func plan(quick bool, sel selector, peers bool) []plannedCell {
	var cells []plannedCell
	add := func(c plannedCell) {
		if sel.match(c.name()) {
			cells = append(cells, c)
		}
	}
	for _, tr := range load.Transports {
		for _, h := range Handlers {
			for _, m := range Modes {
				if !inMatrix(h, m) || h.KeepAliveOnly && tr != load.HTTPS {
					continue
				}
				if quick && tr != load.HTTPS && !quickExtra(h, m) {
					continue
				}
				add(plannedCell{handler: h, mode: m, transport: tr})
			}
		}
	}
	if peers {
		for _, hn := range peerHandlers {
			h, _ := handlerByName(hn)
			for _, p := range PeerNames {
				add(plannedCell{handler: h, mode: p, transport: load.HTTPS})
			}
		}
	}
	for _, s := range sweeps(quick) {
		add(s)
	}
	return cells
}

// quickExtra are the cells --quick runs on the transports other than
// HTTPS keep-alive: native hello unsandboxed and in a thread, and the
// shell CGI with and without suexec.
func quickExtra(h Handler, mode string) bool {
	switch h.Name {
	case "native":
		return mode == "none" || mode == "uring" || mode == "thread"
	case "cgi":
		return mode == "none" || mode == "suexec"
	}
	return false
}

// sweeps are the open-loop rate sweeps: the paper's figure had the
// in-process handler (DSO) and CGI, each with and without access control.
func sweeps(quick bool) []plannedCell {
	lua, _ := handlerByName("lua")
	cgi, _ := handlerByName("cgi")
	var s []plannedCell
	luaModes := []string{"none", "uring", "thread", "thread-per-request", "inline"}
	if quick {
		luaModes = []string{"none", "uring", "thread", "inline"}
	}
	for _, m := range luaModes {
		s = append(s, plannedCell{handler: lua, mode: m, transport: load.HTTPS, sweep: true})
	}
	if !quick {
		for _, m := range []string{"none", "suexec", "thread"} {
			s = append(s, plannedCell{handler: cgi, mode: m, transport: load.HTTPS, sweep: true})
		}
	}
	return s
}
