/*
 * breaker_ffi.h: the per-call functions of the breaker core, as LuaJIT's FFI sees them
 * (lua/adapters/breaker/inproc.lua loads them with require("zever.cdef.breaker")). The Makefile
 * runs this file through the preprocessor with -DZV_FFI_CDEF into build/ffi.h: these are the
 * only declarations of these functions, C included.
 *
 * It must hold only declarations ffi.cdef parses.
 */
#ifndef ZV_BREAKER_FFI_H
#define ZV_BREAKER_FFI_H

#ifndef ZV_FFI_CDEF
#include <stdint.h>
#endif

typedef struct zv_breaker_s zv_breaker_t;

/*
 * The guard before a call. Returns 0 when the call may go (in half-open state it takes one of
 * the trial slots), 1 when the breaker is open (*retry_ns: nanoseconds until it half-opens), 2
 * when it is half open and its trial calls are all taken (*retry_ns 0). A closed breaker is
 * answered from one atomic load, without the lock or the clock. now_ns 0 reads the monotonic
 * clock.
 */
int zv_breaker_allow(zv_breaker_t *b, uint64_t now_ns, uint64_t *retry_ns);

/*
 * Records the outcome of a call that allow let through: failed (0 or 1) and took_ns (how long
 * it ran; 0 when not measured, never slow). Returns the state after it: 0 closed, 1 open,
 * 2 half open.
 */
int zv_breaker_record(zv_breaker_t *b, int failed, uint64_t took_ns, uint64_t now_ns);

#endif
