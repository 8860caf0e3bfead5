package tenant

import (
	"strings"

	"github.com/hostd/hostd/sandbox"
)

// Modes returns the sandbox modes a configuration may name, in the order
// the docs present them: sandbox's modes and "auto".
func Modes() []string {
	var out []string
	for _, m := range sandbox.Modes() {
		out = append(out, string(m))
	}
	return append(out, string(sandbox.ModeAuto))
}

// sandboxEnv is what the loader learns about the machine's sandbox
// support, at most once per Load.
type sandboxEnv struct {
	probed   bool
	uringErr error // why mode uring cannot work here; nil: it can
}

// uring probes io_uring (once) and returns why mode uring is unavailable,
// or nil.
func (e *sandboxEnv) uring() error {
	if !e.probed {
		e.probed = true
		e.uringErr = sandbox.ProbeURing()
	}
	return e.uringErr
}

// uringUnavailable is the config error for mode uring where the probe
// failed.
func uringUnavailable(key string, err error) string {
	return key + ` "uring": io_uring is not usable here: ` + strings.TrimPrefix(err.Error(), "sandbox: ") +
		`; use "thread" (or "auto", which falls back to it)`
}

// defaultSandbox is server.default_sandbox when the main file sets none:
// "auto" when hostd can switch identities (it runs as root or with
// CAP_SETUID and CAP_SETGID), else "none".
func defaultSandbox() string {
	if sandbox.CanSwitch() == nil {
		return string(sandbox.ModeAuto)
	}
	return string(sandbox.ModeNone)
}

// resolveMode turns "auto" into "uring" or "thread" and refuses "uring"
// where io_uring is unusable; it returns the effective mode and an error
// message ("" when none).
func (e *sandboxEnv) resolveMode(mode, key string) (string, string) {
	switch mode {
	case string(sandbox.ModeAuto):
		if e.uring() == nil {
			return string(sandbox.ModeUring), ""
		}
		return string(sandbox.ModeThread), ""
	case string(sandbox.ModeUring):
		if err := e.uring(); err != nil {
			return mode, uringUnavailable(key, err)
		}
	}
	return mode, ""
}
