//go:build cgo && !nomruby

package mruby

// The Hostd.shared methods; their rules are scripting.Hook's. A store
// returns true, or false when it did not store (the key exists, is
// missing or changed, or the dictionary is full).

func stored(miss string, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return miss == "", nil
}

func opSharedGet(rs *runState, a args) (any, error) {
	k, err := a.str(0, "Hostd.shared.get")
	if err != nil {
		return nil, err
	}
	switch x := rs.api.SharedGet(k).(type) {
	case float64:
		return number(x), nil
	case int64, string, bool:
		return x, nil
	}
	return nil, nil
}

func opSharedSet(rs *runState, a args) (any, error) {
	k, err := a.str(0, "Hostd.shared.set")
	if err != nil {
		return nil, err
	}
	ttl, err := a.num(2, "Hostd.shared.set", 0)
	if err != nil {
		return nil, err
	}
	return stored(rs.api.SharedSet(k, a.arg(1), ttl))
}

// opSharedIncr returns the new value, or nil when the dictionary is full
// or the key holds no number (as in Lua).
func opSharedIncr(rs *runState, a args) (any, error) {
	const what = "Hostd.shared.incr"
	k, err := a.str(0, what)
	if err != nil {
		return nil, err
	}
	var f [3]float64
	for i, def := range []float64{1, 0, 0} { // delta, init, ttl
		if f[i], err = a.num(i+1, what, def); err != nil {
			return nil, err
		}
	}
	n, miss, err := rs.api.SharedIncr(k, f[0], f[1], f[2])
	if err != nil || miss != "" {
		return nil, err
	}
	return number(n), nil
}

func opSharedDelete(rs *runState, a args) (any, error) {
	k, err := a.str(0, "Hostd.shared.delete")
	if err != nil {
		return nil, err
	}
	rs.api.SharedDelete(k)
	return nil, nil
}

func opSharedAdd(rs *runState, a args) (any, error) {
	k, err := a.str(0, "Hostd.shared.add")
	if err != nil {
		return nil, err
	}
	ttl, err := a.num(2, "Hostd.shared.add", 0)
	if err != nil {
		return nil, err
	}
	return stored(rs.api.SharedAdd(k, a.arg(1), ttl))
}

func opSharedReplace(rs *runState, a args) (any, error) {
	k, err := a.str(0, "Hostd.shared.replace")
	if err != nil {
		return nil, err
	}
	ttl, err := a.num(2, "Hostd.shared.replace", 0)
	if err != nil {
		return nil, err
	}
	return stored(rs.api.SharedReplace(k, a.arg(1), ttl))
}

func opSharedCAS(rs *runState, a args) (any, error) {
	k, err := a.str(0, "Hostd.shared.cas")
	if err != nil {
		return nil, err
	}
	ttl, err := a.num(3, "Hostd.shared.cas", 0)
	if err != nil {
		return nil, err
	}
	return stored(rs.api.SharedCAS(k, a.arg(1), a.arg(2), ttl))
}

func opSharedTTL(rs *runState, a args) (any, error) {
	k, err := a.str(0, "Hostd.shared.ttl")
	if err != nil {
		return nil, err
	}
	secs, ok := rs.api.SharedTTL(k)
	if !ok {
		return nil, nil
	}
	return number(secs), nil
}

func opSharedExpire(rs *runState, a args) (any, error) {
	k, err := a.str(0, "Hostd.shared.expire")
	if err != nil {
		return nil, err
	}
	if a.arg(1) == nil {
		return nil, argErr("Hostd.shared.expire: missing ttl")
	}
	ttl, err := a.num(1, "Hostd.shared.expire", 0)
	if err != nil {
		return nil, err
	}
	return stored(rs.api.SharedExpire(k, ttl))
}

// opSharedKeys is Hostd.shared.get_keys(max = 1024): at most max keys (0:
// all), sorted.
func opSharedKeys(rs *runState, a args) (any, error) {
	n, err := a.num(0, "Hostd.shared.get_keys", 1024)
	if err != nil {
		return nil, err
	}
	keys, err := rs.api.SharedKeys(n)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out, err
}
