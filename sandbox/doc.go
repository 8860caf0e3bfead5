// Package sandbox gives a tenant's in-process work that tenant's identity
// where the kernel checks it: per file operation through the tenant's file
// gate (FS) and an io_uring personality (ModeUring), or on locked OS threads
// switched to the tenant, in the manner of Apache's mod_process_security
// (the thread modes). It knows nothing of HTTP or TOML; package host calls
// Tenant.Run from the request path and does every file operation for a
// tenant through the tenant's FS.
//
// # The file gate
//
// An FS confines names to a fixed list of root directories and resolves
// them with openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS) relative to the
// roots' descriptors; opens refuse FIFOs, sockets and devices. In ModeUring
// each operation is submitted to an io_uring ring (sandbox/internal/uring,
// a server-wide pool: Rings) naming the tenant's personality, the
// credentials of a thread switched to the tenant, registered once when the
// Tenant is made (from a throwaway locked thread that is then destroyed) and
// unregistered by Close; in the other modes the operations are syscalls on
// the calling thread. ProbeURing tells whether io_uring is usable here.
//
// # The mechanism
//
// A goroutine locks itself to its OS thread (runtime.LockOSThread) and
// switches only that thread's credentials with the raw, thread-scoped
// setgroups, setresgid and setresuid syscalls (package sandbox/internal/sys;
// never syscall.Setuid & co., which are process-wide since Go 1.16): groups,
// then gid, then uid going to the tenant; uid, gid, groups coming back. Only
// the effective (and so filesystem) ids become the tenant's. While tenant
// code runs the thread's effective capability set is empty (the kernel
// empties it when euid leaves 0; a non-root server user holding
// CAP_SETUID/CAP_SETGID drops it with capset and raises it from the
// permitted set to switch back) and PR_SET_NO_NEW_PRIVS is set, so the
// kernel checks every open, create and exec against the tenant's ids.
//
// The real and saved uid and gid stay the server's on purpose. A thread
// whose real uid were the tenant's could be signalled with tgkill by any
// process of that tenant (SIGSTOP or SIGKILL on one thread affects the whole
// server) and, when dumpable, ptraced. With the server's real and saved ids,
// processes of the tenant get EPERM for both.
//
// A locked thread whose credentials changed is never returned to the Go
// scheduler unless its restored identity was verified with getresuid,
// getresgid, getgroups and capget; otherwise its goroutine ends while still
// locked and Go destroys the thread. Go creates new threads from a template
// thread when the creating thread is locked, so threads started while tenant
// code runs get the server's credentials, not the tenant's (tested).
//
// # The boundary
//
// Threads share one address space. The switch protects the file system and
// other kernel objects from tenant code; it does not protect the server's
// memory from it. Tenant code must therefore be memory-safe interpreted
// code (the Lua and mruby VMs of package scripting, without FFI, native
// modules or process-wide syscalls) or run in a separate process (CGI via
// the Spawner). Anything able to issue arbitrary syscalls on a tenant thread
// could call setresuid back to the server's real uid.
//
// fn must do its tenant work on the goroutine Run calls it on: goroutines
// it starts run on other threads with the server's identity. Nothing in the
// process may call syscall.AllThreadsSyscall or syscall.Set*id after
// DropPrivileges: they would rewrite the tenant threads' credentials too.
//
// # Modes
//
// ModeNone, ModeSuexec and ModeUring run fn directly. ModeThread keeps a per-tenant
// pool of locked threads switched once for their whole life (none while
// idle; at most MaxWorkers; idle ones exit after IdleTimeout; a worker never
// serves another tenant). ModeThreadPerRequest switches a fresh thread for
// each call and destroys it afterwards. ModeInline switches the caller's own
// thread and restores it. DropPrivileges is the startup step that keeps
// CAP_SETUID and CAP_SETGID and drops everything else; see docs/sandbox.md.
package sandbox
