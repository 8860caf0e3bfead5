package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/tenant"
)

// hook is one configured hook of a vhost, bound to its engine.
type hook struct {
	cfg    tenant.Hook
	phase  scripting.Phase
	engine scripting.Engine
}

// runHooks is the stage that runs the vhost's hooks on the tenant's
// identity: the rewrite, access and content phases, in order, each until
// a hook ends the request. The session is saved before the handlers after
// it send the headers; a path a rewrite hook changed is handed to them as
// a copy of the request (the stages before keep the client's). Without
// hooks the stage only calls next.
func runHooks(x *exchange, next func(*exchange)) {
	v, r := x.v, x.r
	if len(v.cfg.Hooks) == 0 {
		next(x)
		return
	}
	ctx := r.Context()
	x.hook = hookRequest{r: r, resp: hookResponse{w: x.w}, v: v, path: r.URL.Path, query: r.URL.RawQuery}
	hr := &x.hook
	x.hr = hr
	for _, p := range []scripting.Phase{scripting.PhaseRewrite, scripting.PhaseAccess, scripting.PhaseContent} {
		if v.runPhase(ctx, p, hr) {
			v.endSession(hr)
			return
		}
	}
	if !v.flushSession(hr) {
		return
	}
	if hr.path != r.URL.Path || hr.query != r.URL.RawQuery {
		r2 := new(http.Request)
		*r2 = *r
		r2.URL = hr.url()
		x.r = r2
	}
	next(x)
}

// buildHooks groups a vhost's hooks by phase, in file order.
func (v *vhost) buildHooks() error {
	for _, hc := range v.cfg.Hooks {
		phase, err := scripting.ParsePhase(hc.Phase)
		if err != nil {
			return err
		}
		eng, err := v.engine(filepath.Ext(hc.File))
		if err != nil {
			return err
		}
		v.hooks[phase] = append(v.hooks[phase], hook{cfg: hc, phase: phase, engine: eng})
	}
	return nil
}

// runPhase runs the phase's hooks that match the request path, in order,
// and reports whether the request is finished (a hook ended it, wrote a
// content response, or failed).
func (v *vhost) runPhase(ctx context.Context, phase scripting.Phase, hr *hookRequest) bool {
	for i := range v.hooks[phase] {
		hk := &v.hooks[phase][i]
		if !hk.cfg.Matches(hr.path) {
			continue
		}
		var res scripting.Result
		var err error
		if gerr := v.gate.run(ctx, v.cpuT, func(ctx context.Context) { // cpugate.go
			hr.runCtx = ctx
			res, err = hk.engine.Run(ctx, phase, hk.cfg.File, hr)
			hr.runCtx = nil
		}); gerr != nil {
			err = gerr
		}
		hr.keepSessionCookie() // session.go
		if err != nil {
			v.hookFailed(hr, hk, err)
			return true
		}
		if res.Done() {
			v.finish(hr, res.Status)
			return true
		}
		if phase == scripting.PhaseContent && !hr.resp.open() {
			return true
		}
	}
	return false
}

// finish ends a request a hook decided with status, sending a short body
// when the hook wrote none.
func (v *vhost) finish(hr *hookRequest, status int) {
	if !hr.resp.open() || !v.flushSession(hr) {
		return
	}
	switch {
	case status >= 300 && status < 400 || status == http.StatusNoContent || status == http.StatusNotModified:
		hr.sendHeader(status)
	case status >= 200 && status < 300:
		hr.sendHeader(status)
	default:
		hr.resp.sendError(status, "the request was refused")
	}
}

// hookFailed logs a failed hook run with the script's location and
// answers 500 (503 for a hook stopped by its time or memory limit, a session store
// that is down, or a hook that never compiled; 413 for a body over the
// limit) when nothing was sent yet. The client never sees the
// error text.
func (v *vhost) hookFailed(hr *hookRequest, hk *hook, err error) {
	status, msg := http.StatusInternalServerError, "a hook script failed"
	switch {
	case errors.Is(err, scripting.ErrTimeout):
		status, msg = http.StatusServiceUnavailable, "a hook script exceeded its time limit"
	case errors.Is(err, scripting.ErrMemory):
		status, msg = http.StatusServiceUnavailable, "a hook script exceeded its memory limit"
	case errors.Is(err, scripting.ErrBodyTooLarge):
		status, msg = http.StatusRequestEntityTooLarge, "the request body is too large"
	case errors.Is(err, scripting.ErrSessionUnavailable):
		status, msg = http.StatusServiceUnavailable, "the session store is unavailable, try again"
		v.ops.sessionErrors.Add(1)
	case errors.Is(err, errCPUBusy), errors.Is(err, errThreadBudget):
		status, msg = http.StatusServiceUnavailable, "this site is busy, please retry shortly"
	case errors.Is(err, scripting.ErrNeverCompiled):
		// The hook's file is broken and no earlier version compiled: the
		// site is being edited; fail closed (no content or access check
		// is skipped) and say so.
		status, msg = http.StatusServiceUnavailable, "this part of the site is being updated, try again shortly"
	}
	hr.dropSession() // a failed hook's session changes are dropped
	v.ops.hookFailed(err)
	hr.Logger().Error("hook failed", "phase", hk.phase.String(), "script", hk.cfg.File, "err", err)
	hr.resp.sendError(status, msg) // unless something was sent
}

// runLogPhase runs the log hooks after the response was sent, on the
// tenant's identity, without holding up the client. At most logSlots run
// at once per vhost; past that, the caller runs them itself.
func (v *vhost) runLogPhase(hr *hookRequest, status int) {
	if len(v.hooks[scripting.PhaseLog]) == 0 {
		return
	}
	hr.resp.finish(status)
	run := func() {
		defer v.logWG.Done()
		err := v.run(context.Background(), func() { v.runPhase(context.Background(), scripting.PhaseLog, hr) })
		var pe *sandbox.PanicError
		switch {
		case errors.As(err, &pe):
			v.logger.Error("panic in the log phase", "path", hr.path, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		case err != nil:
			v.logger.Warn("log hooks not run", "err", err)
		}
	}
	v.logWG.Add(1)
	select {
	case v.logSlots <- struct{}{}:
		go func() {
			defer func() { <-v.logSlots }()
			run()
		}()
	default:
		run()
	}
}
