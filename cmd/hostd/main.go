package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/hostd/hostd/host"
	"github.com/hostd/hostd/host/logtext"
	"github.com/hostd/hostd/sandbox"
	// The bounding-set constructor and the main thread's lock.
	_ "github.com/hostd/hostd/sandbox/bootstrap"
	"github.com/hostd/hostd/tenant"
)

const usage = `usage: hostd <command> [flags]   (hostd <command> --help: its flags)

commands:
  serve   --config FILE [--skip-broken-vhosts]   serve the configuration
  check   --config FILE   validate the configuration and print one line per vhost
  bench   [flags]         compare sandbox modes and handlers (hostd bench -h)
  status  --config FILE [--json]   counters of the running server (admin socket)
  reload  --config FILE   make the running server re-read its configuration (or send SIGHUP)
  reopen-logs --config FILE   make the running server reopen its logs (logrotate)
  trace   --config FILE [--vhost NAME]   one live line per request
  gen-vhosts --out DIR --count N   write a configuration with N vhosts (scale tests)
  hook run FILE [--method M] [--path P] [--header K:V] [--body @file] [--vhost-config F]
                          run one hook once against a synthetic request, print the response
  hook check FILE...      compile hooks; FILE:LINE for each error (exit 1)
  version                 print the version, VCS revision and build time

exit status: 0 success, 1 error (nothing changed), 2 usage error,
3 reload applied without some vhost files (they have errors; see the output)
`

// Set by the Makefile (-ldflags -X): the build time, and the VCS revision
// and version when the toolchain cannot stamp them (-buildvcs).
var (
	buildTime     string
	buildRevision string
	buildVersion  string
)

// buildInfo says which hostd this is.
func buildInfo() host.BuildInfo {
	return host.BuildInfo{Version: buildVersion, Revision: buildRevision, Time: buildTime}.ReadBuildInfo()
}

// Exit statuses.
const (
	exitOK      = 0
	exitError   = 1 // nothing was done, or nothing changed
	exitUsage   = 2
	exitPartial = 3 // reload: applied, but some vhost files were not
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands returns the subcommands with a function of their own; version
// and help are run's.
func commands() map[string]func(args []string, stdout, stderr io.Writer) int {
	return map[string]func(args []string, stdout, stderr io.Writer) int{
		"serve": cmdServe, "check": cmdCheck, "status": cmdStatus, "reload": cmdReload,
		"reopen-logs": cmdReopenLogs, "trace": cmdTrace, "gen-vhosts": cmdGenVHosts,
		"bench": cmdBench, "hook": cmdHook, // hook.go
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	if f := commands()[cmd]; f != nil {
		return f(args, stdout, stderr)
	}
	switch cmd {
	case "version", "--version", "-v":
		if code, ok := noFlags("version", args, stdout, stderr); !ok {
			return code
		}
		fmt.Fprintln(stdout, "hostd", buildInfo())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "hostd: unknown command %q\n%s", cmd, usage)
	return 2
}

// parse parses a subcommand's flags: --help prints them to stdout and
// exits 0, a bad flag or any positional argument is a usage error (exit
// 2). ok is false when the command must exit with code.
func parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [flags]\n", fs.Name())
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK, false
	case err != nil:
		return exitUsage, false
	case fs.NArg() > 0:
		hint := ""
		if f := fs.Lookup("config"); f != nil {
			hint = " (the configuration is given with --config FILE)"
		}
		fmt.Fprintf(stderr, "%s: unexpected argument %q%s\n", fs.Name(), fs.Arg(0), hint)
		return exitUsage, false
	}
	return 0, true
}

// noFlags handles a command without flags.
func noFlags(name string, args []string, stdout, stderr io.Writer) (int, bool) {
	return parse(flag.NewFlagSet("hostd "+name, flag.ContinueOnError), args, stdout, stderr)
}

type commonFlags struct {
	config   string
	logLevel string
}

func configFlags(name string) (*flag.FlagSet, *commonFlags) {
	fs := flag.NewFlagSet("hostd "+name, flag.ContinueOnError)
	c := &commonFlags{}
	fs.StringVar(&c.config, "config", "/etc/hostd/hostd.toml", "main configuration `file`")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	return fs, c
}

func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	// slog's text format, with request and tenant text escaped by logtext.
	return slog.New(logtext.NewHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// printConfigError prints each located error as FILE:LINE: message.
func printConfigError(stderr io.Writer, err error) {
	if errs := tenant.Errors(err); len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(stderr, e.Error())
		}
		return
	}
	fmt.Fprintln(stderr, "hostd:", err)
}

// printBroken prints the errors of the vhost files that are not valid.
func printBroken(stderr io.Writer, broken []*tenant.Broken) {
	for _, b := range broken {
		for _, e := range b.Errs {
			fmt.Fprintln(stderr, e.Error())
		}
	}
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs, f := configFlags("check")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	cfg, broken, err := host.Validate(f.config)
	if err != nil {
		printConfigError(stderr, err)
		return exitError
	}
	printBroken(stderr, broken)
	lerr := host.CheckListeners(cfg)
	if lerr != nil {
		printConfigError(stderr, lerr)
	}
	printVHosts(cfg, stdout, stderr)
	printContainment(cfg, stdout, stderr)
	printSandboxReport(stdout)
	if len(broken) > 0 || lerr != nil {
		fmt.Fprintf(stdout, "%s: %d vhosts ok, %d vhost files with errors\n", cfg.File, len(cfg.VHosts), len(broken))
		return exitError
	}
	fmt.Fprintf(stdout, "%s: ok, %d vhosts\n", cfg.File, len(cfg.VHosts))
	return exitOK
}

// dropPrivileges keeps only what the sandbox needs once the listeners are
// bound: CAP_SETUID and CAP_SETGID when a vhost switches identities, and
// the server user when one is configured. Started without those
// capabilities while a vhost needs them, hostd refuses to start.
func dropPrivileges(cfg *tenant.Config, logger *slog.Logger) error {
	var p sandbox.Privileges
	for _, v := range cfg.VHosts {
		if sandbox.Mode(v.Mode).NeedsPrivileges() || v.PHP.Enabled { // php-fpm starts as the tenant
			p.NeedSwitch = true
		}
	}
	if cfg.HasServerUser {
		p.User = &sandbox.Identity{UID: cfg.ServerUID, GID: cfg.ServerGID}
	}
	if !p.NeedSwitch && p.User == nil && os.Geteuid() != 0 {
		return nil // an unprivileged server with nothing to switch
	}
	if err := sandbox.DropPrivileges(p, logger); err != nil {
		return fmt.Errorf("privileges: %w", err)
	}
	// A tenant's CGI process group belongs to the tenant: killing it at
	// cgi_timeout takes CAP_KILL (root has it unless, as under the systemd
	// unit, it runs with SecureBits=noroot and only ambient capabilities).
	for _, v := range cfg.VHosts {
		if v.CGI.Enabled && sandbox.Mode(v.Mode) != sandbox.ModeNone {
			if id, err := sandbox.ThreadCreds(); err == nil && id.CapEff&(1<<capKill) == 0 {
				logger.Warn("CAP_KILL is not effective: cgi_timeout cannot kill tenants' CGI processes; grant it (systemd AmbientCapabilities=)", "vhost", v.ServerName)
			}
			break
		}
	}
	return nil
}

// capKill is CAP_KILL's number (linux/capability.h).
const capKill = 5

func cmdServe(args []string, stdout, stderr io.Writer) int {
	fs, f := configFlags("serve")
	skip := fs.Bool("skip-broken-vhosts", false, "start without the vhost files that have errors (listed on stderr and in hostd status) instead of refusing to start")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	logger, err := newLogger(f.logLevel, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "hostd:", err)
		return exitUsage
	}
	// Exactly what `hostd check` validates, hooks included.
	cfg, broken, err := host.Validate(f.config)
	if err != nil {
		printConfigError(stderr, err)
		return exitError
	}
	if len(broken) > 0 {
		printBroken(stderr, broken)
		if !*skip {
			fmt.Fprintf(stderr, "hostd serve: %d vhost files have errors: not starting (--skip-broken-vhosts starts without them)\n", len(broken))
			return exitError
		}
		for _, b := range broken {
			logger.Error("vhost file not served: it has errors", "file", b.File, "errors", len(b.Errs))
		}
	}
	logSandbox(cfg, logger)
	srv, err := host.New(cfg, host.Options{Logger: logger, SkipBroken: *skip, Broken: broken, Build: buildInfo()})
	if err != nil {
		logger.Error("start", "err", err)
		return exitError
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
		logger.Error("start", "err", err)
		return exitError
	}
	if err := dropPrivileges(cfg, logger); err != nil {
		srv.Close()
		logger.Error("start", "err", err)
		return exitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go handleSignals(ctx, srv, logger) // HUP: reload, USR1: reopen logs
	if err := srv.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("serve", "err", err)
		return exitError
	}
	return exitOK
}
