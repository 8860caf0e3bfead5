//go:build cgo && !nomruby

package mruby

/*
#include "hostd_mruby.h"
*/
import "C"

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"github.com/hostd/hostd/scripting"
)

// Ruby's File and Dir (issue 16 part B): File.read, File.exist?,
// File.write, File.open (read and write, block form) and Dir.children,
// through the tenant's file gate with the same rules as Lua's io: only
// regular files (directories for Dir.children) under the tenant's
// directories, checked by the kernel against the tenant's identity, at
// most maxOpenFiles open per run (closed when the run ends), reads bounded
// by a quarter of the memory limit.

// maxOpenFiles bounds the files one run may have open at once (as Lua).
const maxOpenFiles = 16

type rbFile struct {
	f *os.File
	r *bufio.Reader
	w bool
}

// fileErr is the Hostd::Error of a failed file operation on path.
func fileErr(path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return &callError{msg: path + ": " + err.Error()}
}

// openFile opens path with a Ruby mode ("r", "w", "a", "r+", "w+", "a+",
// with an optional "b") and returns its handle.
func (rs *runState) openFile(path, mode string) (int64, error) {
	flags, ok := scripting.OpenFlags(mode)
	if !ok {
		return 0, argErr("File.open: invalid mode %q", mode)
	}
	open := 0
	for _, f := range rs.files {
		if f != nil {
			open++
		}
	}
	if open >= maxOpenFiles {
		return 0, &callError{msg: path + ": too many open files"}
	}
	fh, err := rs.e.cfg.FS.OpenFile(path, flags, 0o644)
	if err == nil {
		if err = scripting.CheckHookFile(fh); err != nil {
			fh.Close()
		}
	}
	if err != nil {
		return 0, fileErr(path, err)
	}
	rs.files = append(rs.files, &rbFile{f: fh, r: bufio.NewReader(fh), w: flags != os.O_RDONLY})
	return int64(len(rs.files) - 1), nil
}

// file returns the open file of handle argument i.
func (rs *runState) file(a args, i int, name string) (*rbFile, error) {
	if i >= len(a) {
		return nil, argErr("%s: missing file", name)
	}
	h, ok := a[i].(int64)
	if !ok || h < 0 || h >= int64(len(rs.files)) || rs.files[h] == nil {
		return nil, &callError{msg: name + ": closed stream"}
	}
	return rs.files[h], nil
}

// closeFiles closes the files a run left open.
func (rs *runState) closeFiles() {
	for _, f := range rs.files {
		if f != nil {
			f.f.Close()
		}
	}
	clear(rs.files)
	rs.files = rs.files[:0]
}

func (rs *runState) filesCall(op int, what string, a args) (any, error) {
	max := rs.e.cfg.Limits.MaxHookString()
	switch op {
	case C.HOSTD_OP_FILE_READ:
		path, err := a.str(0, what)
		if err != nil {
			return nil, err
		}
		h, err := rs.openFile(path, "r")
		if err != nil {
			return nil, err
		}
		f := rs.files[h]
		defer func() { f.f.Close(); rs.files[h] = nil }()
		b, err := io.ReadAll(io.LimitReader(f.r, int64(max)+1))
		if err != nil {
			return nil, fileErr(path, err)
		}
		if len(b) > max {
			return nil, &callError{msg: path + ": file larger than " + strconv.Itoa(max) + " bytes"}
		}
		return b, nil
	case C.HOSTD_OP_FILE_EXIST:
		path, err := a.str(0, what)
		if err != nil {
			return nil, err
		}
		_, err = rs.e.cfg.FS.Stat(path)
		return err == nil, nil
	case C.HOSTD_OP_FILE_OPEN:
		path, err := a.str(0, what)
		if err != nil {
			return nil, err
		}
		mode := "r"
		if len(a) > 1 && a[1] != nil {
			if mode, err = a.str(1, what); err != nil {
				return nil, err
			}
		}
		return rs.openFile(path, mode)
	case C.HOSTD_OP_FILE_FREAD:
		f, err := rs.file(a, 0, what)
		if err != nil {
			return nil, err
		}
		if len(a) < 2 || a[1] == nil { // the rest
			b, err := io.ReadAll(io.LimitReader(f.r, int64(max)+1))
			if err != nil {
				return nil, fileErr(f.f.Name(), err)
			}
			if len(b) > max {
				return nil, &callError{msg: "File#read: more than " + strconv.Itoa(max) + " bytes"}
			}
			return b, nil
		}
		n, err := a.num(1, what, 0)
		if err != nil {
			return nil, err
		}
		if n < 0 || n > float64(max) {
			return nil, argErr("File#read: invalid length")
		}
		buf := make([]byte, int(n))
		got, err := io.ReadFull(f.r, buf)
		if got == 0 && n > 0 {
			return nil, nil // end of file
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return nil, fileErr(f.f.Name(), err)
		}
		return buf[:got], nil
	case C.HOSTD_OP_FILE_GETS:
		f, err := rs.file(a, 0, what)
		if err != nil {
			return nil, err
		}
		var b []byte
		for {
			chunk, err := f.r.ReadSlice('\n')
			b = append(b, chunk...)
			if len(b) > max {
				return nil, &callError{msg: "File#gets: line longer than " + strconv.Itoa(max) + " bytes"}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && len(b) == 0 {
				return nil, nil
			}
			return b, nil
		}
	case C.HOSTD_OP_FILE_WRITE:
		f, err := rs.file(a, 0, what)
		if err != nil {
			return nil, err
		}
		s, err := a.str(1, what)
		if err != nil {
			return nil, err
		}
		if !f.w {
			return nil, &callError{msg: "File#write: not opened for writing"}
		}
		n, err := f.f.WriteString(s)
		if err != nil {
			return nil, fileErr(f.f.Name(), err)
		}
		return int64(n), nil
	case C.HOSTD_OP_FILE_CLOSE:
		f, err := rs.file(a, 0, what)
		if err != nil {
			return nil, err
		}
		h := a[0].(int64)
		rs.files[h] = nil
		if err := f.f.Close(); err != nil {
			return nil, fileErr(f.f.Name(), err)
		}
		return nil, nil
	case C.HOSTD_OP_DIR_CHILDREN:
		path, err := a.str(0, what)
		if err != nil {
			return nil, err
		}
		names, err := scripting.ReadDirNames(rs.e.cfg.FS, path)
		if err != nil {
			return nil, fileErr(path, err)
		}
		out := make([]any, len(names))
		for i, n := range names {
			out[i] = n
		}
		return out, nil
	case C.HOSTD_OP_REQUIRE_RELATIVE:
		return rs.requireRelative(a)
	}
	return nil, &callError{msg: "unknown file operation"}
}

// requireRelative is require_relative(name): name (".rb" optional) is a
// file of the hook directory or below it, compiled once per version like
// a hook, and run once per run in the run's top-level class (its methods
// and constants are the hook's). It returns the loaded proc (to C, as an
// address) or false when name was loaded in this run already. The run's
// deadline is not touched.
func (rs *runState) requireRelative(a args) (any, error) {
	name, err := a.str(0, "require_relative")
	if err != nil {
		return nil, err
	}
	dir := rs.e.cfg.HookDir
	if dir == "" {
		return nil, &callError{msg: "require_relative is not available: no hook directory is configured"}
	}
	clean := filepath.ToSlash(filepath.Clean(strings.TrimPrefix(name, "./")))
	if name == "" || strings.ContainsAny(name, "\\\x00") || filepath.IsAbs(name) || clean == ".." ||
		strings.HasPrefix(clean, "../") || strings.Contains(clean, "/../") {
		return nil, argErr("require_relative: invalid name %q (a file of the hook directory, without ..)", name)
	}
	if !strings.HasSuffix(clean, ".rb") {
		clean += ".rb"
	}
	file := filepath.Join(dir, filepath.FromSlash(clean))
	if rs.loaded == nil {
		rs.loaded = make(map[string]bool)
	}
	if rs.loaded[file] {
		return false, nil
	}
	if _, err := rs.e.cfg.FS.Stat(file); err != nil {
		return nil, &callError{msg: "require_relative: " + name + " not found in the hook directory"}
	}
	p, err := rs.e.load(file, rs.vm)
	if err != nil {
		return nil, &callError{msg: "require_relative " + name + ": " + err.Error()}
	}
	rs.loaded[file] = true
	return int64(uintptr(unsafe.Pointer(p.p))), nil
}
