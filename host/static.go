package host

import (
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// serveStatic serves the file at the decoded URL path upath from the
// vhost's root. Files are opened through the tenant's file gate, so
// neither ".." nor a symbolic link nor a /proc magic link can leave the
// root, and in modes uring, thread, thread-per-request and inline the
// kernel checks the open against the tenant's identity. Directories get
// their index file, a listing when the vhost enables it, else 403.
func (v *vhost) serveStatic(w http.ResponseWriter, r *http.Request, upath string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httpError(w, http.StatusMethodNotAllowed, "static files accept GET and HEAD")
		return
	}
	name, ok := rootRelative(upath)
	if !ok {
		httpError(w, http.StatusBadRequest, "invalid path")
		return
	}
	e, fd, fi, err := v.openStatic(name)
	if err != nil {
		v.openError(w, name, err)
		return
	}
	if e != nil {
		// Kept open by the vhost's open-file cache (openfiles.go).
		defer e.release()
		v.sendFile(w, r, &fdReader{fd: e.fd, size: e.fi.Size()}, e.fi)
		return
	}
	if !fi.IsDir() && plainRequest(r) {
		// The common case on the bare descriptor (no *os.File).
		defer syscall.Close(fd)
		fr := &fdReader{fd: fd, size: fi.Size()}
		v.sendPlain(w, r, fr, fi)
		return
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if fi.IsDir() {
		if !strings.HasSuffix(r.URL.Path, "/") {
			u := *r.URL
			u.Path += "/"
			http.Redirect(w, r, u.RequestURI(), http.StatusMovedPermanently)
			return
		}
		for _, ix := range v.cfg.Index {
			if v.serveIndex(w, r, path.Join(name, ix)) {
				return
			}
		}
		if v.cfg.DirectoryListing {
			v.listDir(w, r, f)
			return
		}
		httpError(w, http.StatusForbidden, "directory listing is disabled")
		return
	}
	v.sendFile(w, r, f, fi)
}

// openStatic opens name through the gate, or finds it in the vhost's
// open-file cache when that is on: a cache entry (a regular file; the
// caller releases it), else the descriptor and its information (the
// caller closes it), else the gate's error. Only regular files are kept.
func (v *vhost) openStatic(name string) (*openFile, int, fs.FileInfo, error) {
	c := v.openFiles
	if c.on() {
		if e := c.get(name); e != nil {
			return e, -1, nil, nil
		}
	}
	fd, fi, err := v.static.OpenFDStat(name)
	if err != nil {
		return nil, -1, nil, err
	}
	if c.on() && fi.Mode().IsRegular() {
		if e := c.add(name, fd, fi); e != nil {
			return e, -1, nil, nil
		}
	}
	return nil, fd, fi, nil
}

// serveIndex serves the index file name of a directory and reports
// whether there was one (a regular file the gate opened).
func (v *vhost) serveIndex(w http.ResponseWriter, r *http.Request, name string) bool {
	e, fd, fi, err := v.openStatic(name)
	switch {
	case err != nil:
		return false
	case e != nil:
		defer e.release()
		v.sendFile(w, r, &fdReader{fd: e.fd, size: e.fi.Size()}, e.fi)
		return true
	}
	defer syscall.Close(fd)
	if fi.IsDir() {
		return false
	}
	v.sendFile(w, r, &fdReader{fd: fd, size: fi.Size()}, fi)
	return true
}

// rootRelative turns a decoded URL path into a name relative to the root:
// cleaned, without a leading slash, "." for the root itself. Paths with a
// NUL byte or a backslash are refused.
func rootRelative(upath string) (string, bool) {
	if strings.ContainsAny(upath, "\x00\\") {
		return "", false
	}
	name := strings.TrimPrefix(path.Clean("/"+upath), "/")
	if name == "" {
		name = "."
	}
	return name, true
}

// openError maps an open error to a status: missing -> 404, denied by the
// kernel or escaping the root (symlink, "..") -> 403.
func (v *vhost) openError(w http.ResponseWriter, name string, err error) {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		httpError(w, http.StatusNotFound, "no such file")
	case errors.Is(err, fs.ErrPermission):
		// The kernel refused the tenant, or the gate refused an escape
		// (a symbolic link out of the root) or a FIFO or device.
		v.logger.Debug("static open refused", "path", name, "err", err)
		httpError(w, http.StatusForbidden, "access denied")
	default:
		// ELOOP and anything unexpected: denied.
		v.logger.Debug("static open refused", "path", name, "err", err)
		httpError(w, http.StatusForbidden, "access denied")
	}
}

// sendFile sends a file. A plain GET or HEAD (no Range, no condition)
// is answered from the file's precomputed header fields (fileMeta), the
// rest with http.ServeContent (conditional requests, ranges), with the
// same fields. A Range header asking for more than max_ranges ranges
// (> 0) is ignored and the whole file is sent with 200, as nginx's
// max_ranges and Apache's MaxRanges do: thousands of tiny ranges would
// make a multipart answer many times the size of the request and of the
// file.
func (v *vhost) sendFile(w http.ResponseWriter, r *http.Request, f fileReader, fi fs.FileInfo) {
	if plainRequest(r) && fi.Mode().IsRegular() {
		v.sendPlain(w, r, f, fi)
		return
	}
	m := v.files.meta(fi, f)
	h := w.Header()
	h["Etag"] = m.etag
	if maxRanges := v.cfg.Limits.MaxRanges; maxRanges > 0 {
		if rng := r.Header.Get("Range"); rng != "" && strings.Count(rng, ",") >= maxRanges {
			r2 := *r
			r2.Header = r.Header.Clone()
			r2.Header.Del("Range")
			r = &r2
		}
	}
	http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
}

// plainRequest reports whether r is a GET or HEAD without a range or a
// precondition: sendPlain answers it.
func plainRequest(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && !hasConditions(r.Header)
}

// fileReader is an open regular file: *os.File or *fdReader.
type fileReader interface {
	io.ReadSeeker
	io.ReaderAt
}

// sendPlain answers a plainRequest for the regular file f from its
// precomputed header fields, the body read from offset 0.
func (v *vhost) sendPlain(w http.ResponseWriter, r *http.Request, f fileReader, fi fs.FileInfo) {
	m := v.files.meta(fi, f)
	h := w.Header()
	h["Etag"] = m.etag
	if m.lastModified != nil {
		h["Last-Modified"] = m.lastModified
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = m.contentType
	}
	h["Accept-Ranges"] = acceptRangesBytes
	if h.Get("Content-Encoding") == "" {
		h["Content-Length"] = m.contentLength
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		io.CopyN(w, f, fi.Size())
	}
}

// fdReader reads a bare descriptor of a regular file of size bytes (as
// fstat said) with pread(2), from offset 0 on; it never moves the
// descriptor's own offset, so requests can share a descriptor (the
// open-file cache). The caller closes the descriptor.
type fdReader struct {
	fd   int
	off  int64
	size int64
}

// Seek sets the offset of the next Read (http.ServeContent seeks to the
// end to learn the size, then to each range).
func (f *fdReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.size
	default:
		return 0, &fs.PathError{Op: "seek", Path: "static file", Err: fs.ErrInvalid}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: "static file", Err: fs.ErrInvalid}
	}
	f.off = offset
	return offset, nil
}

func (f *fdReader) Read(p []byte) (int, error) {
	n, err := f.pread(p, f.off)
	f.off += int64(n)
	return n, err
}

// ReadAt fills p from off, or returns an error (io.EOF at the end).
func (f *fdReader) ReadAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := f.pread(p[done:], off+int64(done))
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// pread is one pread(2): io.EOF at the end, EINTR retried.
func (f *fdReader) pread(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Pread(f.fd, p, off)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: "static file", Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (v *vhost) listDir(w http.ResponseWriter, r *http.Request, dir *os.File) {
	ents, err := dir.ReadDir(10000)
	if err != nil && len(ents) == 0 {
		httpError(w, http.StatusForbidden, "access denied")
		return
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	p := html.EscapeString(r.URL.Path)
	fmt.Fprintf(w, "<!doctype html>\n<title>Index of %s</title>\n<h1>Index of %s</h1>\n<ul>\n", p, p)
	for _, n := range names {
		u := url.URL{Path: n}
		fmt.Fprintf(w, "<li><a href=\"%s\">%s</a></li>\n", html.EscapeString(u.String()), html.EscapeString(n))
	}
	fmt.Fprint(w, "</ul>\n")
}
