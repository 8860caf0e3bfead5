package lua

import (
	"errors"

	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
)

// httpLib returns the hostd.http table (part B of issue 16: outbound HTTP).
func (v *vm) httpLib() *glua.LTable {
	t := v.L.NewTable()
	v.L.SetFuncs(t, map[string]glua.LGFunction{"request": v.hHTTPRequest})
	return readOnly(v.L, t)
}

// hHTTPRequest is hostd.http.request{method, url, headers, body, timeout,
// max_body}: the response table {status, headers, body}, or nil and a
// message when the request failed or the site's outbound list refused it.
// Bad arguments are errors.
func (v *vm) hHTTPRequest(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	x, err := v.fromLua(L.CheckTable(1))
	if err != nil {
		L.ArgError(1, err.Error())
	}
	m, ok := x.(map[string]any)
	if !ok {
		L.ArgError(1, "want a table with keys url, method, headers, body, timeout")
	}
	if v.rc.parent == nil {
		L.RaiseError("hostd.http.request is not available outside a hook run")
	}
	resp, err := v.api.HTTPRequest(v.rc.parent, v.rc.deadline, m)
	if err != nil {
		if v.rc.Err() != nil {
			L.RaiseError("%s", v.rc.Err().Error()) // the run's time is up
		}
		var ae *scripting.ArgError
		if errors.As(err, &ae) {
			L.ArgError(1, ae.Msg)
		}
		msg := err.Error()
		if errors.Is(err, scripting.ErrNoOutbound) {
			msg = scripting.ErrNoOutbound.Error()
		}
		return fail(L, msg)
	}
	L.Push(v.toLua(resp.Value()))
	return 1
}
