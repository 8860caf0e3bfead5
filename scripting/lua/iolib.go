package lua

import (
	"bufio"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
)

// The io library a hook sees: io.open, io.lines, io.type and io.close on
// files opened by path through the tenant's file gate (Config.FS): only
// regular files under the tenant's directories, checked by the kernel
// against the tenant's identity, never a FIFO, a device or a /proc magic
// link. There are no default files (io.stdin, io.stdout, io.stderr,
// io.read, io.write) and no io.popen. Reads are bounded by the string
// limit; files a hook leaves open are closed when its run ends.

type luaFile struct {
	f *os.File
	r *bufio.Reader
	w bool
}

// close closes the file and drops its read buffer.
func (f *luaFile) close() error {
	err := f.f.Close()
	f.f, f.r = nil, nil
	return err
}

func (v *vm) ioLib() *glua.LTable {
	L := v.L
	methods := L.NewTable()
	L.SetFuncs(methods, map[string]glua.LGFunction{
		"read": v.fRead, "write": v.fWrite, "lines": v.fLines, "close": v.fClose,
		"seek": v.fSeek, "flush": v.fFlush,
	})
	v.fileMT = L.NewTable()
	v.fileMT.RawSetString("__index", readOnly(L, methods))
	v.fileMT.RawSetString("__metatable", glua.LString(lockedMT))
	v.fileMT.RawSetString("__tostring", L.NewFunction(func(L *glua.LState) int {
		if f := v.toFile(L.Get(1)); f != nil && f.f != nil {
			L.Push(glua.LString("file"))
		} else {
			L.Push(glua.LString("file (closed)"))
		}
		return 1
	}))

	t := L.NewTable()
	L.SetFuncs(t, map[string]glua.LGFunction{
		"open": v.ioOpen, "lines": v.ioLines, "type": v.ioType, "close": v.fClose,
	})
	return t
}

func (v *vm) toFile(lv glua.LValue) *luaFile {
	ud, ok := lv.(*glua.LUserData)
	if !ok || ud.Metatable != v.fileMT {
		return nil
	}
	f, _ := ud.Value.(*luaFile)
	return f
}

func (v *vm) checkFile(L *glua.LState, n int) *luaFile {
	f := v.toFile(L.Get(n))
	if f == nil {
		L.ArgError(n, "file expected")
	}
	if f.f == nil {
		L.RaiseError("attempt to use a closed file")
	}
	return f
}

// open opens path with a Lua mode and registers the file with the run.
func (v *vm) open(L *glua.LState, path, mode string) (*glua.LUserData, error) {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	flags, ok := scripting.OpenFlags(mode)
	if !ok {
		L.ArgError(2, "invalid mode")
	}
	// Forget closed files: an open/close loop must not grow the list (and
	// keep every closed file's read buffer) for the rest of the run.
	v.files = slices.DeleteFunc(v.files, func(f *luaFile) bool { return f.f == nil })
	if len(v.files) >= maxOpenFiles {
		return nil, errors.New("too many open files")
	}
	fh, err := v.e.cfg.FS.OpenFile(path, flags, 0o644)
	if err == nil {
		// The gate also opens directories (for static files); a hook's
		// io gets regular files only, and none on procfs, sysfs & co.
		if err = scripting.CheckHookFile(fh); err != nil {
			fh.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	lf := &luaFile{f: fh, r: bufio.NewReader(fh), w: flags != os.O_RDONLY}
	v.files = append(v.files, lf)
	ud := L.NewUserData()
	ud.Value = lf
	ud.Metatable = v.fileMT
	return ud, nil
}

// ioOpen is io.open(path [, mode]): a file, or nil and a message.
func (v *vm) ioOpen(L *glua.LState) int {
	path := L.CheckString(1)
	ud, err := v.open(L, path, L.OptString(2, "r"))
	if err != nil {
		L.Push(glua.LNil)
		L.Push(glua.LString(path + ": " + errText(err)))
		return 2
	}
	L.Push(ud)
	return 1
}

// errText is an error's reason without the path (the caller names it).
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// osRemove is os.remove(path) through the file gate: true, or nil and a
// message.
func (v *vm) osRemove(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	path := L.CheckString(1)
	return pushOK(L, path, v.e.cfg.FS.Remove(path))
}

// osRename is os.rename(old, new) through the file gate: true, or nil and
// a message.
func (v *vm) osRename(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	from, to := L.CheckString(1), L.CheckString(2)
	return pushOK(L, from, v.e.cfg.FS.Rename(from, to))
}

// pushOK pushes Lua's result of an operation on path: true, or nil and
// "path: reason".
func pushOK(L *glua.LState, path string, err error) int {
	if err != nil {
		L.Push(glua.LNil)
		L.Push(glua.LString(path + ": " + errText(err)))
		return 2
	}
	L.Push(glua.LTrue)
	return 1
}

// ioLines is io.lines(path): an iterator over the lines of the file, which
// it closes at the end.
func (v *vm) ioLines(L *glua.LState) int {
	path := L.CheckString(1)
	ud, err := v.open(L, path, "r")
	if err != nil {
		L.RaiseError("%s: %s", path, errText(err))
	}
	return v.pushLines(L, ud.Value.(*luaFile), true)
}

// fLines is file:lines(): an iterator over the remaining lines; unlike
// io.lines it leaves the file open.
func (v *vm) fLines(L *glua.LState) int {
	return v.pushLines(L, v.checkFile(L, 1), false)
}

// pushLines pushes an iterator over f's remaining lines. io.lines's (own)
// returns nil once f is closed and closes f at the end; file:lines's
// raises an error on a closed file and leaves f open at the end.
func (v *vm) pushLines(L *glua.LState, f *luaFile, own bool) int {
	L.Push(L.NewFunction(func(L *glua.LState) int {
		if f.f == nil {
			if !own {
				L.RaiseError("attempt to use a closed file")
			}
			L.Push(glua.LNil)
			return 1
		}
		line, ok := v.readLine(L, f)
		if !ok {
			if own {
				f.close()
			}
			L.Push(glua.LNil)
			return 1
		}
		L.Push(line)
		return 1
	}))
	return 1
}

func (v *vm) ioType(L *glua.LState) int {
	f := v.toFile(L.Get(1))
	switch {
	case f == nil:
		L.Push(glua.LNil)
	case f.f == nil:
		L.Push(glua.LString("closed file"))
	default:
		L.Push(glua.LString("file"))
	}
	return 1
}

func (v *vm) fClose(L *glua.LState) int {
	f := v.checkFile(L, 1)
	err := f.close()
	if err != nil {
		L.Push(glua.LNil)
		L.Push(glua.LString(errText(err)))
		return 2
	}
	L.Push(glua.LTrue)
	return 1
}

func (v *vm) fFlush(L *glua.LState) int {
	v.checkFile(L, 1)
	L.Push(glua.LTrue)
	return 1
}

// readLine reads one line without its newline, bounded by the string limit.
func (v *vm) readLine(L *glua.LState, f *luaFile) (glua.LValue, bool) {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	var b []byte
	max := v.maxString()
	for {
		chunk, err := f.r.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > max {
			L.RaiseError("line longer than %d bytes", max)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && len(b) == 0 {
			return glua.LNil, false
		}
		break
	}
	return glua.LString(strings.TrimSuffix(string(b), "\n")), true
}

// fRead is file:read(...) with formats "*a", "*l", "*n" and a byte count
// (the leading '*' is optional).
func (v *vm) fRead(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	f := v.checkFile(L, 1)
	n := L.GetTop()
	if n == 1 {
		L.Push(glua.LString("*l"))
		n = 2
	}
	max := v.maxString()
	for i := 2; i <= n; i++ {
		switch a := L.Get(i).(type) {
		case glua.LNumber:
			cnt := int(a)
			if cnt < 0 || cnt > max {
				L.ArgError(i, "invalid byte count")
			}
			buf := make([]byte, cnt)
			got, err := io.ReadFull(f.r, buf)
			if got == 0 && (err != nil || cnt > 0) {
				L.Push(glua.LNil)
				return i - 1
			}
			L.Push(glua.LString(buf[:got]))
		case glua.LString:
			switch strings.TrimPrefix(string(a), "*") {
			case "a":
				b, err := io.ReadAll(io.LimitReader(f.r, int64(max)+1))
				if err != nil {
					L.Push(glua.LNil)
					L.Push(glua.LString(errText(err)))
					return i
				}
				if len(b) > max {
					L.RaiseError("file:read: file larger than %d bytes", max)
				}
				L.Push(glua.LString(b))
			case "l":
				line, ok := v.readLine(L, f)
				if !ok {
					L.Push(glua.LNil)
					return i - 1
				}
				L.Push(line)
			case "n":
				var tok []byte
				for len(tok) < 64 {
					c, err := f.r.ReadByte()
					if err != nil {
						break
					}
					if isspace(c) && len(tok) == 0 {
						continue
					}
					if !(isdigit(c) || strings.IndexByte("+-.eExXabcdefABCDEF", c) >= 0) {
						f.r.UnreadByte()
						break
					}
					tok = append(tok, c)
				}
				num, err := strconv.ParseFloat(string(tok), 64)
				if err != nil {
					L.Push(glua.LNil)
					return i - 1
				}
				L.Push(glua.LNumber(num))
			default:
				L.ArgError(i, "invalid format")
			}
		default:
			L.ArgError(i, "invalid format")
		}
	}
	return n - 1
}

func (v *vm) fWrite(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	f := v.checkFile(L, 1)
	if !f.w {
		L.Push(glua.LNil)
		L.Push(glua.LString("file not opened for writing"))
		return 2
	}
	for i := 2; i <= L.GetTop(); i++ {
		if _, err := f.f.WriteString(L.CheckString(i)); err != nil {
			L.Push(glua.LNil)
			L.Push(glua.LString(errText(err)))
			return 2
		}
	}
	L.Push(L.Get(1))
	return 1
}

// fSeek is file:seek([whence [, offset]]); it drops buffered input.
func (v *vm) fSeek(L *glua.LState) int {
	f := v.checkFile(L, 1)
	whence := map[string]int{"set": io.SeekStart, "cur": io.SeekCurrent, "end": io.SeekEnd}
	w, ok := whence[L.OptString(2, "cur")]
	if !ok {
		L.ArgError(2, `whence must be "set", "cur" or "end"`)
	}
	off := int64(L.OptInt(3, 0))
	if w == io.SeekCurrent {
		off -= int64(f.r.Buffered())
	}
	pos, err := f.f.Seek(off, w)
	if err != nil {
		L.Push(glua.LNil)
		L.Push(glua.LString(errText(err)))
		return 2
	}
	f.r.Reset(f.f)
	L.Push(glua.LNumber(pos))
	return 1
}
