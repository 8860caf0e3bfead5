package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/hostd/hostd/host/hookrun"
)

const hookUsage = `usage: hostd hook run FILE [--method M] [--path P] [--host H] [--header K:V]... [--body TEXT|@FILE|@-]
                      [--phase PHASE] [--vhost-config F]
           run the hook FILE once against a synthetic request and print the response
       hostd hook check FILE...
           compile hooks without running them; FILE:LINE for each error, exit 1 if any
`

func cmdHook(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, hookUsage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return cmdHookRun(args[1:], stdout, stderr)
	case "check":
		return cmdHookCheck(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, hookUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "hostd hook: unknown command %q\n%s", args[0], hookUsage)
	return exitUsage
}

// headerFlags collects repeated --header K:V flags.
type headerFlags http.Header

func (h headerFlags) String() string { return "" }
func (h headerFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return errors.New("want NAME:VALUE")
	}
	http.Header(h).Add(strings.TrimSpace(k), strings.TrimSpace(v))
	return nil
}

// parseInterleaved parses flags that may come before or after the
// positional arguments, which it returns.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func cmdHookRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hostd hook run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o hookrun.Options
	hdr := headerFlags{}
	var body string
	fs.StringVar(&o.Method, "method", "GET", "request `method`")
	fs.StringVar(&o.Target, "path", "/", "request `path` and query, e.g. /api/items?id=3")
	fs.StringVar(&o.Host, "host", "localhost", "request `host`")
	fs.Var(hdr, "header", "request header `NAME:VALUE` (repeatable)")
	fs.StringVar(&body, "body", "", "request body: TEXT, @FILE or @- (standard input)")
	fs.StringVar(&o.Phase, "phase", "content", "`phase`: rewrite, access, content or log")
	fs.StringVar(&o.VHostFile, "vhost-config", "", "vhost `file` whose limits, roots, outbound list and (as root) user the run takes")
	fs.Usage = func() { fmt.Fprint(fs.Output(), hookUsage); fs.PrintDefaults() }
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "hostd hook run: want exactly one hook FILE\n%s", hookUsage)
		return exitUsage
	}
	o.File = pos[0]
	o.Header = http.Header(hdr)
	switch {
	case body == "@-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			fmt.Fprintln(stderr, "hostd hook run: --body @-:", err)
			return exitError
		}
		o.Body = b
	case strings.HasPrefix(body, "@"):
		b, err := os.ReadFile(body[1:])
		if err != nil {
			fmt.Fprintln(stderr, "hostd hook run: --body:", err)
			return exitError
		}
		o.Body = b
	default:
		o.Body = []byte(body)
	}
	logger, err := newLogger("debug", stderr)
	if err != nil {
		fmt.Fprintln(stderr, "hostd:", err)
		return exitError
	}
	o.Logger = logger
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	res, err := hookrun.Run(ctx, o)
	if res == nil {
		printConfigError(stderr, err)
		return exitError
	}
	status := res.Status
	if status == 0 {
		status = http.StatusOK
	}
	fmt.Fprintf(stdout, "HTTP %d %s\n", status, http.StatusText(status))
	names := make([]string, 0, len(res.Header))
	for k := range res.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range res.Header[k] {
			fmt.Fprintf(stdout, "%s: %s\n", k, v)
		}
	}
	fmt.Fprintln(stdout)
	stdout.Write(res.Body)
	if err != nil {
		fmt.Fprintln(stderr, "hook failed:", err)
		return exitError
	}
	if res.Returned != 0 {
		fmt.Fprintf(stderr, "hook ended the request with status %d (ran as %s)\n", res.Returned, res.Identity)
	} else {
		fmt.Fprintf(stderr, "hook returned nothing: a server would go on with the next hook or phase (ran as %s)\n", res.Identity)
	}
	return exitOK
}

func cmdHookCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hostd hook check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), hookUsage) }
	files, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, hookUsage)
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "hostd hook check: no FILE\n%s", hookUsage)
		return exitUsage
	}
	errs := hookrun.Check(files)
	for _, e := range errs {
		fmt.Fprintln(stderr, e)
	}
	if len(errs) > 0 {
		fmt.Fprintf(stdout, "%d of %d hooks have errors\n", len(errs), len(files))
		return exitError
	}
	fmt.Fprintf(stdout, "ok, %d hooks\n", len(files))
	return exitOK
}
