package host

import (
	"crypto/tls"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/host/logtext"
)

// traceQueue is how many lines a slow trace subscriber may lag behind
// before lines are dropped for it (and counted).
const traceQueue = 4096

// traceFlush is how long a trace stream collects lines before writing
// them: a live view needs no more than ~20 updates a second.
const traceFlush = 50 * time.Millisecond

// tracer broadcasts one line per request to the attached `hostd trace`
// clients. With no subscriber, the request path pays one atomic load.
// It is safe for concurrent use.
type tracer struct {
	n      atomic.Int32 // subscribers
	euid   int          // the server's uid, shown for vhosts without their own identity
	redact *redactor    // hides secret query values (redact.go)
	mu     sync.Mutex
	subs   map[*traceSub]struct{}
}

// traceSub is one attached client; vhost "" follows every vhost.
type traceSub struct {
	vhost   string
	lines   chan []byte
	dropped atomic.Uint64
}

func (t *tracer) active() bool { return t.n.Load() > 0 }

func (t *tracer) subscribe(vhost string) *traceSub {
	sub := &traceSub{vhost: vhost, lines: make(chan []byte, traceQueue)}
	t.mu.Lock()
	if t.subs == nil {
		t.subs = make(map[*traceSub]struct{})
	}
	t.subs[sub] = struct{}{}
	t.n.Add(1)
	t.mu.Unlock()
	return sub
}

func (t *tracer) unsubscribe(sub *traceSub) {
	t.mu.Lock()
	if _, ok := t.subs[sub]; ok {
		delete(t.subs, sub)
		t.n.Add(-1)
	}
	t.mu.Unlock()
}

// traceTID records the tenant thread's id for the trace line; runAsTenant
// runs it on the tenant thread.
func traceTID(w http.ResponseWriter) {
	if rec, ok := w.(*recorder); ok && rec.wantTID {
		rec.tid = unix.Gettid()
	}
}

// publish formats the line of a finished request and hands it to every
// matching subscriber without blocking.
func (t *tracer) publish(v *vhost, rec *recorder, r *http.Request, start time.Time, d time.Duration) {
	name := v.cfg.ServerName
	t.mu.Lock()
	defer t.mu.Unlock()
	var line []byte
	for sub := range t.subs {
		if sub.vhost != "" && sub.vhost != name {
			continue
		}
		if line == nil {
			line = traceLine(v, rec, r, start, d, t.euid, t.redact)
		}
		select {
		case sub.lines <- line:
		default:
			sub.dropped.Add(1)
		}
	}
}

// traceLine is: time vhost uid= tid= method path status bytes duration
// tls-version handshake.
func traceLine(v *vhost, rec *recorder, r *http.Request, start time.Time, d time.Duration, euid int, red *redactor) []byte {
	b := make([]byte, 0, 192)
	b = start.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
	b = append(b, ' ')
	b = append(b, v.cfg.ServerName...)
	b = append(b, " uid="...)
	uid := uint64(euid)
	if v.cfg.Mode != "none" && v.cfg.User != "" {
		uid = uint64(v.cfg.UID)
	}
	b = strconv.AppendUint(b, uid, 10)
	b = append(b, " tid="...)
	if rec.tid == 0 {
		b = append(b, '-')
	} else {
		b = strconv.AppendInt(b, int64(rec.tid), 10)
	}
	b = append(b, ' ')
	b = logtext.AppendField(b, r.Method)
	b = append(b, ' ')
	b = logtext.AppendField(b, red.uri(r.URL.RequestURI()))
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(rec.statusCode()), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, rec.bytes, 10)
	b = append(b, "B "...)
	b = append(b, d.Round(time.Microsecond).String()...)
	b = append(b, ' ')
	if r.TLS == nil {
		b = append(b, "plain -"...)
	} else {
		b = append(b, tlsVersionName(r.TLS.Version)...)
		if r.TLS.DidResume {
			b = append(b, " resumed"...)
		} else {
			b = append(b, " full"...)
		}
	}
	return append(b, '\n')
}

func tlsVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS13:
		return "TLS1.3"
	case tls.VersionTLS12:
		return "TLS1.2"
	}
	return "TLS-0x" + strconv.FormatUint(uint64(v), 16)
}
