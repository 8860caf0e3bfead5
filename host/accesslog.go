package host

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hostd/hostd/host/logtext"
	"github.com/hostd/hostd/sandbox"
)

// accessLog writes one line per request in the combined log format,
// prefixed with the vhost name (Apache's vhost_combined). Each line is a
// single write, so concurrent servers appending to one file do not
// interleave. It is safe for concurrent use.
type accessLog struct {
	mu   sync.Mutex
	w    io.Writer
	file *logFile // the log file, reopened on SIGUSR1; nil for stderr or off
	off  bool
	json bool // one JSON object per line instead of combined (admin_logs.go)
	// redact hides secret query values (redact.go); nil keeps them.
	redact *redactor
}

// openAccessLog opens an access log: "" is off, "-" is stderr, else a file
// opened under policy (gid: the tenant's group for a vhost's own log, -1
// for the server's).
func openAccessLog(path string, policy sandbox.LogPolicy, gid int, logger *slog.Logger) (*accessLog, error) {
	switch path {
	case "":
		return &accessLog{off: true}, nil
	case "-":
		return &accessLog{w: os.Stderr}, nil
	}
	f, err := openLogFile(path, policy, gid, logger)
	if err != nil {
		return nil, fmt.Errorf("access log: %w", err)
	}
	return &accessLog{w: f, file: f}, nil
}

func (a *accessLog) Close() {
	if a.file != nil {
		a.file.Close()
	}
}

func (a *accessLog) log(r *http.Request, vhost string, rec *recorder, start time.Time) {
	if a.off {
		return
	}
	if a.json {
		a.logJSON(r, vhost, rec, start)
		return
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	user := "-"
	if u, _, ok := r.BasicAuth(); ok && u != "" {
		user = u
	}
	var b strings.Builder
	b.Grow(256)
	b.WriteString(vhost)
	b.WriteByte(' ')
	b.WriteString(host)
	b.WriteString(" - ")
	b.WriteString(logtext.Field(user))
	b.WriteString(start.Format(" [02/Jan/2006:15:04:05 -0700] \""))
	b.WriteString(logtext.Quote(r.Method + " " + a.redact.uri(r.RequestURI) + " " + r.Proto))
	b.WriteString("\" ")
	b.WriteString(strconv.Itoa(rec.statusCode()))
	b.WriteByte(' ')
	if rec.bytes == 0 {
		b.WriteByte('-')
	} else {
		b.WriteString(strconv.FormatInt(rec.bytes, 10))
	}
	b.WriteString(" \"")
	b.WriteString(logtext.Quote(orDash(a.redact.uri(r.Referer()))))
	b.WriteString("\" \"")
	b.WriteString(logtext.Quote(orDash(r.UserAgent())))
	b.WriteString("\" ")
	b.WriteString(strconv.FormatInt(time.Since(start).Microseconds(), 10))
	b.WriteByte('\n')
	a.mu.Lock()
	io.WriteString(a.w, b.String())
	a.mu.Unlock()
}

// logAccess is the outermost stage: the server's access log line of
// every request the listeners route, written when the response is done.
// Deferred: an aborted response (a re-raised http.ErrAbortHandler) is
// logged too, then the panic goes on to the transport.
func (s *Server) logAccess(x *exchange, next func(*exchange)) {
	r := x.r // as the client sent it, not as hooks rewrote it
	defer func() { s.access.log(r, x.name, &x.rec, x.start) }()
	next(x)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// recorder wraps a ResponseWriter to learn the status and body size for
// the access log. Unwrap lets http.ResponseController reach the original.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64

	wantTID bool // a trace is attached: record the tenant thread id (trace.go)
	tid     int
}

func newRecorder(w http.ResponseWriter) *recorder { return &recorder{ResponseWriter: w} }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// WriteString passes a string on without a copy when the writer under it
// takes strings (the HTTP/1.1 writer does).
func (r *recorder) WriteString(s string) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := io.WriteString(r.ResponseWriter, s)
	r.bytes += int64(n)
	return n, err
}

// ReadFrom keeps sendfile(2) available to io.Copy on plain connections.
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	rf, ok := r.ResponseWriter.(io.ReaderFrom)
	if !ok {
		rf = writerOnly{r.ResponseWriter}
	}
	n, err := rf.ReadFrom(src)
	r.bytes += n
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		if r.status == 0 {
			r.status = http.StatusOK
		}
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// writerOnly hides every method but Write, so io.Copy does not recurse.
type writerOnly struct{ io.Writer }

func (w writerOnly) ReadFrom(src io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{w.Writer}, src)
}
