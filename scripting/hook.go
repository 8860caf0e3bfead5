package scripting

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
	"sort"
	"strings"
	"time"
)

// ArgError is a bad argument to a hook API operation: Lua raises it as
// "bad argument #N to 'name' (Msg)", Ruby as an ArgumentError "name: Msg".
type ArgError struct {
	// Arg is the argument's position among the operation's own
	// arguments, 1 for the first (the object of a Lua method call does
	// not count).
	Arg int
	Msg string
}

func (e *ArgError) Error() string { return e.Msg }

func argError(arg int, format string, a ...any) error {
	return &ArgError{Arg: arg, Msg: fmt.Sprintf(format, a...)}
}

// HostError is a failure of the host under an operation (the request body
// or the response over its limit, an unreachable session store): the hook
// fails with it unless it recovers, and the run's error wraps Err so host
// answers by it (413, 503 ...). Engines show it as "name: Err".
type HostError struct{ Err error }

func (e *HostError) Error() string { return e.Err.Error() }
func (e *HostError) Unwrap() error { return e.Err }

func hostError(err error) error {
	if err == nil {
		return nil
	}
	return &HostError{Err: err}
}

// Hook is the hook API of one run, defined once for every engine: each
// method is one r.* or hostd.* operation on Go values, with its rules
// (argument checks, limits, phases), and fails with *ArgError for a bad
// argument, *HostError for a failure of the host, or another error a hook
// may rescue. Engines only convert their values to and from these methods
// and map the errors to their own. An engine keeps one Hook per VM, set
// for each run; it is not safe for concurrent use.
type Hook struct {
	// Config is the engine's configuration, with defaults applied.
	Config *Config
	// Req is the request of the run, nil between runs.
	Req   Request
	Phase Phase
	// File is the hook's path, for the log.
	File string
}

// Logger returns the request's error log, or the engine's.
func (h *Hook) Logger() *slog.Logger {
	if h.Req != nil {
		if l := h.Req.Logger(); l != nil {
			return l
		}
	}
	return h.Config.Logger
}

// CheckInput fails with an *ArgError for argument arg when s is longer
// than Limits.MaxInput: the bound of every operation whose work grows
// with its input.
func (h *Hook) CheckInput(s string, arg int) error {
	if len(s) > h.Config.Limits.MaxInput {
		return argError(arg, "string is longer than the input limit (%d bytes)", h.Config.Limits.MaxInput)
	}
	return nil
}

// statusCode checks a status code given as a number.
func statusCode(code float64, arg int) (int, error) {
	if code != math.Trunc(code) || code < 100 || code > 999 {
		return 0, argError(arg, "status must be an integer from 100 to 999")
	}
	return int(code), nil
}

// RemotePort is r:remote_port(): the client's TCP port; ok is false when
// it is unknown (nil to the hook).
func (h *Hook) RemotePort() (port int, ok bool) {
	port = h.Req.RemotePort()
	return port, port > 0 && port <= 65535
}

// SetStatus is r.status = code.
func (h *Hook) SetStatus(code float64) (int, error) {
	st, err := statusCode(code, 1)
	if err == nil {
		h.Req.SetStatus(st)
	}
	return st, err
}

// Exit is r:exit(code): the status the run ends with.
func (h *Hook) Exit(code float64) (int, error) { return statusCode(code, 1) }

// Redirect is r:redirect(location [, code]): it sets Location and the
// status (code 0: 302) and returns the status the run ends with.
func (h *Hook) Redirect(loc string, code float64) (int, error) {
	if code == 0 {
		code = http.StatusFound
	}
	switch code {
	case 301, 302, 303, 307, 308:
	default:
		return 0, argError(2, "redirect status must be 301, 302, 303, 307 or 308")
	}
	if loc == "" || strings.ContainsAny(loc, "\r\n\x00") {
		return 0, argError(1, "invalid redirect location")
	}
	h.Req.HeadersOut().Set("Location", loc)
	h.Req.SetStatus(int(code))
	return int(code), nil
}

// errRewriteOnly is the error of r:set_path outside the rewrite phase.
var errRewriteOnly = errors.New("only available in the rewrite phase")

// SetPath is r:set_path(p), in the rewrite phase only.
func (h *Hook) SetPath(p string) error {
	if h.Phase != PhaseRewrite {
		return errRewriteOnly
	}
	path, query, hasQuery := strings.Cut(p, "?")
	if !strings.HasPrefix(path, "/") {
		return hostError(fmt.Errorf("set_path: path %q must start with '/'", path))
	}
	if strings.IndexByte(path, 0) >= 0 {
		return hostError(errors.New("set_path: path contains NUL"))
	}
	return hostError(h.Req.SetPath(path, query, hasQuery))
}

// Write is r:write: p goes to the response (not retained).
func (h *Hook) Write(p []byte) error {
	_, err := h.Req.Write(p)
	return hostError(err)
}

// Body is r.body: the whole request body.
func (h *Hook) Body() ([]byte, error) {
	b, err := h.Req.Body()
	return b, hostError(err)
}

// BasicAuth is r:basic_auth(): the user and password of a Basic
// Authorization header; ok is false without one.
func (h *Hook) BasicAuth() (user, pass string, ok bool) {
	return BasicAuth(h.Req.HeadersIn().Get("Authorization"))
}

// HeaderIn is r.headers_in[name] (see HeaderIn).
func (h *Hook) HeaderIn(name string) (string, bool) { return HeaderIn(h.Req.HeadersIn(), name) }

// HeaderOut is r.headers_out[name]: its values joined by ", ".
func (h *Hook) HeaderOut(name string) (string, bool) {
	vals := h.Req.HeadersOut().Values(name)
	if len(vals) == 0 {
		return "", false
	}
	return strings.Join(vals, ", "), true
}

// SetHeaderOut is r.headers_out[name] = value: vals replace the header's
// values; none deletes it. Names must be tokens and values free of
// control characters, so a hook cannot split the response.
func (h *Hook) SetHeaderOut(name string, vals ...string) error {
	if !ValidHeaderName(name) {
		return argError(1, "invalid header name %q", name)
	}
	for _, s := range vals {
		if !ValidHeaderValue(s) {
			return argError(2, "invalid header value")
		}
	}
	hdr := h.Req.HeadersOut()
	hdr.Del(name)
	for _, s := range vals {
		hdr.Add(name, s)
	}
	return nil
}

// Headers lists request (in) or response headers for iteration: their
// names in lower case, sorted, each with its values.
func (h *Hook) Headers(in bool) (names []string, values [][]string) {
	hdr := h.Req.HeadersOut()
	if in {
		hdr = h.Req.HeadersIn()
	}
	keys := make([]string, 0, len(hdr))
	for k, vals := range hdr {
		if len(vals) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	names, values = make([]string, len(keys)), make([][]string, len(keys))
	for i, k := range keys {
		names[i], values[i] = strings.ToLower(k), hdr[k]
	}
	return names, values
}

// errNoVars means the request has no r.vars table.
var errNoVars = errors.New("r.vars is not available for this request")

// Var is r.vars[k] (nil when absent).
func (h *Hook) Var(k string) (any, error) {
	m := h.Req.Vars()
	if m == nil {
		return nil, errNoVars
	}
	return m[k], nil
}

// SetVar is r.vars[k] = v: a JSON-able value whose encoding fits the
// input limit; nil deletes k.
func (h *Hook) SetVar(k string, v any) error {
	m := h.Req.Vars()
	if m == nil {
		return errNoVars
	}
	if v == nil {
		delete(m, k)
		return nil
	}
	if _, err := EncodeJSON(v, h.Config.Limits.MaxInput); err != nil {
		return argError(2, "r.vars: %v", err)
	}
	m[k] = v
	return nil
}

var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

// Log is hostd.log(level, msg): msg (cut at the input limit) to the
// tenant's error log with the hook's name.
func (h *Hook) Log(ctx context.Context, level, msg string) error {
	lvl, ok := logLevels[level]
	if !ok {
		return argError(1, `level must be "debug", "info", "warn" or "error"`)
	}
	if len(msg) > h.Config.Limits.MaxInput {
		msg = msg[:h.Config.Limits.MaxInput]
	}
	h.Logger().Log(ctx, lvl, msg, "hook", h.File)
	return nil
}

// JSONEncode is hostd.json_encode(v), within the input limit.
func (h *Hook) JSONEncode(v any) ([]byte, error) {
	return EncodeJSON(v, h.Config.Limits.MaxInput)
}

// JSONDecode is hostd.json_decode(s); invalid JSON is an error a hook
// sees as nil (and a message in Lua).
func (h *Hook) JSONDecode(s string) (any, error) {
	return DecodeJSON([]byte(s), h.Config.Limits.MaxInput)
}

// SHA256 is hostd.sha256(s): the hex digest.
func (h *Hook) SHA256(s string) (string, error) {
	if err := h.CheckInput(s, 1); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:]), nil
}

// HMACSHA256 is hostd.hmac_sha256(key, msg): the hex HMAC.
func (h *Hook) HMACSHA256(key, msg string) (string, error) {
	if err := h.CheckInput(key, 1); err != nil {
		return "", err
	}
	if err := h.CheckInput(msg, 2); err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil)), nil
}

// Base64Encode is hostd.base64_encode(s): standard, padded.
func (h *Hook) Base64Encode(s string) (string, error) {
	if err := h.CheckInput(s, 1); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), nil
}

// ErrInvalidBase64 is the error of Base64Decode for invalid input.
var ErrInvalidBase64 = errors.New("invalid base64")

// Base64Decode is hostd.base64_decode(s): standard or URL-safe base64,
// padded or not.
func (h *Hook) Base64Decode(s string) ([]byte, error) {
	if err := h.CheckInput(s, 1); err != nil {
		return nil, err
	}
	if b, ok := DecodeBase64(s); ok {
		return b, nil
	}
	return nil, ErrInvalidBase64
}

// Shared dictionary (hostd.shared).

// maxTTL is the longest time to live a hook may give a shared key.
const maxTTL = 10 * 365 * 86400

// ttl checks a time to live in seconds, argument arg.
func ttl(secs float64, arg int) (time.Duration, error) {
	if secs < 0 || math.IsNaN(secs) || secs > maxTTL {
		return 0, argError(arg, "ttl must be nil, 0 (none) or a number of seconds")
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// dictValue checks a value to store, argument arg.
func dictValue(v any, arg int) error {
	switch v.(type) {
	case nil, string, int64, float64, bool:
		return nil
	}
	return argError(arg, "value must be a string, number, boolean or nil")
}

// dictStored maps a store's outcome to a miss, why a store of the shared
// dictionary did not store ("" when it did): miss ("exists", "not found",
// "changed") or a full dictionary; other errors (a key or value too long)
// are the arguments' fault.
func dictStored(ok bool, err error, miss string) (string, error) {
	switch {
	case errors.Is(err, ErrDictBudget):
		return "shared dictionary is over its byte budget", nil
	case errors.Is(err, ErrDictFull):
		return "shared dictionary is full", nil
	case err != nil:
		return "", argError(1, "%v", err)
	case !ok:
		return miss, nil
	}
	return "", nil
}

// SharedGet is hostd.shared:get(k): the value, or nil.
func (h *Hook) SharedGet(k string) any { return h.Config.Shared.Get(k) }

// SharedSet is hostd.shared:set(k, v [, ttl]); nil v deletes. The miss
// is empty when it stored.
func (h *Hook) SharedSet(k string, v any, ttlSecs float64) (miss string, err error) {
	if err := dictValue(v, 2); err != nil {
		return "", err
	}
	d, err := ttl(ttlSecs, 3)
	if err != nil {
		return "", err
	}
	return dictStored(true, h.Config.Shared.Set(k, v, d), "")
}

// SharedIncr is hostd.shared:incr(k [, delta [, init [, ttl]]]): the new
// value; a full dictionary or a key that holds no number is a miss.
func (h *Hook) SharedIncr(k string, delta, init, ttlSecs float64) (n float64, miss string, err error) {
	d, err := ttl(ttlSecs, 4)
	if err != nil {
		return 0, "", err
	}
	n, err = h.Config.Shared.Incr(k, delta, init, d)
	if err != nil {
		if miss, _ := dictStored(false, err, ""); miss != "" {
			return 0, miss, nil // full
		}
		return 0, err.Error(), nil // not a number
	}
	return n, "", nil
}

// SharedDelete is hostd.shared:delete(k).
func (h *Hook) SharedDelete(k string) { h.Config.Shared.Delete(k) }

// SharedAdd is hostd.shared:add(k, v [, ttl]): store only when k is
// absent ("exists" otherwise).
func (h *Hook) SharedAdd(k string, v any, ttlSecs float64) (miss string, err error) {
	if v == nil {
		return "", argError(2, "value must not be nil")
	}
	if err := dictValue(v, 2); err != nil {
		return "", err
	}
	d, err := ttl(ttlSecs, 3)
	if err != nil {
		return "", err
	}
	ok, err := h.Config.Shared.Add(k, v, d)
	return dictStored(ok, err, "exists")
}

// SharedReplace is hostd.shared:replace(k, v [, ttl]): store only when k
// is present ("not found" otherwise).
func (h *Hook) SharedReplace(k string, v any, ttlSecs float64) (miss string, err error) {
	if err := dictValue(v, 2); err != nil {
		return "", err
	}
	d, err := ttl(ttlSecs, 3)
	if err != nil {
		return "", err
	}
	ok, err := h.Config.Shared.Replace(k, v, d)
	return dictStored(ok, err, "not found")
}

// SharedCAS is hostd.shared:cas(k, old, new [, ttl]): store new only when
// the value is old (nil: absent; "changed" otherwise); nil new deletes.
func (h *Hook) SharedCAS(k string, old, v any, ttlSecs float64) (miss string, err error) {
	if err := dictValue(old, 2); err != nil {
		return "", err
	}
	if err := dictValue(v, 3); err != nil {
		return "", err
	}
	d, err := ttl(ttlSecs, 4)
	if err != nil {
		return "", err
	}
	ok, err := h.Config.Shared.SetIf(k, old, v, d)
	return dictStored(ok, err, "changed")
}

// SharedTTL is hostd.shared:ttl(k): the seconds k has left (0: no
// expiry); ok is false when k is absent.
func (h *Hook) SharedTTL(k string) (secs float64, ok bool) {
	d, ok := h.Config.Shared.TTL(k)
	return d.Seconds(), ok
}

// SharedExpire is hostd.shared:expire(k, ttl): a new time to live (0:
// none); "not found" when k is absent.
func (h *Hook) SharedExpire(k string, ttlSecs float64) (miss string, err error) {
	d, err := ttl(ttlSecs, 2)
	if err != nil {
		return "", err
	}
	return dictStored(h.Config.Shared.Expire(k, d), nil, "not found")
}

// SharedKeys is hostd.shared:get_keys([max]): at most max keys (0: all),
// sorted.
func (h *Hook) SharedKeys(max float64) ([]string, error) {
	if max < 0 || max != math.Trunc(max) || max > math.MaxInt32 {
		return nil, argError(1, "max must be 0 (all) or a positive count")
	}
	return h.Config.Shared.Keys(int(max)), nil
}

// Session (r.session); every failure is the host's.

// Session returns the request's session.
func (h *Hook) Session() (Session, error) {
	s, err := h.Req.Session()
	return s, hostError(err)
}

// SessionGet is r.session:get(k).
func (h *Hook) SessionGet(ctx context.Context, k string) (any, error) {
	s, err := h.Session()
	if err != nil {
		return nil, err
	}
	v, err := s.Get(ctx, k)
	return v, hostError(err)
}

// SessionSet is r.session:set(k, v): a JSON-able value within the input
// limit; nil deletes k.
func (h *Hook) SessionSet(ctx context.Context, k string, v any) error {
	s, err := h.Session()
	if err != nil {
		return err
	}
	if v != nil {
		if _, err := EncodeJSON(v, h.Config.Limits.MaxInput); err != nil {
			return argError(2, "%v", err)
		}
	}
	return hostError(s.Set(ctx, k, v))
}

// SessionDelete is r.session:delete(k).
func (h *Hook) SessionDelete(ctx context.Context, k string) error {
	s, err := h.Session()
	if err != nil {
		return err
	}
	return hostError(s.Delete(ctx, k))
}

// SessionDestroy is r.session:destroy().
func (h *Hook) SessionDestroy(ctx context.Context) error {
	s, err := h.Session()
	if err != nil {
		return err
	}
	return hostError(s.Destroy(ctx))
}

// SessionRegenerateID is r.session:regenerate_id().
func (h *Hook) SessionRegenerateID(ctx context.Context) error {
	s, err := h.Session()
	if err != nil {
		return err
	}
	return hostError(s.RegenerateID(ctx))
}

// Request bodies and cookies.

// PostArgs is r:post_args(): the form fields of a urlencoded or multipart
// body (see ParseForm). A body or part over its limit is a *HostError; a
// malformed body another error (nil to the hook).
func (h *Hook) PostArgs() (map[string]any, error) {
	b, err := h.Body()
	if err != nil {
		return nil, err
	}
	m, err := ParseForm(h.Req.HeadersIn().Get("Content-Type"), b, FormLimits{MaxPart: h.Config.Limits.MaxFormPart})
	if errors.Is(err, ErrBodyTooLarge) {
		return nil, hostError(err)
	}
	return m, err
}

// JSONBody is r:json_body(): the decoded body; a body that is not JSON is
// an error (nil to the hook).
func (h *Hook) JSONBody() (any, error) {
	b, err := h.Body()
	if err != nil {
		return nil, err
	}
	return DecodeJSON(b, h.Config.Limits.MaxInput)
}

// SetCookie is r:set_cookie(opts) (see NewCookie).
func (h *Hook) SetCookie(opts map[string]any) error {
	c, err := NewCookie(opts)
	if err != nil {
		return argError(1, "%v", err)
	}
	SetCookie(h.Req.HeadersOut(), c)
	return nil
}

// HTTPRequest is hostd.http.request: the request m describes (see
// ParseHTTPRequest) made by the site's client (ErrNoOutbound without
// one), bounded by its timeout and the run's deadline. The wait uses no
// CPU, so the host may let others run meanwhile (PauseForIO).
func (h *Hook) HTTPRequest(ctx context.Context, deadline time.Time, m map[string]any) (*HTTPResponse, error) {
	req, err := ParseHTTPRequest(m, h.Config.Limits.MaxInput)
	if err != nil {
		return nil, argError(1, "%v", err)
	}
	c := h.Config.HTTP
	if c == nil {
		return nil, ErrNoOutbound
	}
	// A context of its own (the client's goroutines use it): ctx bounded
	// by the run's deadline.
	rctx, cancel := HTTPDeadline(ctx, deadline, req.Timeout)
	defer cancel()
	resume := PauseForIO(ctx)
	defer resume()
	return c.Do(rctx, req)
}
