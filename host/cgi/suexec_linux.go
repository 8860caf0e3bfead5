package cgi

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
)

// check applies the permission checks to the resolved script: always that a
// directly executed script is executable, and under SuEXEC the ownership and
// write-permission checks of Apache's suexec. The script is already known to
// be inside the root (Resolve). Paths are real paths, so Lstat (through the
// vhost's file gate) sees the files themselves.
func (h *Handler) check(s Script) *refusal {
	if h.suexec {
		switch id := h.id; {
		case id.UID == 0 || id.GID == 0:
			return &refusal{status: http.StatusInternalServerError, reason: fmt.Sprintf("tenant identity %d:%d is root", id.UID, id.GID)}
		case id.UID < h.minUID:
			return &refusal{status: http.StatusInternalServerError, reason: fmt.Sprintf("tenant uid %d is below the minimum uid %d", id.UID, h.minUID)}
		}
	}
	fi, err := h.fs.Lstat(s.Filename)
	if err != nil {
		return forbidden("stat script: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return forbidden("script is not a regular file")
	}
	if s.Interpreter == "" && fi.Mode().Perm()&0o111 == 0 {
		return forbidden("script is not executable")
	}
	if !h.suexec {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return forbidden("no owner information")
	}
	switch {
	case st.Uid != h.id.UID:
		return forbidden("script is owned by uid %d, not the tenant uid %d", st.Uid, h.id.UID)
	case fi.Mode().Perm()&0o022 != 0:
		return forbidden("script is group- or world-writable (mode %04o)", fi.Mode().Perm())
	case fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0:
		return forbidden("script is set-uid or set-gid")
	}
	dir := filepath.Dir(s.Filename)
	di, err := h.fs.Lstat(dir)
	if err != nil {
		return forbidden("stat script directory: %v", err)
	}
	dst, ok := di.Sys().(*syscall.Stat_t)
	if !ok {
		return forbidden("no owner information for the script directory")
	}
	switch {
	case dst.Uid != h.id.UID && dst.Uid != 0:
		return forbidden("script directory is owned by uid %d, not the tenant uid %d or root", dst.Uid, h.id.UID)
	case di.Mode().Perm()&0o022 != 0:
		return forbidden("script directory is group- or world-writable (mode %04o)", di.Mode().Perm())
	}
	return nil
}
