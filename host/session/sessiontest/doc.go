// Package sessiontest starts private redis-server and memcached processes
// on free loopback ports for tests and benchmarks, and stops them by PID.
// Tests that need a binary that is not installed are skipped.
package sessiontest
