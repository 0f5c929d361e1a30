// The few types and functions of wasmtime's C API (crates/c-api/include,
// version 50) that engine.go uses, declared here so that nothing
// of wasmtime is needed at build time: the library is dlopen'ed at run
// time (pgw_load) from the installed wasmtime Python package.
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct pgw_opaque pgw_opaque;
typedef struct { size_t size; char *data; } pgw_byte_vec;
typedef struct { uint8_t kind; uint8_t pad[7]; union { int32_t i32; int64_t i64; uint8_t raw[24]; } of; } pgw_val;
// wasmtime_extern_t is 32 bytes in version 50 (its union at offset 8);
// room for more, as wasmtime writes whole externs into it.
typedef struct { uint8_t kind; uint8_t pad[7]; uint8_t of[56]; } pgw_extern;
typedef struct { uint64_t store_id; size_t priv; } pgw_instance_t;

enum { PGW_I32 = 0, PGW_I64 = 1, PGW_EXTERN_FUNC = 0, PGW_EXTERN_MEMORY = 3 };

// Function pointers found by pgw_load.
static pgw_opaque *(*p_config_new)(void);
static void (*p_config_epoch)(pgw_opaque *, bool);
static pgw_opaque *(*p_engine_new)(pgw_opaque *);
static void (*p_increment_epoch)(pgw_opaque *);
static pgw_opaque *(*p_module_new)(pgw_opaque *, const uint8_t *, size_t, pgw_opaque **);
static pgw_opaque *(*p_store_new)(pgw_opaque *, void *, void (*)(void *));
static pgw_opaque *(*p_store_context)(pgw_opaque *);
static void (*p_store_limiter)(pgw_opaque *, int64_t, int64_t, int64_t, int64_t, int64_t);
static void (*p_store_delete)(pgw_opaque *);
static void (*p_deadline_callback)(pgw_opaque *, pgw_opaque *(*)(pgw_opaque *, void *, uint64_t *, uint8_t *), void *, void (*)(void *));
static void (*p_set_epoch_deadline)(pgw_opaque *, uint64_t);
static pgw_opaque *(*p_wasi_config_new)(void);
static void (*p_wasi_stderr_custom)(pgw_opaque *, ssize_t (*)(void *, const unsigned char *, size_t), void *, void (*)(void *));
static pgw_opaque *(*p_context_set_wasi)(pgw_opaque *, pgw_opaque *);
static pgw_opaque *(*p_linker_new)(pgw_opaque *);
static pgw_opaque *(*p_linker_define_wasi)(pgw_opaque *);
static pgw_opaque *(*p_linker_instantiate)(pgw_opaque *, pgw_opaque *, pgw_opaque *, pgw_instance_t *, pgw_opaque **);
static void (*p_linker_delete)(pgw_opaque *);
static bool (*p_export_get)(pgw_opaque *, const pgw_instance_t *, const char *, size_t, pgw_extern *);
static pgw_opaque *(*p_func_call)(pgw_opaque *, const void *, const pgw_val *, size_t, pgw_val *, size_t, pgw_opaque **);
static uint8_t *(*p_memory_data)(pgw_opaque *, const void *);
static size_t (*p_memory_data_size)(pgw_opaque *, const void *);
static pgw_opaque *(*p_error_new)(const char *);
static void (*p_error_message)(pgw_opaque *, pgw_byte_vec *);
static bool (*p_error_exit_status)(pgw_opaque *, int *);
static void (*p_error_delete)(pgw_opaque *);
static void (*p_trap_message)(pgw_opaque *, pgw_byte_vec *);
static bool (*p_trap_code)(pgw_opaque *, uint8_t *);
static void (*p_trap_delete)(pgw_opaque *);
static void (*p_byte_vec_delete)(pgw_byte_vec *);
static pgw_opaque *(*p_module_serialize)(pgw_opaque *, pgw_byte_vec *);
static pgw_opaque *(*p_module_deserialize_file)(pgw_opaque *, const char *, pgw_opaque **);
static void (*p_config_memory_may_move)(pgw_opaque *, bool);
static void (*p_config_tail_call)(pgw_opaque *, bool);

#define PGW_SYM(var, name) if (!(*(void **)&var = dlsym(h, name))) return name;

// pgw_load opens the library and finds every function; it returns NULL,
// or the name of what is missing (dlerror's text for the library).
static const char *pgw_load(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) return dlerror();
	PGW_SYM(p_config_new, "wasm_config_new")
	PGW_SYM(p_config_epoch, "wasmtime_config_epoch_interruption_set")
	PGW_SYM(p_engine_new, "wasm_engine_new_with_config")
	PGW_SYM(p_increment_epoch, "wasmtime_engine_increment_epoch")
	PGW_SYM(p_module_new, "wasmtime_module_new")
	PGW_SYM(p_store_new, "wasmtime_store_new")
	PGW_SYM(p_store_context, "wasmtime_store_context")
	PGW_SYM(p_store_limiter, "wasmtime_store_limiter")
	PGW_SYM(p_store_delete, "wasmtime_store_delete")
	PGW_SYM(p_deadline_callback, "wasmtime_store_epoch_deadline_callback")
	PGW_SYM(p_set_epoch_deadline, "wasmtime_context_set_epoch_deadline")
	PGW_SYM(p_wasi_config_new, "wasi_config_new")
	PGW_SYM(p_wasi_stderr_custom, "wasi_config_set_stderr_custom")
	PGW_SYM(p_context_set_wasi, "wasmtime_context_set_wasi")
	PGW_SYM(p_linker_new, "wasmtime_linker_new")
	PGW_SYM(p_linker_define_wasi, "wasmtime_linker_define_wasi")
	PGW_SYM(p_linker_instantiate, "wasmtime_linker_instantiate")
	PGW_SYM(p_linker_delete, "wasmtime_linker_delete")
	PGW_SYM(p_export_get, "wasmtime_instance_export_get")
	PGW_SYM(p_func_call, "wasmtime_func_call")
	PGW_SYM(p_memory_data, "wasmtime_memory_data")
	PGW_SYM(p_memory_data_size, "wasmtime_memory_data_size")
	PGW_SYM(p_error_new, "wasmtime_error_new")
	PGW_SYM(p_error_message, "wasmtime_error_message")
	PGW_SYM(p_error_exit_status, "wasmtime_error_exit_status")
	PGW_SYM(p_error_delete, "wasmtime_error_delete")
	PGW_SYM(p_trap_message, "wasm_trap_message")
	PGW_SYM(p_trap_code, "wasmtime_trap_code")
	PGW_SYM(p_trap_delete, "wasm_trap_delete")
	PGW_SYM(p_byte_vec_delete, "wasm_byte_vec_delete")
	PGW_SYM(p_module_serialize, "wasmtime_module_serialize")
	PGW_SYM(p_module_deserialize_file, "wasmtime_module_deserialize_file")
	PGW_SYM(p_config_memory_may_move, "wasmtime_config_memory_may_move_set")
	PGW_SYM(p_config_tail_call, "wasmtime_config_wasm_tail_call_set")
	return NULL;
}

// The process's one epoch, counted here too so that the deadline callback
// can compare without calling into wasmtime.
static _Atomic uint64_t pgw_epoch;

// pgw_engine_new makes the engine with epoch interruption, or the one
// without, for modules stopped by the fence: its memories never move, so
// the fence knows where they are.
static pgw_opaque *pgw_engine_new(bool epoch) {
	pgw_opaque *cfg = p_config_new();
	// No tail calls: a loop of return_calls grows no stack and passes no
	// loop, so neither the stack limit nor a probe would ever stop it;
	// wazero refuses them too, so both engines take the same modules.
	p_config_tail_call(cfg, false);
	p_config_epoch(cfg, epoch);
	if (!epoch) p_config_memory_may_move(cfg, false);
	return p_engine_new(cfg); // takes cfg
}

// The messages by which a stopped call is recognised, set once by
// engine.go (where they are written).
static const char *pgw_time_limit, *pgw_canceled;
static void pgw_set_messages(const char *time_limit, const char *canceled) {
	pgw_time_limit = time_limit;
	pgw_canceled = canceled;
}
#define PGW_STDERR_MAX 4096

// pgw_store is one instance with its store; C memory, so that wasmtime's
// callbacks never call into Go.
typedef struct pgw_store {
	pgw_opaque *store, *ctx;
	pgw_instance_t instance;
	pgw_extern memory;
	_Atomic int canceled;
	uint64_t deadline; // in pgw_epoch
	_Atomic size_t nerr;
	char err[PGW_STDERR_MAX];
	// The memory fence (fence.h), for a store whose module
	// has probes: its fence page, and the list of calls in progress.
	bool fencing, fenced;
	pgw_extern fence;
	uint8_t *fence_base;
	size_t fence_len;
	struct pgw_store *next, *prev;
} pgw_store;

#include "fence.h"

// pgw_tick advances the process's epoch: epoch interruption's deadline
// callbacks see it, and the fence goes up for calls past their deadline.
static void pgw_tick(pgw_opaque *engine) {
	uint64_t e = atomic_fetch_add(&pgw_epoch, 1) + 1;
	p_increment_epoch(engine);
	pgw_fence_arm(e);
}

// Every epoch tick past the call's start lands here: stop on cancel or at
// the deadline, else look again at the next tick.
static pgw_opaque *pgw_on_epoch(pgw_opaque *ctx, void *data, uint64_t *delta, uint8_t *kind) {
	pgw_store *s = data;
	if (atomic_load(&s->canceled)) return p_error_new(pgw_canceled);
	if (atomic_load(&pgw_epoch) >= s->deadline) return p_error_new(pgw_time_limit);
	*delta = 1;
	*kind = 0; // WASMTIME_UPDATE_DEADLINE_CONTINUE
	return NULL;
}

// The start of what the guest writes to stderr during a call is kept for
// error messages; the rest is dropped.
static ssize_t pgw_stderr(void *data, const unsigned char *buf, size_t len) {
	pgw_store *s = data;
	size_t n = atomic_load(&s->nerr);
	if (n < PGW_STDERR_MAX) {
		size_t k = len < PGW_STDERR_MAX - n ? len : PGW_STDERR_MAX - n;
		memcpy(s->err + n, buf, k);
		atomic_store(&s->nerr, n + k);
	}
	return (ssize_t)len;
}

// pgw_message copies an error's or a trap's message (C string, malloc'ed)
// and deletes it.
static char *pgw_message(pgw_opaque *err, pgw_opaque *trap, int *exit_code, int *trap_code) {
	pgw_byte_vec v = {0, NULL};
	*exit_code = -1;
	*trap_code = -1;
	if (err) {
		if (!p_error_exit_status(err, exit_code)) *exit_code = -1;
		p_error_message(err, &v);
		p_error_delete(err);
	} else {
		uint8_t code;
		if (p_trap_code(trap, &code)) *trap_code = code;
		p_trap_message(trap, &v);
		p_trap_delete(trap);
	}
	char *s = malloc(v.size + 1);
	if (v.size) memcpy(s, v.data, v.size);
	s[v.size] = 0;
	p_byte_vec_delete(&v);
	return s;
}

// pgw_instantiate makes a store capped at limit bytes of memory, with
// WASI granting nothing (no files, environment, arguments or network;
// stderr kept), and instantiates module in it. On failure it returns NULL
// and sets *msg.
static pgw_store *pgw_instantiate(pgw_opaque *engine, pgw_opaque *module, int64_t limit, char **msg, int *exit_code, int *trap_code) {
	pgw_store *s = calloc(1, sizeof *s);
	s->store = p_store_new(engine, NULL, NULL);
	s->ctx = p_store_context(s->store);
	p_store_limiter(s->store, limit, -1, -1, -1, -1);
	p_deadline_callback(s->store, pgw_on_epoch, s, NULL);
	pgw_opaque *wasi = p_wasi_config_new();
	p_wasi_stderr_custom(wasi, pgw_stderr, s, NULL);
	pgw_opaque *err = p_context_set_wasi(s->ctx, wasi); // takes wasi
	pgw_opaque *trap = NULL;
	if (!err) {
		pgw_opaque *linker = p_linker_new(engine);
		err = p_linker_define_wasi(linker);
		if (!err) {
			s->deadline = atomic_load(&pgw_epoch) + (1ull << 62);
			p_set_epoch_deadline(s->ctx, 1);
			err = p_linker_instantiate(linker, s->ctx, module, &s->instance, &trap);
		}
		p_linker_delete(linker);
	}
	if (err || trap) {
		*msg = pgw_message(err, trap, exit_code, trap_code);
		p_store_delete(s->store);
		free(s);
		return NULL;
	}
	return s;
}

// pgw_fence_setup makes s a store whose calls are stopped by the fence,
// if its module exports a fence page (wasmrewrite.FenceExport) of one page.
static bool pgw_fence_setup(pgw_store *s, const char *name, size_t len) {
	if (!p_export_get(s->ctx, &s->instance, name, len, &s->fence) || s->fence.kind != PGW_EXTERN_MEMORY) return false;
	s->fence_len = p_memory_data_size(s->ctx, s->fence.of);
	s->fence_base = p_memory_data(s->ctx, s->fence.of);
	s->fencing = s->fence_len == 65536; // one wasm page, as wasmrewrite.AddProbes declares it
	return s->fencing;
}

static void pgw_close(pgw_store *s) {
	p_store_delete(s->store);
	free(s);
}

// pgw_export finds an export of kind (PGW_EXTERN_*) into out.
static bool pgw_export(pgw_store *s, const char *name, size_t len, uint8_t kind, pgw_extern *out) {
	return p_export_get(s->ctx, &s->instance, name, len, out) && out->kind == kind;
}

// pgw_span is a guest memory's bytes, returned by value so that the Go
// side passes no pointer (which cgo would move to the heap per call).
typedef struct { uint8_t *p; size_t n; } pgw_span;

static pgw_span pgw_memory(pgw_store *s) {
	pgw_span v = {p_memory_data(s->ctx, s->memory.of), p_memory_data_size(s->ctx, s->memory.of)};
	return v;
}

// pgw_frame is one export's arguments and results, in C memory that its
// wtFunc keeps: Go pointers passed per call would each be moved to the
// heap by cgo.
typedef struct {
	uint32_t args[2];
	uint64_t res;
	int exit_code, trap_code;
} pgw_frame;

// pgw_call calls fn with nargs i32 arguments of f and nres results (stored
// in f->res as u64, i32 zero-extended), stopping at ticks epochs from now.
// On failure it returns the malloc'ed message (exit and trap code in f); a
// call the fence stopped fails with the time limit's (or the cancel's)
// message.
static char *pgw_call(pgw_store *s, pgw_extern *fn, pgw_frame *f, size_t nargs, size_t nres, uint64_t ticks) {
	const uint32_t *args = f->args;
	uint64_t *res = &f->res;
	int *exit_code = &f->exit_code, *trap_code = &f->trap_code;
	pgw_val a[2], r[1];
	for (size_t i = 0; i < nargs && i < 2; i++) { a[i].kind = PGW_I32; a[i].of.i64 = 0; a[i].of.i32 = (int32_t)args[i]; }
	atomic_store(&s->canceled, 0);
	s->deadline = atomic_load(&pgw_epoch) + ticks;
	p_set_epoch_deadline(s->ctx, 1);
	pgw_opaque *trap = NULL;
	if (s->fencing) pgw_fence_enter(s);
	pgw_opaque *err = p_func_call(s->ctx, fn->of, a, nargs, r, nres, &trap);
	bool fenced = s->fencing && pgw_fence_leave(s);
	if (err || trap) {
		char *msg = pgw_message(err, trap, exit_code, trap_code);
		if (!fenced) return msg;
		free(msg); // the fence's trap: the time limit, or the caller's cancel
		*exit_code = -1;
		*trap_code = -1;
		const char *why = atomic_load(&s->canceled) ? pgw_canceled : pgw_time_limit;
		size_t n = strlen(why) + 1;
		return memcpy(malloc(n), why, n);
	}
	if (nres) res[0] = r[0].kind == PGW_I32 ? (uint64_t)(uint32_t)r[0].of.i32 : (uint64_t)r[0].of.i64;
	return NULL;
}

static size_t pgw_stderr_len(pgw_store *s) { return atomic_load(&s->nerr); }
static void pgw_stderr_reset(pgw_store *s) { atomic_store(&s->nerr, 0); }
static void pgw_cancel(pgw_store *s) { atomic_store(&s->canceled, 1); }

// pgw_compile compiles a module; on failure it returns NULL and sets *msg.
static pgw_opaque *pgw_compile(pgw_opaque *engine, const uint8_t *wasm, size_t len, char **msg) {
	pgw_opaque *m = NULL;
	int ec, tc;
	pgw_opaque *err = p_module_new(engine, wasm, len, &m);
	if (err) {
		*msg = pgw_message(err, NULL, &ec, &tc);
		return NULL;
	}
	return m;
}

// pgw_load_compiled reads a module compiled earlier by this library (a
// file pgw_serialize wrote); NULL if it cannot (wasmtime checks that the
// file is of its own version and configuration).
static pgw_opaque *pgw_load_compiled(pgw_opaque *engine, const char *path) {
	pgw_opaque *m = NULL;
	pgw_opaque *err = p_module_deserialize_file(engine, path, &m);
	if (err) {
		p_error_delete(err);
		return NULL;
	}
	return m;
}

// pgw_serialize returns the module's machine code (malloc'ed, *len
// bytes), or NULL.
static char *pgw_serialize(pgw_opaque *module, size_t *len) {
	pgw_byte_vec v = {0, NULL};
	pgw_opaque *err = p_module_serialize(module, &v);
	if (err) {
		p_error_delete(err);
		return NULL;
	}
	char *out = malloc(v.size ? v.size : 1);
	memcpy(out, v.data, v.size);
	*len = v.size;
	p_byte_vec_delete(&v);
	return out;
}
