package hookrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/engines"
	"github.com/hostd/hostd/scripting/outbound"
	"github.com/hostd/hostd/tenant"
)

// Options describe one run. The zero value of each field has a default.
type Options struct {
	// File is the hook to run (required).
	File string
	// Phase is the phase the hook runs in: rewrite, access, content
	// (default) or log.
	Phase string
	// Method (default GET), Target (path and query, default "/") and Host
	// (default "localhost") of the synthetic request; Header its headers,
	// Body its body.
	Method, Target, Host string
	Header               http.Header
	Body                 []byte
	// VHostFile, if set, is a vhost file whose limits, file gate roots,
	// outbound list and (when the process is root) identity the run uses.
	VHostFile string
	// Logger receives the hook's log lines (hostd.log, print); nil
	// discards them.
	Logger *slog.Logger
}

// Response is what the hook did.
type Response struct {
	// Returned is the status the hook ended the request with (a returned
	// integer, r:exit, r:redirect); 0: it returned nothing, and a server
	// would go on with the next hook or phase.
	Returned int
	// Status, Header and Body are the response so far: what r:write,
	// r.status and r.headers_out produced.
	Status int
	Header http.Header
	Body   []byte
	// Identity says whom the hook ran as ("uid 1001 gid 1001", or "the
	// current user").
	Identity string
}

// Run runs o.File once. A hook error is returned as the error (a
// *scripting.ScriptError with FILE:LINE) together with the partial
// response.
func Run(ctx context.Context, o Options) (*Response, error) {
	file, err := filepath.Abs(o.File)
	if err != nil {
		return nil, err
	}
	if o.Phase == "" {
		o.Phase = "content"
	}
	phase, err := scripting.ParsePhase(o.Phase)
	if err != nil {
		return nil, err
	}
	var vc *tenant.VHost
	var owner uint32
	if o.VHostFile != "" {
		if vc, owner, err = loadVHost(o.VHostFile); err != nil {
			return nil, err
		}
	}
	sbOpts := sandbox.Options{Mode: sandbox.ModeNone, Logger: o.Logger}
	out := &Response{Identity: "the current user"}
	if vc != nil && os.Geteuid() == 0 && vc.UID != 0 {
		sbOpts.Mode = sandbox.ModeThreadPerRequest
		sbOpts.Identity = sandbox.Identity{UID: vc.UID, GID: vc.GID, Groups: vc.Groups}
		out.Identity = "uid " + strconv.FormatUint(uint64(vc.UID), 10) + " gid " + strconv.FormatUint(uint64(vc.GID), 10)
	}
	t, err := sandbox.NewTenant(sbOpts)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer t.Close()
	roots := []string{filepath.Dir(file)}
	cfg := scripting.Config{HookDir: filepath.Dir(file), Logger: o.Logger}
	var maxBody int64
	if vc != nil {
		roots = append([]string{vc.Root}, roots...)
		for _, h := range vc.Hooks {
			roots = append(roots, filepath.Dir(h.File))
		}
		roots = append(roots, vc.IORoots...)
		cfg.Limits = scripting.Limits{Timeout: vc.Limits.ScriptTimeout.Std(), MaxMemory: int64(vc.Limits.ScriptMemory)}
		maxBody = int64(vc.Limits.MaxBody)
		if len(vc.Outbound) > 0 {
			// A tenant's own vhost file cannot open the way to the stores.
			c, err := outbound.New(outbound.Options{Allow: vc.Outbound, Protected: outbound.ResolveHosts(vc.Sessions.StoreHosts()),
				StoresClosed: owner != 0})
			if err != nil {
				return nil, err
			}
			defer c.Close()
			cfg.HTTP = c
		}
	}
	roots = compact(roots)
	fsys, err := t.NewFS(roots...)
	if err != nil {
		return nil, fmt.Errorf("file gate: %w", err)
	}
	defer fsys.Close()
	cfg.FS = fsys
	eng, err := newEngine(file, cfg)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	req := newRequest(o.Method, o.Target, o.Host, o.Header, o.Body, logger)
	req.maxBody = maxBody
	var res scripting.Result
	var runErr error
	if err := t.Run(ctx, func() { res, runErr = eng.Run(ctx, phase, file, req) }); err != nil {
		return nil, fmt.Errorf("run as %s: %w", out.Identity, err)
	}
	out.Returned, out.Status, out.Header, out.Body = res.Status, req.status, req.out, req.resp.Bytes()
	if out.Status == 0 {
		out.Status = res.Status
	}
	return out, runErr
}

func compact(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// newEngine returns the engine for file's extension.
func newEngine(file string, cfg scripting.Config) (scripting.Engine, error) {
	lang, err := engines.Builtin().For(file)
	if err != nil {
		return nil, err
	}
	if lang.Err != nil {
		return nil, fmt.Errorf("%s: %w", file, lang.Err)
	}
	return lang.New(cfg), nil
}

// loadVHost loads and validates one vhost file, as hostd check would in a
// configuration of its own. When the process is root, the file must be
// owned by root or by the tenant it names: its user is the identity the
// hook then runs as.
func loadVHost(path string) (*tenant.VHost, uint32, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, 0, err
	}
	// The file itself, never through a symbolic link (a tenant's link to
	// another tenant's root-owned file would lend root that tenant's
	// identity); the same file must still be there after the load.
	st, err := statNoFollow(abs)
	if err != nil {
		return nil, 0, fmt.Errorf("vhost file: %w", err)
	}
	dir, err := os.MkdirTemp("", "hostd-hook-run-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	// vhost_files_trusted = false: the file may be the tenant's own (the
	// owner check below decides whether its user may be taken).
	main := "[server]\nlisten_https = \"127.0.0.1:0\"\nvhost_files_trusted = false\nvhosts = " + strconv.Quote(abs) + "\nstate_dir = " + strconv.Quote(filepath.Join(dir, "state")) + "\naccess_log = \"\"\n"
	mainFile := filepath.Join(dir, "hostd.toml")
	if err := os.WriteFile(mainFile, []byte(main), 0o600); err != nil {
		return nil, 0, err
	}
	cfg, err := tenant.Load(mainFile)
	if err != nil {
		return nil, 0, err
	}
	if len(cfg.VHosts) != 1 {
		return nil, 0, fmt.Errorf("%s: not one vhost", abs)
	}
	vc := cfg.VHosts[0]
	if again, err := statNoFollow(abs); err != nil || again.Dev != st.Dev || again.Ino != st.Ino {
		return nil, 0, fmt.Errorf("%s: the file changed while it was loaded", abs)
	}
	if os.Geteuid() == 0 && st.Uid != 0 && st.Uid != vc.UID {
		return nil, 0, fmt.Errorf("%s: %w", abs, ErrUntrustedVHost)
	}
	return vc, st.Uid, nil
}

// statNoFollow opens path with O_NOFOLLOW (a symbolic link fails) and
// returns the regular file's status.
func statNoFollow(path string) (*syscall.Stat_t, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return &st, nil
}

// ErrUntrustedVHost is the error of a vhost file that root may not take an
// identity from: it is owned by neither root nor the tenant it names.
var ErrUntrustedVHost = errors.New("vhost file is owned by neither root nor its tenant (user); refusing to run a hook with its identity")

// Check compiles each file without running it and returns the errors (a
// *scripting.ScriptError with FILE:LINE for a syntax error), one per
// broken file.
func Check(files []string) []error {
	var errs []error
	for _, f := range files {
		if err := checkOne(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func checkOne(f string) error {
	file, err := filepath.Abs(f)
	if err != nil {
		return err
	}
	t, err := sandbox.NewTenant(sandbox.Options{Mode: sandbox.ModeNone})
	if err != nil {
		return err
	}
	defer t.Close()
	fsys, err := t.NewFS(filepath.Dir(file))
	if err != nil {
		return fmt.Errorf("%s: %w", f, err)
	}
	defer fsys.Close()
	eng, err := newEngine(file, scripting.Config{FS: fsys, HookDir: filepath.Dir(file)})
	if err != nil {
		return err
	}
	defer eng.Close()
	err = eng.Check(file)
	var se *scripting.ScriptError
	if errors.As(err, &se) && se.File == file {
		se.File = f // as the user named it
	}
	return err
}
