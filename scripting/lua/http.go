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
	req, err := scripting.ParseHTTPRequest(m, v.e.cfg.Limits.MaxInput)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	if v.rc.parent == nil {
		L.RaiseError("hostd.http.request is not available outside a hook run")
	}
	c := v.e.cfg.HTTP
	if c == nil {
		L.Push(glua.LNil)
		L.Push(glua.LString(scripting.ErrNoOutbound.Error()))
		return 2
	}
	// A context of its own (the client's goroutines use it): the run's
	// parent bounded by the run's deadline.
	ctx, cancel := scripting.HTTPDeadline(v.rc.parent, v.rc.deadline, req.Timeout)
	resume := scripting.PauseForIO(v.rc.parent) // the wait uses no CPU: the host may let others run
	resp, err := c.Do(ctx, req)
	resume()
	cancel()
	if err != nil {
		if v.rc.Err() != nil {
			L.RaiseError("%s", v.rc.Err().Error()) // the run's time is up
		}
		msg := err.Error()
		if errors.Is(err, scripting.ErrNoOutbound) {
			msg = scripting.ErrNoOutbound.Error()
		}
		L.Push(glua.LNil)
		L.Push(glua.LString(msg))
		return 2
	}
	L.Push(v.toLua(resp.Value()))
	return 1
}
