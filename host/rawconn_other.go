//go:build !linux

package host

import "net"

// newRawConn returns c: raw socket I/O is Linux-only (rawconn_linux.go).
func newRawConn(c net.Conn) net.Conn { return c }

// goFast does nothing here.
func goFast(net.Conn) {}
