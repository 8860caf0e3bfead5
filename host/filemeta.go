package host

import (
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Precomputed header fields of static files. By default every request
// still opens the file through the tenant's gate and fstat(2)s it (the
// kernel checks the tenant per request, and a changed file is seen at
// once): what is kept is only what follows from the file's identity and
// metadata, the ETag, Last-Modified, Content-Type and Content-Length
// values, keyed by device, inode, size, mtime and ctime (any change of the
// content moves ctime). Keeping the descriptors open too, like nginx's
// open_file_cache, is the vhost's choice ([limits] open_file_cache_valid,
// openfiles.go); a hit still fstat(2)s the kept descriptor.

// fileMetaMax bounds a vhost's entries; past it the cache starts over.
const fileMetaMax = 4096

// fileMetas is a vhost's cache of fileMeta by file identity. It is safe
// for concurrent use.
type fileMetas struct {
	mu sync.RWMutex
	m  map[fileKey]*fileMeta
}

type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // unix nanoseconds
}

// fileMeta holds ready header values ([]string shared by the responses,
// never modified).
type fileMeta struct {
	etag, lastModified, contentType, contentLength []string
}

var acceptRangesBytes = []string{"bytes"}

func keyOf(fi fs.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{dev: uint64(st.Dev), ino: st.Ino, size: fi.Size(), mtime: fi.ModTime().UnixNano(),
		ctime: time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)).UnixNano()}, true
}

// meta returns the header values of the open file f with info fi.
func (c *fileMetas) meta(fi fs.FileInfo, f io.ReaderAt) *fileMeta {
	k, ok := keyOf(fi)
	if ok {
		c.mu.RLock()
		m := c.m[k]
		c.mu.RUnlock()
		if m != nil {
			return m
		}
	}
	m := newFileMeta(fi, f)
	if ok {
		c.mu.Lock()
		if c.m == nil || len(c.m) >= fileMetaMax {
			c.m = make(map[fileKey]*fileMeta)
		}
		c.m[k] = m
		c.mu.Unlock()
	}
	return m
}

// newFileMeta computes what http.ServeContent would send: an nginx-like
// validator (mtime and size in hex), Last-Modified unless the mtime is
// zero, the type by extension or else sniffed from the first 512 bytes.
func newFileMeta(fi fs.FileInfo, f io.ReaderAt) *fileMeta {
	mt := fi.ModTime()
	m := &fileMeta{
		etag:          []string{`"` + strconv.FormatInt(mt.Unix(), 16) + "-" + strconv.FormatInt(fi.Size(), 16) + `"`},
		contentLength: []string{strconv.FormatInt(fi.Size(), 10)},
	}
	if !mt.IsZero() && !mt.Equal(time.Unix(0, 0)) {
		m.lastModified = []string{mt.UTC().Format(http.TimeFormat)}
	}
	ctype := mime.TypeByExtension(filepath.Ext(fi.Name()))
	if ctype == "" && fi.Mode().IsRegular() {
		var buf [512]byte
		n, _ := f.ReadAt(buf[:], 0)
		ctype = http.DetectContentType(buf[:n])
	}
	m.contentType = []string{ctype}
	return m
}

// hasConditions reports whether a request asks for a range or carries a
// precondition: those go through http.ServeContent.
func hasConditions(h http.Header) bool {
	for _, k := range [...]string{"Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range"} {
		if _, ok := h[k]; ok {
			return true
		}
	}
	return false
}
