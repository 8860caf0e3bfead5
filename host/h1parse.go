package host

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"
)

// Reading an HTTP/1.x request for hostd's HTTP/1.1 path. The rules are
// net/http's, stricter where net/http is lenient:
//   - the head is at most server.max_header_bytes + 4 KiB (net/http's
//     slack), else 431;
//   - a header line that starts with a space or tab (obsolete line
//     folding, which net/http joins) is refused with 400;
//   - field names are tokens (no spaces, no colon inside), values have no
//     control characters but tab; one Host header, required in HTTP/1.1;
//   - framing (RFC 9112 6): Transfer-Encoding must be exactly "chunked"
//     (anything else, or several, is 501), and then any Content-Length is
//     dropped and the connection closed after the response
//     (closeAfterChunked); a Transfer-Encoding in an HTTP/1.0 request is
//     refused (net/http ignores it and frames by Content-Length, which a
//     front proxy may not); Content-Length values must agree and be plain
//     decimal digits;
//   - an Expect other than 100-continue is 417; "100 Continue" is sent
//     when the handler first reads the body, never after the response's
//     status line.

// maxPostHandlerRead is how much of an unread request body is read and
// dropped after the response to keep the connection (net/http's value).
const maxPostHandlerRead = 256 << 10

// readRequest reads the next request head from the connection. Its errors
// are *h1Error (answered, then the connection closes) or the read error.
func (c *h1Conn) readRequest() (*http.Request, error) {
	limit := int(c.s.cfg.Server.MaxHeaderBytes) + 4096
	c.hdr = c.hdr[:0]
	lineStart := 0
	for {
		frag, err := c.br.ReadSlice('\n')
		if len(c.hdr)+len(frag) > limit {
			return nil, &h1Error{code: http.StatusRequestHeaderFieldsTooLarge}
		}
		c.hdr = append(c.hdr, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return nil, err
		}
		line := c.hdr[lineStart:]
		if lineStart > 0 && (len(line) == 1 || len(line) == 2 && line[0] == '\r') {
			break
		}
		lineStart = len(c.hdr)
	}
	head := string(c.hdr) // the one allocation every string of the head shares
	return c.parseHead(head)
}

// nextLine returns the first line of s without its line ending, and the rest.
func nextLine(s string) (line, rest string) {
	i := strings.IndexByte(s, '\n')
	line, rest = s[:i], s[i+1:]
	return strings.TrimSuffix(line, "\r"), rest
}

func (c *h1Conn) parseHead(head string) (*http.Request, error) {
	line, rest := nextLine(head)
	method, after, ok1 := strings.Cut(line, " ")
	uri, proto, ok2 := strings.Cut(after, " ")
	if !ok1 || !ok2 || method == "" || !isToken(method) {
		return nil, badReq("malformed request line")
	}
	var major, minor int
	switch proto {
	case "HTTP/1.1":
		major, minor = 1, 1
	case "HTTP/1.0":
		major, minor = 1, 0
	default:
		var ok bool
		if major, minor, ok = http.ParseHTTPVersion(proto); !ok {
			return nil, badReq("malformed HTTP version")
		}
		if major != 1 {
			return nil, &h1Error{code: http.StatusHTTPVersionNotSupported, public: "unsupported protocol version"}
		}
	}
	raw := uri
	if method == http.MethodConnect && !strings.HasPrefix(raw, "/") {
		raw = "http://" + raw
	}
	u, err := url.ParseRequestURI(raw)
	if err != nil {
		return nil, badReq("malformed request target")
	}

	n := strings.Count(rest, "\n") - 1 // header lines
	h := make(http.Header, n)
	strs := make([]string, n) // every value's slice is a piece of this one
	for {
		line, rest = nextLine(rest)
		if line == "" {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, badReq("obsolete line folding is not allowed")
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !isToken(name) {
			return nil, badReq("invalid header name")
		}
		value = strings.Trim(value, " \t")
		if !httpguts.ValidHeaderFieldValue(value) {
			return nil, badReq("invalid header value")
		}
		key := canonicalKey(name)
		if vv := h[key]; vv != nil {
			h[key] = append(vv, value)
		} else {
			vv, strs = strs[:1:1], strs[1:]
			vv[0] = value
			h[key] = vv
		}
	}

	req := new(http.Request)
	*req = *c.base // the connection's context
	req.Method, req.RequestURI, req.URL = method, uri, u
	req.Proto, req.ProtoMajor, req.ProtoMinor = proto, major, minor
	req.Header, req.RemoteAddr, req.TLS = h, c.remote, c.tls

	hosts := h["Host"]
	switch {
	case len(hosts) > 1:
		return nil, badReq("too many Host headers")
	case len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]):
		return nil, badReq("malformed Host header")
	case len(hosts) == 0 && minor >= 1 && method != http.MethodConnect:
		return nil, badReq("missing required Host header")
	}
	req.Host = u.Host
	if req.Host == "" && len(hosts) == 1 {
		req.Host = hosts[0]
	}
	delete(h, "Host")
	if hp := h["Pragma"]; len(hp) > 0 && hp[0] == "no-cache" && len(h["Cache-Control"]) == 0 {
		h["Cache-Control"] = []string{"no-cache"} // as net/http
	}

	// Framing.
	if te, ok := h["Transfer-Encoding"]; ok {
		switch {
		case minor == 0:
			return nil, badReq("Transfer-Encoding in an HTTP/1.0 request")
		case len(te) != 1 || !strings.EqualFold(te[0], "chunked"):
			return nil, &h1Error{code: http.StatusNotImplemented, public: "unsupported transfer encoding"}
		}
		delete(h, "Transfer-Encoding")
		delete(h, "Content-Length")
		req.TransferEncoding = []string{"chunked"}
		req.ContentLength = -1
	} else if cl := h["Content-Length"]; len(cl) > 0 {
		for _, v := range cl[1:] {
			if v != cl[0] {
				return nil, badReq("conflicting Content-Length headers")
			}
		}
		if len(cl) > 1 {
			h["Content-Length"] = cl[:1]
		}
		n, ok := parseContentLength(cl[0])
		if !ok {
			return nil, badReq("bad Content-Length")
		}
		req.ContentLength = n
	}
	req.Close = shouldClose(minor, h)

	var cont *h1Continue
	if ex, ok := h["Expect"]; ok && minor >= 1 {
		if len(ex) != 1 || !strings.EqualFold(ex[0], "100-continue") {
			return nil, &h1Error{code: http.StatusExpectationFailed}
		}
		if req.ContentLength != 0 {
			cont = &h1Continue{}
		}
	}
	if req.ContentLength == 0 {
		req.Body = http.NoBody
	} else {
		b := &h1Body{c: c, remaining: req.ContentLength, cont: cont}
		if req.ContentLength < 0 {
			b.chunked = httputil.NewChunkedReader(c.br)
		}
		req.Body = b
	}
	return req, nil
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !httpguts.IsTokenRune(rune(s[i])) {
			return false
		}
	}
	return s != ""
}

// canonicalKey is textproto.CanonicalMIMEHeaderKey without an allocation
// for a name that is already canonical (what clients send).
func canonicalKey(name string) string {
	upper := true
	for i := 0; i < len(name); i++ {
		b := name[i]
		if upper && 'a' <= b && b <= 'z' || !upper && 'A' <= b && b <= 'Z' {
			return textproto.CanonicalMIMEHeaderKey(name)
		}
		upper = b == '-'
	}
	return name
}

// parseContentLength accepts plain decimal digits that fit an int64.
func parseContentLength(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}

// shouldClose is net/http's: HTTP/1.0 closes unless asked to keep alive
// (hostd closes it anyway: h1Writer), HTTP/1.1 when asked to close.
func shouldClose(minor int, h http.Header) bool {
	conv := h["Connection"]
	if minor == 0 {
		return !httpguts.HeaderValuesContainsToken(conv, "keep-alive")
	}
	return httpguts.HeaderValuesContainsToken(conv, "close")
}

// h1Continue is the state of an Expect: 100-continue request.
type h1Continue struct {
	mu         sync.Mutex
	sent       bool // "100 Continue" went out (or was due): the client sends the body
	suppressed bool // the response started first: never send it
}

// h1Body is a request body read from the connection. Read and Close are
// safe for concurrent use (CGI reads the body on its own goroutine).
type h1Body struct {
	c         *h1Conn
	mu        sync.Mutex
	remaining int64     // Content-Length framing: bytes left
	chunked   io.Reader // chunked framing, else nil
	cont      *h1Continue
	eof       bool
	closed    bool
	err       error
}

func (b *h1Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.readLocked(p)
}

func (b *h1Body) readLocked(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.eof {
		return 0, io.EOF
	}
	if b.cont != nil {
		b.cont.mu.Lock()
		if !b.cont.sent && !b.cont.suppressed {
			// Straight to the connection: the response has not started.
			if _, err := io.WriteString(b.c.tc, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
				b.err = err
			}
		}
		b.cont.sent = true
		b.cont.mu.Unlock()
		if b.err != nil {
			return 0, b.err
		}
	}
	if b.chunked != nil {
		n, err := b.chunked.Read(p)
		if err == io.EOF {
			if terr := b.readTrailer(); terr != nil {
				b.err = terr
				return n, terr
			}
			b.eof = true
		} else if err != nil {
			b.err = err
		}
		return n, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	n, err := b.c.br.Read(p)
	b.remaining -= int64(n)
	switch {
	case b.remaining == 0:
		b.eof = true
		err = io.EOF
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
		b.err = err
	case err != nil:
		b.err = err
	}
	return n, err
}

// readTrailer reads and drops the trailer section after the last chunk
// (hostd hands no trailers to handlers), bounded like a request head.
func (b *h1Body) readTrailer() error {
	limit := int(b.c.s.cfg.Server.MaxHeaderBytes) + 4096
	for {
		line, err := b.c.br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				err = errors.New("trailer line too long")
			}
			return err
		}
		if limit -= len(line); limit < 0 {
			return errors.New("trailer too large")
		}
		if len(line) <= 2 && strings.TrimRight(string(line), "\r\n") == "" {
			return nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			return errors.New("malformed trailer")
		}
	}
}

func (b *h1Body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// finish makes the connection ready for the next request, net/http's
// way: an unread rest of at most maxPostHandlerRead bytes is read and
// dropped; it reports false when the connection must close instead (a
// larger rest, a broken body, or a 100-continue never sent, so the client
// may or may not send the body).
func (b *h1Body) finish() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.eof {
		return true
	}
	if b.err != nil {
		return false
	}
	if b.cont != nil {
		b.cont.mu.Lock()
		sent := b.cont.sent
		b.cont.suppressed = true
		b.cont.mu.Unlock()
		if !sent {
			return false
		}
	}
	if b.chunked == nil && b.remaining > maxPostHandlerRead {
		return false
	}
	buf := b.c.discardBuf()
	for total := 0; total <= maxPostHandlerRead; {
		n, err := b.readLocked(buf)
		total += n
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}
