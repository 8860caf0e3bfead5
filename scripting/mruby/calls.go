//go:build cgo && !nomruby

package mruby

/*
#include <stdlib.h>
#include <stdint.h>
#include "hostd_mruby.h"
*/
import "C"

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime/cgo"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/hostd/hostd/scripting"
)

// runState is what the Ruby side of one run reaches through its cgo.Handle.
type runState struct {
	e     *Engine
	ctx   context.Context
	phase scripting.Phase
	path  string
	req   scripting.Request
	// hostErr is the last error of a host call (ErrResponseTooLarge ...),
	// wrapped by the run's error when the hook does not recover.
	hostErr error
	// out is the encoding buffer of host call results, kept by the VM
	// across runs.
	out []byte
	// re is the VM's pattern cache (api.go).
	re *scripting.RegexCache
	// deadline is when the run's time limit ends.
	deadline time.Time
	// Issue 16 part B: the VM of the run (require_relative loads into
	// it), the run's open files (files.go) and the modules it loaded.
	vm     *vm
	files  []*rbFile
	loaded map[string]bool
}

// callError is a failed host call: an ArgumentError in Ruby when arg is
// set, else a Hostd::Error.
type callError struct {
	msg string
	arg bool
}

// exitStatus ends the run with a status (r.exit, r.redirect).
type exitStatus int

//export hostdGoCall
func hostdGoCall(h C.uintptr_t, op C.int, in *C.char, inLen C.size_t, out **C.char, outLen *C.size_t) (code C.int) {
	var (
		res any
		rs  *runState
	)
	code = C.HOSTD_CALL_OK
	func() {
		defer func() {
			if p := recover(); p != nil {
				res, code = fmt.Sprintf("internal error: %v", p), C.HOSTD_CALL_ERR
			}
		}()
		var ok bool
		rs, ok = cgo.Handle(h).Value().(*runState)
		if !ok {
			res, code = "no hook run", C.HOSTD_CALL_ERR
			return
		}
		args, err := decodeArgs(unsafe.Slice((*byte)(unsafe.Pointer(in)), int(inLen)))
		if err != nil {
			res, code = err.Error(), C.HOSTD_CALL_ERR
			return
		}
		var v any
		if c, ok := findUnsupported(any(args)); ok {
			err = argErr("%s: unsupported value of class %s (want nil, true, false, Integer, Float, String, Symbol, Array or Hash)", opNames[int(op)], c)
		} else {
			v, err = rs.call(int(op), args)
		}
		var ce *callError
		var ex exitStatus
		switch {
		case err == nil:
			res = v
		case errors.As(err, new(runTimeout)):
			res, code = err.Error(), C.HOSTD_CALL_TIMEOUT
		case errors.As(err, &ce):
			res, code = ce.msg, C.HOSTD_CALL_ERR
			if ce.arg {
				code = C.HOSTD_CALL_ARGERR
			}
		case errors.As(err, &ex):
			res, code = int64(ex), C.HOSTD_CALL_EXIT
		default:
			res, code = err.Error(), C.HOSTD_CALL_ERR
		}
	}()
	var b []byte
	if rs != nil {
		b = appendValue(rs.out[:0], res)
		rs.out = b
	} else {
		b = appendValue(nil, res)
	}
	*out = (*C.char)(C.CBytes(b))
	*outLen = C.size_t(len(b))
	return code
}

func (e *callError) Error() string { return e.msg }
func (e exitStatus) Error() string { return "exit " + strconv.Itoa(int(e)) }

func argErr(format string, a ...any) error {
	return &callError{msg: fmt.Sprintf(format, a...), arg: true}
}

// hostFail records err as the run's host error and fails the call.
func (rs *runState) hostFail(what string, err error) error {
	rs.hostErr = err
	return &callError{msg: what + ": " + err.Error()}
}

func (rs *runState) logger() *slog.Logger {
	if l := rs.req.Logger(); l != nil {
		return l
	}
	return rs.e.cfg.Logger
}

// args is a method's argument list.
type args []any

func (a args) str(i int, name string) (string, error) {
	if i >= len(a) {
		return "", argErr("%s: missing argument %d", name, i+1)
	}
	s, ok := a[i].(string)
	if !ok {
		return "", argErr("%s: argument %d must be a String", name, i+1)
	}
	return s, nil
}

func (a args) input(rs *runState, i int, name string) (string, error) {
	s, err := a.str(i, name)
	if err == nil && len(s) > rs.e.cfg.Limits.MaxInput {
		err = argErr("%s: argument %d is longer than the input limit (%d bytes)", name, i+1, rs.e.cfg.Limits.MaxInput)
	}
	return s, err
}

// num returns argument i as a number; def when absent or nil.
func (a args) num(i int, name string, def float64) (float64, error) {
	if i >= len(a) || a[i] == nil {
		return def, nil
	}
	switch x := a[i].(type) {
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, argErr("%s: argument %d must be a number", name, i+1)
}

func (a args) status(i int, name string, def int) (int, error) {
	if def == 0 && (i >= len(a) || a[i] == nil) {
		return 0, argErr("%s: missing status", name)
	}
	f, err := a.num(i, name, float64(def))
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || f < 100 || f > 999 {
		return 0, argErr("%s: status must be an integer from 100 to 999", name)
	}
	return int(f), nil
}

func (a args) ttl(i int, name string) (time.Duration, error) {
	f, err := a.num(i, name, 0)
	if err != nil {
		return 0, err
	}
	if f < 0 || math.IsNaN(f) || f > 10*365*86400 {
		return 0, argErr("%s: ttl must be nil, 0 (none) or a number of seconds", name)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// number converts a dictionary number for Ruby: integral values become
// Integers.
func number(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}

// opNames name the host operations in error messages.
var opNames = map[int]string{
	C.HOSTD_OP_SET_STATUS: "r.status=", C.HOSTD_OP_WRITE: "r.write",
	C.HOSTD_OP_REDIRECT: "r.redirect", C.HOSTD_OP_EXIT: "r.exit",
	C.HOSTD_OP_SET_PATH: "r.set_path", C.HOSTD_OP_HIN_GET: "r.headers_in[]",
	C.HOSTD_OP_HOUT_GET: "r.headers_out[]", C.HOSTD_OP_HOUT_SET: "r.headers_out[]=",
	C.HOSTD_OP_VARS_GET: "r.vars[]", C.HOSTD_OP_VARS_SET: "r.vars[]=",
	C.HOSTD_OP_LOG: "Hostd.log", C.HOSTD_OP_JSON_ENCODE: "Hostd.json_encode",
	C.HOSTD_OP_JSON_DECODE: "Hostd.json_decode", C.HOSTD_OP_SHA256: "Hostd.sha256",
	C.HOSTD_OP_HMAC_SHA256: "Hostd.hmac_sha256", C.HOSTD_OP_BASE64_ENCODE: "Hostd.base64_encode",
	C.HOSTD_OP_BASE64_DECODE: "Hostd.base64_decode", C.HOSTD_OP_SHARED_GET: "Hostd.shared.get",
	C.HOSTD_OP_SHARED_SET: "Hostd.shared.set", C.HOSTD_OP_SHARED_INCR: "Hostd.shared.incr",
	C.HOSTD_OP_SHARED_DELETE: "Hostd.shared.delete", C.HOSTD_OP_SESSION_GET: "r.session.get",
	C.HOSTD_OP_SESSION_SET: "r.session.set", C.HOSTD_OP_SESSION_DELETE: "r.session.delete",
	C.HOSTD_OP_SESSION_DESTROY: "r.session.destroy", C.HOSTD_OP_SESSION_REGENERATE_ID: "r.session.regenerate_id",
	// Issue 16 part B.
	C.HOSTD_OP_HTTP_REQUEST: "Hostd::HTTP.request",
	C.HOSTD_OP_SHARED_ADD:   "Hostd.shared.add", C.HOSTD_OP_SHARED_REPLACE: "Hostd.shared.replace",
	C.HOSTD_OP_SHARED_TTL: "Hostd.shared.ttl", C.HOSTD_OP_SHARED_EXPIRE: "Hostd.shared.expire",
	C.HOSTD_OP_SHARED_GET_KEYS: "Hostd.shared.get_keys", C.HOSTD_OP_SHARED_CAS: "Hostd.shared.cas",
	C.HOSTD_OP_FILE_READ: "File.read", C.HOSTD_OP_FILE_EXIST: "File.exist?", C.HOSTD_OP_FILE_OPEN: "File.open",
	C.HOSTD_OP_FILE_FREAD: "File#read", C.HOSTD_OP_FILE_GETS: "File#gets", C.HOSTD_OP_FILE_WRITE: "File#write",
	C.HOSTD_OP_FILE_CLOSE: "File#close", C.HOSTD_OP_DIR_CHILDREN: "Dir.children",
	C.HOSTD_OP_REQUIRE_RELATIVE: "require_relative",
}

var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

func (rs *runState) call(op int, a args) (any, error) {
	if err := rs.ctx.Err(); err != nil {
		return nil, rs.hostFail("request", err)
	}
	req := rs.req
	switch op {
	case C.HOSTD_OP_METHOD:
		return req.Method(), nil
	case C.HOSTD_OP_URI:
		return req.URI(), nil
	case C.HOSTD_OP_PATH:
		return req.Path(), nil
	case C.HOSTD_OP_QUERY_STRING:
		return req.Query(), nil
	case C.HOSTD_OP_ARGS:
		return scripting.ParseArgs(req.Query()), nil
	case C.HOSTD_OP_HOST:
		return req.Host(), nil
	case C.HOSTD_OP_SCHEME:
		return req.Scheme(), nil
	case C.HOSTD_OP_REMOTE_ADDR:
		return req.RemoteAddr(), nil
	case C.HOSTD_OP_PHASE:
		return rs.phase.String(), nil
	case C.HOSTD_OP_STATUS:
		return int64(req.Status()), nil
	case C.HOSTD_OP_SET_STATUS:
		st, err := a.status(0, "r.status=", 0)
		if err != nil {
			return nil, err
		}
		req.SetStatus(st)
		return int64(st), nil
	case C.HOSTD_OP_WRITE:
		s, err := a.str(0, "r.write")
		if err != nil {
			return nil, err
		}
		if _, err := req.Write([]byte(s)); err != nil {
			return nil, rs.hostFail("r.write", err)
		}
		return nil, nil
	case C.HOSTD_OP_REDIRECT:
		loc, err := a.str(0, "r.redirect")
		if err != nil {
			return nil, err
		}
		st, err := a.status(1, "r.redirect", http.StatusFound)
		if err != nil {
			return nil, err
		}
		switch st {
		case 301, 302, 303, 307, 308:
		default:
			return nil, argErr("r.redirect: redirect status must be 301, 302, 303, 307 or 308")
		}
		if loc == "" || strings.ContainsAny(loc, "\r\n\x00") {
			return nil, argErr("r.redirect: invalid location")
		}
		req.HeadersOut().Set("Location", loc)
		req.SetStatus(st)
		return nil, exitStatus(st)
	case C.HOSTD_OP_EXIT:
		st, err := a.status(0, "r.exit", 0)
		if err != nil {
			return nil, err
		}
		return nil, exitStatus(st)
	case C.HOSTD_OP_BASIC_AUTH:
		user, pass, ok := scripting.BasicAuth(req.HeadersIn().Get("Authorization"))
		if !ok {
			return nil, nil
		}
		return []any{user, pass}, nil
	case C.HOSTD_OP_SET_PATH:
		p, err := a.str(0, "r.set_path")
		if err != nil {
			return nil, err
		}
		if rs.phase != scripting.PhaseRewrite {
			return nil, &callError{msg: "r.set_path is only available in the rewrite phase"}
		}
		if err := req.SetPath(p); err != nil {
			return nil, rs.hostFail("r.set_path", err)
		}
		return nil, nil
	case C.HOSTD_OP_BODY:
		b, err := req.Body()
		if err != nil {
			return nil, rs.hostFail("r.body", err)
		}
		return b, nil
	case C.HOSTD_OP_HIN_GET:
		name, err := a.str(0, "r.headers_in[]")
		if err != nil {
			return nil, err
		}
		if v, ok := scripting.HeaderIn(req.HeadersIn(), name); ok {
			return v, nil
		}
		return nil, nil
	case C.HOSTD_OP_HOUT_GET:
		name, err := a.str(0, "r.headers_out[]")
		if err != nil {
			return nil, err
		}
		vals := req.HeadersOut().Values(name)
		if len(vals) == 0 {
			return nil, nil
		}
		return strings.Join(vals, ", "), nil
	case C.HOSTD_OP_HOUT_SET:
		return nil, setHeader(req.HeadersOut(), a)
	case C.HOSTD_OP_VARS_GET:
		k, err := a.str(0, "r.vars[]")
		if err != nil {
			return nil, err
		}
		return req.Vars()[k], nil
	case C.HOSTD_OP_VARS_SET:
		k, err := a.str(0, "r.vars[]=")
		if err != nil {
			return nil, err
		}
		if len(a) < 2 || a[1] == nil {
			delete(req.Vars(), k)
			return nil, nil
		}
		if _, err := scripting.EncodeJSON(a[1], rs.e.cfg.Limits.MaxInput); err != nil {
			return nil, argErr("r.vars[]=: %v", err)
		}
		req.Vars()[k] = a[1]
		return a[1], nil
	case C.HOSTD_OP_LOG:
		lvl, err := a.str(0, "Hostd.log")
		if err != nil {
			return nil, err
		}
		level, ok := logLevels[lvl]
		if !ok {
			return nil, argErr(`Hostd.log: level must be "debug", "info", "warn" or "error"`)
		}
		var msg string
		if len(a) > 1 {
			if s, ok := a[1].(string); ok {
				msg = s
			} else {
				msg = fmt.Sprint(a[1])
			}
		}
		if len(msg) > rs.e.cfg.Limits.MaxInput {
			msg = msg[:rs.e.cfg.Limits.MaxInput]
		}
		rs.logger().Log(rs.ctx, level, msg, "hook", rs.path)
		return nil, nil
	case C.HOSTD_OP_JSON_ENCODE:
		if len(a) < 1 {
			return nil, argErr("Hostd.json_encode: missing value")
		}
		b, err := scripting.EncodeJSON(a[0], rs.e.cfg.Limits.MaxInput)
		if err != nil {
			return nil, &callError{msg: "Hostd.json_encode: " + err.Error()}
		}
		return b, nil
	case C.HOSTD_OP_JSON_DECODE:
		s, err := a.str(0, "Hostd.json_decode")
		if err != nil {
			return nil, err
		}
		v, err := scripting.DecodeJSON([]byte(s), rs.e.cfg.Limits.MaxInput)
		if err != nil {
			return nil, nil // invalid JSON: nil, as in Lua
		}
		return v, nil
	case C.HOSTD_OP_SHA256:
		s, err := a.input(rs, 0, "Hostd.sha256")
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:]), nil
	case C.HOSTD_OP_HMAC_SHA256:
		key, err := a.input(rs, 0, "Hostd.hmac_sha256")
		if err != nil {
			return nil, err
		}
		msg, err := a.input(rs, 1, "Hostd.hmac_sha256")
		if err != nil {
			return nil, err
		}
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(msg))
		return hex.EncodeToString(m.Sum(nil)), nil
	case C.HOSTD_OP_BASE64_ENCODE:
		s, err := a.input(rs, 0, "Hostd.base64_encode")
		if err != nil {
			return nil, err
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	case C.HOSTD_OP_BASE64_DECODE:
		s, err := a.input(rs, 0, "Hostd.base64_decode")
		if err != nil {
			return nil, err
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(s); err == nil {
				return b, nil
			}
		}
		return nil, nil // invalid base64: nil, as in Lua
	case C.HOSTD_OP_TIME:
		return float64(time.Now().UnixMicro()) / 1e6, nil
	case C.HOSTD_OP_SHARED_GET:
		k, err := a.str(0, "Hostd.shared.get")
		if err != nil {
			return nil, err
		}
		switch x := rs.e.cfg.Shared.Get(k).(type) {
		case float64:
			return number(x), nil
		case int64, string, bool:
			return x, nil
		}
		return nil, nil
	case C.HOSTD_OP_SHARED_SET:
		k, err := a.str(0, "Hostd.shared.set")
		if err != nil {
			return nil, err
		}
		var val any
		if len(a) > 1 {
			switch x := a[1].(type) {
			case nil, string, int64, float64, bool:
				val = x
			default:
				return nil, argErr("Hostd.shared.set: value must be a String, number, true, false or nil")
			}
		}
		ttl, err := a.ttl(2, "Hostd.shared.set")
		if err != nil {
			return nil, err
		}
		err = rs.e.cfg.Shared.Set(k, val, ttl)
		if errors.Is(err, scripting.ErrDictFull) {
			return false, nil
		}
		if err != nil {
			return nil, argErr("Hostd.shared.set: %v", err)
		}
		return true, nil
	case C.HOSTD_OP_SHARED_INCR:
		k, err := a.str(0, "Hostd.shared.incr")
		if err != nil {
			return nil, err
		}
		delta, err := a.num(1, "Hostd.shared.incr", 1)
		if err != nil {
			return nil, err
		}
		init, err := a.num(2, "Hostd.shared.incr", 0)
		if err != nil {
			return nil, err
		}
		ttl, err := a.ttl(3, "Hostd.shared.incr")
		if err != nil {
			return nil, err
		}
		n, err := rs.e.cfg.Shared.Incr(k, delta, init, ttl)
		if err != nil {
			return nil, nil // full or not a number: nil, as in Lua
		}
		return number(n), nil
	case C.HOSTD_OP_SHARED_DELETE:
		k, err := a.str(0, "Hostd.shared.delete")
		if err != nil {
			return nil, err
		}
		rs.e.cfg.Shared.Delete(k)
		return nil, nil
	}
	if v, err, ok := rs.sessionCall(op, a); ok {
		return v, err
	}
	if op == C.HOSTD_OP_FN {
		return rs.fn(a) // api.go
	}
	// Issue 16 part B.
	switch op {
	case C.HOSTD_OP_HTTP_REQUEST:
		return rs.httpRequest(a)
	case C.HOSTD_OP_SHARED_ADD, C.HOSTD_OP_SHARED_REPLACE, C.HOSTD_OP_SHARED_TTL,
		C.HOSTD_OP_SHARED_EXPIRE, C.HOSTD_OP_SHARED_CAS:
		return rs.sharedOpsB(op, a)
	case C.HOSTD_OP_SHARED_GET_KEYS:
		return rs.sharedKeys(a)
	case C.HOSTD_OP_FILE_READ, C.HOSTD_OP_FILE_EXIST, C.HOSTD_OP_FILE_OPEN, C.HOSTD_OP_FILE_FREAD,
		C.HOSTD_OP_FILE_GETS, C.HOSTD_OP_FILE_WRITE, C.HOSTD_OP_FILE_CLOSE, C.HOSTD_OP_DIR_CHILDREN,
		C.HOSTD_OP_REQUIRE_RELATIVE:
		return rs.filesCall(op, a) // files.go
	}
	return nil, &callError{msg: fmt.Sprintf("unknown host operation %d", op)}
}

// setHeader implements r.headers_out[name] = value: a String or number
// sets it, an Array of Strings sets several values, nil deletes it.
func setHeader(h http.Header, a args) error {
	name, err := a.str(0, "r.headers_out[]=")
	if err != nil {
		return err
	}
	if !scripting.ValidHeaderName(name) {
		return argErr("r.headers_out[]=: invalid header name %q", name)
	}
	var val any
	if len(a) > 1 {
		val = a[1]
	}
	switch x := val.(type) {
	case nil:
		h.Del(name)
	case string, int64, float64:
		s := fmt.Sprint(x)
		if !scripting.ValidHeaderValue(s) {
			return argErr("r.headers_out[]=: invalid header value")
		}
		h.Set(name, s)
	case []any:
		h.Del(name)
		for _, e := range x {
			s, ok := e.(string)
			if !ok || !scripting.ValidHeaderValue(s) {
				return argErr("r.headers_out[]=: invalid header value in list")
			}
			h.Add(name, s)
		}
	default:
		return argErr("r.headers_out[]=: value must be a String, a number, an Array of Strings or nil")
	}
	return nil
}
