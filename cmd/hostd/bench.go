package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hostd/hostd/bench"
	"github.com/hostd/hostd/bench/scalability"
)

// cmdBench runs `hostd bench` (see bench/ and docs/bench.md).
func cmdBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hostd bench", flag.ContinueOnError)
	var o bench.Options
	var rates, out string
	var runScalability, runMemory bool
	var memModes string
	fs.BoolVar(&o.Quick, "quick", false, "short matrix, under a minute on 2 cores")
	fs.StringVar(&o.Cells, "cells", "", "cells to run, comma-separated globs over handler/mode/transport or sweep/handler/mode (e.g. \"lua,*/inline/https,sweep\")")
	fs.DurationVar(&o.Duration, "duration", 0, "measured time per closed-loop cell (default 1.5s, --quick 0.5s)")
	fs.DurationVar(&o.Warmup, "warmup", 0, "warm-up per cell (default 300ms, --quick 150ms)")
	fs.IntVar(&o.Conns, "conns", 0, "closed-loop concurrent connections (default 32)")
	fs.StringVar(&rates, "rates", "", "open-loop offered rates in requests/s, comma-separated (default: fractions of the measured capacity)")
	fs.DurationVar(&o.SweepDuration, "sweep-duration", 0, "measured time per offered rate (default 1s, --quick 0.4s)")
	fs.IntVar(&o.SweepConns, "sweep-conns", 0, "open-loop connection budget (default 64)")
	fs.IntVar(&o.Tenants, "tenants", 0, "number of tenants (default 2)")
	fs.IntVar(&o.Repeat, "repeat", 0, "run the closed-loop grid this many times in rounds and report the median (default 1)")
	fs.StringVar(&o.Hostd, "hostd", "", "hostd binary to benchmark (default: this executable)")
	fs.StringVar(&out, "out", "", "write table.txt, results.json, results.csv, sweep.svg and handlers.svg into `DIR`")
	fs.BoolVar(&o.NoPin, "no-pin", false, "do not pin the server and the load generator to different CPUs")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temp dir with the generated setup")
	fs.StringVar(&o.PerfDir, "perf", "", "record a perf profile of the server per closed-loop cell into `DIR` (needs perf)")
	fs.BoolVar(&o.Peers, "peers", false, "also run the static, native, Lua and mruby HTTPS cells against nginx, h2o and Apache where installed (make bench-peers-deps), same pinning, load and TLS; hostd/peer ratios in the report")
	fs.BoolVar(&runScalability, "scalability", false, "the overload study: emulated TLS clients with think time and timeouts, swept past saturation, admission control on and off (see docs/overload.md)")
	fs.BoolVar(&runMemory, "memory", false, "the memory study: --tenants tenants (default 10000), each with its own uid and a warm hook, per mode in --modes; RSS and threads of hostd serve")
	fs.StringVar(&memModes, "modes", "uring,thread", "--memory: sandbox modes, comma-separated")
	var sc scalability.Options
	var clients string
	fs.StringVar(&clients, "clients", "", "--scalability: client counts, comma-separated (default: doubling from 32 up to 4x saturation)")
	fs.Float64Var(&sc.Scale, "scale", 0, "--scalability: factor on the 7s think time and 10s client timeout (default 0.05)")
	fs.StringVar(&sc.KeyType, "key", "", "--scalability: server key, rsa2048 (default, like the study) or ecdsa")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if runScalability {
		return cmdScalability(sc, clients, o, out, stdout, stderr)
	}
	if runMemory {
		mo := memoryOptions{binary: o.Hostd, tenants: o.Tenants, conns: o.Conns}
		for _, m := range strings.Split(memModes, ",") {
			if m = strings.TrimSpace(m); m != "" {
				mo.modes = append(mo.modes, m)
			}
		}
		return cmdMemory(mo, stdout, stderr)
	}
	for _, f := range strings.Split(rates, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 {
			fmt.Fprintf(stderr, "hostd bench: --rates: %q is not a positive number\n", f)
			return 2
		}
		o.Rates = append(o.Rates, v)
	}
	o.Progress = stderr
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	rep, err := bench.Run(ctx, o)
	if rep != nil {
		rep.WriteTable(stdout)
		if out != "" {
			if werr := rep.WriteFiles(out); werr != nil {
				fmt.Fprintln(stderr, "hostd bench:", werr)
				return 1
			}
			fmt.Fprintf(stdout, "wrote %s/{table.txt,results.json,results.csv,sweep.svg,handlers.svg}\n", out)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "hostd bench: %v (after %s)\n", err, time.Since(start).Round(time.Second))
		return 1
	}
	if len(rep.Failed()) > 0 {
		return 1
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "hostd bench: not root: the switching modes were skipped (run as root for the full matrix)")
	}
	return 0
}

// cmdScalability runs `hostd bench --scalability`: the Tomcat/RUBiS study's
// method (bench/scalability), with and without admission control.
func cmdScalability(sc scalability.Options, clients string, o bench.Options, out string, stdout, stderr io.Writer) int {
	for _, f := range strings.Split(clients, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "hostd bench: --clients: %q is not a positive integer\n", f)
			return 2
		}
		sc.Clients = append(sc.Clients, n)
	}
	sc.Binary = o.Hostd
	if sc.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(stderr, "hostd bench:", err)
			return 1
		}
		sc.Binary = exe
	}
	sc.NoPin = o.NoPin
	if o.Duration > 0 {
		sc.Duration = o.Duration
	}
	if o.Quick {
		sc.Duration, sc.Warmup = 4*time.Second, 2*time.Second
		if len(sc.Clients) == 0 {
			sc.Clients = []int{64, 256, 1024}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := scalability.Run(ctx, sc, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "hostd bench --scalability:", err)
		return 1
	}
	if err := rep.WriteTable(stdout); err != nil {
		fmt.Fprintln(stderr, "hostd bench:", err)
		return 1
	}
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			fmt.Fprintln(stderr, "hostd bench:", err)
			return 1
		}
		f, err := os.Create(out + "/scalability.svg")
		if err != nil {
			fmt.Fprintln(stderr, "hostd bench:", err)
			return 1
		}
		defer f.Close()
		if err := rep.WriteSVG(f); err != nil {
			fmt.Fprintln(stderr, "hostd bench:", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s/scalability.svg\n", out)
	}
	return 0
}
