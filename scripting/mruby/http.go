//go:build cgo && !nomruby

package mruby

import (
	"time"

	"github.com/hostd/hostd/scripting"
)

// runTimeout ends the run as timed out (the run's deadline passed during
// a host call that waited, such as an outbound request).
type runTimeout struct{}

func (runTimeout) Error() string { return "hook exceeded its time limit" }

// httpRequest is Hostd::HTTP.request(url:, method:, headers:, body:,
// timeout:, max_body:): the response as a Hash of status, headers and
// body, which C wraps in a Hostd::HTTP::Response. A refused or failed
// request raises Hostd::Error; bad arguments an ArgumentError.
func (rs *runState) httpRequest(a args) (any, error) {
	const what = "Hostd::HTTP.request"
	var m map[string]any
	if len(a) == 1 {
		m, _ = a[0].(map[string]any)
	}
	if m == nil {
		return nil, argErr("%s: want keyword arguments url:, method:, headers:, body:, timeout:, max_body:", what)
	}
	req, err := scripting.ParseHTTPRequest(m, rs.e.cfg.Limits.MaxInput)
	if err != nil {
		return nil, argErr("%s: %v", what, err)
	}
	c := rs.e.cfg.HTTP
	if c == nil {
		return nil, &callError{msg: what + ": " + scripting.ErrNoOutbound.Error()}
	}
	ctx, cancel := scripting.HTTPDeadline(rs.ctx, rs.deadline, req.Timeout)
	resume := scripting.PauseForIO(rs.ctx) // the wait uses no CPU: the host may let others run
	resp, err := c.Do(ctx, req)
	resume()
	cancel()
	if !time.Now().Before(rs.deadline) || rs.ctx.Err() != nil {
		return nil, runTimeout{}
	}
	if err != nil {
		return nil, &callError{msg: what + ": " + err.Error()}
	}
	return resp.Value(), nil
}
