package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/tenant"
)

// Check compiles every hook script of cfg without serving anything, so
// `hostd check` catches a syntax error before a reload would. It returns a
// tenant.ErrorList whose entries name the script's file and line.
//
// Scripts are read through the vhost's file gate, and for a vhost whose
// mode checks the tenant's identity the compiling thread is switched to the
// tenant (when hostd may switch): a hook that is a link to a file the
// tenant may not read is refused, never quoted in a syntax error. Check
// runs on a goroutine of its own, so it may be called from the main
// thread.
func Check(cfg *tenant.Config) error {
	done := make(chan tenant.ErrorList, 1)
	go func() { done <- checkHooks(cfg) }()
	if errs := <-done; len(errs) > 0 {
		return errs
	}
	return nil
}

func checkHooks(cfg *tenant.Config) tenant.ErrorList {
	var errs tenant.ErrorList
	canSwitch := sandbox.CanSwitch() == nil
	// One set of VMs compiles every vhost's hooks.
	vms := newVMPools()
	defer vms.close()
	for _, vc := range cfg.VHosts {
		if len(vc.Hooks) == 0 {
			continue
		}
		// The tenant's identity on this thread (inline), or the checker's
		// own when it cannot switch (an unprivileged `hostd check`).
		opts := sandbox.Options{Mode: sandbox.ModeNone}
		if sandbox.Mode(vc.Mode).ChecksTenant() && canSwitch {
			opts = sandbox.Options{Mode: sandbox.ModeInline, Identity: sandbox.Identity{UID: vc.UID, GID: vc.GID, Groups: vc.Groups}}
		}
		tn, err := sandbox.NewTenant(opts)
		if err != nil {
			errs = append(errs, &tenant.Error{File: vc.File, Msg: fmt.Sprintf("sandbox: %v", err)})
			continue
		}
		gate, err := tn.NewFS(gateRoots(vc)...)
		if err != nil {
			tn.Close()
			errs = append(errs, &tenant.Error{File: vc.File, Msg: fmt.Sprintf("root: %v", err)})
			continue
		}
		v := &vhost{cfg: vc, fs: gate, vms: vms, checking: true, engines: make(map[string]scripting.Engine), errLog: slog.New(slog.DiscardHandler)}
		err = tn.Run(context.Background(), func() { errs = append(errs, v.checkHooks()...) })
		if err != nil {
			errs = append(errs, &tenant.Error{File: vc.File, Msg: fmt.Sprintf("checking hooks: %v", err)})
		}
		for _, e := range v.engines {
			e.Close()
		}
		gate.Close()
		tn.Close()
	}
	return errs
}

// checkHooks compiles the vhost's hooks (with the identity of the calling
// thread).
func (v *vhost) checkHooks() tenant.ErrorList {
	var errs tenant.ErrorList
	vc := v.cfg
	for _, h := range vc.Hooks {
		where := fmt.Sprintf("(hook of %s:%d)", vc.File, h.Line())
		eng, err := v.engine(filepath.Ext(h.File))
		if err != nil {
			errs = append(errs, &tenant.Error{File: vc.File, Line: h.Line(), Msg: err.Error()})
			continue
		}
		if err := eng.Check(h.File); err != nil {
			var se *scripting.ScriptError
			if errors.As(err, &se) {
				msg := se.Msg
				if se.Err != nil && se.Line == 0 {
					msg += ": " + se.Err.Error()
				}
				errs = append(errs, &tenant.Error{File: se.File, Line: se.Line, Msg: msg + " " + where})
			} else {
				errs = append(errs, &tenant.Error{File: h.File, Msg: err.Error() + " " + where})
			}
		}
	}
	return errs
}
