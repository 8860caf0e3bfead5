package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/tenant"
)

// Validate loads the configuration at path and validates it the way
// `hostd check`, `hostd serve` and every reload do: strict TOML, every
// vhost, and every hook script compiled. It returns the configuration
// with the vhosts that passed, and the vhost files that did not, each with
// its errors (tenant.Broken). An error in the main file refuses
// everything: the error is then a tenant.ErrorList of every error found.
func Validate(path string) (*tenant.Config, []*tenant.Broken, error) {
	cfg, broken, err := tenant.LoadPartial(path)
	if err != nil {
		return nil, nil, err
	}
	valid := cfg.VHosts[:0:0]
	vms := newVMPools() // one set of VMs compiles every vhost's hooks
	defer vms.close()
	for _, vc := range cfg.VHosts {
		if errs := checkVHost(vc, vms); len(errs) > 0 {
			broken = append(broken, &tenant.Broken{File: vc.File, Names: vc.Names(), Errs: errs})
			continue
		}
		valid = append(valid, vc)
	}
	cfg.VHosts = valid
	sortBroken(broken)
	return cfg, broken, nil
}

// Check compiles every hook script of cfg without serving anything, so
// `hostd check` catches a syntax error before a reload would. It returns a
// tenant.ErrorList whose entries name the script's file and line.
func Check(cfg *tenant.Config) error {
	var errs tenant.ErrorList
	vms := newVMPools()
	defer vms.close()
	for _, vc := range cfg.VHosts {
		errs = append(errs, checkVHost(vc, vms)...)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// CheckVHost compiles the hook scripts of one vhost and returns their
// errors, each naming the script's file and line.
//
// Scripts are read through the vhost's file gate, and for a vhost whose
// mode checks the tenant's identity the compiling thread is switched to the
// tenant (when hostd may switch): a hook that is a link to a file the
// tenant may not read is refused, never quoted in a syntax error. The work
// runs on a goroutine of its own, so CheckVHost may be called from the
// main thread.
func CheckVHost(vc *tenant.VHost) tenant.ErrorList {
	vms := newVMPools()
	defer vms.close()
	return checkVHost(vc, vms)
}

// checkVHost is CheckVHost compiling on vms.
func checkVHost(vc *tenant.VHost, vms *vmPools) tenant.ErrorList {
	if len(vc.Hooks) == 0 {
		return nil
	}
	done := make(chan tenant.ErrorList, 1)
	go func() { done <- compileHooks(vc, vms) }()
	return <-done
}

// compileHooks compiles vc's hooks with the tenant's identity (inline on
// this goroutine's thread), or the checker's own when it cannot switch (an
// unprivileged `hostd check`).
func compileHooks(vc *tenant.VHost, vms *vmPools) tenant.ErrorList {
	opts := sandbox.Options{Mode: sandbox.ModeNone}
	if sandbox.Mode(vc.Mode).ChecksTenant() && sandbox.CanSwitch() == nil {
		opts = sandbox.Options{Mode: sandbox.ModeInline, Identity: sandbox.Identity{UID: vc.UID, GID: vc.GID, Groups: vc.Groups}}
	}
	tn, err := sandbox.NewTenant(opts)
	if err != nil {
		return tenant.ErrorList{&tenant.Error{File: vc.File, Msg: fmt.Sprintf("sandbox: %v", err)}}
	}
	defer tn.Close()
	gate, err := tn.NewFS(gateRoots(vc)...)
	if err != nil {
		return tenant.ErrorList{&tenant.Error{File: vc.File, Msg: fmt.Sprintf("root: %v", err)}}
	}
	defer gate.Close()
	v := &vhost{cfg: vc, fs: gate, vms: vms, checking: true, engines: make(map[string]scripting.Engine), errLog: slog.New(slog.DiscardHandler)}
	defer func() {
		for _, e := range v.engines {
			e.Close()
		}
	}()
	var errs tenant.ErrorList
	if err := tn.Run(context.Background(), func() { errs = v.checkHooks() }); err != nil {
		errs = append(errs, &tenant.Error{File: vc.File, Msg: fmt.Sprintf("checking hooks: %v", err)})
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

// CheckListeners tries to bind each listen address of cfg and closes it
// at once. An address in use is not an error (it is most likely the
// running server's); one that cannot be bound otherwise (not an address
// of this machine, a port below 1024 without the capability) is, at the
// key's FILE:LINE:COL.
func CheckListeners(cfg *tenant.Config) error {
	var errs tenant.ErrorList
	for _, a := range []struct{ key, addr string }{
		{"listen_https", cfg.Server.ListenHTTPS}, {"listen_http", cfg.Server.ListenHTTP}, {"admin_listen", cfg.Server.AdminListen},
	} {
		if a.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", a.addr)
		if err == nil {
			ln.Close()
			continue
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		msg := fmt.Sprintf("%s %q cannot be bound: %v", a.key, a.addr, unwrapOpError(err))
		if errors.Is(err, syscall.EACCES) {
			msg += " (ports below 1024 need root or CAP_NET_BIND_SERVICE)"
		}
		line, col := cfg.ServerKeyPos(a.key)
		errs = append(errs, &tenant.Error{File: cfg.File, Line: line, Col: col, Msg: msg})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// unwrapOpError drops net.OpError's "listen tcp ADDR: bind:" prefixes.
func unwrapOpError(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) && se.Err != nil {
		return se.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

// sortBroken orders broken vhost files by file name, as Load orders the
// vhosts.
func sortBroken(b []*tenant.Broken) {
	slices.SortStableFunc(b, func(x, y *tenant.Broken) int { return strings.Compare(x.File, y.File) })
}
