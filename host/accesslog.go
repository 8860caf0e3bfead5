package host

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
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

func openAccessLog(path string) (*accessLog, error) {
	switch path {
	case "":
		return &accessLog{off: true}, nil
	case "-":
		return &accessLog{w: os.Stderr}, nil
	}
	f, err := openLogFile(path)
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
	b.WriteString(quoteField(user, false))
	b.WriteString(start.Format(" [02/Jan/2006:15:04:05 -0700] \""))
	b.WriteString(quoteField(r.Method+" "+a.redact.uri(r.RequestURI)+" "+r.Proto, true))
	b.WriteString("\" ")
	b.WriteString(strconv.Itoa(rec.statusCode()))
	b.WriteByte(' ')
	if rec.bytes == 0 {
		b.WriteByte('-')
	} else {
		b.WriteString(strconv.FormatInt(rec.bytes, 10))
	}
	b.WriteString(" \"")
	b.WriteString(quoteField(orDash(a.redact.uri(r.Referer())), true))
	b.WriteString("\" \"")
	b.WriteString(quoteField(orDash(r.UserAgent()), true))
	b.WriteString("\" ")
	b.WriteString(strconv.FormatInt(time.Since(start).Microseconds(), 10))
	b.WriteByte('\n')
	a.mu.Lock()
	io.WriteString(a.w, b.String())
	a.mu.Unlock()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// quoteField escapes what a client sent so that it cannot forge log lines
// or fields: control characters, quotes and backslashes become \xHH.
func quoteField(s string, inQuotes bool) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '"' || c == '\\' || (!inQuotes && c == ' ') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '"' || c == '\\' || (!inQuotes && c == ' ') {
			fmt.Fprintf(&b, `\x%02x`, c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
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
