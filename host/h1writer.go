package host

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// h1Writer is the http.ResponseWriter of hostd's HTTP/1.1 path. Its
// framing is net/http's: a body of at most h1Buffered bytes when the
// handler returns gets a Content-Length (and a sniffed Content-Type when
// none was set), a longer one or a flushed one is chunked unless the
// handler set a Content-Length; HEAD writes are counted, not sent; 1xx,
// 204 and 304 have no body. The status line, header and body go to the
// connection's buffered writer, which is flushed when no pipelined
// request waits (so a small response leaves in one TLS record).
type h1Writer struct {
	c    *h1Conn
	req  *http.Request
	body *h1Body // nil without a request body

	header      http.Header
	status      int
	wroteHeader bool // a final status is set
	committed   bool // the status line and header are in the connection's writer
	chunked     bool
	isHEAD      bool
	noBody      bool  // 1xx, 204, 304
	cl          int64 // the declared Content-Length, -1 for none
	written     int64
	buf         []byte // the body before the header is committed
	closeAfter  bool
	err         error // a write to the connection failed
	done        bool  // finished: the connection's writer belongs to the next response
}

// errH1Finished is what a write after the handler returned gets.
var errH1Finished = errors.New("host: the response was finished (the handler returned)")

// h1Buffered is how much body waits for the handler's end before the
// header is committed (net/http's bufferBeforeChunkingSize).
const h1Buffered = 2048

func newH1Writer(c *h1Conn, req *http.Request) *h1Writer {
	w := &h1Writer{c: c, req: req, header: make(http.Header), cl: -1, isHEAD: req.Method == http.MethodHead,
		buf: c.wbuf[:0], closeAfter: req.Close || req.ProtoMinor == 0}
	w.body, _ = req.Body.(*h1Body)
	return w
}

func (w *h1Writer) Header() http.Header { return w.header }

func (w *h1Writer) WriteHeader(code int) {
	if w.committed || w.wroteHeader || w.done {
		return // superfluous, as net/http (which logs it)
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	if cl := w.header.Get("Content-Length"); cl != "" {
		if n, ok := parseContentLength(strings.TrimSpace(cl)); ok {
			w.cl = n
		} else {
			w.header.Del("Content-Length") // net/http logs and ignores it
		}
	}
	w.noBody = !bodyAllowedForStatus(code)
}

func bodyAllowedForStatus(code int) bool {
	return !(code >= 100 && code <= 199 || code == http.StatusNoContent || code == http.StatusNotModified)
}

// writeInformational sends a 1xx (but 101) response at once: 103 Early
// Hints with the header as it stands; 100 only through the body.
func (w *h1Writer) writeInformational(code int) {
	if code == http.StatusContinue {
		return
	}
	bw := w.c.bw
	w.statusLine(code)
	w.writeHeaderLines(nil)
	bw.WriteString("\r\n")
	if err := bw.Flush(); err != nil {
		w.err = err
	}
}

func (w *h1Writer) statusLine(code int) {
	bw := w.c.bw
	switch code {
	case http.StatusOK:
		bw.WriteString("HTTP/1.1 200 OK\r\n")
		return
	case http.StatusNotFound:
		bw.WriteString("HTTP/1.1 404 Not Found\r\n")
		return
	}
	bw.WriteString("HTTP/1.1 ")
	var b [3]byte
	bw.Write(strconv.AppendInt(b[:0], int64(code), 10))
	bw.WriteByte(' ')
	if t := http.StatusText(code); t != "" {
		bw.WriteString(t)
	} else {
		bw.WriteString("status code " + strconv.Itoa(code))
	}
	bw.WriteString("\r\n")
}

// h1Skip marks the header fields commit replaces or drops.
type h1Skip struct{ contentLength, transferEncoding, contentType, connection bool }

// writeHeaderLines writes the header fields in key order (net/http's),
// without the skipped ones, with field names that are not tokens left out
// and line breaks in values turned into spaces.
func (w *h1Writer) writeHeaderLines(skip *h1Skip) {
	bw := w.c.bw
	keys := w.c.keys[:0]
	for k := range w.header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.c.keys = keys[:0]
	for _, k := range keys {
		if skip != nil {
			switch k {
			case "Content-Length":
				if skip.contentLength {
					continue
				}
			case "Transfer-Encoding":
				if skip.transferEncoding {
					continue
				}
			case "Content-Type":
				if skip.contentType {
					continue
				}
			case "Connection":
				if skip.connection {
					continue
				}
			}
		}
		if !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		for _, v := range w.header[k] {
			bw.WriteString(k)
			bw.WriteString(": ")
			v = strings.TrimSpace(v)
			if strings.ContainsAny(v, "\r\n") {
				v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
			}
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
}

// commit writes the status line and header, deciding the framing; final:
// the handler is done and w.buf is the whole body.
func (w *h1Writer) commit(final bool) {
	w.committed = true
	if b := w.body; b != nil && b.cont != nil {
		b.cont.mu.Lock()
		b.cont.suppressed = true
		b.cont.mu.Unlock()
	}
	h := w.header
	code := w.status
	var skip h1Skip
	var extraCL []byte
	te := h.Get("Transfer-Encoding")
	hasTE := te != ""
	_, hasTrailer := h["Trailer"]
	if final && !hasTrailer && !hasTE && bodyAllowedForStatus(code) && len(h["Content-Length"]) == 0 && (!w.isHEAD || len(w.buf) > 0) {
		w.cl = int64(len(w.buf))
		extraCL = strconv.AppendInt(w.c.clBuf[:0], w.cl, 10)
	}
	if strings.EqualFold(h.Get("Connection"), "close") {
		w.closeAfter = true
	}
	var sniffed string
	if bodyAllowedForStatus(code) {
		if _, haveType := h["Content-Type"]; !haveType && h.Get("Content-Encoding") == "" && !hasTE && len(w.buf) > 0 {
			sniffed = http.DetectContentType(w.buf)
		}
	} else {
		skip.contentLength, skip.transferEncoding = true, true
		if code == http.StatusNotModified {
			skip.contentType = true
		}
	}
	hasCL := w.cl >= 0
	if hasCL && hasTE && te != "identity" {
		skip.contentLength, hasCL = true, false
		w.cl = -1
	}
	switch {
	case w.isHEAD || !bodyAllowedForStatus(code):
		skip.transferEncoding = true
	case hasCL:
		skip.transferEncoding = true
	case w.req.ProtoMinor >= 1 && hasTE && te == "identity":
		skip.transferEncoding = true
		w.closeAfter = true
	case w.req.ProtoMinor >= 1:
		skip.transferEncoding = true
		w.chunked = true
	default: // HTTP/1.0: delimited by the connection's end
		skip.transferEncoding = true
		w.closeAfter = true
	}
	if w.closeAfter && w.req.ProtoMinor >= 1 {
		skip.connection = true
	}

	bw := w.c.bw
	w.statusLine(code)
	w.writeHeaderLines(&skip)
	if sniffed != "" {
		bw.WriteString("Content-Type: ")
		bw.WriteString(sniffed)
		bw.WriteString("\r\n")
	}
	if w.closeAfter && w.req.ProtoMinor >= 1 {
		bw.WriteString("Connection: close\r\n")
	}
	if w.chunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if _, ok := h["Date"]; !ok {
		bw.WriteString("Date: ")
		bw.Write(w.c.dateValue())
		bw.WriteString("\r\n")
	}
	if extraCL != nil {
		bw.WriteString("Content-Length: ")
		bw.Write(extraCL)
		bw.WriteString("\r\n")
	}
	bw.WriteString("\r\n")
	if len(w.buf) > 0 {
		w.send(w.buf)
	}
	w.buf = nil
}

// send writes body bytes with the response's framing.
func (w *h1Writer) send(p []byte) {
	if w.isHEAD || len(p) == 0 || w.err != nil {
		return
	}
	bw := w.c.bw
	if w.chunked {
		var b [16]byte
		bw.Write(strconv.AppendInt(b[:0], int64(len(p)), 16))
		bw.WriteString("\r\n")
		bw.Write(p)
		_, w.err = bw.WriteString("\r\n")
		return
	}
	_, w.err = bw.Write(p)
}

func (w *h1Writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, errH1Finished
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.noBody {
		return 0, http.ErrBodyNotAllowed
	}
	if w.cl >= 0 && w.written+int64(len(p)) > w.cl {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.committed {
		if len(w.buf)+len(p) <= h1Buffered {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		w.commit(false)
	}
	w.send(p)
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// WriteString avoids a copy for io.WriteString.
func (w *h1Writer) WriteString(s string) (int, error) {
	if !w.committed && len(w.buf)+len(s) <= h1Buffered && w.wroteHeader && !w.noBody && w.err == nil &&
		(w.cl < 0 || w.written+int64(len(s)) <= w.cl) {
		w.buf = append(w.buf, s...)
		w.written += int64(len(s))
		return len(s), nil
	}
	return w.Write([]byte(s))
}

// ReadFrom copies with the connection's buffer (io.Copy would make one).
func (w *h1Writer) ReadFrom(src io.Reader) (int64, error) { return w.c.readFrom(w, src) }

// Flush sends what is buffered; the header is committed first (chunked
// unless a Content-Length was set).
func (w *h1Writer) Flush() {
	if w.done {
		return
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false)
	}
	if w.err == nil {
		w.err = w.c.bw.Flush()
	}
}

// FlushError is Flush for http.ResponseController.
func (w *h1Writer) FlushError() error {
	w.Flush()
	return w.err
}

// EnableFullDuplex: the body can always be read while the response is
// written on this path.
func (w *h1Writer) EnableFullDuplex() error { return nil }

// SetReadDeadline and SetWriteDeadline are http.ResponseController's.
func (w *h1Writer) SetReadDeadline(t time.Time) error  { return w.c.tc.SetReadDeadline(t) }
func (w *h1Writer) SetWriteDeadline(t time.Time) error { return w.c.tc.SetWriteDeadline(t) }

// finish completes the response after the handler returned: the rest of
// the request body is dropped (or the connection marked to close), the
// header committed if it was not, the last chunk written.
func (w *h1Writer) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.body != nil && !w.closeAfter && !w.body.finish() {
		w.closeAfter = true
	} else if w.body != nil {
		w.body.Close()
	}
	if !w.committed {
		w.commit(true)
	}
	if w.chunked && w.err == nil {
		_, w.err = w.c.bw.WriteString("0\r\n\r\n")
	}
	if !w.isHEAD && w.cl >= 0 && !w.noBody && w.written != w.cl {
		w.closeAfter = true // a short body: the client must not read the next response into it
	}
	if cap(w.buf) > cap(w.c.wbuf) {
		w.c.wbuf = w.buf[:0]
	}
	w.done = true
	return w.err
}
