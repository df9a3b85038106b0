/*
 * cache_ffi.h: the per-request calls of the cache core, as LuaJIT's FFI sees it
 * (lua/adapters/cache/memory.lua loads it with require("zever.cdef.cache")). The Makefile runs
 * this file through the preprocessor with -DZV_FFI_CDEF into build/ffi.h, which the host preloads:
 * these are the only declarations of these functions and types, C included, so Lua never types
 * them again.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * macros are expanded by the preprocessor.
 */
#ifndef ZV_CACHE_FFI_H
#define ZV_CACHE_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

typedef struct zv_cache_s zv_cache_t;

/*
 * Copies key's value into buf. Returns 0 with *len and *type set; ZV_ENOTFOUND when absent or
 * expired; ZV_ERANGE when cap is too small (then *len is the size needed and nothing is
 * copied; the entry counts as read). Allocates nothing.
 */
int zv_cache_get(zv_cache_t *c, const char *key, size_t klen, uint64_t now_ns, char *buf,
                 size_t cap, size_t *len, int *type);

/*
 * Stores a copy of value under key for ttl_ns (0: no expiry). mode ZV_CACHE_ADD stores only
 * when the key is absent or expired and returns ZV_ECONFLICT otherwise. ZV_ETOOLONG: the key
 * is over ZV_CACHE_MAX_KEY or the entry is larger than the whole budget. ZV_ENOMEM: malloc
 * failed. Allocates the entry (one zv_alloc) and may evict others.
 */
int zv_cache_set(zv_cache_t *c, const char *key, size_t klen, int type, const char *value,
                 size_t vlen, uint64_t ttl_ns, uint64_t now_ns, int mode);

#endif
