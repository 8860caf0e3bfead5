// Package admission is the overload protection in front of the HTTPS
// listener's TLS handshakes (docs/overload.md): it bounds the full
// handshakes in progress and their rate, and the connections per client
// address, and sheds the rest before any cryptography. It wraps a
// net.Listener and knows nothing of HTTP or vhosts.
package admission
