package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hostd/hostd/tenant"
)

// logFile is an append-only log file that can be reopened after logrotate
// moved it away. It is safe for concurrent use.
type logFile struct {
	path string
	mu   sync.RWMutex
	f    *os.File
}

func openLogFile(path string) (*logFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	return &logFile{path: path, f: f}, nil
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.f.Write(p)
}

// Reopen opens the path again and switches writes to the new file.
func (l *logFile) Reopen() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
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
// it has none.
func openVHostAccessLog(s *Server, vc *tenant.VHost) (*accessLog, error) {
	if vc.AccessLog == "" {
		return nil, nil
	}
	a, err := openAccessLog(vc.AccessLog)
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

// logJSON writes the request as one JSON object; encoding/json escapes
// whatever the client sent, so it cannot forge lines.
func (a *accessLog) logJSON(r *http.Request, vhost string, rec *recorder, start time.Time) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ar := accessRecord{
		Time: start.UTC().Format(time.RFC3339Nano), VHost: vhost, Remote: host, Method: r.Method,
		URI: a.redact.uri(r.RequestURI), Proto: r.Proto, Status: rec.statusCode(), Bytes: rec.bytes,
		Referer: a.redact.uri(r.Referer()), UserAgent: r.UserAgent(), DurationUS: time.Since(start).Microseconds(),
	}
	if u, _, ok := r.BasicAuth(); ok {
		ar.User = u
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
