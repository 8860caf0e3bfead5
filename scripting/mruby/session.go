//go:build cgo && !nomruby

package mruby

// The r.session methods; their rules are scripting.Hook's.

func opSessionGet(rs *runState, a args) (any, error) {
	k, err := a.str(0, "r.session.get")
	if err != nil {
		return nil, err
	}
	return rs.api.SessionGet(rs.ctx, k)
}

func opSessionSet(rs *runState, a args) (any, error) {
	k, err := a.str(0, "r.session.set")
	if err != nil {
		return nil, err
	}
	return a.arg(1), rs.api.SessionSet(rs.ctx, k, a.arg(1))
}

func opSessionDelete(rs *runState, a args) (any, error) {
	k, err := a.str(0, "r.session.delete")
	if err != nil {
		return nil, err
	}
	return nil, rs.api.SessionDelete(rs.ctx, k)
}

func opSessionDestroy(rs *runState, a args) (any, error) {
	return nil, rs.api.SessionDestroy(rs.ctx)
}

func opSessionRegenerateID(rs *runState, a args) (any, error) {
	return nil, rs.api.SessionRegenerateID(rs.ctx)
}
