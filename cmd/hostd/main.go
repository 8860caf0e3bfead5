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
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/hostd/hostd/host"
	"github.com/hostd/hostd/host/logtext"
	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/tenant"
)

func init() {
	// Keep the main goroutine on the main thread for good, so no tenant
	// worker ever runs on it: /proc/PID/status shows the main thread's
	// identity, and it must always be the server's.
	runtime.LockOSThread()
}

const usage = `usage: hostd <command> [flags]

commands:
  serve   --config FILE   serve the configuration
  check   --config FILE   validate the configuration and print one line per vhost
  bench   [flags]         compare sandbox modes and handlers (hostd bench -h)
  status  --config FILE   per-vhost counters of the running server (admin socket)
  reload  --config FILE   make the running server re-read its configuration (or send SIGHUP)
  trace   --config FILE [--vhost NAME]   one live line per request
  gen-vhosts --out DIR --count N   write a configuration with N vhosts (scale tests)
  version                 print the version
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "serve":
		return cmdServe(args, stderr)
	case "check":
		return cmdCheck(args, stdout, stderr)
	case "status":
		return cmdStatus(args, stdout, stderr)
	case "reload":
		return cmdReload(args, stdout, stderr)
	case "trace":
		return cmdTrace(args, stdout, stderr)
	case "gen-vhosts":
		return cmdGenVHosts(args, stdout, stderr)
	case "bench":
		return cmdBench(args, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "hostd", version())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "hostd: unknown command %q\n%s", cmd, usage)
	return 2
}

func version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
		v += " " + bi.GoVersion
	}
	return v
}

type commonFlags struct {
	config   string
	logLevel string
}

func parseFlags(name string, args []string, stderr io.Writer) (*flag.FlagSet, *commonFlags, error) {
	fs := flag.NewFlagSet("hostd "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &commonFlags{}
	fs.StringVar(&c.config, "config", "/etc/hostd/hostd.toml", "main configuration `file`")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	return fs, c, nil
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

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	_, f, err := parseFlags("check", args, stderr)
	if err != nil {
		return 2
	}
	cfg, err := tenant.Load(f.config)
	if err == nil {
		err = host.Check(cfg)
	}
	if err != nil {
		printConfigError(stderr, err)
		return 1
	}
	printVHosts(cfg, stdout, stderr)
	printContainment(cfg, stdout, stderr)
	fmt.Fprintf(stdout, "%s: ok, %d vhosts\n", cfg.File, len(cfg.VHosts))
	return 0
}

// dropPrivileges keeps only what the sandbox needs once the listeners are
// bound: CAP_SETUID and CAP_SETGID when a vhost switches identities, and
// the server user when one is configured. Started without those
// capabilities while a vhost needs them, hostd refuses to start.
func dropPrivileges(cfg *tenant.Config, logger *slog.Logger) error {
	var p sandbox.Privileges
	for _, v := range cfg.VHosts {
		if sandbox.Mode(v.Mode).NeedsPrivileges() {
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
	return nil
}

func cmdServe(args []string, stderr io.Writer) int {
	_, f, err := parseFlags("serve", args, stderr)
	if err != nil {
		return 2
	}
	logger, err := newLogger(f.logLevel, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "hostd:", err)
		return 2
	}
	cfg, err := tenant.Load(f.config)
	if err != nil {
		printConfigError(stderr, err)
		return 1
	}
	srv, err := host.New(cfg, host.Options{Logger: logger})
	if err != nil {
		logger.Error("start", "err", err)
		return 1
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
		logger.Error("start", "err", err)
		return 1
	}
	if err := dropPrivileges(cfg, logger); err != nil {
		srv.Close()
		logger.Error("start", "err", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go handleSignals(ctx, srv, logger) // HUP: reload, USR1: reopen logs
	if err := srv.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("serve", "err", err)
		return 1
	}
	return 0
}
