package host

import "sync/atomic"

// serverStats are the server-wide counters that status, metrics and the
// admission control share. All fields are updated atomically.
type serverStats struct {
	// TLS handshakes by outcome; shed counts connections refused before
	// their handshake by admission control.
	handshakesFull    atomic.Uint64
	handshakesResumed atomic.Uint64
	handshakesFailed  atomic.Uint64
	handshakesShed    atomic.Uint64
}

// HandshakeStats is a snapshot of the TLS handshake counters.
type HandshakeStats struct {
	Full, Resumed, Failed, Shed uint64
}

// HandshakeStats returns the handshake counters since the server started.
func (s *Server) HandshakeStats() HandshakeStats {
	return HandshakeStats{
		Full:    s.stats.handshakesFull.Load(),
		Resumed: s.stats.handshakesResumed.Load(),
		Failed:  s.stats.handshakesFailed.Load(),
		Shed:    s.stats.handshakesShed.Load(),
	}
}
