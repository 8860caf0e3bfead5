package bootstrap

import "runtime"

// init keeps the main goroutine on the main thread: during package
// initialisation the runtime runs the main goroutine on the main thread,
// and a lock taken in init is kept when main.main (or the test main)
// starts.
func init() { runtime.LockOSThread() }
