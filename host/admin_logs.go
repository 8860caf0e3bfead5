package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hostd/hostd/host/logtext"
	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/tenant"
)

// logFile is an append-only log file that can be reopened after logrotate
// moved it away. It is opened, and reopened, under sandbox.LogPolicy: every
// directory on the way and the file itself must be out of the tenants'
// reach, the file is never a symbolic link, FIFO or hard link, and a
// tenant's own log gets the tenant's group so the tenant can read it. It is
// safe for concurrent use.
type logFile struct {
	path   string
	policy sandbox.LogPolicy
	gid    int // group of a tenant's log; -1 for the server's own
	logger *slog.Logger
	mu     sync.RWMutex
	f      *os.File
}

// openLogFile opens path for appending under policy; gid is the tenant's
// group, or -1.
func openLogFile(path string, policy sandbox.LogPolicy, gid int, logger *slog.Logger) (*logFile, error) {
	l := &logFile{path: path, policy: policy, gid: gid, logger: logger}
	f, err := l.open()
	if err != nil {
		return nil, err
	}
	l.f = f
	return l, nil
}

func (l *logFile) open() (*os.File, error) {
	f, err := sandbox.OpenLogFile(l.path, l.policy, l.gid)
	if err != nil && f != nil && errors.Is(err, sandbox.ErrLogGroup) {
		// The file is usable; the tenant just cannot read it.
		l.logger.Warn("log file kept without the tenant's group", "err", err)
		err = nil
	}
	return f, err
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.f.Write(p)
}

// Reopen opens the path again, under the same rules, and switches writes
// to the new file. When that fails the old file stays in use.
func (l *logFile) Reopen() error {
	f, err := l.open()
	if err != nil {
		return fmt.Errorf("reopen %s: %w", l.path, err)
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	return old.Close()
}

func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// reopen reopens the access log file; stderr and off are left alone.
func (a *accessLog) reopen() error {
	if a.file == nil {
		return nil
	}
	return a.file.Reopen()
}

// ReopenLogs reopens the access log and every vhost's error log, for
// logrotate (SIGUSR1). It returns every error; logs that reopened keep
// working. It is safe for concurrent use.
func (s *Server) ReopenLogs() error {
	var errs []error
	if err := s.access.reopen(); err != nil {
		errs = append(errs, err)
	}
	for _, v := range s.routes.Load().all {
		if v.errF != nil {
			if err := v.errF.Reopen(); err != nil {
				errs = append(errs, err)
			}
		}
		if v.acc != nil {
			if err := v.acc.reopen(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		s.logger.Error("reopen logs", "err", err)
	} else {
		s.logger.Info("logs reopened")
	}
	return err
}

// openVHostAccessLog opens a vhost's own access_log, or returns nil when
// it has none. The tenant's group may read it.
func openVHostAccessLog(s *Server, vc *tenant.VHost) (*accessLog, error) {
	if vc.AccessLog == "" {
		return nil, nil
	}
	a, err := openAccessLog(vc.AccessLog, s.cfg.LogPolicy(), vc.LogGroup(), s.logger)
	if err != nil {
		return nil, fmt.Errorf("vhost access_log: %w", err)
	}
	a.json = s.cfg.Server.LogFormat == "json"
	a.redact = s.guard.redact
	return a, nil
}

// accessRecord is one access log line in log_format = "json".
type accessRecord struct {
	Time       string `json:"time"`
	VHost      string `json:"vhost"`
	Remote     string `json:"remote"`
	User       string `json:"user,omitempty"`
	Method     string `json:"method"`
	URI        string `json:"uri"`
	Proto      string `json:"proto"`
	Status     int    `json:"status"`
	Bytes      int64  `json:"bytes"`
	Referer    string `json:"referer,omitempty"`
	UserAgent  string `json:"user_agent,omitempty"`
	DurationUS int64  `json:"duration_us"`
	TLS        string `json:"tls,omitempty"`
	Resumed    bool   `json:"resumed,omitempty"`
}

// logJSON writes the request as one JSON object. What the client sent is
// escaped with logtext first (DEL, C1 controls and bidi overrides, which
// JSON leaves alone, included), so every string field holds the same text
// as in the combined format and no line can be forged.
func (a *accessLog) logJSON(r *http.Request, vhost string, rec *recorder, start time.Time) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ar := accessRecord{
		Time: start.UTC().Format(time.RFC3339Nano), VHost: vhost, Remote: host, Method: logtext.Escape(r.Method),
		URI: logtext.Escape(a.redact.uri(r.RequestURI)), Proto: logtext.Escape(r.Proto), Status: rec.statusCode(), Bytes: rec.bytes,
		Referer: logtext.Escape(a.redact.uri(r.Referer())), UserAgent: logtext.Escape(r.UserAgent()), DurationUS: time.Since(start).Microseconds(),
	}
	if u, _, ok := r.BasicAuth(); ok {
		ar.User = logtext.Escape(u)
	}
	if r.TLS != nil {
		ar.TLS, ar.Resumed = tlsVersionName(r.TLS.Version), r.TLS.DidResume
	}
	b, err := json.Marshal(ar)
	if err != nil {
		return
	}
	b = append(b, '\n')
	a.mu.Lock()
	a.w.Write(b)
	a.mu.Unlock()
}
