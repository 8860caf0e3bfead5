package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/hostd/hostd/host"
	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/tenant"
)

// adminSocket finds the admin socket of the server serving the main file
// at path. It reads only [server] state_dir, leniently, so that `hostd
// reload` can report the errors of a configuration that no longer loads.
func adminSocket(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var f struct {
		Server struct {
			StateDir string `toml:"state_dir"`
		} `toml:"server"`
	}
	if _, err := toml.DecodeFile(abs, &f); err != nil {
		return "", fmt.Errorf("read state_dir from %s: %w", path, err)
	}
	dir := f.Server.StateDir
	if dir == "" {
		dir = tenant.DefaultStateDir
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(abs), dir)
	}
	return admin.SocketPath(dir), nil
}

func adminFlags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("hostd "+name, flag.ContinueOnError)
	config := fs.String("config", "/etc/hostd/hostd.toml", "main configuration `file` of the running server")
	return fs, config
}

// adminClient parses an admin command's flags and returns the client of
// the server serving --config; when !ok the command returns code (a usage
// error, or no server: the reason is printed, prefixed with fs's name).
func adminClient(fs *flag.FlagSet, config *string, args []string, stdout, stderr io.Writer) (c admin.Client, code int, ok bool) {
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return c, code, false
	}
	sock, err := adminSocket(*config)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return c, exitError, false
	}
	return admin.Client{Socket: sock}, 0, true
}

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs, config := adminFlags("status")
	asJSON := fs.Bool("json", false, "print the JSON the admin listener serves at /status.json")
	client, code, ok := adminClient(fs, config, args, stdout, stderr)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := client.Status(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "hostd status:", err)
		return exitError
	}
	if *asJSON {
		printJSON(stdout, st)
		return exitOK
	}
	fmt.Fprintf(stdout, "hostd %s\n", st.Version)
	fmt.Fprintf(stdout, "config %s generation %d, up %s, %d threads\n", st.ConfigFile, st.Generation,
		time.Since(st.Started).Round(time.Second), st.Threads)
	fmt.Fprintf(stdout, "tls handshakes: full %d resumed %d failed %d shed %d\n",
		st.Handshakes.Full, st.Handshakes.Resumed, st.Handshakes.Failed, st.Handshakes.Shed)
	fmt.Fprintf(stdout, "requests for unknown hosts %d, misdirected %d; connections refused per IP %d\n",
		st.Requests.UnknownHost, st.Requests.Misdirected, st.Requests.ConnsRefusedPerIP)
	if c := st.Containment; c != nil {
		if c.PIDNamespace {
			fmt.Fprintln(stdout, "processes: each CGI script and php-fpm pool in its own PID namespace")
		} else {
			fmt.Fprintf(stdout, "processes: WITHOUT PID namespaces (%s)\n", c.PIDNamespaceWhyNot)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "vhost\tsandbox\trequests\t2xx\t3xx\t4xx\t5xx\tactive\tworkers\tbusy\tthreads started\thook errors\thook timeouts\tcgi\tshared dict bytes\t")
	for _, name := range slices.Sorted(maps.Keys(st.VHosts)) {
		v := st.VHosts[name]
		dict := "-"
		if v.SharedDict != nil {
			dict = fmt.Sprintf("%d/%d", v.SharedDict.Bytes, v.SharedDict.MaxBytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", name, v.Mode, v.Requests,
			v.ByClass["2xx"], v.ByClass["3xx"], v.ByClass["4xx"], v.ByClass["5xx"], v.Active, v.Workers, v.Busy, v.Threads,
			v.HookErrors, v.HookTimeouts, v.CGISpawns, dict)
	}
	tw.Flush()
	for _, file := range slices.Sorted(maps.Keys(st.ConfigErrors)) {
		fmt.Fprintf(stdout, "not applied: %s\n", file)
		for _, e := range st.ConfigErrors[file] {
			fmt.Fprintf(stdout, "  %s\n", e)
		}
	}
	printPHPStatus(stdout, st.VHosts)
	return exitOK
}

// cmdReload asks the server to reload and prints what it did. Exit
// status: 0 everything applied; 3 applied except some vhost files with
// errors (kept on their previous version or not added, listed); 1
// refused (an error in the main file: nothing changed) or no server.
func cmdReload(args []string, stdout, stderr io.Writer) int {
	fs, config := adminFlags("reload")
	client, code, ok := adminClient(fs, config, args, stdout, stderr)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := client.Reload(ctx)
	if errors.Is(err, admin.ErrNoServer) {
		fmt.Fprintln(stderr, "hostd reload:", err)
		return exitError
	}
	if err != nil {
		// The server's message: one FILE:LINE: entry per line.
		fmt.Fprintln(stderr, "hostd reload: refused, the old configuration keeps serving:")
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, line)
		}
		return exitError
	}
	for _, c := range res.VHosts {
		name := cmp.Or(c.Name, "?")
		if len(c.Errors) == 0 {
			fmt.Fprintf(stdout, "%s %s (%s)\n", c.Action, name, c.File)
			continue
		}
		what := "error"
		if c.Action == admin.ChangeKept {
			what = "previous version kept; error"
		}
		fmt.Fprintf(stdout, "%s %s (%s): %s:\n", c.Action, name, c.File, what)
		for _, e := range c.Errors {
			fmt.Fprintf(stdout, "    %s\n", e)
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stdout, "warning:", w)
	}
	verb := "reloaded"
	if res.Partial() {
		verb = "reloaded in part"
	}
	fmt.Fprintf(stdout, "%s: generation %d, %d unchanged, %d added, %d changed, %d removed, %d kept with errors, %d not added, in %s\n",
		verb, res.Generation, res.Unchanged, res.Added, res.Changed, res.Removed, res.Kept, res.NotAdded, res.Duration.Round(time.Millisecond))
	if res.Partial() {
		return exitPartial
	}
	return exitOK
}

// cmdReopenLogs makes the server reopen its logs, for logrotate's
// postrotate (signals only the server, not its CGI children).
func cmdReopenLogs(args []string, stdout, stderr io.Writer) int {
	fs, config := adminFlags("reopen-logs")
	client, code, ok := adminClient(fs, config, args, stdout, stderr)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.ReopenLogs(ctx); err != nil {
		fmt.Fprintln(stderr, "hostd reopen-logs:", err)
		return exitError
	}
	return exitOK
}

func cmdTrace(args []string, stdout, stderr io.Writer) int {
	fs, config := adminFlags("trace")
	vhost := fs.String("vhost", "", "only this vhost's requests (its server_name)")
	client, code, ok := adminClient(fs, config, args, stdout, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := client.Trace(ctx, *vhost, stdout)
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "hostd trace:", err)
		return exitError
	}
	return exitOK
}

// handleSignals reloads on SIGHUP and reopens logs on SIGUSR1 until ctx
// is done.
func handleSignals(ctx context.Context, srv *host.Server, logger *slog.Logger) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-ch:
			switch sig {
			case syscall.SIGHUP:
				logger.Info("SIGHUP: reloading")
				srv.Reload(ctx) // logs its result
			case syscall.SIGUSR1:
				srv.ReopenLogs() // logs its result
			}
		}
	}
}

// printPHPStatus prints a line per vhost with a PHP pool.
func printPHPStatus(w io.Writer, vhosts map[string]admin.VHostStatus) {
	for _, name := range slices.Sorted(maps.Keys(vhosts)) {
		if p := vhosts[name].PHP; p != nil {
			fmt.Fprintf(w, "php %s: %s pid %d, %d starts, %d crashes, %d requests, %d busy, %d idle connections\n",
				name, p.State, p.PID, p.Starts, p.Crashes, p.Requests, p.Busy, p.IdleConns)
		}
	}
}
