//go:build cgo && !nomruby

package mruby

/*
#include "hostd_mruby.h"
*/
import "C"

import (
	"github.com/hostd/hostd/scripting"
)

// sessionCall runs the r.session methods; ok is false for other ops.
func (rs *runState) sessionCall(op int, a args) (v any, err error, ok bool) {
	switch op {
	case C.HOSTD_OP_SESSION_GET, C.HOSTD_OP_SESSION_SET, C.HOSTD_OP_SESSION_DELETE,
		C.HOSTD_OP_SESSION_DESTROY, C.HOSTD_OP_SESSION_REGENERATE_ID:
	default:
		return nil, nil, false
	}
	what := opNames[op]
	s, err := rs.req.Session()
	if err != nil {
		return nil, rs.hostFail(what, err), true
	}
	switch op {
	case C.HOSTD_OP_SESSION_GET:
		k, err := a.str(0, what)
		if err != nil {
			return nil, err, true
		}
		if v, err = s.Get(rs.ctx, k); err != nil {
			return nil, rs.hostFail(what, err), true
		}
		return v, nil, true
	case C.HOSTD_OP_SESSION_SET:
		k, err := a.str(0, what)
		if err != nil {
			return nil, err, true
		}
		var x any
		if len(a) > 1 {
			x = a[1]
		}
		if x != nil {
			if _, err := scripting.EncodeJSON(x, rs.e.cfg.Limits.MaxInput); err != nil {
				return nil, argErr("%s: %v", what, err), true
			}
		}
		if err := s.Set(rs.ctx, k, x); err != nil {
			return nil, rs.hostFail(what, err), true
		}
		return x, nil, true
	case C.HOSTD_OP_SESSION_DELETE:
		k, err := a.str(0, what)
		if err != nil {
			return nil, err, true
		}
		err = s.Delete(rs.ctx, k)
	case C.HOSTD_OP_SESSION_DESTROY:
		err = s.Destroy(rs.ctx)
	case C.HOSTD_OP_SESSION_REGENERATE_ID:
		err = s.RegenerateID(rs.ctx)
	}
	if err != nil {
		return nil, rs.hostFail(what, err), true
	}
	return nil, nil, true
}
