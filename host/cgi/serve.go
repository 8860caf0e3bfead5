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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// errTimeout is the cause of a script context that hit Config.Timeout.
var errTimeout = errors.New("cgi: script time limit exceeded")

// redirectDepthKey is the context key counting local redirects of a request.
type redirectDepthKey struct{}

// refusal is a script the handler will not run; status is the HTTP status
// (403 for ownership and permission problems, 500 for configuration ones)
// and reason is logged, never sent.
type refusal struct {
	status int
	reason string
}

func (r *refusal) Error() string { return "cgi: refused: " + r.reason }

func forbidden(format string, args ...any) *refusal {
	return &refusal{status: http.StatusForbidden, reason: fmt.Sprintf(format, args...)}
}

// ServeHTTP resolves r.URL.Path with Resolve and runs the script: 404 when
// there is none, 403 when the path is refused. It is safe for concurrent
// use.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s, err := h.Resolve(r.URL.Path)
	if err != nil {
		code := http.StatusNotFound
		if errors.Is(err, ErrForbidden) {
			code = http.StatusForbidden
			h.logger.Warn("cgi: path refused", "path", r.URL.Path, "err", err)
		}
		httpError(w, code)
		return
	}
	h.ServeScript(w, r, s)
}

// httpError answers with a status and its standard text, never details.
func httpError(w http.ResponseWriter, code int) {
	http.Error(w, http.StatusText(code), code)
}

// ServeScript runs the resolved script s for r and writes its response to w.
// It checks the script (suEXEC), passes the body (at most MaxBody bytes) on
// stdin, streams the script's output to the client, logs stderr to the
// vhost's error log, and kills the script's whole process group at the time
// limit (504 when nothing was sent yet) or when the client goes away. The
// script's processes do not outlive the request: the group is killed once the
// script has exited. ServeScript returns after the script has been reaped;
// when the limit hits after the headers were sent it aborts the response with
// http.ErrAbortHandler. It is safe for concurrent use.
func (h *Handler) ServeScript(w http.ResponseWriter, r *http.Request, s Script) {
	log := h.logger.With("script", s.Name)
	if ref := h.check(s); ref != nil {
		log.Warn("cgi: script refused", "reason", ref.reason, "status", ref.status)
		httpError(w, ref.status)
		return
	}

	// The body: known length up to MaxBody, or a chunked body buffered up
	// to MaxBody so that CONTENT_LENGTH can be given.
	stdin, contentLength, code, err := RequestBody(r, h.maxBody)
	if code != 0 {
		if err != nil {
			log.Info("cgi: reading request body", "err", err)
		}
		httpError(w, code)
		return
	}

	if stdin != nil && r.ProtoMajor == 1 {
		// The script's output is streamed (and flushed) while its stdin is
		// still being copied from the request body; an HTTP/1.x server
		// may close the body once the response headers are flushed, so
		// the script would read a truncated body. HTTP/2 is full duplex.
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			log.Debug("cgi: full duplex not available", "err", err)
		}
	}
	ctx, cancel := context.WithTimeoutCause(r.Context(), h.timeout, errTimeout)
	defer cancel()
	prog, args := s.Filename, []string{s.Filename}
	if s.Interpreter != "" {
		// No arguments: php-cgi finds the script in SCRIPT_FILENAME, and
		// never treating the query string as argv avoids CVE-2012-1823.
		prog, args = s.Interpreter, []string{s.Interpreter}
	}
	cmd := exec.CommandContext(ctx, prog)
	cmd.Args = args
	cmd.Env = h.env(r, s, contentLength)
	cmd.Dir = filepath.Dir(s.Filename)
	cmd.Stdin = stdin
	cmd.WaitDelay = waitDelay
	stderr := &lineWriter{emit: h.stderrLine(log, s.Filename)}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Error("cgi: stdout pipe", "err", err)
		httpError(w, http.StatusInternalServerError)
		return
	}
	if err := h.spawner.StartLimited(ctx, cmd, h.id, h.limits); err != nil {
		log.Error("cgi: cannot start script", "err", err)
		httpError(w, http.StatusInternalServerError)
		return
	}
	// Backstop: a process that left the group could keep stdout open past
	// the group kill; closing our end unblocks the read.
	stopClose := context.AfterFunc(ctx, func() { stdout.Close() })
	reaped := false
	reap := func() {
		if reaped {
			return
		}
		reaped = true
		stopClose()
		err := cmd.Wait()
		stderr.flush()
		// Processes the script left behind in its group die with it; those
		// that left the group (setsid, double fork) after the grace.
		h.spawner.Finished(cmd, h.limits)
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				log.Warn("cgi: script killed", "signal", ws.Signal().String())
			} else {
				log.Warn("cgi: script failed", "exit", ee.ExitCode())
			}
		case err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
			log.Warn("cgi: wait", "err", err)
		}
	}
	defer reap()
	// kill ends the script now (it said all it may, or the response failed).
	kill := func() {
		cancel()
		reap()
	}

	br := bufio.NewReaderSize(stdout, 8192)
	resp, err := ReadResponse(br)
	if err != nil {
		switch {
		case context.Cause(ctx) == errTimeout:
			kill()
			log.Warn("cgi: time limit exceeded before the headers", "timeout", h.timeout)
			httpError(w, http.StatusGatewayTimeout)
		case r.Context().Err() != nil:
			kill()
			log.Info("cgi: client went away")
		default:
			kill()
			log.Warn("cgi: bad script output", "err", err)
			httpError(w, http.StatusInternalServerError)
		}
		return
	}

	if resp.LocalRedirect != "" {
		// Local redirect: the script's body, if any, is ignored.
		if h.copyBody(ctx, io.Discard, br, nil) != nil {
			kill()
		}
		reap()
		LocalRedirect(w, r, resp.LocalRedirect, h.redirect, log)
		return
	}
	var dst io.Writer = w
	flusher, _ := w.(http.Flusher)
	if !resp.WriteHeader(w) {
		dst, flusher = io.Discard, nil // these responses have no body
	}
	if err := h.copyBody(ctx, dst, br, flusher); err != nil {
		kill()
		switch {
		case context.Cause(ctx) == errTimeout:
			log.Warn("cgi: time limit exceeded while sending the body", "timeout", h.timeout)
			panic(http.ErrAbortHandler) // the client must not take a cut body as complete
		case r.Context().Err() != nil:
			log.Info("cgi: client went away")
		default:
			log.Warn("cgi: sending the body", "err", err)
			panic(http.ErrAbortHandler)
		}
	}
}

// copyBody streams the script's output to dst, flushing after every read so
// that slow scripts stream. It returns nil at EOF.
func (h *Handler) copyBody(ctx context.Context, dst io.Writer, src *bufio.Reader, flusher http.Flusher) error {
	bp := h.bufPool.Get().(*[]byte)
	defer h.bufPool.Put(bp)
	buf := *bp
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return fmt.Errorf("cgi: write response: %w", err)
			}
			if flusher != nil && src.Buffered() == 0 {
				flusher.Flush()
			}
		}
		if rerr == io.EOF {
			if ctx.Err() != nil {
				// EOF because the group was killed.
				return context.Cause(ctx)
			}
			return nil
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("cgi: read script output: %w", rerr)
		}
	}
}

// readHeaders reads the CGI response header block: "Name: value" lines
// ended by "\n" or "\r\n", up to an empty line. It bounds the line count and
// size and refuses names that are not tokens and values with control bytes.
func readHeaders(br *bufio.Reader) (http.Header, error) {
	hdr := make(http.Header)
	total := 0
	for lines := 0; ; lines++ {
		line, err := br.ReadSlice('\n')
		total += len(line)
		if err != nil {
			switch {
			case errors.Is(err, bufio.ErrBufferFull) || total > maxHeaderBytes:
				return nil, errors.New("header line too long")
			case err == io.EOF && total == 0:
				return nil, errors.New("script sent no output")
			case err == io.EOF:
				return nil, errors.New("premature end of script headers")
			default:
				return nil, fmt.Errorf("read headers: %w", err)
			}
		}
		if total > maxHeaderBytes || lines >= maxHeaderLines {
			return nil, errors.New("header block too large")
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			return hdr, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || !isToken(name) {
			return nil, fmt.Errorf("malformed header line %q", truncate(line))
		}
		value = bytes.Trim(value, " \t")
		for _, c := range value {
			if (c < 0x20 && c != '\t') || c == 0x7f {
				return nil, fmt.Errorf("control byte in header %q", name)
			}
		}
		hdr.Add(string(name), string(value))
	}
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// isToken reports whether b is an RFC 9110 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// parseStatus parses a Status value, "404" or "404 Not Found".
func parseStatus(v string) (int, bool) {
	code, _, _ := strings.Cut(v, " ")
	n, err := strconv.Atoi(code)
	if err != nil || len(code) != 3 || n < 200 || n > 599 {
		return 0, false
	}
	return n, true
}

// hopByHop reports whether the canonical header name k is connection-level;
// the server, not the script, decides those.
func hopByHop(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Te", "Trailer", "Upgrade":
		return true
	}
	return false
}

// stderrLine returns the sink for the script's stderr lines.
func (h *Handler) stderrLine(log *slog.Logger, filename string) func([]byte) {
	if h.errorLog != nil {
		return func(line []byte) { LogLine(h.errorLog, filename, line) }
	}
	return func(line []byte) { log.Warn("cgi: stderr", "line", string(line)) }
}

// lineWriter splits what a script writes to stderr into lines (at most
// maxStderrLine bytes each) and hands each to emit. exec.Cmd calls Write
// from one goroutine; flush is called after Wait.
type lineWriter struct {
	emit    func([]byte)
	buf     []byte
	written int64 // bytes accepted so far
}

func (lw *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	// A script must not fill the error log: past maxStderrBytes the rest is
	// dropped, with one line saying so.
	if lw.written >= maxStderrBytes {
		return n, nil
	}
	lw.written += int64(n)
	if lw.written >= maxStderrBytes {
		p = p[:int64(n)-(lw.written-maxStderrBytes)]
		defer func() {
			lw.flush()
			lw.emit([]byte("(further stderr output dropped)"))
		}()
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			lw.buf = append(lw.buf, p...)
			for len(lw.buf) >= maxStderrLine {
				lw.emit(lw.buf[:maxStderrLine])
				lw.buf = append(lw.buf[:0], lw.buf[maxStderrLine:]...)
			}
			break
		}
		lw.buf = append(lw.buf, p[:i]...)
		p = p[i+1:]
		for len(lw.buf) > maxStderrLine {
			lw.emit(lw.buf[:maxStderrLine])
			lw.buf = append(lw.buf[:0], lw.buf[maxStderrLine:]...)
		}
		if line := bytes.TrimSuffix(lw.buf, []byte("\r")); len(line) > 0 {
			lw.emit(line)
		}
		lw.buf = lw.buf[:0]
	}
	return n, nil
}

func (lw *lineWriter) flush() {
	if len(lw.buf) > 0 {
		lw.emit(lw.buf)
		lw.buf = lw.buf[:0]
	}
}
