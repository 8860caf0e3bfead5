// hostd's small C layer over libmruby 3.1 (see doc.go). Every entry point
// protects the calls that can raise, so no Ruby exception ever longjmps
// across Go frames.
#ifndef HOSTD_MRUBY_H
#define HOSTD_MRUBY_H

#include <stddef.h>
#include <stdint.h>

typedef struct hostd_vm hostd_vm;
struct RProc;

// Result kinds of hostd_vm_run.
enum {
	HOSTD_OK = 0,      // finished; status is the returned value or r.exit's
	HOSTD_EXC = 1,     // a Ruby exception; msg and line describe it
	HOSTD_TIMEOUT = 2, // stopped by the debug hook at the deadline
	HOSTD_NOMEM = 3,   // the counting allocator refused memory
	HOSTD_BADRET = 4,  // returned an Integer that is not 100..999 (in status)
};

typedef struct {
	int kind;
	int64_t status;
	int line;
	char *msg; // malloc'd, or NULL; the caller frees it
	int exceeded;      // the VM went over its memory limit (now or before): do not reuse it
	uint32_t new_syms; // symbols interned since the VM was made
} hostd_result;

// prelude (len bytes of Ruby, may be NULL) runs once at setup, before the
// core is frozen.
hostd_vm *hostd_vm_new(size_t mem_limit, const char *prelude, size_t prelude_len, char **err);
void hostd_vm_free(hostd_vm *vm);
// hostd_vm_compile returns 0 and a GC-registered proc, 1 for a syntax error
// (line, msg), 2 for another failure (msg), 3 when the compile took longer
// than timeout_ns. last_return tells whether the last top-level statement
// is `return`.
int hostd_vm_compile(hostd_vm *vm, const char *src, size_t len, const char *file, int64_t timeout_ns,
		     struct RProc **proc, int *last_return, int *line, char **msg);
void hostd_vm_release(hostd_vm *vm, struct RProc *proc);
// hostd_vm_dump writes proc's bytecode (RITE, with line numbers) into a
// malloc'd buffer the caller frees; 0 on success.
int hostd_vm_dump(hostd_vm *vm, struct RProc *proc, uint8_t **out, size_t *len);
// hostd_vm_load makes a GC-registered proc of bytecode hostd_vm_dump wrote,
// in this or another VM; 0 on success.
int hostd_vm_load(hostd_vm *vm, const uint8_t *bin, size_t len, struct RProc **proc);
// hostd_vm_budget lets the VM allocate bytes more than it holds now.
void hostd_vm_budget(hostd_vm *vm, size_t bytes);
// hostd_vm_fail_from makes the n-th allocation from now, and every later
// one, fail as at the memory limit, until the end of the next
// hostd_vm_run (tests of allocation failure paths; 0: off).
void hostd_vm_fail_from(hostd_vm *vm, size_t n);
// file is the name the proc was compiled with (for the error line).
// seed reseeds the default Random after the run. When set_budget is set
// the run starts with hostd_vm_budget(budget) (the caller made it already
// when it compiled or loaded the proc for this run); fail_from, when not
// 0, is hostd_vm_fail_from's. One call per run: every cgo call costs the
// Go runtime a system call's bookkeeping.
void hostd_vm_run(hostd_vm *vm, struct RProc *proc, int last_return, const char *file, int64_t timeout_ns,
		  uintptr_t handle, uint64_t seed, int set_budget, size_t budget, size_t fail_from, hostd_result *res);
size_t hostd_vm_mem(hostd_vm *vm);

// Codes returned by the Go side (hostdGoCall).
enum {
	HOSTD_CALL_OK = 0,       // out holds the result value
	HOSTD_CALL_ARGERR = 1,   // out holds a message: ArgumentError
	HOSTD_CALL_ERR = 2,      // out holds a message: Hostd::Error
	HOSTD_CALL_EXIT = 3,     // out holds the status: end the run
	HOSTD_CALL_TIMEOUT = 4,  // the run's deadline passed during the call
};

// Host operations: Ruby methods of Hostd, Hostd::Request and friends call
// hostdGoCall(handle, op, args) with their arguments encoded as a value
// list (see value.go).
enum {
	HOSTD_OP_METHOD = 1, HOSTD_OP_URI, HOSTD_OP_PATH, HOSTD_OP_QUERY_STRING,
	HOSTD_OP_ARGS, HOSTD_OP_HOST, HOSTD_OP_SCHEME, HOSTD_OP_REMOTE_ADDR,
	HOSTD_OP_STATUS, HOSTD_OP_SET_STATUS, HOSTD_OP_WRITE, HOSTD_OP_PUTS,
	HOSTD_OP_REDIRECT, HOSTD_OP_EXIT, HOSTD_OP_BASIC_AUTH, HOSTD_OP_SET_PATH,
	HOSTD_OP_BODY, HOSTD_OP_PHASE,
	HOSTD_OP_HIN_GET, HOSTD_OP_HOUT_GET, HOSTD_OP_HOUT_SET,
	HOSTD_OP_VARS_GET, HOSTD_OP_VARS_SET,
	HOSTD_OP_LOG, HOSTD_OP_JSON_ENCODE, HOSTD_OP_JSON_DECODE, HOSTD_OP_SHA256,
	HOSTD_OP_HMAC_SHA256, HOSTD_OP_BASE64_ENCODE, HOSTD_OP_BASE64_DECODE,
	HOSTD_OP_TIME,
	HOSTD_OP_SHARED_GET, HOSTD_OP_SHARED_SET, HOSTD_OP_SHARED_INCR,
	HOSTD_OP_SHARED_DELETE,
	HOSTD_OP_SESSION_GET, HOSTD_OP_SESSION_SET, HOSTD_OP_SESSION_DELETE,
	HOSTD_OP_SESSION_DESTROY, HOSTD_OP_SESSION_REGENERATE_ID,
	// Hostd.__fn(name, *args): the functions of api.go, by name (the
	// prelude's Regexp, String, MatchData and Hostd helpers call it).
	HOSTD_OP_FN = 100,
	// Issue 16 part B.
	HOSTD_OP_HTTP_REQUEST = 200,
	HOSTD_OP_SHARED_ADD, HOSTD_OP_SHARED_REPLACE, HOSTD_OP_SHARED_TTL,
	HOSTD_OP_SHARED_EXPIRE, HOSTD_OP_SHARED_GET_KEYS, HOSTD_OP_SHARED_CAS,
	HOSTD_OP_FILE_READ, HOSTD_OP_FILE_EXIST, HOSTD_OP_FILE_OPEN, HOSTD_OP_FILE_FREAD,
	HOSTD_OP_FILE_GETS, HOSTD_OP_FILE_WRITE, HOSTD_OP_FILE_CLOSE, HOSTD_OP_DIR_CHILDREN,
	HOSTD_OP_REQUIRE_RELATIVE, HOSTD_OP_REMOTE_PORT,
};

#endif
