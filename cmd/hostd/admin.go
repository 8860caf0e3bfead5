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
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/hostd/hostd/host"
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
	return host.AdminSocketPath(dir), nil
}

func adminFlags(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("hostd "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "/etc/hostd/hostd.toml", "main configuration `file` of the running server")
	return fs, config
}

// adminClient returns the client of the server serving config, or prints
// why there is none (prefixed with "hostd name:").
func adminClient(name, config string, stderr io.Writer) (host.AdminClient, bool) {
	sock, err := adminSocket(config)
	if err != nil {
		fmt.Fprintf(stderr, "hostd %s: %v\n", name, err)
		return host.AdminClient{}, false
	}
	return host.AdminClient{Socket: sock}, true
}

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs, config := adminFlags("status", stderr)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	if fs.Parse(args) != nil {
		return 2
	}
	client, ok := adminClient("status", *config, stderr)
	if !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := client.Status(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "hostd status:", err)
		return 1
	}
	if *asJSON {
		printJSON(stdout, st)
		return 0
	}
	fmt.Fprintf(stdout, "config %s generation %d, up %s, %d threads\n", st.ConfigFile, st.Generation,
		time.Since(st.Started).Round(time.Second), st.Threads)
	fmt.Fprintf(stdout, "tls handshakes: full %d resumed %d failed %d shed %d\n",
		st.Handshakes.Full, st.Handshakes.Resumed, st.Handshakes.Failed, st.Handshakes.Shed)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "vhost\tsandbox\trequests\t2xx\t3xx\t4xx\t5xx\tactive\tworkers\tbusy\tthreads started\thook errors\thook timeouts\tcgi\t")
	for _, v := range st.VHosts {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", v.Name, v.Mode, v.Requests,
			v.ByClass[2], v.ByClass[3], v.ByClass[4], v.ByClass[5], v.Active, v.Workers, v.Busy, v.Threads,
			v.HookErrors, v.HookTimeouts, v.CGISpawns)
	}
	tw.Flush()
	printPHPStatus(stdout, st.VHosts)
	return 0
}

func cmdReload(args []string, stdout, stderr io.Writer) int {
	fs, config := adminFlags("reload", stderr)
	if fs.Parse(args) != nil {
		return 2
	}
	client, ok := adminClient("reload", *config, stderr)
	if !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := client.Reload(ctx)
	if err != nil {
		// The server's message: one FILE:LINE: entry per line.
		fmt.Fprintln(stderr, "hostd reload: refused, the old configuration keeps serving:")
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, line)
		}
		return 1
	}
	fmt.Fprintf(stdout, "reloaded: generation %d, %d kept, %d added, %d changed, %d removed, in %s\n",
		res.Generation, res.Kept, res.Added, res.Changed, res.Removed, res.Duration.Round(time.Millisecond))
	return 0
}

func cmdTrace(args []string, stdout, stderr io.Writer) int {
	fs, config := adminFlags("trace", stderr)
	vhost := fs.String("vhost", "", "only this vhost's requests (its server_name)")
	if fs.Parse(args) != nil {
		return 2
	}
	client, ok := adminClient("trace", *config, stderr)
	if !ok {
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := client.Trace(ctx, *vhost, stdout)
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "hostd trace:", err)
		return 1
	}
	return 0
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
func printPHPStatus(w io.Writer, vhosts []host.VHostStatus) {
	for _, v := range vhosts {
		if p := v.PHP; p != nil {
			fmt.Fprintf(w, "php %s: %s pid %d, %d starts, %d crashes, %d requests, %d busy, %d idle connections\n",
				v.Name, p.State, p.PID, p.Starts, p.Crashes, p.Requests, p.Busy, p.IdleConns)
		}
	}
}
