package host

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/hostd/hostd/host/cgi"
	"github.com/hostd/hostd/tenant"
)

// respond is the last stage, on the tenant's identity: it serves the
// request's (possibly rewritten) path.
func respond(x *exchange, _ func(*exchange)) {
	x.v.serveFile(x.w, x.r, x.r.URL.Path)
}

// respond serves the first [[respond]] entry matching path and reports
// whether there was one.
func (v *vhost) respond(w http.ResponseWriter, path string) bool {
	for i := range v.cfg.Respond {
		rs := &v.cfg.Respond[i]
		if rs.Matches(path) {
			h := w.Header()
			if i < len(v.respondHdr) {
				// Shared, never changed values (capacity = length, so an
				// append to them copies).
				h["Content-Type"], h["Content-Length"] = v.respondHdr[i].contentType, v.respondHdr[i].contentLength
			} else {
				h.Set("Content-Type", rs.ContentType)
				h.Set("Content-Length", strconv.Itoa(len(rs.Body)))
			}
			w.WriteHeader(rs.Status)
			io.WriteString(w, rs.Body)
			return true
		}
	}
	return false
}

// respondHeader is the header values of one [[respond]] entry, made once
// per vhost.
type respondHeader struct{ contentType, contentLength []string }

// respondHeaders returns the header values of the vhost's [[respond]]
// entries, in order.
func respondHeaders(rs []tenant.Respond) []respondHeader {
	hs := make([]respondHeader, len(rs))
	for i := range rs {
		hs[i] = respondHeader{[]string{rs[i].ContentType}, []string{strconv.Itoa(len(rs[i].Body))}}
	}
	return hs
}

// serveFile serves path with the PHP pool or the CGI handler when it names
// a script, else as a static file.
func (v *vhost) serveFile(w http.ResponseWriter, r *http.Request, path string) {
	if len(v.cfg.Respond) > 0 && v.respond(w, path) {
		return
	}
	if v.php != nil && v.servePHP(w, r, path) { // php.go
		return
	}
	if v.cgi != nil {
		script, err := v.cgi.Resolve(path)
		switch {
		case err == nil:
			v.ops.cgiSpawns.Add(1)
			v.cpuRun(w, r, func(w http.ResponseWriter, r *http.Request) { v.cgi.ServeScript(w, r, script) }) // cpugate.go
			return
		case errors.Is(err, cgi.ErrForbidden):
			httpError(w, http.StatusForbidden, "access denied")
			return
		}
	}
	v.serveStatic(w, r, path)
}
