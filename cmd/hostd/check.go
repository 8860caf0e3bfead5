package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/tenant"
)

// printVHosts prints one line per vhost for `hostd check`: names, sandbox
// mode, identity, root, certificate, hooks, and who each kind of work runs
// as. Tenant code that runs with the server's identity is also warned about
// on stderr, loudly when the server is privileged.
func printVHosts(cfg *tenant.Config, stdout, stderr io.Writer) {
	server := cfg.ServerIdentity()
	privileged := sandbox.Privileged()
	for _, v := range cfg.VHosts {
		ident := "server identity"
		if v.User != "" {
			ident = fmt.Sprintf("uid %d gid %d", v.UID, v.GID)
		}
		certSrc := "generated self-signed"
		switch {
		case v.TLS == "acme":
			certSrc = "acme"
		case v.TLSCert != "":
			certSrc = v.TLSCert
		}
		w := v.Identities(server)
		if v.CGI.Enabled {
			w.CGI += " " + limitsText(v.Limits.CGIContainment())
		}
		fmt.Fprintf(stdout, "%s\taliases=%d\tsandbox=%s\t%s\troot=%s\tcert=%s\ttls=%s\thooks=%d\tstatic: %s\thook code: %s\tcgi: %s\n",
			v.ServerName, len(v.Aliases), modeLabel(v), ident, v.Root, certSrc, v.TLSProfile, len(v.Hooks), w.Static, w.Hooks, w.CGI)
		switch {
		case len(w.AsServer) > 0 && privileged:
			fmt.Fprintf(stderr, "WARNING: %s (%s): %s run as the %s: tenant code can read and write whatever hostd can, "+
				"its keys and every tenant's files included (accepted by run_as_server = true)\n",
				v.ServerName, v.File, strings.Join(w.AsServer, " and "), server)
		case len(w.AsServer) > 0:
			fmt.Fprintf(stderr, "warning: %s (%s): %s run as the %s\n", v.ServerName, v.File, strings.Join(w.AsServer, " and "), server)
		case privileged && w.Static == server && w.Static != "-":
			fmt.Fprintf(stderr, "warning: %s (%s): static files are opened as the %s (sandbox %q): a hard link in the root reaches "+
				"what the server can read; a switching sandbox opens them as the tenant\n", v.ServerName, v.File, server, v.Mode)
		}
	}
}

// limitsText describes CGI limits: "(cpu 30s, data 512MiB, processes 512,
// files 1024, orphans die with the script)", or with cgi_background
// "(..., orphans killed 2s after the request)".
func limitsText(l sandbox.Limits) string {
	n := func(v int) string {
		if v <= 0 {
			return "unlimited"
		}
		return fmt.Sprint(v)
	}
	orphans := "orphans die with the script"
	if l.Background {
		orphans = fmt.Sprintf("orphans killed %v after the request", l.OrphanGrace)
	}
	return fmt.Sprintf("(cpu %v, data %dMiB, processes %s, files %s, %s)",
		l.CPU, l.Memory>>20, n(l.Processes), n(l.OpenFiles), orphans)
}

// printContainment reports what the spawner of CGI scripts and php-fpm
// pools can enforce here, as `hostd serve` would find it: it starts a
// spawner, which probes.
func printContainment(cfg *tenant.Config, stdout, stderr io.Writer) {
	cgi, php := false, false
	for _, v := range cfg.VHosts {
		cgi = cgi || v.CGI.Enabled
		php = php || v.PHP.Enabled
	}
	if !cgi && !php {
		return
	}
	sp, err := sandbox.NewSpawner(nil)
	if err != nil {
		fmt.Fprintf(stderr, "WARNING: CGI cannot run here: %v\n", err)
		return
	}
	c := sp.Containment()
	sp.Close()
	if c.PIDNamespace {
		fmt.Fprintln(stdout, "process containment: every CGI script and php-fpm pool is PID 1 of its own PID namespace; what it starts dies with it, and with hostd")
	} else {
		fmt.Fprintf(stderr, "WARNING: CGI scripts and php-fpm pools cannot get PID namespaces (%s): processes they detach (setsid, double fork) outlive a killed hostd, and php-fpm workers a crashed one\n", c.PIDNamespaceWhyNot)
	}
	if !cgi {
		return
	}
	if c.Rlimits {
		fmt.Fprintln(stdout, "cgi containment: resource limits set in every CGI process before it runs")
	} else {
		fmt.Fprintf(stderr, "WARNING: CGI resource limits (cgi_cpu, cgi_memory, cgi_processes, cgi_open_files) cannot be enforced: %s\n", c.RlimitsWhyNot)
	}
	if c.Subreaper {
		fmt.Fprintln(stdout, "cgi containment: processes a script leaves behind in hostd's PID namespace (cgi_background, or no PID namespaces) are killed cgi_grace after its request; cgroups: not used")
	} else {
		fmt.Fprintln(stderr, "WARNING: processes a CGI script leaves behind cannot be collected (PR_SET_CHILD_SUBREAPER failed)")
	}
}
