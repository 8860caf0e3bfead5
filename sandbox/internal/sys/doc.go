// Package sys holds the raw, thread-scoped Linux syscalls the sandbox uses to
// switch a locked OS thread's credentials: setgroups, setresgid, setresuid,
// capget/capset and prctl, issued with RawSyscall so they affect only the
// calling thread (unlike syscall.Setuid & co., which are process-wide since
// Go 1.16). Every wrapper retries EINTR and returns an *os.SyscallError.
//
// The process-wide variants (AllThreads*) exist only for the one startup step
// that must change every thread at once, before any sandbox worker exists.
package sys
