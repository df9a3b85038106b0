/*
 * idem.h: the idempotency-key table: a striped hash table of reservations and completed results,
 * bounded by a key count and a byte budget, shared by every thread of the process (the memory
 * adapter of the idempotency battery).
 *
 * It must stay free of Lua and libuv: it is benchmarked and called through LuaJIT's FFI.
 *
 *   zv_idem_t
 *   +-------------------------------------------------------------------+
 *   | max_keys, used (atomic: slots reserved, <= max_keys)              |
 *   | max_bytes, bytes (atomic: charged entry and result bytes)         |
 *   | admit lock   <- admissions and budget evictions, one at a time    |
 *   | stripe[0..63]: lock | buckets[] -> entry -> entry                 |
 *   |                     | LRU: newest <-> ... <-> oldest              |
 *   +-------------------------------------------------------------------+
 *   entry: | chain, LRU links | hash | token | state | expires_ns | used_ns | ttl_ns |
 *          | klen flen | key | fingerprint |  result -> | rlen rtype | (own allocation)
 *
 * A key is PENDING from the begin that reserved it until complete (then COMPLETE) or forget.
 * A pending entry expires pending_ns after its begin (a crashed request does not hold the key
 * forever); a completed one ttl_ns after its complete (0: never). An expired entry is absent.
 *
 * Admission (a begin on an absent key) and complete (which adds the result's bytes) keep the
 * bounds: while the table is over max_keys or max_bytes they evict an expired entry among the
 * 64 LRU tails if there is one, else the least recently used entry of all stripes (the oldest
 * tail), pending or not. Every 64th admission also sweeps 16 buckets for expired entries.
 * Lock order: admit -> sweep -> one stripe; no path holds two stripe locks. Time is monotonic nanoseconds; now_ns == 0 reads CLOCK_MONOTONIC (specs pass a fake
 * clock starting at 1).
 */
#ifndef ZV_IDEM_H
#define ZV_IDEM_H

#include <stddef.h>
#include <stdint.h>

#include "idempotency_ffi.h"

#define ZV_IDEM_STRIPES 64
#define ZV_IDEM_MAX_KEY 256

/* What zv_idem_begin found (zv_idem_begin_t.status). */
enum {
  ZV_IDEM_RESERVED = 0, /* absent or expired: now reserved (PENDING) for the caller */
  ZV_IDEM_REPLAY = 1,   /* completed with the same fingerprint: the result is in the buffer */
  ZV_IDEM_PENDING = 2,  /* reserved by another begin, same fingerprint, not completed yet */
  ZV_IDEM_MISMATCH = 3  /* present (pending or completed) with another fingerprint */
};

typedef struct {
  size_t entries;
  size_t pending;
  size_t bytes;
  size_t max_keys;
  size_t max_bytes;
  uint64_t evictions;   /* entries dropped to keep the bounds */
  uint64_t expired;     /* expired entries removed (lazily or by sweeps) */
} zv_idem_stats_t;

/* The per-entry overhead charged against max_bytes, on top of key, fingerprint and result. */
size_t zv_idem_overhead(void);

/* The monotonic clock in nanoseconds (never 0). */
uint64_t zv_idem_clock(void);

/* A private table; ZV_EINVAL when max_keys or max_bytes is 0. */
int zv_idem_new(size_t max_keys, size_t max_bytes, zv_idem_t **out);
void zv_idem_free(zv_idem_t *t);

/*
 * The process-wide registry: every thread that opens the same name gets the same table; an
 * open with other bounds fails with ZV_ECONFLICT. Pair each open with one zv_idem_release; the
 * last release frees the table.
 */
int zv_idem_open(const char *name, size_t max_keys, size_t max_bytes, zv_idem_t **out);
void zv_idem_release(zv_idem_t *t);

/*
 * Removes key, pending or complete. token 0 removes it whatever holds it; another token
 * removes it only while that reservation holds it. *existed says whether a live entry was
 * removed. Never fails.
 */
int zv_idem_forget(zv_idem_t *t, const char *key, size_t klen, uint64_t token, uint64_t now_ns,
                   int *existed);

/*
 * Removes expired entries, looking at no more than max_steps buckets. Returns the number
 * removed; *more is 1 when the budget ran out before a full round of the table. Calls resume
 * where the last one stopped.
 */
size_t zv_idem_sweep(zv_idem_t *t, uint64_t now_ns, size_t max_steps, int *more);

/* Removes every entry. */
void zv_idem_clear(zv_idem_t *t);

void zv_idem_stats(zv_idem_t *t, zv_idem_stats_t *out);

/*
 * A 128-bit fingerprint of n byte strings, written as 32 lower-case hex digits and a NUL into
 * out[33]. Each part's length is hashed with it, so ("ab", "c") and ("a", "bc") differ. Two
 * independent 64-bit multiply-xor hashes: fast and well mixed, not cryptographic. Allocates
 * nothing.
 */
void zv_idem_fingerprint(const char *const *parts, const size_t *lens, size_t n, char out[33]);

#endif
