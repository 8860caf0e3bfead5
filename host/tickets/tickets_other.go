//go:build !linux

package tickets

// lockFile is a no-op where flock is not available: servers sharing a
// state directory may then both rotate, and converge on the next re-read.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
