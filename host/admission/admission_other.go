//go:build !linux

package admission

import "net"

// clientGone is not implemented here: a queued handshake whose client
// gave up is still performed.
func clientGone(net.Conn) bool { return false }
