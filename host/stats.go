package host

import (
	"sync/atomic"

	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/host/admission"
)

// serverStats are the server-wide counters that status, metrics and the
// admission control share. All fields are updated atomically.
type serverStats struct {
	// TLS handshakes by outcome; shed counts connections refused before
	// their handshake by admission control.
	handshakesFull    atomic.Uint64
	handshakesResumed atomic.Uint64
	handshakesFailed  atomic.Uint64
	// admission: the connections admission control shed, and of those
	// the ones refused at accept by max_conns_per_ip.
	admission admission.Stats

	// Requests no vhost answered: unknown host names (404) per listener,
	// and a Host header naming another vhost than the SNI (421).
	unknownHostHTTPS, unknownHostHTTP atomic.Uint64
	misdirected                       atomic.Uint64
}

// HandshakeStats returns the handshake counters since the server started.
func (s *Server) HandshakeStats() admin.HandshakeStats {
	return admin.HandshakeStats{
		Full:    s.stats.handshakesFull.Load(),
		Resumed: s.stats.handshakesResumed.Load(),
		Failed:  s.stats.handshakesFailed.Load(),
		Shed:    s.stats.admission.Shed.Load(),
	}
}
