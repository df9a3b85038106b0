/*
 * idempotency_ffi.h: the per-request calls of the idempotency core, as LuaJIT's FFI sees it
 * (lua/adapters/idempotency/memory.lua loads it with require("zever.cdef.idempotency")). The
 * Makefile runs this file through the preprocessor with -DZV_FFI_CDEF into build/ffi.h, which the
 * host preloads: these are the only declarations of these functions and types, C included, so Lua
 * never types them again.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * macros are expanded by the preprocessor.
 */
#ifndef ZV_IDEMPOTENCY_FFI_H
#define ZV_IDEMPOTENCY_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

typedef struct zv_idem_s zv_idem_t;

typedef struct {
  int status;           /* ZV_IDEM_* */
  int type;             /* REPLAY: the result's type tag (the caller's, as given to complete) */
  size_t len;           /* REPLAY: the result's length (also set on ZV_ERANGE) */
  uint64_t token;       /* RESERVED: the reservation's token (never 0) */
} zv_idem_begin_t;

/*
 * Looks key up and, when it is absent or expired, reserves it. r->status says what was found;
 * the fingerprint is compared first (a different one is MISMATCH whether the entry is pending
 * or complete). A reservation expires pending_ns after now and, once completed, its result
 * ttl_ns after the complete (0: never). On REPLAY the result is copied into buf; when cap is
 * too small the call returns ZV_ERANGE with r->len the size needed (nothing reserved, nothing
 * copied; call again). ZV_ETOOLONG: key over ZV_IDEM_MAX_KEY bytes, or key and fingerprint
 * larger than the whole budget. ZV_ENOMEM: the entry cannot be allocated. Allocates one entry
 * only to reserve; a hit allocates nothing.
 */
int zv_idem_begin(zv_idem_t *t, const char *key, size_t klen, const char *fp, size_t flen,
                  uint64_t ttl_ns, uint64_t pending_ns, uint64_t now_ns, char *buf, size_t cap,
                  zv_idem_begin_t *r);

/*
 * Stores a copy of result (rlen bytes, tagged type) for key's pending reservation and marks
 * it complete; it expires ttl_ns (as given to begin) from now. token 0 completes whoever holds
 * the reservation; another token must match it. ZV_ENOTFOUND: no live reservation with that
 * token (absent, expired, evicted, forgotten, or reserved again by someone else). ZV_ECONFLICT:
 * the key is already complete. ZV_ETOOLONG: the entry with its result is larger than the whole
 * budget. ZV_ENOMEM. Allocates the result (one zv_alloc when rlen > 0) and may evict others.
 */
int zv_idem_complete(zv_idem_t *t, const char *key, size_t klen, uint64_t token, int type,
                     const char *result, size_t rlen, uint64_t now_ns);

#endif
