//go:build cgo && !nomruby

package mruby

import "time"

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
	resp, err := rs.api.HTTPRequest(rs.ctx, rs.deadline, m)
	if !time.Now().Before(rs.deadline) || rs.ctx.Err() != nil {
		return nil, runTimeout{}
	}
	if err != nil {
		return nil, rs.named(what, err)
	}
	return resp.Value(), nil
}
