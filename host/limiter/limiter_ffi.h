/*
 * limiter_ffi.h: the per-request call of the limiter core, as LuaJIT's FFI sees it
 * (lua/adapters/limiter/memory.lua loads it with require("zever.cdef.limiter")). The Makefile runs
 * this file through the preprocessor with -DZV_FFI_CDEF into build/ffi.h, which the host preloads:
 * these are the only declarations of these functions and types, C included, so Lua never types
 * them again.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * macros are expanded by the preprocessor.
 */
#ifndef ZV_LIMITER_FFI_H
#define ZV_LIMITER_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

typedef struct zv_limiter_s zv_limiter_t;

typedef struct {
  int allowed;          /* 1 when the cost was charged */
  double remaining;     /* tokens left after the call (fractional) */
  double retry_after;   /* seconds until the cost fits; 0 when allowed; +inf when rate is 0 */
} zv_limiter_result_t;

/*
 * Charges cost tokens to key (a cost above burst is charged as burst; cost 0 only reads).
 * Returns 0 with *r filled (a denial is r->allowed == 0, not an error), ZV_ETOOLONG for a key
 * over ZV_LIMITER_MAX_KEY bytes, ZV_EINVAL for a negative or NaN cost, ZV_ENOMEM when a new
 * key's entry cannot be allocated. Allocates only to admit a key that is not in the table.
 */
int zv_limiter_allow(zv_limiter_t *l, const char *key, size_t len, double cost, uint64_t now_ns,
                     zv_limiter_result_t *r);

#endif
