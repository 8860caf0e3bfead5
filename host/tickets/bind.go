package tickets

import (
	"bytes"
	"crypto/tls"
	"slices"
)

// bindingPrefix starts the SessionState.Extra entry that binds a TLS
// session ticket to the vhost it was issued for.
const bindingPrefix = "hostd-vhost:"

// BindToVHost makes cfg's session tickets resume only on a connection for
// the same vhost (RFC 6066 section 3): a ticket carries the name vhostOf
// returns for its connection's SNI, and a ticket presented with an SNI
// that chooses another vhost (or none) is ignored, so the client gets a
// full handshake with that vhost's certificate; mismatch is called then.
// Tickets are still encrypted with the rotating keys of the key file
// (EncryptTicket uses the keys SetSessionTicketKeys installed). A Clone
// of cfg made afterwards shares the binding.
func BindToVHost(cfg *tls.Config, vhostOf func(sni string) string, mismatch func()) {
	binding := func(sni string) []byte { return []byte(bindingPrefix + vhostOf(sni)) }
	cfg.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		ss.Extra = slices.DeleteFunc(ss.Extra, isBinding)
		ss.Extra = append(ss.Extra, binding(cs.ServerName))
		return cfg.EncryptTicket(cs, ss)
	}
	cfg.UnwrapSession = func(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
		ss, err := cfg.DecryptTicket(identity, cs)
		if err != nil || ss == nil {
			return ss, err
		}
		want := binding(cs.ServerName)
		for _, e := range ss.Extra {
			if isBinding(e) {
				if bytes.Equal(e, want) {
					return ss, nil
				}
				break
			}
		}
		mismatch()
		return nil, nil // not this vhost's: full handshake
	}
}

func isBinding(e []byte) bool { return bytes.HasPrefix(e, []byte(bindingPrefix)) }
