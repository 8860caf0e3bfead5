package host

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/scripting"
)

// spoolMemory is how much of a request body spoolBody keeps in memory;
// the rest goes to an unnamed temporary file.
const spoolMemory = 64 << 10

// spoolBody reads r's whole body (at most max+1 bytes) before a CGI script
// or PHP request takes its place in the CPU gate, as nginx buffers a body
// before it passes the request upstream: a client that sends its body
// slowly, or never, then waits on its own connection, not in a place of
// the tenant's CPU share. A body announced over max is left to the
// handler (413 without reading it). The first spoolMemory bytes stay in
// memory, the rest goes to an unnamed file (tempFile). r.Body is
// replaced and a chunked body gets its Content-Length; done closes the
// file.
func spoolBody(r *http.Request, max int64) (done func(), err error) {
	done = func() {}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength > max || r.ContentLength == 0 {
		return done, nil
	}
	var mem bytes.Buffer
	n, err := io.Copy(&mem, io.LimitReader(r.Body, spoolMemory))
	if err != nil {
		return done, fmt.Errorf("read request body: %w", err)
	}
	var body io.Reader = bytes.NewReader(mem.Bytes())
	if n == spoolMemory {
		f, err := tempFile()
		if err != nil {
			return done, err
		}
		m, err := io.Copy(f, io.LimitReader(r.Body, max+1-n))
		if err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
		if err != nil {
			f.Close()
			return done, fmt.Errorf("spool request body: %w", err)
		}
		n += m
		body = io.MultiReader(body, f)
		done = func() { f.Close() }
	}
	if n <= max {
		r.ContentLength = n
		r.TransferEncoding = nil
	} // else: left chunked, and the handler counts past max (413)
	r.Body = io.NopCloser(body)
	return done, nil
}

// tempFile returns an unnamed read-write file: O_TMPFILE in the
// server's temporary directory (normally /tmp), else, where that is not
// writable on this thread's identity (a tenant thread in the switching
// modes) or the file system lacks O_TMPFILE, a memfd. Neither has a name
// another process could open; the file belongs to whoever reads the
// request, so in the switching modes it counts against the tenant.
func tempFile() (*os.File, error) {
	dir := os.TempDir()
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return os.NewFile(uintptr(fd), "request body"), nil
	}
	fd, merr := unix.MemfdCreate("hostd-request-body", unix.MFD_CLOEXEC)
	if merr != nil {
		return nil, fmt.Errorf("spool request body: %s: %w; memfd: %w", dir, err, merr)
	}
	return os.NewFile(uintptr(fd), "request body"), nil
}

// gateWriter is the ResponseWriter of a CGI script or PHP request under
// the CPU gate: past the response's first pauseWritesAfter bytes (which
// fit in the connection's buffers), a write or flush that may wait for
// the client gives the run's place back meanwhile (scripting.PauseForIO),
// as a hook's r:write does. Only the run's goroutine writes.
type gateWriter struct {
	http.ResponseWriter
	ctx     context.Context
	written int64
}

func (w *gateWriter) Write(p []byte) (int, error) {
	if w.written+int64(len(p)) > pauseWritesAfter {
		defer scripting.PauseForIO(w.ctx)()
	}
	n, err := w.ResponseWriter.Write(p)
	w.written += int64(n)
	return n, err
}

func (w *gateWriter) Flush() {
	if w.written > pauseWritesAfter {
		defer scripting.PauseForIO(w.ctx)()
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *gateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
