//go:build !linux

package admission

import "net"

// ClientGone is not implemented here: a queued handshake whose client
// gave up is still performed.
func ClientGone(net.Conn) bool { return false }
