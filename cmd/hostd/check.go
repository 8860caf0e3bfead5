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
		if v.TLSCert != "" {
			certSrc = v.TLSCert
		}
		w := v.Identities(server)
		fmt.Fprintf(stdout, "%s\taliases=%d\tsandbox=%s\t%s\troot=%s\tcert=%s\thooks=%d\tstatic: %s\thook code: %s\tcgi: %s\n",
			v.ServerName, len(v.Aliases), v.Mode, ident, v.Root, certSrc, len(v.Hooks), w.Static, w.Hooks, w.CGI)
		switch {
		case len(w.AsServer) > 0 && privileged:
			fmt.Fprintf(stderr, "WARNING: %s (%s): %s run as the %s: tenant code can read and write whatever hostd can, "+
				"its keys and every tenant's files included (accepted by run_as_server = true)\n",
				v.ServerName, v.File, strings.Join(w.AsServer, " and "), server)
		case len(w.AsServer) > 0:
			fmt.Fprintf(stderr, "warning: %s (%s): %s run as the %s\n", v.ServerName, v.File, strings.Join(w.AsServer, " and "), server)
		case privileged && w.Static == server:
			fmt.Fprintf(stderr, "warning: %s (%s): static files are opened as the %s (sandbox %q): a hard link in the root reaches "+
				"what the server can read; a switching sandbox opens them as the tenant\n", v.ServerName, v.File, server, v.Mode)
		}
	}
}
