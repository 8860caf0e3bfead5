package host

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/tenant"
)

// Check compiles every hook script of cfg without serving anything, so
// `hostd check` catches a syntax error before a reload would. It returns a
// tenant.ErrorList whose entries name the script's file and line.
func Check(cfg *tenant.Config) error {
	var errs tenant.ErrorList
	for _, vc := range cfg.VHosts {
		v := &vhost{cfg: vc, engines: make(map[string]scripting.Engine), errLog: slog.New(slog.DiscardHandler)}
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
					errs = append(errs, &tenant.Error{File: se.File, Line: se.Line, Msg: se.Msg + " " + where})
				} else {
					errs = append(errs, &tenant.Error{File: h.File, Msg: err.Error() + " " + where})
				}
			}
		}
		for _, e := range v.engines {
			e.Close()
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
