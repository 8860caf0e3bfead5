//go:build cgo && !nomruby

// hostd's C layer over libmruby 3.1: VM setup (Hostd module, request
// classes, frozen core), a counting allocator, the timeout debug hook,
// protected compile and run, and the method trampolines that call Go.

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mruby.h>
#include <mruby/array.h>
#include <mruby/class.h>
#include <mruby/compile.h>
#include <mruby/dump.h>
#include <mruby/error.h>
#include <mruby/gc.h>
#include <mruby/hash.h>
#include <mruby/irep.h>
#include <mruby/opcode.h>
#include <mruby/proc.h>
#include <mruby/string.h>
#include <mruby/variable.h>

#include "hostd_mruby_node.h"

// hostd's patch series (scripting/mruby/build/patches) must be in the
// library: it defines the allocator flag and the compile interrupt.
#ifndef MRB_FL_UNDEF_ALLOCATE
#error "libmruby lacks hostd's patches (scripting/mruby/build/patches); rebuild it with make libmruby"
#endif

#include "hostd_mruby.h"
#include "_cgo_export.h"

#define HOSTD_TICK 1024   // instructions between two clock reads
#define HOSTD_CTICK 256   // compile steps (tokens, nodes) between two clock reads
#define HOSTD_CALL_TICK 4 // method-calling instructions between two coarse clock reads
#define HOSTD_MAX_DEPTH 100
// HOSTD_MAX_EVAL bounds the source Kernel#eval, instance_eval, class_eval
// and module_eval compile (the compile also keeps to the time limit).
#define HOSTD_MAX_EVAL (256 << 10)

struct hostd_vm {
	mrb_state *mrb;
	size_t used, limit, first_alloc;
	int exceeded;  // the allocator refused memory
	// Tests: the fail_from-th allocation of the next run, and every one
	// after it, is refused as if the memory limit were reached there
	// (0: off; see hostd_vm_fail_from).
	size_t fail_from, allocs;
	int stop;      // raise on every instruction (sticky until the run ends)
	int timed_out;
	uint32_t tick;
	uint32_t call_tick;
	int deadline_active;  // a compile or run is under the deadline
	uint32_t ctick;
	struct timespec deadline;
	mrb_func_t eval_fn[3]; // mruby-eval's eval, instance_eval, class_eval
	uintptr_t handle;     // cgo.Handle of the Go run state; 0 outside runs
	int64_t exit_status;  // set by r.exit / r.redirect
	int explicit_return;  // the run ended with a top-level `return`
	char *pending;        // Go output buffer not yet freed
	char scratch[256];    // Go writes a small result here (no malloc, no cgo call)
	struct RClass *script_class, *request_class, *hin_class, *hout_class,
		*vars_class, *shared_class, *hostd_mod, *exit_class, *timeout_class,
		*error_class, *session_class;
	struct RClass *http_response_class; // issue 16 part B
	struct RClass *run_class;           // the current run's top-level class (require_relative)
	mrb_value run_self;                 // and its self
	mrb_value req;        // the current run's request object
	uint64_t seed;        // the default Random's seed for the next run
	mrb_sym base_symidx;
	mrb_sym gc_root;
	const char *prelude;  // Ruby run at setup (api.go's prelude.rb)
	size_t prelude_len;
	mrb_value re_cache;   // Regexp.compile's frozen Regexps (GC-registered)
	struct RClass *regexp_class;
	mrb_sym match_syms[10]; // $~, $1..$9
	// Regexp fast path: @source, @flags, @regexp, @string, @offs and
	// MatchData, looked up once.
	mrb_sym re_fast_syms[5];
	struct RClass *matchdata_class;
};

// ---- counting allocator ----

typedef union {
	size_t size;
	max_align_t align;
} hostd_hdr;

static void *
hostd_allocf(mrb_state *mrb, void *p, size_t size, void *ud)
{
	hostd_vm *vm = (hostd_vm *)ud;
	hostd_hdr *h = p ? ((hostd_hdr *)p) - 1 : NULL;
	size_t old = h ? h->size : 0;
	hostd_hdr *n;

	(void)mrb;
	if (size == 0) {
		if (h) {
			vm->used -= old;
			free(h);
		}
		return NULL;
	}
	if (size > old && vm->fail_from && ++vm->allocs >= vm->fail_from) {
		vm->exceeded = 1;
		return NULL;
	}
	if (size > old && vm->used - old + size > vm->limit) {
		vm->exceeded = 1;
		return NULL;
	}
	n = (hostd_hdr *)realloc(h, sizeof(hostd_hdr) + size);
	if (!n) return NULL;
	if (!vm->first_alloc) vm->first_alloc = size;
	vm->used = vm->used - old + size;
	n->size = size;
	return n + 1;
}

// ---- deadline ----

static void
set_deadline(hostd_vm *vm, int64_t timeout_ns)
{
	clock_gettime(CLOCK_MONOTONIC, &vm->deadline);
	if (timeout_ns < 0) timeout_ns = 0;
	vm->deadline.tv_sec += timeout_ns / 1000000000;
	vm->deadline.tv_nsec += timeout_ns % 1000000000;
	if (vm->deadline.tv_nsec >= 1000000000) {
		vm->deadline.tv_sec++;
		vm->deadline.tv_nsec -= 1000000000;
	}
	vm->tick = HOSTD_TICK;
	vm->call_tick = HOSTD_CALL_TICK;
	vm->ctick = HOSTD_CTICK;
	vm->stop = vm->timed_out = 0;
}

// past reports whether clock (CLOCK_MONOTONIC, or its coarse variant that
// costs a few ns) reads at or after the run's deadline.
static int
past(hostd_vm *vm, clockid_t clock)
{
	struct timespec now;
	clock_gettime(clock, &now);
	return now.tv_sec > vm->deadline.tv_sec ||
	       (now.tv_sec == vm->deadline.tv_sec && now.tv_nsec >= vm->deadline.tv_nsec);
}

static int
past_deadline(hostd_vm *vm)
{
	return past(vm, CLOCK_MONOTONIC);
}

// hostd_compile_interrupt is mrb_state.compile_interrupt (patch 0007): the
// parser calls it per token and the code generator per node, so that
// compiling a hook file or an eval'd string keeps to the deadline.
static int
hostd_compile_interrupt(mrb_state *mrb)
{
	hostd_vm *vm = (hostd_vm *)mrb->ud;
	if (!vm || !vm->deadline_active) return 0;
	if (vm->timed_out) return 1;
	if (--vm->ctick) return 0;
	vm->ctick = HOSTD_CTICK;
	if (!past_deadline(vm)) return 0;
	vm->timed_out = 1;
	vm->stop = 1; // a run raises the timeout at its next instruction
	return 1;
}

// ---- timeout hook ----

// calls_out reports whether the instruction op may call a method, which may
// be a C function that runs for a while (a search over a 64 MiB string):
// before every HOSTD_CALL_TICK-th such instruction the hook also reads the
// coarse clock (a few ns), so that a loop of long C calls stops a few
// calls after the deadline, not up to HOSTD_TICK calls after it.
static inline int
calls_out(mrb_code op)
{
	switch (op) {
	case OP_SEND: case OP_SENDB: case OP_SSEND: case OP_SSENDB: case OP_SUPER:
	case OP_GETIDX: case OP_SETIDX:
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
	case OP_EQ: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
	case OP_ARYCAT: case OP_STRCAT:
		return 1;
	default:
		return 0;
	}
}

static int
past_deadline_coarse(hostd_vm *vm)
{
	return past(vm, CLOCK_MONOTONIC_COARSE);
}

static void
hostd_code_fetch(mrb_state *mrb, const struct mrb_irep *irep, const mrb_code *pc, mrb_value *regs)
{
	hostd_vm *vm = (hostd_vm *)mrb->ud;

	(void)irep;
	(void)regs;
	if (!vm->stop) {
		if (vm->exceeded) {
			vm->stop = 1;
		} else if (--vm->tick) {
			if (!calls_out(*pc) || --vm->call_tick) return;
			vm->call_tick = HOSTD_CALL_TICK;
			if (!past_deadline_coarse(vm)) return;
			vm->stop = 1;
			vm->timed_out = 1;
		} else {
			vm->tick = HOSTD_TICK;
			if (!past_deadline(vm)) return;
			vm->stop = 1;
			vm->timed_out = 1;
		}
	}
	// Point ci->pc past the start of the current instruction: the catch
	// handler lookup then sees this instruction's position, so a rescue or
	// ensure clause is not re-entered from its own first instruction.
	mrb->c->ci->pc = pc + 1;
	if (vm->timed_out)
		mrb_raise(mrb, vm->timeout_class, "hook exceeded its time limit");
	mrb_exc_raise(mrb, mrb_obj_value(mrb->nomem_err));
}

// ---- value encoding (see value.go) ----

typedef struct {
	char *p;
	size_t len, cap;
	int err; // 2 too deep, 3 out of memory
} hostd_buf;

static int
buf_put(hostd_buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char *np;
		while (cap < b->len + n) cap *= 2;
		np = (char *)realloc(b->p, cap);
		if (!np) {
			b->err = 3;
			return -1;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static int
buf_tag(hostd_buf *b, char tag)
{
	return buf_put(b, &tag, 1);
}

static int
buf_u32(hostd_buf *b, uint32_t v)
{
	unsigned char x[4] = {v, v >> 8, v >> 16, v >> 24};
	return buf_put(b, x, 4);
}

static int
buf_u64(hostd_buf *b, uint64_t v)
{
	unsigned char x[8];
	int i;
	for (i = 0; i < 8; i++) x[i] = (unsigned char)(v >> (8 * i));
	return buf_put(b, x, 8);
}

static int
buf_str(hostd_buf *b, const char *p, size_t n)
{
	if (n > UINT32_MAX) {
		b->err = 3;
		return -1;
	}
	if (buf_tag(b, 's') || buf_u32(b, (uint32_t)n)) return -1;
	return buf_put(b, p, n);
}

static int enc_value(mrb_state *mrb, hostd_buf *b, mrb_value v, int depth);

struct enc_hash {
	hostd_buf *b;
	int depth;
	int rc;
};

static int
enc_pair(mrb_state *mrb, mrb_value k, mrb_value v, void *data)
{
	struct enc_hash *h = (struct enc_hash *)data;
	if (enc_value(mrb, h->b, k, h->depth) || enc_value(mrb, h->b, v, h->depth)) {
		h->rc = -1;
		return 1;
	}
	return 0;
}

static int
enc_value(mrb_state *mrb, hostd_buf *b, mrb_value v, int depth)
{
	if (depth > HOSTD_MAX_DEPTH) {
		b->err = 2;
		return -1;
	}
	switch (mrb_type(v)) {
	case MRB_TT_FALSE:
		return buf_tag(b, mrb_nil_p(v) ? 'n' : 'f');
	case MRB_TT_TRUE:
		return buf_tag(b, 't');
	case MRB_TT_INTEGER:
		if (buf_tag(b, 'i')) return -1;
		return buf_u64(b, (uint64_t)mrb_integer(v));
	case MRB_TT_FLOAT: {
		double d = mrb_float(v);
		uint64_t u;
		memcpy(&u, &d, 8);
		if (buf_tag(b, 'd')) return -1;
		return buf_u64(b, u);
	}
	case MRB_TT_STRING:
		return buf_str(b, RSTRING_PTR(v), RSTRING_LEN(v));
	case MRB_TT_SYMBOL: {
		mrb_int n;
		const char *s = mrb_sym_name_len(mrb, mrb_symbol(v), &n);
		return buf_str(b, s, (size_t)n);
	}
	case MRB_TT_ARRAY: {
		mrb_int i, n = RARRAY_LEN(v);
		if (buf_tag(b, 'a') || buf_u32(b, (uint32_t)n)) return -1;
		for (i = 0; i < n && i < RARRAY_LEN(v); i++)
			if (enc_value(mrb, b, RARRAY_PTR(v)[i], depth + 1)) return -1;
		return 0;
	}
	case MRB_TT_HASH: {
		struct enc_hash h = {b, depth + 1, 0};
		if (buf_tag(b, 'h') || buf_u32(b, (uint32_t)mrb_hash_size(mrb, v))) return -1;
		mrb_hash_foreach(mrb, mrb_hash_ptr(v), enc_pair, &h);
		return h.rc;
	}
	default: {
		// Reported by Go with the method's name.
		const char *cn = mrb_obj_classname(mrb, v);
		size_t n = cn ? strlen(cn) : 0;
		if (buf_tag(b, 'x') || buf_u32(b, (uint32_t)n)) return -1;
		return buf_put(b, cn, n);
	}
	}
}

typedef struct {
	const unsigned char *p;
	size_t len, off;
} hostd_rd;

static uint64_t
rd_u64(hostd_rd *r)
{
	uint64_t v = 0;
	int i;
	for (i = 0; i < 8; i++) v |= (uint64_t)r->p[r->off + i] << (8 * i);
	r->off += 8;
	return v;
}

static uint32_t
rd_u32(hostd_rd *r)
{
	uint32_t v = (uint32_t)r->p[r->off] | (uint32_t)r->p[r->off + 1] << 8 |
		     (uint32_t)r->p[r->off + 2] << 16 | (uint32_t)r->p[r->off + 3] << 24;
	r->off += 4;
	return v;
}

// dec_value decodes one value written by Go (trusted, well-formed).
static mrb_value
dec_value(mrb_state *mrb, hostd_rd *r)
{
	char tag;
	if (r->off >= r->len) return mrb_nil_value();
	tag = (char)r->p[r->off++];
	switch (tag) {
	case 't':
		return mrb_true_value();
	case 'f':
		return mrb_false_value();
	case 'i':
		return mrb_int_value(mrb, (mrb_int)rd_u64(r));
	case 'd': {
		uint64_t u = rd_u64(r);
		double d;
		memcpy(&d, &u, 8);
		return mrb_float_value(mrb, d);
	}
	case 's': {
		uint32_t n = rd_u32(r);
		mrb_value s = mrb_str_new(mrb, (const char *)r->p + r->off, n);
		r->off += n;
		return s;
	}
	case 'a': {
		uint32_t i, n = rd_u32(r);
		mrb_value a = mrb_ary_new_capa(mrb, n);
		for (i = 0; i < n; i++) mrb_ary_push(mrb, a, dec_value(mrb, r));
		return a;
	}
	case 'h': {
		uint32_t i, n = rd_u32(r);
		mrb_value h = mrb_hash_new_capa(mrb, n);
		for (i = 0; i < n; i++) {
			mrb_value k = dec_value(mrb, r);
			mrb_value v = dec_value(mrb, r);
			mrb_hash_set(mrb, h, k, v);
		}
		return h;
	}
	default:
		return mrb_nil_value();
	}
}

// ---- calls into Go ----

static void
free_pending(hostd_vm *vm)
{
	if (vm->pending) {
		free(vm->pending);
		vm->pending = NULL;
	}
}

// call_go encodes argv, calls the Go side and returns its result or raises
// its error. Go's output buffer is kept in vm->pending while Ruby objects
// are made from it (which may raise) and freed afterwards.
static mrb_value
call_go(mrb_state *mrb, int op, const mrb_value *argv, mrb_int argc)
{
	hostd_vm *vm = (hostd_vm *)mrb->ud;
	hostd_buf b = {0};
	mrb_int i;
	char *out = NULL;
	size_t outlen = 0;
	int code;
	hostd_rd rd;
	mrb_value v;

	if (!vm->handle) mrb_raise(mrb, vm->error_class, "not available outside a hook run");
	free_pending(vm);
	if (buf_tag(&b, 'a') == 0 && buf_u32(&b, (uint32_t)argc) == 0) {
		for (i = 0; i < argc; i++)
			if (enc_value(mrb, &b, argv[i], 0)) break;
	}
	if (b.err) {
		int err = b.err;
		free(b.p);
		if (err == 2) mrb_raise(mrb, E_ARGUMENT_ERROR, "value nested too deeply");
		mrb_raise(mrb, E_RUNTIME_ERROR, "out of memory");
	}
	code = hostdGoCall(vm->handle, op, b.p, b.len, vm->scratch, sizeof vm->scratch, &out, &outlen);
	free(b.p);
	vm->pending = out == vm->scratch ? NULL : out;
	rd.p = (const unsigned char *)out;
	rd.len = outlen;
	rd.off = 0;
	v = out ? dec_value(mrb, &rd) : mrb_nil_value();
	free_pending(vm);
	switch (code) {
	case HOSTD_CALL_OK:
		return v;
	case HOSTD_CALL_ARGERR:
		mrb_exc_raise(mrb, mrb_exc_new_str(mrb, E_ARGUMENT_ERROR, v));
	case HOSTD_CALL_EXIT:
		vm->exit_status = mrb_integer_p(v) ? mrb_integer(v) : 500;
		mrb_raise(mrb, vm->exit_class, "exit");
	case HOSTD_CALL_TIMEOUT:
		vm->stop = 1;
		vm->timed_out = 1;
		mrb_raise(mrb, vm->timeout_class, "hook exceeded its time limit");
	default:
		mrb_exc_raise(mrb, mrb_exc_new_str(mrb, vm->error_class, mrb_string_p(v) ? v : mrb_str_new_lit(mrb, "host error")));
	}
	return mrb_nil_value();
}

static mrb_value
dispatch(mrb_state *mrb, int op)
{
	const mrb_value *argv;
	mrb_int argc;
	mrb_get_args(mrb, "*", &argv, &argc);
	return call_go(mrb, op, argv, argc);
}

#define HOSTD_METHODS(X)                        \
	X(method, HOSTD_OP_METHOD)              \
	X(uri, HOSTD_OP_URI)                    \
	X(path, HOSTD_OP_PATH)                  \
	X(query_string, HOSTD_OP_QUERY_STRING)  \
	X(args, HOSTD_OP_ARGS)                  \
	X(host, HOSTD_OP_HOST)                  \
	X(scheme, HOSTD_OP_SCHEME)              \
	X(remote_addr, HOSTD_OP_REMOTE_ADDR)    \
	X(remote_port, HOSTD_OP_REMOTE_PORT)    \
	X(status, HOSTD_OP_STATUS)              \
	X(set_status, HOSTD_OP_SET_STATUS)      \
	X(redirect, HOSTD_OP_REDIRECT)          \
	X(exit, HOSTD_OP_EXIT)                  \
	X(basic_auth, HOSTD_OP_BASIC_AUTH)      \
	X(set_path, HOSTD_OP_SET_PATH)          \
	X(body, HOSTD_OP_BODY)                  \
	X(phase, HOSTD_OP_PHASE)                \
	X(hin_get, HOSTD_OP_HIN_GET)            \
	X(hout_get, HOSTD_OP_HOUT_GET)          \
	X(hout_set, HOSTD_OP_HOUT_SET)          \
	X(vars_get, HOSTD_OP_VARS_GET)          \
	X(vars_set, HOSTD_OP_VARS_SET)          \
	X(log, HOSTD_OP_LOG)                    \
	X(json_encode, HOSTD_OP_JSON_ENCODE)    \
	X(json_decode, HOSTD_OP_JSON_DECODE)    \
	X(sha256, HOSTD_OP_SHA256)              \
	X(hmac_sha256, HOSTD_OP_HMAC_SHA256)    \
	X(base64_encode, HOSTD_OP_BASE64_ENCODE) \
	X(base64_decode, HOSTD_OP_BASE64_DECODE) \
	X(time, HOSTD_OP_TIME)                  \
	X(shared_get, HOSTD_OP_SHARED_GET)      \
	X(shared_set, HOSTD_OP_SHARED_SET)      \
	X(shared_incr, HOSTD_OP_SHARED_INCR)    \
	X(shared_delete, HOSTD_OP_SHARED_DELETE) \
	X(session_get, HOSTD_OP_SESSION_GET)    \
	X(session_set, HOSTD_OP_SESSION_SET)    \
	X(session_delete, HOSTD_OP_SESSION_DELETE) \
	X(session_destroy, HOSTD_OP_SESSION_DESTROY) \
	X(session_regenerate_id, HOSTD_OP_SESSION_REGENERATE_ID) \
	X(fn, HOSTD_OP_FN)

#define HOSTD_DEFINE_FN(name, op) \
	static mrb_value m_##name(mrb_state *mrb, mrb_value self) { (void)self; return dispatch(mrb, op); }
HOSTD_METHODS(HOSTD_DEFINE_FN)

// r.write(*args) / r.puts(*args): each argument converted with to_s, then a
// newline for puts.
static mrb_value
write_args(mrb_state *mrb, int newline)
{
	const mrb_value *argv;
	mrb_int argc, i;
	mrb_value s;
	mrb_get_args(mrb, "*", &argv, &argc);
	for (i = 0; i < argc; i++) {
		s = mrb_obj_as_string(mrb, argv[i]);
		if (RSTRING_LEN(s) > 0) call_go(mrb, HOSTD_OP_WRITE, &s, 1);
	}
	if (newline) {
		s = mrb_str_new_lit(mrb, "\n");
		call_go(mrb, HOSTD_OP_WRITE, &s, 1);
	}
	return mrb_nil_value();
}

static mrb_value
m_hin_set(mrb_state *mrb, mrb_value self)
{
	(void)self;
	mrb_raise(mrb, ((hostd_vm *)mrb->ud)->error_class, "r.headers_in is read-only (writable: r.status, r.headers_out[name], r.vars[name])");
	return mrb_nil_value();
}

static mrb_value m_write(mrb_state *mrb, mrb_value self) { (void)self; return write_args(mrb, 0); }
static mrb_value m_puts(mrb_state *mrb, mrb_value self) { (void)self; return write_args(mrb, 1); }

static mrb_value
m_r(mrb_state *mrb, mrb_value self)
{
	(void)self;
	return ((hostd_vm *)mrb->ud)->req;
}

static mrb_value
new_of(mrb_state *mrb, struct RClass *c)
{
	return mrb_obj_value(mrb_obj_alloc(mrb, MRB_TT_OBJECT, c));
}

static mrb_value m_headers_in(mrb_state *mrb, mrb_value self) { (void)self; return new_of(mrb, ((hostd_vm *)mrb->ud)->hin_class); }
static mrb_value m_headers_out(mrb_state *mrb, mrb_value self) { (void)self; return new_of(mrb, ((hostd_vm *)mrb->ud)->hout_class); }
static mrb_value m_vars(mrb_state *mrb, mrb_value self) { (void)self; return new_of(mrb, ((hostd_vm *)mrb->ud)->vars_class); }
static mrb_value m_shared(mrb_state *mrb, mrb_value self) { (void)self; return new_of(mrb, ((hostd_vm *)mrb->ud)->shared_class); }
static mrb_value m_session(mrb_state *mrb, mrb_value self) { (void)self; return new_of(mrb, ((hostd_vm *)mrb->ud)->session_class); }

// Kernel-style puts/print/p (on self) log at info, like Lua's print: the
// arguments' to_s (inspect for p) joined by spaces.
static mrb_value
m_log_print(mrb_state *mrb, mrb_value self)
{
	const mrb_value *argv;
	mrb_int argc, i;
	mrb_value args[2];
	int inspect = mrb_get_mid(mrb) == mrb_intern_lit(mrb, "p");

	(void)self;
	mrb_get_args(mrb, "*", &argv, &argc);
	args[0] = mrb_str_new_lit(mrb, "info");
	args[1] = mrb_str_new_capa(mrb, 64);
	for (i = 0; i < argc; i++) {
		if (i > 0) mrb_str_cat_lit(mrb, args[1], " ");
		mrb_str_cat_str(mrb, args[1], inspect ? mrb_inspect(mrb, argv[i]) : mrb_obj_as_string(mrb, argv[i]));
	}
	call_go(mrb, HOSTD_OP_LOG, args, 2);
	if (inspect) return argc == 0 ? mrb_nil_value() : argc == 1 ? argv[0] : mrb_ary_new_from_values(mrb, argc, argv);
	return mrb_nil_value();
}

// Hostd.__last_match(md, str, offsets) sets $~ to md and $1..$9 to the
// groups of the match offsets (byte offsets into str, -1 for a group that
// did not take part; nil for a failed match), as Regexp#=~ does in Ruby.
// Globals are removed after every run (reset_body).
static mrb_value
m_set_last_match(mrb_state *mrb, mrb_value self)
{
	hostd_vm *vm = (hostd_vm *)mrb->ud;
	mrb_value md, str, offs, v;
	mrb_int i, b, e, n;

	(void)self;
	mrb_get_args(mrb, "ooo", &md, &str, &offs);
	mrb_gv_set(mrb, vm->match_syms[0], md);
	n = mrb_array_p(offs) ? RARRAY_LEN(offs) : 0;
	for (i = 1; i <= 9; i++) {
		v = mrb_nil_value();
		if (mrb_string_p(str) && 2 * i + 1 < n && mrb_integer_p(RARRAY_PTR(offs)[2 * i]) &&
		    mrb_integer_p(RARRAY_PTR(offs)[2 * i + 1])) {
			b = mrb_integer(RARRAY_PTR(offs)[2 * i]);
			e = mrb_integer(RARRAY_PTR(offs)[2 * i + 1]);
			if (b >= 0 && b <= e && e <= RSTRING_LEN(str))
				v = mrb_str_new(mrb, RSTRING_PTR(str) + b, e - b);
		}
		mrb_gv_set(mrb, vm->match_syms[i], v);
	}
	return md;
}

// Regexp.compile(source [, options]): what a Regexp literal calls each time
// it is evaluated. Regexps are frozen and hold only frozen data, so one
// made from the same source and options is reused, from a bounded cache
// no Ruby code can reach; other arguments go to Regexp.new.
static mrb_value
m_re_compile(mrb_state *mrb, mrb_value self)
{
	hostd_vm *vm = (hostd_vm *)mrb->ud;
	const mrb_value *argv;
	mrb_int argc;
	mrb_value key, re;

	mrb_int i;

	mrb_get_args(mrb, "*", &argv, &argc);
	// Only Regexp itself: a hook's subclass (its own methods) must never
	// reach the cache another run, of any tenant, reads.
	if (!mrb_class_p(self) || mrb_class_ptr(self) != vm->regexp_class ||
	    argc < 1 || argc > 3 || !mrb_string_p(argv[0]) || (argc > 1 && !mrb_nil_p(argv[1]) && !mrb_string_p(argv[1])))
		return mrb_funcall_argv(mrb, self, mrb_intern_lit(mrb, "new"), argc, argv);
	// The key is "options/source": options of letters only (a literal's
	// are), so the first '/' ends them.
	key = mrb_str_new_capa(mrb, RSTRING_LEN(argv[0]) + 8);
	if (argc > 1 && mrb_string_p(argv[1])) {
		for (i = 0; i < RSTRING_LEN(argv[1]); i++) {
			char c = RSTRING_PTR(argv[1])[i];
			if (c < 'a' || c > 'z')
				return mrb_funcall_argv(mrb, self, mrb_intern_lit(mrb, "new"), argc, argv);
		}
		mrb_str_cat_str(mrb, key, argv[1]);
	}
	mrb_str_cat_lit(mrb, key, "/");
	mrb_str_cat_str(mrb, key, argv[0]);
	re = mrb_hash_get(mrb, vm->re_cache, key);
	if (!mrb_nil_p(re)) return re;
	re = mrb_funcall_argv(mrb, self, mrb_intern_lit(mrb, "new"), argc, argv);
	if (mrb_hash_size(mrb, vm->re_cache) >= 256) mrb_hash_clear(mrb, vm->re_cache);
	mrb_hash_set(mrb, vm->re_cache, key, re);
	return re;
}

// load_prelude runs the Ruby prelude (Regexp, MatchData, the String
// methods that take a Regexp, and Hostd helpers written in Ruby).
static void
load_prelude(mrb_state *mrb, hostd_vm *vm)
{
	mrbc_context *cxt;
	if (!vm->prelude) return;
	cxt = mrbc_context_new(mrb);
	mrbc_filename(mrb, cxt, "hostd-prelude.rb");
	mrb_load_nstring_cxt(mrb, vm->prelude, vm->prelude_len, cxt);
	mrbc_context_free(mrb, cxt);
	if (mrb->exc) {
		mrb_value e = mrb_obj_value(mrb->exc);
		mrb->exc = NULL;
		mrb_exc_raise(mrb, e);
	}
}

// ---- Regexp fast path (issue 16's benchmark; regex_fast.go) ----
// Begin of the section: everything of the fast path is here, but for the
// one line in setup_body that defines Regexp#__match.

// HOSTD_RE_FAST_OFFS is how many offsets (2 per group and the match) the
// fast path takes; a pattern with more groups takes the general path.
#define HOSTD_RE_FAST_OFFS (2 * 32)

// re_fast_last_match sets $~ to md and $1..$9 to the groups of offs (n
// byte offsets into str), as Hostd.__last_match does.
static void
re_fast_last_match(mrb_state *mrb, hostd_vm *vm, mrb_value md, mrb_value str, const int64_t *offs, int n)
{
	mrb_value v;
	int i;

	mrb_gv_set(mrb, vm->match_syms[0], md);
	for (i = 1; i <= 9; i++) {
		v = mrb_nil_value();
		if (2 * i + 1 < n && offs[2 * i] >= 0 && offs[2 * i] <= offs[2 * i + 1] && offs[2 * i + 1] <= RSTRING_LEN(str))
			v = mrb_str_new(mrb, RSTRING_PTR(str) + offs[2 * i], (mrb_int)(offs[2 * i + 1] - offs[2 * i]));
		mrb_gv_set(mrb, vm->match_syms[i], v);
	}
}

// Regexp#__match(str, bytepos, md): with md true, Regexp#match's work
// from the byte offset on: the MatchData of the first match of self in
// str at or after bytepos, or nil, with $~ and $1..$9 set; with md false,
// whether there is one (match?, which sets nothing). The offsets come
// from one Go call that reads the strings in place (hostdReMatch), with
// no encoding of arguments and results, and the MatchData is made here
// as MatchData#initialize makes it (the core is frozen: no hook can
// change that). Errors (bad pattern, limits, the run ended) and patterns
// with more groups than HOSTD_RE_FAST_OFFS holds take the general path,
// Regexp#__match_slow, which raises them as before.
static mrb_value
re_fast_match(mrb_state *mrb, hostd_vm *vm, mrb_value self, mrb_value str, mrb_int pos, mrb_bool want_md)
{
	mrb_value src, flags, ary, md, fstr, argv[3], vals[HOSTD_RE_FAST_OFFS];
	int64_t offs[HOSTD_RE_FAST_OFFS];
	int n, i;

	if (!vm->handle) mrb_raise(mrb, vm->error_class, "not available outside a hook run");
	src = mrb_iv_get(mrb, self, vm->re_fast_syms[0]);
	flags = mrb_iv_get(mrb, self, vm->re_fast_syms[1]);
	n = -2;
	if (mrb_string_p(src) && mrb_string_p(flags) && mrb_string_p(str))
		n = hostdReMatch(vm->handle, RSTRING_PTR(src), (size_t)RSTRING_LEN(src), RSTRING_PTR(flags),
				 (size_t)RSTRING_LEN(flags), RSTRING_PTR(str), (size_t)RSTRING_LEN(str), (int64_t)pos,
				 offs, HOSTD_RE_FAST_OFFS);
	if (n < -1 || n > HOSTD_RE_FAST_OFFS) {
		argv[0] = str;
		argv[1] = mrb_int_value(mrb, pos);
		argv[2] = mrb_bool_value(want_md);
		return mrb_funcall_argv(mrb, self, mrb_intern_lit(mrb, "__match_slow"), 3, argv);
	}
	if (!want_md) return mrb_bool_value(n >= 0);
	if (n < 0) {
		re_fast_last_match(mrb, vm, mrb_nil_value(), str, offs, 0);
		return mrb_nil_value();
	}
	for (i = 0; i < n; i++)
		vals[i] = mrb_int_value(mrb, (mrb_int)offs[i]);
	ary = mrb_ary_new_from_values(mrb, n, vals);
	// MatchData#initialize: @string is str if frozen, else a frozen copy.
	fstr = str;
	if (!mrb_frozen_p(mrb_basic_ptr(str))) {
		if (mrb_obj_class(mrb, str) == mrb->string_class) {
			fstr = mrb_str_dup(mrb, str);
			MRB_SET_FROZEN_FLAG(mrb_basic_ptr(fstr));
		} else {
			fstr = mrb_funcall_argv(mrb, str, mrb_intern_lit(mrb, "dup"), 0, NULL);
			fstr = mrb_funcall_argv(mrb, fstr, mrb_intern_lit(mrb, "freeze"), 0, NULL);
		}
	}
	md = mrb_obj_value(mrb_obj_alloc(mrb, MRB_TT_OBJECT, vm->matchdata_class));
	mrb_iv_set(mrb, md, vm->re_fast_syms[2], self);
	mrb_iv_set(mrb, md, vm->re_fast_syms[3], fstr);
	mrb_iv_set(mrb, md, vm->re_fast_syms[4], ary);
	re_fast_last_match(mrb, vm, md, str, offs, n);
	return md;
}

static mrb_value
m_re_match_fast(mrb_state *mrb, mrb_value self)
{
	hostd_vm *vm = (hostd_vm *)mrb->ud;
	mrb_value str;
	mrb_int pos;
	mrb_bool want_md;

	mrb_get_args(mrb, "oib", &str, &pos, &want_md);
	// As the Ruby Regexp#match: nil matches nothing (and resets $~),
	// anything else but a String is matched as its to_s.
	if (mrb_nil_p(str)) {
		if (!want_md) return mrb_false_value();
		re_fast_last_match(mrb, vm, mrb_nil_value(), str, NULL, 0);
		return mrb_nil_value();
	}
	if (!mrb_string_p(str) || mrb_obj_class(mrb, str) != mrb->string_class)
		str = mrb_funcall_argv(mrb, str, mrb_intern_lit(mrb, "to_s"), 0, NULL);
	return re_fast_match(mrb, vm, self, str, pos, want_md);
}

// re_fast_setup defines Regexp#__match (setup_body, after the prelude).
static void
re_fast_setup(mrb_state *mrb, hostd_vm *vm, struct RClass *regexp)
{
	vm->re_fast_syms[0] = mrb_intern_lit(mrb, "@source");
	vm->re_fast_syms[1] = mrb_intern_lit(mrb, "@flags");
	vm->re_fast_syms[2] = mrb_intern_lit(mrb, "@regexp");
	vm->re_fast_syms[3] = mrb_intern_lit(mrb, "@string");
	vm->re_fast_syms[4] = mrb_intern_lit(mrb, "@offs");
	vm->matchdata_class = mrb_class_get(mrb, "MatchData");
	mrb_define_method(mrb, regexp, "__match", m_re_match_fast, MRB_ARGS_REQ(3));
}

// ---- end of the Regexp fast path ----

// ---- issue 16 part B: outbound HTTP ----

// Hostd::HTTP.request(url:, method:, headers:, body:, timeout:, max_body:)
// (or one Hash): Go returns a Hash of status, headers and body, wrapped
// here in a Hostd::HTTP::Response.
static mrb_value
m_http_request(mrb_state *mrb, mrb_value self)
{
	hostd_vm *vm = (hostd_vm *)mrb->ud;
	const mrb_value *argv;
	mrb_int argc;
	mrb_value h, res;

	(void)self;
	mrb_get_args(mrb, "*", &argv, &argc);
	h = call_go(mrb, HOSTD_OP_HTTP_REQUEST, argv, argc);
	res = new_of(mrb, vm->http_response_class);
	if (mrb_hash_p(h)) {
		mrb_iv_set(mrb, res, mrb_intern_lit(mrb, "@status"), mrb_hash_get(mrb, h, mrb_str_new_lit(mrb, "status")));
		mrb_iv_set(mrb, res, mrb_intern_lit(mrb, "@headers"), mrb_hash_get(mrb, h, mrb_str_new_lit(mrb, "headers")));
		mrb_iv_set(mrb, res, mrb_intern_lit(mrb, "@body"), mrb_hash_get(mrb, h, mrb_str_new_lit(mrb, "body")));
	}
	return res;
}

static mrb_value m_http_status(mrb_state *mrb, mrb_value self) { return mrb_iv_get(mrb, self, mrb_intern_lit(mrb, "@status")); }
static mrb_value m_http_headers(mrb_state *mrb, mrb_value self) { return mrb_iv_get(mrb, self, mrb_intern_lit(mrb, "@headers")); }
static mrb_value m_http_body(mrb_state *mrb, mrb_value self) { return mrb_iv_get(mrb, self, mrb_intern_lit(mrb, "@body")); }

#define HOSTD_METHODS_B(X)                          \
	X(shared_add, HOSTD_OP_SHARED_ADD)          \
	X(shared_replace, HOSTD_OP_SHARED_REPLACE)  \
	X(shared_ttl, HOSTD_OP_SHARED_TTL)          \
	X(shared_expire, HOSTD_OP_SHARED_EXPIRE)    \
	X(shared_get_keys, HOSTD_OP_SHARED_GET_KEYS) \
	X(shared_cas, HOSTD_OP_SHARED_CAS)          \
	X(files_read, HOSTD_OP_FILE_READ)           \
	X(files_exist, HOSTD_OP_FILE_EXIST)         \
	X(files_open, HOSTD_OP_FILE_OPEN)           \
	X(files_fread, HOSTD_OP_FILE_FREAD)         \
	X(files_gets, HOSTD_OP_FILE_GETS)           \
	X(files_write, HOSTD_OP_FILE_WRITE)         \
	X(files_close, HOSTD_OP_FILE_CLOSE)         \
	X(files_children, HOSTD_OP_DIR_CHILDREN)
HOSTD_METHODS_B(HOSTD_DEFINE_FN)

// require_relative(name): Go finds and compiles the file (once per
// version) and answers its proc, or false when this run loaded it
// already; the proc runs here in the run's top-level class and self, so
// its methods and constants are the hook's. The run's deadline and memory
// budget stay as they are.
struct require_args {
	hostd_vm *vm;
	struct RProc *proc;
};

static mrb_value
require_body(mrb_state *mrb, mrb_value data)
{
	struct require_args *a = (struct require_args *)mrb_cptr(data);
	MRB_PROC_SET_TARGET_CLASS(a->proc, a->vm->run_class);
	mrb_yield_with_class(mrb, mrb_obj_value(a->proc), 0, NULL, a->vm->run_self, a->vm->run_class);
	return mrb_true_value();
}

static mrb_value
require_ensure(mrb_state *mrb, mrb_value data)
{
	struct require_args *a = (struct require_args *)mrb_cptr(data);
	(void)mrb;
	MRB_PROC_SET_TARGET_CLASS(a->proc, a->vm->script_class);
	return mrb_nil_value();
}

static mrb_value
m_require_relative(mrb_state *mrb, mrb_value self)
{
	hostd_vm *vm = (hostd_vm *)mrb->ud;
	mrb_value name, r, data;
	struct require_args a;

	(void)self;
	mrb_get_args(mrb, "S", &name);
	if (!vm->run_class) mrb_raise(mrb, vm->error_class, "require_relative is only available in a hook run");
	r = call_go(mrb, HOSTD_OP_REQUIRE_RELATIVE, &name, 1);
	if (!mrb_integer_p(r)) return mrb_false_value();
	a.vm = vm;
	a.proc = (struct RProc *)(uintptr_t)mrb_integer(r);
	data = mrb_cptr_value(mrb, &a);
	return mrb_ensure(mrb, require_body, data, require_ensure, data);
}

// The Ruby side of File and Dir over Hostd::Files (files.go).
static const char hostd_prelude[] =
	"class File\n"
	"  attr_reader :path\n"
	"  def self.read(path) Hostd::Files.read(path) end\n"
	"  def self.exist?(path) Hostd::Files.exist(path) end\n"
	"  def self.write(path, data) open(path, 'w') { |f| f.write(data) } end\n"
	"  def self.open(path, mode = 'r')\n"
	"    f = new(path, mode)\n"
	"    return f unless block_given?\n"
	"    begin\n"
	"      yield f\n"
	"    ensure\n"
	"      f.close unless f.closed?\n"
	"    end\n"
	"  end\n"
	"  def initialize(path, mode = 'r')\n"
	"    @path = path\n"
	"    @fd = Hostd::Files.open(path, mode)\n"
	"  end\n"
	"  def read(length = nil) Hostd::Files.fread(__fd, length) end\n"
	"  def gets() Hostd::Files.gets(__fd) end\n"
	"  def each_line\n"
	"    return to_enum(:each_line) unless block_given?\n"
	"    while (l = gets)\n"
	"      yield l\n"
	"    end\n"
	"    self\n"
	"  end\n"
	"  def readlines\n"
	"    a = []\n"
	"    each_line { |l| a << l }\n"
	"    a\n"
	"  end\n"
	"  def write(*s)\n"
	"    n = 0\n"
	"    s.each { |x| n += Hostd::Files.write(__fd, x.to_s) }\n"
	"    n\n"
	"  end\n"
	"  def <<(s) write(s); self end\n"
	"  def print(*s) write(*s); nil end\n"
	"  def puts(*s)\n"
	"    s = [''] if s.empty?\n"
	"    s.each { |x| x = x.to_s; write(x.end_with?(\"\\n\") ? x : x + \"\\n\") }\n"
	"    nil\n"
	"  end\n"
	"  def close\n"
	"    Hostd::Files.close(@fd) if @fd\n"
	"    @fd = nil\n"
	"  end\n"
	"  def closed?() @fd.nil? end\n"
	"  private\n"
	"  def __fd\n"
	"    raise Hostd::Error, 'closed stream' unless @fd\n"
	"    @fd\n"
	"  end\n"
	"end\n"
	"class Dir\n"
	"  def self.children(path) Hostd::Files.children(path) end\n"
	"  def self.entries(path) ['.', '..'] + children(path) end\n"
	"end\n";

static void
setup_part_b(mrb_state *mrb, hostd_vm *vm)
{
	struct RClass *m = mrb_define_module_under(mrb, vm->hostd_mod, "HTTP");
	struct RClass *c;
	mrb_define_module_function(mrb, m, "request", m_http_request, MRB_ARGS_ANY());
	c = vm->http_response_class = mrb_define_class_under(mrb, m, "Response", mrb->object_class);
	mrb_define_method(mrb, c, "status", m_http_status, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "headers", m_http_headers, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "body", m_http_body, MRB_ARGS_NONE());

	m = mrb_define_module_under(mrb, vm->hostd_mod, "Files");
	mrb_define_module_function(mrb, m, "read", m_files_read, MRB_ARGS_REQ(1));
	mrb_define_module_function(mrb, m, "exist", m_files_exist, MRB_ARGS_REQ(1));
	mrb_define_module_function(mrb, m, "open", m_files_open, MRB_ARGS_ARG(1, 1));
	mrb_define_module_function(mrb, m, "fread", m_files_fread, MRB_ARGS_ARG(1, 1));
	mrb_define_module_function(mrb, m, "gets", m_files_gets, MRB_ARGS_REQ(1));
	mrb_define_module_function(mrb, m, "write", m_files_write, MRB_ARGS_REQ(2));
	mrb_define_module_function(mrb, m, "close", m_files_close, MRB_ARGS_REQ(1));
	mrb_define_module_function(mrb, m, "children", m_files_children, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, mrb->kernel_module, "require_relative", m_require_relative, MRB_ARGS_REQ(1));
	mrb_load_string(mrb, hostd_prelude);
	if (mrb->exc) {
		mrb_value e = mrb_obj_value(mrb->exc);
		mrb->exc = NULL;
		mrb_exc_raise(mrb, e);
	}

	c = vm->shared_class;
	mrb_define_method(mrb, c, "add", m_shared_add, MRB_ARGS_ARG(2, 1));
	mrb_define_method(mrb, c, "replace", m_shared_replace, MRB_ARGS_ARG(2, 1));
	mrb_define_method(mrb, c, "ttl", m_shared_ttl, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, c, "expire", m_shared_expire, MRB_ARGS_REQ(2));
	mrb_define_method(mrb, c, "get_keys", m_shared_get_keys, MRB_ARGS_OPT(1));
	mrb_define_method(mrb, c, "cas", m_shared_cas, MRB_ARGS_ARG(3, 1));
	mrb_define_method(mrb, c, "set_if", m_shared_cas, MRB_ARGS_ARG(3, 1));
}

// ---- eval size limit ----

static mrb_value
eval_guard(mrb_state *mrb, mrb_value self, int which)
{
	hostd_vm *vm = (hostd_vm *)mrb->ud;
	mrb_int argc = mrb_get_argc(mrb);
	const mrb_value *argv = mrb_get_argv(mrb);
	if (argc > 0 && mrb_string_p(argv[0]) && RSTRING_LEN(argv[0]) > HOSTD_MAX_EVAL)
		mrb_raisef(mrb, E_ARGUMENT_ERROR, "eval: the source (%i bytes) is larger than %i bytes",
			   RSTRING_LEN(argv[0]), (mrb_int)HOSTD_MAX_EVAL);
	return vm->eval_fn[which](mrb, self);
}

static mrb_value m_eval_guard(mrb_state *mrb, mrb_value self) { return eval_guard(mrb, self, 0); }
static mrb_value m_instance_eval_guard(mrb_state *mrb, mrb_value self) { return eval_guard(mrb, self, 1); }
static mrb_value m_class_eval_guard(mrb_state *mrb, mrb_value self) { return eval_guard(mrb, self, 2); }

// guard_eval puts eval_guard in front of mruby-eval's C functions.
static void
guard_eval(mrb_state *mrb, hostd_vm *vm)
{
	struct RClass *bob = mrb_class_get(mrb, "BasicObject");
	mrb_method_t m;

	m = mrb_method_search(mrb, mrb->kernel_module, mrb_intern_lit(mrb, "eval"));
	vm->eval_fn[0] = MRB_METHOD_CFUNC(m);
	m = mrb_method_search(mrb, bob, mrb_intern_lit(mrb, "instance_eval"));
	vm->eval_fn[1] = MRB_METHOD_CFUNC(m);
	m = mrb_method_search(mrb, mrb->module_class, mrb_intern_lit(mrb, "class_eval"));
	vm->eval_fn[2] = MRB_METHOD_CFUNC(m);
	if (!vm->eval_fn[0] || !vm->eval_fn[1] || !vm->eval_fn[2])
		mrb_raise(mrb, E_RUNTIME_ERROR, "mruby-eval's methods are not C functions");
	mrb_define_module_function(mrb, mrb->kernel_module, "eval", m_eval_guard, MRB_ARGS_ARG(1, 3));
	mrb_define_method(mrb, bob, "instance_eval", m_instance_eval_guard, MRB_ARGS_OPT(3) | MRB_ARGS_BLOCK());
	mrb_define_method(mrb, mrb->module_class, "module_eval", m_class_eval_guard, MRB_ARGS_OPT(3) | MRB_ARGS_BLOCK());
	mrb_define_method(mrb, mrb->module_class, "class_eval", m_class_eval_guard, MRB_ARGS_OPT(3) | MRB_ARGS_BLOCK());
}

// ---- VM setup ----

static int
freeze_const(mrb_state *mrb, mrb_sym sym, mrb_value v, void *p)
{
	(void)mrb;
	(void)sym;
	(void)p;
	// Every object a constant holds (strings, arrays, hashes, Random::DEFAULT
	// ...): no run may leave state, such as an instance variable, on an
	// object the next run (another tenant's, with a shared VM) reaches.
	if (!mrb_immediate_p(v))
		MRB_SET_FROZEN_FLAG(mrb_basic_ptr(v));
	return 0;
}

// freeze_core freezes every class, module and singleton class that exists
// after setup, and the String/Array/Hash values of their constants, so
// that no hook can change what the next hook sees (monkey-patching raises
// FrozenError).
static int
freeze_obj(mrb_state *mrb, struct RBasic *obj, void *data)
{
	(void)data;
	switch (obj->tt) {
	case MRB_TT_CLASS:
	case MRB_TT_MODULE:
	case MRB_TT_SCLASS:
		// No Class#allocate or Class#new for a class whose instances
		// carry C state only their own constructor sets up (patch 0001
		// covers Proc, Method, UnboundMethod, Struct and Rational; this
		// catches any other class of these instance types).
		if (obj->tt == MRB_TT_CLASS) {
			struct RClass *c = (struct RClass *)obj;
			switch (MRB_INSTANCE_TT(c)) {
			case MRB_TT_PROC:
			case MRB_TT_ENV:
			case MRB_TT_BREAK:
			case MRB_TT_CPTR:
				MRB_UNDEF_ALLOCATOR(c);
				break;
			default:
				break;
			}
		}
		MRB_SET_FROZEN_FLAG(obj);
		mrb_iv_foreach(mrb, mrb_obj_value(obj), freeze_const, NULL);
		break;
	default:
		break;
	}
	return MRB_EACH_OBJ_OK;
}

static mrb_value
setup_body(mrb_state *mrb, void *ud)
{
	hostd_vm *vm = (hostd_vm *)ud;
	struct RClass *h, *c;

	h = vm->hostd_mod = mrb_define_module(mrb, "Hostd");
	vm->error_class = mrb_define_class_under(mrb, h, "Error", mrb->eStandardError_class);
	// Exit and TimeoutError are not StandardErrors: `rescue => e` does not
	// stop r.exit, and nothing can stop a timeout (the hook raises again).
	vm->exit_class = mrb_define_class_under(mrb, h, "Exit", mrb->eException_class);
	vm->timeout_class = mrb_define_class_under(mrb, h, "TimeoutError", mrb->eException_class);

	mrb_define_module_function(mrb, h, "log", m_log, MRB_ARGS_REQ(2));
	mrb_define_module_function(mrb, h, "json_encode", m_json_encode, MRB_ARGS_REQ(1));
	mrb_define_module_function(mrb, h, "json_decode", m_json_decode, MRB_ARGS_REQ(1));
	mrb_define_module_function(mrb, h, "sha256", m_sha256, MRB_ARGS_REQ(1));
	mrb_define_module_function(mrb, h, "hmac_sha256", m_hmac_sha256, MRB_ARGS_REQ(2));
	mrb_define_module_function(mrb, h, "base64_encode", m_base64_encode, MRB_ARGS_REQ(1));
	mrb_define_module_function(mrb, h, "base64", m_base64_encode, MRB_ARGS_REQ(1));
	mrb_define_module_function(mrb, h, "base64_decode", m_base64_decode, MRB_ARGS_REQ(1));
	mrb_define_module_function(mrb, h, "time", m_time, MRB_ARGS_NONE());
	mrb_define_module_function(mrb, h, "shared", m_shared, MRB_ARGS_NONE());
	mrb_define_module_function(mrb, h, "__fn", m_fn, MRB_ARGS_ANY());
	mrb_define_module_function(mrb, h, "__last_match", m_set_last_match, MRB_ARGS_REQ(3));

	c = vm->request_class = mrb_define_class_under(mrb, h, "Request", mrb->object_class);
	mrb_define_method(mrb, c, "method", m_method, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "uri", m_uri, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "path", m_path, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "query", m_args, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "args", m_args, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "query_string", m_query_string, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "host", m_host, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "scheme", m_scheme, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "remote_addr", m_remote_addr, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "remote_port", m_remote_port, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "status", m_status, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "status=", m_set_status, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, c, "write", m_write, MRB_ARGS_ANY());
	mrb_define_method(mrb, c, "puts", m_puts, MRB_ARGS_ANY());
	mrb_define_method(mrb, c, "redirect", m_redirect, MRB_ARGS_ARG(1, 1));
	mrb_define_method(mrb, c, "exit", m_exit, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, c, "basic_auth", m_basic_auth, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "set_path", m_set_path, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, c, "body", m_body, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "phase", m_phase, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "headers_in", m_headers_in, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "headers_out", m_headers_out, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "vars", m_vars, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "session", m_session, MRB_ARGS_NONE());

	c = vm->hin_class = mrb_define_class_under(mrb, h, "HeadersIn", mrb->object_class);
	mrb_define_method(mrb, c, "[]", m_hin_get, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, c, "[]=", m_hin_set, MRB_ARGS_REQ(2));
	c = vm->hout_class = mrb_define_class_under(mrb, h, "HeadersOut", mrb->object_class);
	mrb_define_method(mrb, c, "[]", m_hout_get, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, c, "[]=", m_hout_set, MRB_ARGS_REQ(2));
	c = vm->vars_class = mrb_define_class_under(mrb, h, "Vars", mrb->object_class);
	mrb_define_method(mrb, c, "[]", m_vars_get, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, c, "[]=", m_vars_set, MRB_ARGS_REQ(2));
	c = vm->shared_class = mrb_define_class_under(mrb, h, "Shared", mrb->object_class);
	mrb_define_method(mrb, c, "get", m_shared_get, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, c, "set", m_shared_set, MRB_ARGS_ARG(2, 1));
	mrb_define_method(mrb, c, "incr", m_shared_incr, MRB_ARGS_ARG(1, 3));
	mrb_define_method(mrb, c, "delete", m_shared_delete, MRB_ARGS_REQ(1));
	c = vm->session_class = mrb_define_class_under(mrb, h, "Session", mrb->object_class);
	mrb_define_method(mrb, c, "get", m_session_get, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, c, "set", m_session_set, MRB_ARGS_REQ(2));
	mrb_define_method(mrb, c, "delete", m_session_delete, MRB_ARGS_REQ(1));
	mrb_define_method(mrb, c, "destroy", m_session_destroy, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "regenerate_id", m_session_regenerate_id, MRB_ARGS_NONE());

	setup_part_b(mrb, vm); // issue 16 part B

	// The class every run's fresh, anonymous top-level class inherits from.
	c = vm->script_class = mrb_define_class_under(mrb, h, "Script", mrb->object_class);
	mrb_define_method(mrb, c, "r", m_r, MRB_ARGS_NONE());
	mrb_define_method(mrb, c, "puts", m_log_print, MRB_ARGS_ANY());
	mrb_define_method(mrb, c, "print", m_log_print, MRB_ARGS_ANY());
	mrb_define_method(mrb, c, "p", m_log_print, MRB_ARGS_ANY());

	// Symbol.all_symbols would list symbols interned by earlier requests.
	mrb_undef_class_method(mrb, mrb->symbol_class, "all_symbols");
	// The collector's settings are the VM's, not the run's: a run that
	// disabled it would leave the next run (another tenant's) a VM that
	// never collects.
	c = mrb_module_get(mrb, "GC");
	mrb_undef_class_method(mrb, c, "disable");
	mrb_undef_class_method(mrb, c, "enable");
	mrb_undef_class_method(mrb, c, "interval_ratio=");
	mrb_undef_class_method(mrb, c, "step_ratio=");
	mrb_undef_class_method(mrb, c, "generational_mode=");
	guard_eval(mrb, vm);

	// NilClass.allocate made a (truthy) object of class NilClass.
	MRB_UNDEF_ALLOCATOR(mrb->nil_class);
	MRB_UNDEF_ALLOCATOR(mrb->false_class);

	load_prelude(mrb, vm);
	vm->re_cache = mrb_hash_new(mrb);
	mrb_gc_register(mrb, vm->re_cache);
	{
		char name[3] = {'$', '~', 0};
		int i;
		vm->match_syms[0] = mrb_intern(mrb, name, 2);
		for (i = 1; i <= 9; i++) {
			name[1] = (char)('0' + i);
			vm->match_syms[i] = mrb_intern(mrb, name, 2);
		}
	}
	if (vm->prelude) {
		c = vm->regexp_class = mrb_class_get(mrb, "Regexp");
		mrb_define_class_method(mrb, c, "compile", m_re_compile, MRB_ARGS_ANY());
		re_fast_setup(mrb, vm, c); // Regexp fast path
	}

	mrb_full_gc(mrb);
	mrb_objspace_each_objects(mrb, freeze_obj, NULL);
	return mrb_nil_value();
}

static char *
dup_cstr(const char *s, size_t n)
{
	char *p = (char *)malloc(n + 1);
	if (!p) return NULL;
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

// describe_value names v's class for an error message, in malloc'd
// memory; v's own methods are not called.
static mrb_value
classname_body(mrb_state *mrb, void *ud)
{
	return mrb_format(mrb, "a value of class %C", mrb_obj_class(mrb, *(mrb_value *)ud));
}

static char *
describe_value(mrb_state *mrb, mrb_value v)
{
	mrb_bool err;
	int ai = mrb_gc_arena_save(mrb);
	mrb_value s = mrb_protect_error(mrb, classname_body, &v, &err);
	char *out;
	if (!err && mrb_string_p(s))
		out = dup_cstr(RSTRING_PTR(s), RSTRING_LEN(s));
	else
		out = dup_cstr("a value", 7);
	mrb_gc_arena_restore(mrb, ai);
	return out;
}

struct msg_args {
	mrb_value exc;
	const char *file;
	mrb_value msg;
	int line;
};

static mrb_value
msg_body(mrb_state *mrb, void *ud)
{
	struct msg_args *a = (struct msg_args *)ud;
	// No Ruby method of the exception (to_s, message, inspect) is called:
	// they may be the hook's own and run here without the time limit.
	struct RException *e = mrb_exc_ptr(a->exc);
	mrb_value bt, m;
	mrb_int i;
	size_t flen = a->file ? strlen(a->file) : 0;

	if ((e->flags & MRB_EXC_MESG_STRING_FLAG) && e->mesg) {
		m = mrb_str_new(mrb, RSTR_PTR(e->mesg), RSTR_LEN(e->mesg));
	} else {
		// mrb_exc_new_str keeps the message as the "mesg" ivar.
		m = mrb_obj_iv_get(mrb, (struct RObject *)e, mrb_intern_lit(mrb, "mesg"));
		if (mrb_string_p(m))
			m = mrb_str_new(mrb, RSTRING_PTR(m), RSTRING_LEN(m));
		else
			m = mrb_str_new_lit(mrb, "exception");
	}
	a->msg = mrb_format(mrb, "%v (%C)", m, mrb_obj_class(mrb, a->exc));
	bt = mrb_exc_backtrace(mrb, a->exc);
	if (!mrb_array_p(bt) || !a->file) return mrb_nil_value();
	for (i = 0; i < RARRAY_LEN(bt); i++) {
		mrb_value e = RARRAY_PTR(bt)[i];
		const char *s;
		if (!mrb_string_p(e) || (size_t)RSTRING_LEN(e) <= flen) continue;
		s = RSTRING_PTR(e);
		if (memcmp(s, a->file, flen) == 0 && s[flen] == ':') {
			a->line = atoi(s + flen + 1);
			break;
		}
	}
	return mrb_nil_value();
}

static char *
describe(mrb_state *mrb, mrb_value exc, const char *file, int *line)
{
	struct msg_args a = {exc, file, mrb_nil_value(), 0};
	mrb_bool err;
	int ai = mrb_gc_arena_save(mrb);
	char *out;
	mrb_protect_error(mrb, msg_body, &a, &err);
	*line = a.line;
	if (mrb_string_p(a.msg))
		out = dup_cstr(RSTRING_PTR(a.msg), RSTRING_LEN(a.msg));
	else
		out = dup_cstr("exception (message unavailable)", 31);
	mrb_gc_arena_restore(mrb, ai);
	return out;
}

hostd_vm *
hostd_vm_new(size_t mem_limit, const char *prelude, size_t prelude_len, char **err)
{
	hostd_vm *vm = (hostd_vm *)calloc(1, sizeof(hostd_vm));
	mrb_bool failed;
	mrb_value r;

	*err = NULL;
	if (!vm) return NULL;
	vm->limit = mem_limit;
	vm->req = mrb_nil_value();
	vm->re_cache = mrb_nil_value();
	vm->prelude = prelude;
	vm->prelude_len = prelude_len;
	vm->mrb = mrb_open_allocf(hostd_allocf, vm);
	if (!vm->mrb) {
		*err = dup_cstr("mrb_open failed (memory limit too low?)", 39);
		free(vm);
		return NULL;
	}
	// The first allocation is the mrb_state itself: a different size means
	// the library was built with other defines than this file.
	if (vm->first_alloc != sizeof(mrb_state)) {
		*err = dup_cstr("libmruby was built with different defines than scripting/mruby (sizeof(mrb_state) differs); rebuild it with make libmruby", 119);
		hostd_vm_free(vm);
		return NULL;
	}
	vm->mrb->ud = vm;
	vm->mrb->compile_interrupt = hostd_compile_interrupt;
	vm->gc_root = mrb_intern_lit(vm->mrb, "_gc_root_");
	r = mrb_protect_error(vm->mrb, setup_body, vm, &failed);
	vm->prelude = NULL; // Go memory: not kept past this call
	if (failed) {
		int line;
		*err = describe(vm->mrb, r, NULL, &line);
		hostd_vm_free(vm);
		return NULL;
	}
	vm->base_symidx = vm->mrb->symidx;
	return vm;
}

void
hostd_vm_free(hostd_vm *vm)
{
	if (!vm) return;
	free_pending(vm);
	if (vm->mrb) mrb_close(vm->mrb);
	free(vm);
}

size_t hostd_vm_mem(hostd_vm *vm) { return vm->used; }
static uint32_t hostd_vm_new_syms(hostd_vm *vm) { return (uint32_t)(vm->mrb->symidx - vm->base_symidx); }

// ---- compile ----

// last_stmt_is_return reports whether the program's last top-level
// statement is `return`: tree is (SCOPE locals BEGIN stmt...).
static int
last_stmt_is_return(mrb_ast_node *tree)
{
	mrb_ast_node *body, *l;
	if (!tree || (intptr_t)tree->car != NODE_SCOPE || !tree->cdr) return 0;
	body = tree->cdr->cdr;
	if (!body || (intptr_t)body->car != NODE_BEGIN || !(l = body->cdr)) return 0;
	while (l->cdr) l = l->cdr;
	return l->car && (intptr_t)l->car->car == NODE_RETURN;
}

struct compile_args {
	const char *src;
	size_t len;
	const char *file;
	mrbc_context *cxt;
	struct mrb_parser_state *p;
	struct RProc *proc;
	int last_return;
};

static mrb_value
compile_body(mrb_state *mrb, void *ud)
{
	struct compile_args *a = (struct compile_args *)ud;
	a->cxt = mrbc_context_new(mrb);
	mrbc_filename(mrb, a->cxt, a->file);
	a->cxt->capture_errors = TRUE;
	a->p = mrb_parse_nstring(mrb, a->src, a->len, a->cxt);
	if (!a->p || a->p->nerr) return mrb_nil_value();
	a->last_return = last_stmt_is_return(a->p->tree);
	a->proc = mrb_generate_code(mrb, a->p);
	if (a->proc) mrb_gc_register(mrb, mrb_obj_value(a->proc));
	return mrb_nil_value();
}

int
hostd_vm_compile(hostd_vm *vm, const char *src, size_t len, const char *file, int64_t timeout_ns,
		 struct RProc **proc, int *last_return, int *line, char **msg)
{
	mrb_state *mrb = vm->mrb;
	struct compile_args a = {src, len, file, NULL, NULL, NULL, 0};
	mrb_bool failed;
	mrb_value r;
	int ai = mrb_gc_arena_save(mrb);
	int rc = 0;

	*proc = NULL;
	*line = 0;
	*msg = NULL;
	set_deadline(vm, timeout_ns);
	vm->deadline_active = 1;
	r = mrb_protect_error(mrb, compile_body, &a, &failed);
	vm->deadline_active = 0;
	if (vm->timed_out) {
		if (a.proc) mrb_gc_unregister(mrb, mrb_obj_value(a.proc));
		a.proc = NULL;
		*msg = dup_cstr("compile time limit exceeded", 27);
		rc = 3;
	} else if (failed) {
		*msg = describe(mrb, r, NULL, line);
		rc = 2;
	} else if (!a.p) {
		*msg = dup_cstr("parser failed", 13);
		rc = 2;
	} else if (a.p->nerr) {
		const char *m = a.p->error_buffer[0].message;
		*line = a.p->error_buffer[0].lineno;
		*msg = m ? dup_cstr(m, strlen(m)) : dup_cstr("syntax error", 12);
		rc = 1;
	} else if (!a.proc) {
		*msg = dup_cstr("code generation failed", 22);
		rc = 2;
	} else {
		*proc = a.proc;
		*last_return = a.last_return;
	}
	if (a.p) mrb_parser_free(a.p);
	if (a.cxt) mrbc_context_free(mrb, a.cxt);
	mrb_gc_arena_restore(mrb, ai);
	return rc;
}

static mrb_value
release_body(mrb_state *mrb, void *ud)
{
	mrb_gc_unregister(mrb, mrb_obj_value((struct RProc *)ud));
	return mrb_nil_value();
}

void
hostd_vm_release(hostd_vm *vm, struct RProc *proc)
{
	mrb_bool failed;
	mrb_protect_error(vm->mrb, release_body, proc, &failed);
}

// ---- bytecode: compile once, load into any VM ----

struct dump_args {
	struct RProc *proc;
	uint8_t *bin;
	size_t len;
	int rc;
};

static mrb_value
dump_body(mrb_state *mrb, void *ud)
{
	struct dump_args *a = (struct dump_args *)ud;
	a->rc = mrb_dump_irep(mrb, a->proc->body.irep, MRB_DUMP_DEBUG_INFO, &a->bin, &a->len);
	return mrb_nil_value();
}

int
hostd_vm_dump(hostd_vm *vm, struct RProc *proc, uint8_t **out, size_t *len)
{
	mrb_state *mrb = vm->mrb;
	struct dump_args a = {proc, NULL, 0, -1};
	mrb_bool failed;
	int ai = mrb_gc_arena_save(mrb);

	*out = NULL;
	*len = 0;
	mrb_protect_error(mrb, dump_body, &a, &failed);
	mrb_gc_arena_restore(mrb, ai);
	if (failed || a.rc != MRB_DUMP_OK || !a.bin) {
		if (a.bin) mrb_free(mrb, a.bin);
		return 1;
	}
	*out = (uint8_t *)malloc(a.len);
	if (*out) {
		memcpy(*out, a.bin, a.len);
		*len = a.len;
	}
	mrb_free(mrb, a.bin);
	return *out ? 0 : 1;
}

struct load_args {
	const uint8_t *bin;
	size_t len;
	struct RProc *proc;
};

static mrb_value
load_body(mrb_state *mrb, void *ud)
{
	struct load_args *a = (struct load_args *)ud;
	mrb_irep *irep = mrb_read_irep_buf(mrb, a->bin, a->len);
	struct RProc *proc;

	if (!irep) mrb_raise(mrb, E_SCRIPT_ERROR, "bytecode load error");
	// As mrb_generate_code makes its proc.
	proc = mrb_proc_new(mrb, irep);
	mrb_irep_decref(mrb, irep);
	proc->c = NULL;
	if (mrb->c->cibase && mrb->c->cibase->proc == proc->upper) proc->upper = NULL;
	mrb_gc_register(mrb, mrb_obj_value(proc));
	a->proc = proc;
	return mrb_nil_value();
}

int
hostd_vm_load(hostd_vm *vm, const uint8_t *bin, size_t len, struct RProc **proc)
{
	mrb_state *mrb = vm->mrb;
	struct load_args a = {bin, len, NULL};
	mrb_bool failed;
	int ai = mrb_gc_arena_save(mrb);

	mrb_protect_error(mrb, load_body, &a, &failed);
	mrb_gc_arena_restore(mrb, ai);
	*proc = failed ? NULL : a.proc;
	return *proc ? 0 : 1;
}

void
hostd_vm_fail_from(hostd_vm *vm, size_t n)
{
	vm->fail_from = n;
	vm->allocs = 0;
}

void
hostd_vm_budget(hostd_vm *vm, size_t bytes)
{
	vm->limit = vm->used + bytes < vm->used ? (size_t)-1 : vm->used + bytes;
}

// ---- run ----

struct run_args {
	hostd_vm *vm;
	struct RProc *proc;
	int last_return;
};

static mrb_value
run_body(mrb_state *mrb, void *ud)
{
	struct run_args *a = (struct run_args *)ud;
	hostd_vm *vm = a->vm;
	// A fresh anonymous class is the target of top-level def, constants
	// and class definitions, and a fresh instance of it is self: nothing
	// a run defines outlives it.
	struct RClass *anon = mrb_class_new(mrb, vm->script_class);
	mrb_value self = mrb_obj_value(mrb_obj_alloc(mrb, MRB_TT_OBJECT, anon));
	mrb_callinfo *ci = mrb->c->ci;

	const mrb_irep *irep = a->proc->body.irep;
	mrb_value v;

	vm->req = new_of(mrb, vm->request_class);
	vm->run_class = anon;
	vm->run_self = self;
	MRB_PROC_SET_TARGET_CLASS(a->proc, anon);
	mrb_vm_ci_env_set(ci, NULL);
	ci->u.target_class = anon;
	v = mrb_top_run(mrb, a->proc, self, 0);
	if (mrb->exc) {
		// An exception that reached the top level ends mrb_top_run with
		// mrb->exc set; raise it for mrb_protect_error.
		mrb_value e = mrb_obj_value(mrb->exc);
		mrb->exc = NULL;
		mrb_exc_raise(mrb, e);
	}
	// The value of the last expression leaves through the RETURN just
	// before the final STOP, as does a `return` that is the last
	// statement (known from the parse tree); any other `return` leaves
	// elsewhere.
	ci = mrb->c->ci;
	vm->explicit_return = ci == mrb->c->cibase &&
		(a->last_return || ci->pc != irep->iseq + irep->ilen - 1);
	return v;
}

// reset_body removes every global variable but the GC root table and
// reseeds the default Random (Kernel#rand), so that a run that called srand
// leaves the next run nothing predictable.
static mrb_value
reset_body(mrb_state *mrb, void *ud)
{
	hostd_vm *vm = (hostd_vm *)ud;
	mrb_value names = mrb_f_global_variables(mrb, mrb_nil_value());
	mrb_int i;
	for (i = 0; i < RARRAY_LEN(names); i++) {
		mrb_sym s = mrb_symbol(RARRAY_PTR(names)[i]);
		if (s != vm->gc_root) mrb_gv_remove(mrb, s);
	}
	mrb_funcall(mrb, mrb_obj_value(mrb_class_get(mrb, "Random")), "srand", 1,
		    mrb_int_value(mrb, (mrb_int)(vm->seed & 0x3fffffffffffffffULL)));
	return mrb_nil_value();
}

void
hostd_vm_run(hostd_vm *vm, struct RProc *proc, int last_return, const char *file, int64_t timeout_ns,
	     uintptr_t handle, uint64_t seed, int set_budget, size_t budget, size_t fail_from, hostd_result *res)
{
	mrb_state *mrb = vm->mrb;
	struct run_args a = {vm, proc, last_return};
	mrb_bool failed;
	mrb_value r;
	int ai = mrb_gc_arena_save(mrb);

	memset(res, 0, sizeof(*res));
	if (set_budget) hostd_vm_budget(vm, budget);
	if (fail_from) hostd_vm_fail_from(vm, fail_from);
	set_deadline(vm, timeout_ns);
	vm->exit_status = 0;
	vm->explicit_return = 0;
	vm->handle = handle;
	vm->seed = seed;
	mrb->code_fetch_hook = hostd_code_fetch;
	vm->deadline_active = 1;

	r = mrb_protect_error(mrb, run_body, &a, &failed);

	vm->deadline_active = 0;
	mrb->code_fetch_hook = NULL;
	vm->handle = 0;
	vm->req = mrb_nil_value();
	vm->run_class = NULL;
	vm->run_self = mrb_nil_value();
	free_pending(vm);
	MRB_PROC_SET_TARGET_CLASS(proc, vm->script_class);
	mrb->c->ci->u.target_class = mrb->object_class;

	if (failed) {
		if (mrb_obj_is_kind_of(mrb, r, vm->exit_class)) {
			res->kind = HOSTD_OK;
			res->status = vm->exit_status;
		} else if (vm->timed_out) {
			res->kind = HOSTD_TIMEOUT;
		} else if (vm->exceeded) {
			res->kind = HOSTD_NOMEM;
		} else {
			res->kind = HOSTD_EXC;
			res->msg = describe(mrb, r, file, &res->line);
		}
	} else if (vm->explicit_return && mrb_integer_p(r)) {
		res->status = mrb_integer(r);
		res->kind = (res->status >= 100 && res->status <= 999) ? HOSTD_OK : HOSTD_BADRET;
	} else if (vm->explicit_return && !mrb_nil_p(r)) {
		res->kind = HOSTD_BADRET;
		res->status = -1;
		res->msg = describe_value(mrb, r);
	}
	mrb_protect_error(mrb, reset_body, vm, &failed);
	mrb_gc_arena_restore(mrb, ai);
	vm->fail_from = 0;
	res->exceeded = vm->exceeded;
	res->new_syms = hostd_vm_new_syms(vm);
}
