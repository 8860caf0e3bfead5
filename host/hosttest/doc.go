// Package hosttest starts real hostd servers on 127.0.0.1 for tests and
// gives them TLS clients that choose their SNI name, the way a browser
// resolving a tenant's name to the server would.
package hosttest
