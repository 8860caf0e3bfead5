// Package bootstrap is hostd's privileged start-up, imported for its side
// effects only (import _ "github.com/hostd/hostd/sandbox/bootstrap") by
// cmd/hostd and by the test binaries that run the sandbox, in the manner of
// runc's nsenter package:
//
//   - an ELF constructor (cgo builds on Linux, bounding_linux.go) that drops
//     every capability but CAP_SETUID and CAP_SETGID from the bounding set
//     of `hostd serve` started as root, before the Go runtime starts its
//     threads;
//   - an init that locks the main goroutine to the main thread for good, so
//     no tenant work ever runs there: /proc/PID/status shows the main
//     thread's identity, and the sandbox refuses to switch it.
//
// It has no API.
package bootstrap
