//go:build !linux

package host

import "net"

// withRawIO returns ln: raw socket I/O is Linux-only (rawconn_linux.go).
func withRawIO(ln net.Listener) net.Listener { return ln }
