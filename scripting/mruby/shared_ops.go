//go:build cgo && !nomruby

package mruby

/*
#include "hostd_mruby.h"
*/
import "C"

import (
	"errors"
	"math"

	"github.com/hostd/hostd/scripting"
)

// dictValue returns argument i as a dictionary value (nil when absent).
func (a args) dictValue(i int, name string) (any, error) {
	if i >= len(a) {
		return nil, nil
	}
	switch x := a[i].(type) {
	case nil, string, int64, float64, bool:
		return x, nil
	}
	return nil, argErr("%s: value must be a String, number, true, false or nil", name)
}

// sharedOpsB runs the shared dictionary methods of issue 16 part B: add,
// replace, ttl, expire, get_keys, cas (set_if). Conditional stores return
// true or false (false also for a full dictionary, like set).
func (rs *runState) sharedOpsB(op int, a args) (any, error) {
	d := rs.e.cfg.Shared
	what := opNames[op]
	k, err := a.str(0, what)
	if err != nil {
		return nil, err
	}
	stored := func(ok bool, err error) (any, error) {
		if errors.Is(err, scripting.ErrDictFull) {
			return false, nil
		}
		if err != nil {
			return nil, argErr("%s: %v", what, err)
		}
		return ok, nil
	}
	switch op {
	case C.HOSTD_OP_SHARED_ADD, C.HOSTD_OP_SHARED_REPLACE:
		v, err := a.dictValue(1, what)
		if err != nil {
			return nil, err
		}
		if v == nil && op == C.HOSTD_OP_SHARED_ADD {
			return nil, argErr("%s: value must not be nil", what)
		}
		ttl, err := a.ttl(2, what)
		if err != nil {
			return nil, err
		}
		if op == C.HOSTD_OP_SHARED_ADD {
			return stored(d.Add(k, v, ttl))
		}
		return stored(d.Replace(k, v, ttl))
	case C.HOSTD_OP_SHARED_TTL:
		ttl, ok := d.TTL(k)
		if !ok {
			return nil, nil
		}
		return number(ttl.Seconds()), nil
	case C.HOSTD_OP_SHARED_EXPIRE:
		if len(a) < 2 || a[1] == nil {
			return nil, argErr("%s: missing ttl", what)
		}
		ttl, err := a.ttl(1, what)
		if err != nil {
			return nil, err
		}
		return d.Expire(k, ttl), nil
	case C.HOSTD_OP_SHARED_CAS:
		old, err := a.dictValue(1, what)
		if err != nil {
			return nil, err
		}
		v, err := a.dictValue(2, what)
		if err != nil {
			return nil, err
		}
		ttl, err := a.ttl(3, what)
		if err != nil {
			return nil, err
		}
		return stored(d.SetIf(k, old, v, ttl))
	}
	return nil, &callError{msg: "unknown shared dictionary operation"}
}

// sharedKeys is Hostd.shared.get_keys(max = 1024): at most max keys (0:
// all), sorted.
func (rs *runState) sharedKeys(a args) (any, error) {
	n, err := a.num(0, "Hostd.shared.get_keys", 1024)
	if err != nil {
		return nil, err
	}
	if n < 0 || n != math.Trunc(n) || n > math.MaxInt32 {
		return nil, argErr("Hostd.shared.get_keys: max must be 0 (all) or a positive count")
	}
	keys := rs.e.cfg.Shared.Keys(int(n))
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out, nil
}
