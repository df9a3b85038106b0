/*
 * lock_ffi.h: the per-call functions of the lock core, as LuaJIT's FFI sees them
 * (lua/adapters/lock/memory.lua loads them with require("zever.cdef.lock")). The Makefile runs
 * this file through the preprocessor with -DZV_FFI_CDEF into build/ffi.h: these are the only
 * declarations of these functions, C included, so Lua never types them again.
 *
 * It must hold only declarations ffi.cdef parses.
 */
#ifndef ZV_LOCK_FFI_H
#define ZV_LOCK_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

typedef struct zv_lock_s zv_lock_t;

/*
 * Takes a lease of ttl_ns on key when nobody holds it (or the last lease expired). Returns 0
 * with *fence set (> 0, larger than every fence handed out before), 1 (ZV_LOCK_BUSY) when a
 * live lease holds it (*fence untouched), ZV_ETOOLONG for a key over ZV_LOCK_MAX_KEY bytes,
 * ZV_EINVAL for ttl_ns 0, ZV_ENOMEM. Allocates only when the key has no entry. now_ns 0 reads
 * the monotonic clock.
 */
int zv_lock_acquire(zv_lock_t *l, const char *key, size_t len, uint64_t ttl_ns, uint64_t now_ns,
                    uint64_t *fence);

/* Moves the lease's expiry to now + ttl_ns when fence still holds key: 0, or 1 (not held). */
int zv_lock_extend(zv_lock_t *l, const char *key, size_t len, uint64_t fence, uint64_t ttl_ns,
                   uint64_t now_ns);

/* Ends the lease when fence still holds key: 0, or 1 (not held: it expired, or was taken). */
int zv_lock_unlock(zv_lock_t *l, const char *key, size_t len, uint64_t fence, uint64_t now_ns);

#endif
