package host

import (
	"bytes"
	"crypto/tls"
	"slices"
)

// ticketBindingPrefix starts the SessionState.Extra entry that binds a
// TLS session ticket to the vhost it was issued for.
const ticketBindingPrefix = "hostd-vhost:"

// bindTicketsToVHost makes cfg's session tickets resume only on a
// connection for the same vhost (RFC 6066 section 3): a ticket carries the
// server_name of the vhost its connection's SNI chose, and a ticket
// presented with an SNI that chooses another vhost (or none) is ignored,
// so the client gets a full handshake with that vhost's certificate.
// Tickets are still encrypted with the rotating keys of ticket.keys
// (EncryptTicket uses the keys SetSessionTicketKeys installed).
func (s *Server) bindTicketsToVHost(cfg *tls.Config) {
	cfg.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		ss.Extra = slices.DeleteFunc(ss.Extra, isTicketBinding)
		ss.Extra = append(ss.Extra, s.ticketBinding(cs.ServerName))
		return s.tlsConfig.EncryptTicket(cs, ss)
	}
	cfg.UnwrapSession = func(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
		ss, err := s.tlsConfig.DecryptTicket(identity, cs)
		if err != nil || ss == nil {
			return ss, err
		}
		want := s.ticketBinding(cs.ServerName)
		for _, e := range ss.Extra {
			if isTicketBinding(e) {
				if bytes.Equal(e, want) {
					return ss, nil
				}
				break
			}
		}
		s.guard.ticketMismatch.Add(1)
		return nil, nil // not this vhost's: full handshake
	}
}

func isTicketBinding(e []byte) bool { return bytes.HasPrefix(e, []byte(ticketBindingPrefix)) }

// ticketBinding names the vhost a connection with SNI sni is for ("-" for
// the default certificate).
func (s *Server) ticketBinding(sni string) []byte {
	name := "-"
	if v := s.routes.Load().lookup(canonicalHost(sni)); v != nil {
		name = v.cfg.ServerName
	}
	return []byte(ticketBindingPrefix + name)
}
