// Package uring is a minimal io_uring ring written on golang.org/x/sys/unix:
// setup (restricted to the file operations the sandbox's file gate needs),
// the three mmaps, one synchronous submit-and-wait per operation, and the
// registration of personalities (a thread's credentials, which a later
// submission names to run with them). There is no SQPOLL thread and no
// batching: a Ring serves one operation at a time, and its caller
// serialises access. Linux only; other systems get ErrUnsupported.
package uring
