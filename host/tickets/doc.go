// Package tickets keeps the server's rotating TLS session ticket keys (and
// the session sealing keys, rotated the same way) in a file of the state
// directory that several servers may share, and binds each ticket to the
// vhost it was issued for. It knows nothing of the server; host wires it
// to its tls.Config and its routes.
package tickets
