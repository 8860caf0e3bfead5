package host

import (
	"cmp"
	"crypto/tls"

	"github.com/hostd/hostd/tenant"
)

// intermediateSuites are the TLS 1.2 cipher suites of Mozilla's
// "intermediate" profile that Go implements: ECDHE key exchange and AEAD
// ciphers only (no CBC, no RSA key exchange, no SHA-1 MAC). Mozilla also
// lists DHE-RSA suites, which crypto/tls does not implement. TLS 1.3
// suites are not configurable in Go and are all AEAD.
var intermediateSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// applyTLSProfile sets cfg's protocol versions and TLS 1.2 suites for a
// profile (tenant.TLSIntermediate or tenant.TLSModern).
func applyTLSProfile(cfg *tls.Config, profile string) {
	cfg.MinVersion = tls.VersionTLS12
	cfg.CipherSuites = intermediateSuites
	if profile == tenant.TLSModern {
		cfg.MinVersion = tls.VersionTLS13
	}
}

// otherProfile returns the profile a vhost can choose besides the
// server's.
func otherProfile(p string) string {
	if p == tenant.TLSModern {
		return tenant.TLSIntermediate
	}
	return tenant.TLSModern
}

// configForClient is the TLS config's GetConfigForClient: a vhost whose
// tls_profile is not the server's gets the other profile's config, which
// shares everything else (certificates, ticket keys, ALPN, admission).
func (s *Server) configForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	v := s.routes.Load().lookup(canonicalHost(hello.ServerName))
	if v == nil {
		return nil, nil
	}
	server := cmp.Or(s.cfg.Server.TLSProfile, tenant.TLSIntermediate)
	if cmp.Or(v.cfg.TLSProfile, server) == server {
		return nil, nil // the server's own config
	}
	return s.tlsOther, nil
}
