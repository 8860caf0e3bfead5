package cgi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/hostd/hostd/host/logtext"
)

// RequestBody returns what a script gets as its request body: r.Body with
// its length when the length is known, or a chunked body read into memory
// up to maxBody so that CONTENT_LENGTH can be given. contentLength is -1
// when there is no body. A non-zero code means the request must be refused
// with that status (413 when the body exceeds maxBody, 400 when it cannot be
// read; err says why).
func RequestBody(r *http.Request, maxBody int64) (body io.Reader, contentLength int64, code int, err error) {
	switch {
	case r.ContentLength > maxBody:
		return nil, -1, http.StatusRequestEntityTooLarge, nil
	case r.ContentLength > 0:
		return r.Body, r.ContentLength, 0, nil
	case r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody:
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			return nil, -1, http.StatusBadRequest, fmt.Errorf("read request body: %w", err)
		}
		if int64(len(b)) > maxBody {
			return nil, -1, http.StatusRequestEntityTooLarge, nil
		}
		return bytes.NewReader(b), int64(len(b)), 0, nil
	}
	return nil, -1, 0, nil
}

// Response is the checked header block of a script's output (RFC 3875
// section 6), from a CGI child or a FastCGI responder.
type Response struct {
	// Status is the response status: the Status header's code, else 302
	// for a client redirect, else 200.
	Status int
	// Header holds the script's headers without Status.
	Header http.Header
	// LocalRedirect, when set, is the path of a local redirect (a Location
	// that starts with a single "/", without Status): the script's body is
	// to be discarded and the request re-dispatched (see LocalRedirect).
	LocalRedirect string
}

// ReadResponse reads the header block of a script's output from br and
// applies the rules both script handlers share: header lines are bounded in
// number and size, names must be tokens and values free of control bytes,
// Status must be a 3-digit code from 200 to 599, Location must be a local
// path or an absolute URL, and a response without Location needs a
// Content-Type (unless it is 204 or 304). The error says what was wrong, for
// the log, never for the client.
func ReadResponse(br *bufio.Reader) (*Response, error) {
	hdr, err := readHeaders(br)
	if err != nil {
		return nil, err
	}
	resp := &Response{Status: http.StatusOK, Header: hdr}
	statusHdr := hdr.Get("Status")
	if statusHdr != "" {
		code, ok := parseStatus(statusHdr)
		if !ok {
			return nil, fmt.Errorf("bad Status header %q", truncate([]byte(statusHdr)))
		}
		resp.Status = code
	}
	hdr.Del("Status")
	if loc := hdr.Get("Location"); loc != "" {
		local := strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//")
		if !local {
			u, err := url.Parse(loc)
			if err != nil || (!u.IsAbs() && !strings.HasPrefix(loc, "//")) {
				return nil, fmt.Errorf("bad Location header %q", truncate([]byte(loc)))
			}
		}
		switch {
		case local && statusHdr == "":
			resp.LocalRedirect = loc
		case statusHdr == "":
			resp.Status = http.StatusFound
		}
		return resp, nil
	}
	if hdr.Get("Content-Type") == "" && resp.Status != http.StatusNoContent && resp.Status != http.StatusNotModified {
		return nil, errors.New("script sent no Content-Type header")
	}
	return resp, nil
}

// WriteHeader adds the script's headers to w's, except the hop-by-hop
// ones the server decides, and sends the status. It reports whether the
// response may have a body (not 204 or 304).
func (resp *Response) WriteHeader(w http.ResponseWriter) bool {
	wh := w.Header()
	for k, vv := range resp.Header {
		if hopByHop(k) {
			continue
		}
		wh[k] = append(wh[k], vv...)
	}
	w.WriteHeader(resp.Status)
	return resp.Status != http.StatusNoContent && resp.Status != http.StatusNotModified
}

// LocalRedirect re-dispatches r as a GET of loc through next (RFC 3875
// 6.2.2), or sends the client a 302 to loc when next is nil. Chains are
// bounded by MaxRedirects per request.
func LocalRedirect(w http.ResponseWriter, r *http.Request, loc string, next http.Handler, log *slog.Logger) {
	u, err := url.Parse(loc)
	if err != nil {
		log.Warn("bad local redirect", "location", loc)
		httpError(w, http.StatusInternalServerError)
		return
	}
	if next == nil {
		http.Redirect(w, r, loc, http.StatusFound)
		return
	}
	depth, _ := r.Context().Value(redirectDepthKey{}).(int)
	if depth >= MaxRedirects {
		log.Warn("too many local redirects", "location", loc)
		httpError(w, http.StatusInternalServerError)
		return
	}
	r2 := r.Clone(context.WithValue(r.Context(), redirectDepthKey{}, depth+1))
	r2.Method = http.MethodGet
	r2.URL.Path, r2.URL.RawPath, r2.URL.RawQuery, r2.URL.Fragment = u.Path, u.RawPath, u.RawQuery, ""
	r2.RequestURI = loc
	r2.Body, r2.ContentLength, r2.TransferEncoding = http.NoBody, 0, nil
	r2.Header.Del("Content-Length")
	r2.Header.Del("Content-Type")
	r2.Form, r2.PostForm, r2.MultipartForm = nil, nil, nil
	next.ServeHTTP(w, r2)
}

// StderrLines returns a writer that splits what a script writes to stderr
// into lines, hands each non-empty one to emit (at most 4 KiB each; past
// 1 MiB per writer the rest is dropped, with one line saying so), and the
// function that emits an unterminated last line. The writer is not safe
// for concurrent use.
func StderrLines(emit func(line []byte)) (io.Writer, func()) {
	lw := &lineWriter{emit: emit}
	return lw, lw.flush
}

// LogLine writes "prefix: line\n" to w in one Write call, with control
// bytes of prefix (a script's file name) and line escaped by logtext, so
// that whatever a script writes stays one line of the error log and cannot
// forge others.
func LogLine(w io.Writer, prefix string, line []byte) {
	msg := make([]byte, 0, len(prefix)+len(line)+16)
	msg = logtext.Append(msg, prefix)
	msg = append(msg, ": "...)
	msg = append(logtext.AppendBytes(msg, line), '\n')
	_, _ = w.Write(msg)
}
