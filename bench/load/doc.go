// Package load is hostd's built-in load generator: a closed loop (C
// connections issuing requests back to back for a duration) and an open
// loop (requests offered at a fixed rate, like httperf), over plain
// HTTP/1.1 keep-alive, HTTPS keep-alive, or HTTPS with a new connection per
// request with or without TLS session resumption. It counts responses,
// classifies errors and reports latency percentiles; it needs no external
// tool. Run and its helpers are safe for concurrent use.
package load
