// Package bench implements `hostd bench`: it builds a throwaway
// multi-tenant setup in a temp dir, starts the hostd binary as a separate
// `hostd serve` process per configuration (pinned away from the load
// generator's CPUs), drives it with package bench/load over the matrix
// handler x sandbox mode x transport plus an open-loop rate sweep, and
// reports a terminal table, results.json, results.csv and SVG charts.
// It reproduces the evaluation of mod_process_security + mod_mruby on
// hostd. Run is not safe for concurrent use: it pins the calling process.
package bench
