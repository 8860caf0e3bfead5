package phpfpm

import (
	"bytes"
)

const (
	// maxEvent bounds one logged PHP message; longer ones are cut.
	maxEvent = 16 << 10
	// maxEventBytes bounds what one request may log; the rest is dropped,
	// with one line saying so.
	maxEventBytes = 1 << 20
)

// phpMessage starts every message PHP sends over FCGI_STDERR.
var phpMessage = []byte("PHP message: ")

// events turns a request's FCGI_STDERR stream into log events: PHP sends
// each message ("PHP message: ..." and its continuation lines, such as a
// stack trace) in one write, so a line starting with "PHP message: "
// starts an event, the lines that follow belong to it, and an event ends
// with the record that ends in a newline or with the request. emit gets
// one event at a time, newlines included; the error log escapes them so
// that an event stays one line. An events is used by one goroutine.
type events struct {
	emit    func([]byte)
	partial []byte // an unterminated line
	pending []byte // the event being gathered
	total   int
	dropped bool
}

// write takes one FCGI_STDERR record's content.
func (e *events) write(p []byte) {
	if e.dropped {
		return
	}
	if e.total += len(p); e.total > maxEventBytes {
		e.flush()
		e.emit([]byte("(further PHP messages of this request dropped)"))
		e.dropped = true
		return
	}
	e.partial = append(e.partial, p...)
	for {
		i := bytes.IndexByte(e.partial, '\n')
		if i < 0 {
			break
		}
		e.line(e.partial[:i])
		e.partial = e.partial[i+1:]
	}
	if len(e.partial) > maxEvent {
		e.line(e.partial)
		e.partial = e.partial[:0]
	}
	if len(e.partial) == 0 {
		e.end()
	}
	e.partial = append([]byte(nil), e.partial...)
}

// line adds a complete line to the current event, or starts a new one.
func (e *events) line(l []byte) {
	l = bytes.TrimSuffix(l, []byte("\r"))
	if bytes.HasPrefix(l, phpMessage) {
		e.end()
	}
	if len(e.pending) > 0 {
		e.pending = append(e.pending, '\n')
	}
	room := maxEvent - len(e.pending)
	if room <= 0 {
		return
	}
	e.pending = append(e.pending, l[:min(len(l), room)]...)
}

// end emits the pending event.
func (e *events) end() {
	if len(bytes.TrimSpace(e.pending)) > 0 {
		e.emit(e.pending)
	}
	e.pending = e.pending[:0]
}

// flush emits what is left at the end of the request.
func (e *events) flush() {
	if len(e.partial) > 0 {
		e.line(e.partial)
		e.partial = e.partial[:0]
	}
	e.end()
}
