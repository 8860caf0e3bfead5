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
	"errors"
	"fmt"
	"math"
	"runtime/cgo"
	"strconv"
	"time"
	"unsafe"

	"github.com/hostd/hostd/scripting"
)

// runState is what the Ruby side of one run reaches through its cgo.Handle.
type runState struct {
	e   *Engine
	ctx context.Context
	// api is the hook API of the run (its request, phase and file).
	api scripting.Hook
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

// hostdGoCall runs host operation op for the run of handle h with the
// encoded arguments in. The encoded result goes into scratch when it fits
// (the usual case: nil, a status, a short string), else into a malloc'd
// buffer the C side frees; *out tells which.
//
//export hostdGoCall
func hostdGoCall(h C.uintptr_t, op C.int, in *C.char, inLen C.size_t, scratch *C.char, scratchCap C.size_t, out **C.char, outLen *C.size_t) (code C.int) {
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
			err = argErr("%s: unsupported value of class %s (want nil, true, false, Integer, Float, String, Symbol, Array or Hash)", opName(int(op)), c)
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
	if len(b) <= int(scratchCap) {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(scratch)), int(scratchCap)), b)
		*out = scratch
	} else {
		*out = (*C.char)(C.CBytes(b)) // a call into C (malloc): only for large results
	}
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

// named maps the error of a scripting.Hook operation for Ruby: an
// ArgumentError for a bad argument, the run's host error for the host's,
// a Hostd::Error for the others; each message starts with name (none when
// name is "").
func (rs *runState) named(name string, err error) error {
	if err == nil || isNamed(err) {
		return err
	}
	if name != "" {
		name += ": "
	}
	var ae *scripting.ArgError
	if errors.As(err, &ae) {
		return argErr("%s%s", name, ae.Msg)
	}
	var he *scripting.HostError
	if errors.As(err, &he) {
		rs.hostErr = he.Err
	}
	return &callError{msg: name + err.Error()}
}

// isNamed reports whether err is already a result for Ruby.
func isNamed(err error) bool {
	var ce *callError
	var ex exitStatus
	return errors.As(err, &ce) || errors.As(err, &ex) || errors.As(err, new(runTimeout))
}

// raw wraps an operation whose errors carry their own messages.
func raw(f func(rs *runState, a args) (any, error)) func(rs *runState, a args) (any, error) {
	return func(rs *runState, a args) (any, error) {
		v, err := f(rs, a)
		return v, rs.named("", err)
	}
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
	if err == nil {
		err = rs.named(name, rs.api.CheckInput(s, i+1))
	}
	return s, err
}

// arg returns argument i, nil when absent.
func (a args) arg(i int) any {
	if i < len(a) {
		return a[i]
	}
	return nil
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

// number converts a dictionary number for Ruby: integral values become
// Integers.
func number(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}

// op is a host operation Ruby reaches through hostdGoCall: its name in
// messages and the function that converts its arguments and result.
type op struct {
	name string
	fn   func(rs *runState, a args) (any, error)
}

// ops are the host operations by their number (HOSTD_OP_* in
// hostd_mruby.h). The rules of each r.* and Hostd.* operation live in
// scripting.Hook; these only convert values.
var ops = [...]op{
	C.HOSTD_OP_METHOD:       {"r.method", func(rs *runState, a args) (any, error) { return rs.api.Req.Method(), nil }},
	C.HOSTD_OP_URI:          {"r.uri", func(rs *runState, a args) (any, error) { return rs.api.Req.URI(), nil }},
	C.HOSTD_OP_PATH:         {"r.path", func(rs *runState, a args) (any, error) { return rs.api.Req.Path(), nil }},
	C.HOSTD_OP_QUERY_STRING: {"r.query_string", func(rs *runState, a args) (any, error) { return rs.api.Req.Query(), nil }},
	C.HOSTD_OP_ARGS:         {"r.args", func(rs *runState, a args) (any, error) { return scripting.ParseArgs(rs.api.Req.Query()), nil }},
	C.HOSTD_OP_HOST:         {"r.host", func(rs *runState, a args) (any, error) { return rs.api.Req.Host(), nil }},
	C.HOSTD_OP_SCHEME:       {"r.scheme", func(rs *runState, a args) (any, error) { return rs.api.Req.Scheme(), nil }},
	C.HOSTD_OP_REMOTE_ADDR:  {"r.remote_addr", func(rs *runState, a args) (any, error) { return rs.api.Req.RemoteAddr(), nil }},
	C.HOSTD_OP_REMOTE_PORT:  {"r.remote_port", opRemotePort},
	C.HOSTD_OP_PHASE:        {"r.phase", func(rs *runState, a args) (any, error) { return rs.api.Phase.String(), nil }},
	C.HOSTD_OP_STATUS:       {"r.status", func(rs *runState, a args) (any, error) { return int64(rs.api.Req.Status()), nil }},
	C.HOSTD_OP_SET_STATUS:   {"r.status=", opSetStatus},
	C.HOSTD_OP_WRITE:        {"r.write", opWrite},
	C.HOSTD_OP_REDIRECT:     {"r.redirect", opRedirect},
	C.HOSTD_OP_EXIT:         {"r.exit", opExit},
	C.HOSTD_OP_BASIC_AUTH:   {"r.basic_auth", opBasicAuth},
	C.HOSTD_OP_SET_PATH:     {"r.set_path", opSetPath},
	C.HOSTD_OP_BODY:         {"r.body", opBody},
	C.HOSTD_OP_HIN_GET:      {"r.headers_in[]", opHeaderIn},
	C.HOSTD_OP_HOUT_GET:     {"r.headers_out[]", opHeaderOut},
	C.HOSTD_OP_HOUT_SET:     {"r.headers_out[]=", opSetHeaderOut},
	C.HOSTD_OP_VARS_GET:     {"r.vars[]", opVar},
	C.HOSTD_OP_VARS_SET:     {"r.vars[]=", opSetVar},
	C.HOSTD_OP_LOG:          {"Hostd.log", opLog},
	C.HOSTD_OP_JSON_ENCODE:  {"Hostd.json_encode", opJSONEncode},
	C.HOSTD_OP_JSON_DECODE:  {"Hostd.json_decode", opJSONDecode},
	C.HOSTD_OP_SHA256: {"Hostd.sha256", func(rs *runState, a args) (any, error) {
		return strOp(rs, a, "Hostd.sha256", rs.api.SHA256)
	}},
	C.HOSTD_OP_HMAC_SHA256: {"Hostd.hmac_sha256", opHMACSHA256},
	C.HOSTD_OP_BASE64_ENCODE: {"Hostd.base64_encode", func(rs *runState, a args) (any, error) {
		return strOp(rs, a, "Hostd.base64_encode", rs.api.Base64Encode)
	}},
	C.HOSTD_OP_BASE64_DECODE: {"Hostd.base64_decode", opBase64Decode},
	C.HOSTD_OP_TIME:          {"Hostd.time", func(rs *runState, a args) (any, error) { return float64(time.Now().UnixMicro()) / 1e6, nil }},

	C.HOSTD_OP_SHARED_GET:      {"Hostd.shared.get", opSharedGet},
	C.HOSTD_OP_SHARED_SET:      {"Hostd.shared.set", opSharedSet},
	C.HOSTD_OP_SHARED_INCR:     {"Hostd.shared.incr", opSharedIncr},
	C.HOSTD_OP_SHARED_DELETE:   {"Hostd.shared.delete", opSharedDelete},
	C.HOSTD_OP_SHARED_ADD:      {"Hostd.shared.add", opSharedAdd},
	C.HOSTD_OP_SHARED_REPLACE:  {"Hostd.shared.replace", opSharedReplace},
	C.HOSTD_OP_SHARED_TTL:      {"Hostd.shared.ttl", opSharedTTL},
	C.HOSTD_OP_SHARED_EXPIRE:   {"Hostd.shared.expire", opSharedExpire},
	C.HOSTD_OP_SHARED_GET_KEYS: {"Hostd.shared.get_keys", opSharedKeys},
	C.HOSTD_OP_SHARED_CAS:      {"Hostd.shared.cas", opSharedCAS},

	C.HOSTD_OP_SESSION_GET:           {"r.session.get", opSessionGet},
	C.HOSTD_OP_SESSION_SET:           {"r.session.set", opSessionSet},
	C.HOSTD_OP_SESSION_DELETE:        {"r.session.delete", opSessionDelete},
	C.HOSTD_OP_SESSION_DESTROY:       {"r.session.destroy", opSessionDestroy},
	C.HOSTD_OP_SESSION_REGENERATE_ID: {"r.session.regenerate_id", opSessionRegenerateID},

	C.HOSTD_OP_FN:           {"Hostd.__fn", raw((*runState).fn)}, // api.go
	C.HOSTD_OP_HTTP_REQUEST: {"Hostd::HTTP.request", raw((*runState).httpRequest)},

	// files.go
	C.HOSTD_OP_FILE_READ:        fileEntry(C.HOSTD_OP_FILE_READ, "File.read"),
	C.HOSTD_OP_FILE_EXIST:       fileEntry(C.HOSTD_OP_FILE_EXIST, "File.exist?"),
	C.HOSTD_OP_FILE_OPEN:        fileEntry(C.HOSTD_OP_FILE_OPEN, "File.open"),
	C.HOSTD_OP_FILE_FREAD:       fileEntry(C.HOSTD_OP_FILE_FREAD, "File#read"),
	C.HOSTD_OP_FILE_GETS:        fileEntry(C.HOSTD_OP_FILE_GETS, "File#gets"),
	C.HOSTD_OP_FILE_WRITE:       fileEntry(C.HOSTD_OP_FILE_WRITE, "File#write"),
	C.HOSTD_OP_FILE_CLOSE:       fileEntry(C.HOSTD_OP_FILE_CLOSE, "File#close"),
	C.HOSTD_OP_DIR_CHILDREN:     fileEntry(C.HOSTD_OP_DIR_CHILDREN, "Dir.children"),
	C.HOSTD_OP_REQUIRE_RELATIVE: fileEntry(C.HOSTD_OP_REQUIRE_RELATIVE, "require_relative"),
}

// opName names operation n in messages.
func opName(n int) string {
	if n >= 0 && n < len(ops) && ops[n].name != "" {
		return ops[n].name
	}
	return "host operation " + strconv.Itoa(n)
}

// fileEntry is the table entry of file operation n (files.go).
func fileEntry(n int, name string) op {
	return op{name, raw(func(rs *runState, a args) (any, error) { return rs.filesCall(n, name, a) })}
}

// call runs operation n.
func (rs *runState) call(n int, a args) (any, error) {
	if err := rs.ctx.Err(); err != nil {
		return nil, rs.named("request", &scripting.HostError{Err: err})
	}
	if n < 0 || n >= len(ops) || ops[n].fn == nil {
		return nil, &callError{msg: fmt.Sprintf("unknown host operation %d", n)}
	}
	o := &ops[n]
	v, err := o.fn(rs, a)
	return v, rs.named(o.name, err)
}

// strOp runs a Hook operation on one String argument.
func strOp(rs *runState, a args, name string, f func(string) (string, error)) (any, error) {
	s, err := a.str(0, name)
	if err != nil {
		return nil, err
	}
	return f(s)
}

func opSetStatus(rs *runState, a args) (any, error) {
	if a.arg(0) == nil {
		return nil, argErr("r.status=: missing status")
	}
	f, err := a.num(0, "r.status=", 0)
	if err != nil {
		return nil, err
	}
	st, err := rs.api.SetStatus(f)
	return int64(st), err
}

func opWrite(rs *runState, a args) (any, error) {
	s, err := a.str(0, "r.write")
	if err != nil {
		return nil, err
	}
	return nil, rs.api.Write([]byte(s))
}

func opRedirect(rs *runState, a args) (any, error) {
	loc, err := a.str(0, "r.redirect")
	if err != nil {
		return nil, err
	}
	code, err := a.num(1, "r.redirect", 0)
	if err != nil {
		return nil, err
	}
	st, err := rs.api.Redirect(loc, code)
	if err != nil {
		return nil, err
	}
	return nil, exitStatus(st)
}

func opExit(rs *runState, a args) (any, error) {
	if a.arg(0) == nil {
		return nil, argErr("r.exit: missing status")
	}
	f, err := a.num(0, "r.exit", 0)
	if err != nil {
		return nil, err
	}
	st, err := rs.api.Exit(f)
	if err != nil {
		return nil, err
	}
	return nil, exitStatus(st)
}

func opRemotePort(rs *runState, a args) (any, error) {
	if port, ok := rs.api.RemotePort(); ok {
		return int64(port), nil
	}
	return nil, nil
}

func opBasicAuth(rs *runState, a args) (any, error) {
	user, pass, ok := rs.api.BasicAuth()
	if !ok {
		return nil, nil
	}
	return []any{user, pass}, nil
}

func opSetPath(rs *runState, a args) (any, error) {
	p, err := a.str(0, "r.set_path")
	if err != nil {
		return nil, err
	}
	return nil, rs.api.SetPath(p)
}

func opBody(rs *runState, a args) (any, error) {
	b, err := rs.api.Body()
	if err != nil {
		return nil, err
	}
	return b, nil
}

// stringOrNil converts a header lookup.
func stringOrNil(s string, ok bool) any {
	if !ok {
		return nil
	}
	return s
}

func opHeaderIn(rs *runState, a args) (any, error) {
	name, err := a.str(0, "r.headers_in[]")
	if err != nil {
		return nil, err
	}
	return stringOrNil(rs.api.HeaderIn(name)), nil
}

func opHeaderOut(rs *runState, a args) (any, error) {
	name, err := a.str(0, "r.headers_out[]")
	if err != nil {
		return nil, err
	}
	return stringOrNil(rs.api.HeaderOut(name)), nil
}

// opSetHeaderOut is r.headers_out[name] = value: a String or number sets
// it, an Array of Strings sets several values, nil deletes it.
func opSetHeaderOut(rs *runState, a args) (any, error) {
	name, err := a.str(0, "r.headers_out[]=")
	if err != nil {
		return nil, err
	}
	switch x := a.arg(1).(type) {
	case nil:
		return nil, rs.api.SetHeaderOut(name)
	case string, int64, float64:
		return nil, rs.api.SetHeaderOut(name, fmt.Sprint(x))
	case []any:
		vals := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, argErr("r.headers_out[]=: header value list must hold Strings")
			}
			vals[i] = s
		}
		return nil, rs.api.SetHeaderOut(name, vals...)
	}
	return nil, argErr("r.headers_out[]=: value must be a String, a number, an Array of Strings or nil")
}

func opVar(rs *runState, a args) (any, error) {
	k, err := a.str(0, "r.vars[]")
	if err != nil {
		return nil, err
	}
	return rs.api.Var(k)
}

func opSetVar(rs *runState, a args) (any, error) {
	k, err := a.str(0, "r.vars[]=")
	if err != nil {
		return nil, err
	}
	return a.arg(1), rs.api.SetVar(k, a.arg(1))
}

func opLog(rs *runState, a args) (any, error) {
	lvl, err := a.str(0, "Hostd.log")
	if err != nil {
		return nil, err
	}
	var msg string
	switch x := a.arg(1).(type) {
	case string:
		msg = x
	case nil:
	default:
		msg = fmt.Sprint(x)
	}
	return nil, rs.api.Log(rs.ctx, lvl, msg)
}

func opJSONEncode(rs *runState, a args) (any, error) {
	if len(a) < 1 {
		return nil, argErr("Hostd.json_encode: missing value")
	}
	b, err := rs.api.JSONEncode(a[0])
	if err != nil {
		return nil, &callError{msg: "Hostd.json_encode: " + err.Error()}
	}
	return b, nil
}

// opJSONDecode decodes; invalid JSON is nil, as in Lua.
func opJSONDecode(rs *runState, a args) (any, error) {
	s, err := a.str(0, "Hostd.json_decode")
	if err != nil {
		return nil, err
	}
	v, _ := rs.api.JSONDecode(s)
	return v, nil
}

func opHMACSHA256(rs *runState, a args) (any, error) {
	key, err := a.str(0, "Hostd.hmac_sha256")
	if err != nil {
		return nil, err
	}
	msg, err := a.str(1, "Hostd.hmac_sha256")
	if err != nil {
		return nil, err
	}
	return rs.api.HMACSHA256(key, msg)
}

// opBase64Decode decodes; invalid base64 is nil, as in Lua.
func opBase64Decode(rs *runState, a args) (any, error) {
	s, err := a.str(0, "Hostd.base64_decode")
	if err != nil {
		return nil, err
	}
	b, err := rs.api.Base64Decode(s)
	if errors.Is(err, scripting.ErrInvalidBase64) {
		return nil, nil
	}
	return b, err
}
