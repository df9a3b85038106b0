/*
 * cache.h: the memory cache: a striped hash table of byte values with TTLs, a byte budget kept
 * by LRU eviction, shared by every thread of the process (the memory adapter of the cache
 * battery).
 *
 * It must stay free of Lua and libuv: it is benchmarked and called through LuaJIT's FFI.
 *
 *   zv_cache_t
 *   +-----------------------------------------------------------------+
 *   | max_bytes, bytes (atomic: entries + reservations in flight)      |
 *   | evict lock  <- one evictor at a time                             |
 *   | stripe[0..63]: lock | buckets[] -> entry -> entry                |
 *   |                     | LRU: newest <-> ... <-> oldest             |
 *   +-----------------------------------------------------------------+
 *   entry: | chain, LRU links | hash | expires_ns | used_ns | klen vlen type | key | value |
 *
 * A key's stripe is the low 6 bits of its zv_hash64 (core/zv.h). A write reserves its entry's
 * bytes first; while the reservation puts the cache over budget the least recently used entry of
 * all stripes is evicted (expired or not), one stripe lock at a time. The cache never fails for
 * lack of budget: it evicts. Only a value larger than the whole budget is refused (ZV_ETOOLONG).
 * A few writes in flight at once may overshoot the budget by their own sizes until they land.
 *
 * Expiry is lazy (a read of an expired key removes it) and swept: zv_cache_sweep looks at a
 * bounded number of buckets per call, and every 64th write of a stripe runs a small sweep.
 *
 * Values are opaque bytes with a type tag the caller chooses, except ZV_CACHE_NUMBER, which is
 * a native double (8 bytes) that zv_cache_incr understands. Time is monotonic nanoseconds;
 * now_ns == 0 reads CLOCK_MONOTONIC (specs pass a fake clock starting at 1).
 */
#ifndef ZV_CACHE_H
#define ZV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "cache_ffi.h"

#define ZV_CACHE_STRIPES 64
#define ZV_CACHE_MAX_KEY 65535

enum {
  ZV_CACHE_STRING = 1,
  ZV_CACHE_NUMBER = 2,  /* value: a double, 8 bytes */
  ZV_CACHE_BOOLEAN = 3, /* value: one byte, 0 or 1 */
  ZV_CACHE_JSON = 4     /* value: JSON text of a table */
};

/* zv_cache_set modes */
enum { ZV_CACHE_SET = 0, ZV_CACHE_ADD = 1 };

typedef struct {
  size_t entries;
  size_t bytes;         /* charged bytes: entry headers + keys + values */
  size_t max_bytes;
  uint64_t evictions;
  uint64_t expired;
} zv_cache_stats_t;

/* The per-entry overhead charged against the budget, on top of key and value bytes. */
size_t zv_cache_overhead(void);

uint64_t zv_cache_clock(void);

/* A private cache; ZV_EINVAL when max_bytes is 0. */
int zv_cache_new(size_t max_bytes, zv_cache_t **out);
void zv_cache_free(zv_cache_t *c);

/*
 * The process-wide registry: every thread that opens the same name gets the same cache; an open
 * with another max_bytes fails with ZV_ECONFLICT. Pair each open with one zv_cache_release; the
 * last release frees the cache.
 */
int zv_cache_open(const char *name, size_t max_bytes, zv_cache_t **out);
void zv_cache_release(zv_cache_t *c);

/* Removes key; *existed says whether a live entry was there. */
int zv_cache_delete(zv_cache_t *c, const char *key, size_t klen, uint64_t now_ns, int *existed);

/* *exists is 1 when key has a live entry. */
int zv_cache_exists(zv_cache_t *c, const char *key, size_t klen, uint64_t now_ns, int *exists);

/*
 * Adds n to key's number and puts the sum in *out. A missing key starts at 0 and is created
 * with ttl_ns (0: no expiry); an existing one keeps its expiry. ZV_EINVAL when the value is not
 * a ZV_CACHE_NUMBER. Allocates only to create the key.
 */
int zv_cache_incr(zv_cache_t *c, const char *key, size_t klen, double n, uint64_t ttl_ns,
                  uint64_t now_ns, double *out);

/*
 * Removes expired entries, looking at no more than max_steps buckets. Returns the number
 * removed; *more is 1 when the budget ran out before a full round of the table. Calls resume
 * where the last one stopped.
 */
size_t zv_cache_sweep(zv_cache_t *c, uint64_t now_ns, size_t max_steps, int *more);

/* Removes every entry. */
void zv_cache_clear(zv_cache_t *c);

void zv_cache_stats(zv_cache_t *c, zv_cache_stats_t *out);

#endif
