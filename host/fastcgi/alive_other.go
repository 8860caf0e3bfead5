//go:build !unix

package fastcgi

import "net"

func alive(net.Conn) bool { return true }

func isReset(error) bool { return false }
