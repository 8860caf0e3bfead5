// Package scalability reproduces the overload study behind hostd's
// admission control (docs/overload.md): emulated clients in a closed loop
// open TLS sessions, think between requests, give up after a timeout and
// start over with a full handshake. Run sweeps the number of clients past
// saturation against a `hostd serve` child process, with admission control
// off and on, and reports throughput, latency, timeouts, the handshake mix
// and the server's CPU; WriteSVG charts throughput against clients.
package scalability
