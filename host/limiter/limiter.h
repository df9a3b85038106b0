/*
 * limiter.h: a token-bucket rate limiter over a striped hash table, shared by every thread of
 * the process (the memory adapter of the limiter battery).
 *
 * It must stay free of Lua and libuv: it is benchmarked and called through LuaJIT's FFI.
 *
 *   zv_limiter_t
 *   +--------------------------------------------------------------+
 *   | rate/ns, burst, max_entries, idle_ns                          |
 *   | used (atomic)  <- slots reserved, always <= max_entries       |
 *   | admit lock     <- taken only to admit a key that is not there |
 *   | stripe[0..63]: lock | buckets[] -> entry -> entry             |
 *   |                     | LRU: newest <-> ... <-> oldest (lazy)   |
 *   +--------------------------------------------------------------+
 *
 * A key's stripe is the low 6 bits of its zv_hash64 (core/zv.h). A call on a key that exists takes only
 * its stripe's lock, allocates nothing, and writes only that lock and its entry: the LRU is
 * lazy (core/stripes.h), the call marks the entry and the eviction scan and the sweep send
 * marked tails to the head before they look. Admitting a new key reserves a slot under the
 * admit lock; when the table is full it evicts, of the 64 stripes' unmarked tails, the one
 * called longest ago (an approximation of the global LRU: idle entries go first, and a key
 * called since it was listed never goes before one of its stripe that was not). Locks are taken
 * in the order admit -> one stripe; no path holds two stripe locks.
 *
 * Time is a monotonic count of nanoseconds passed as now_ns. now_ns == 0 reads CLOCK_MONOTONIC
 * (that is what the binding and the FFI path do); specs pass a fake clock starting at 1.
 */
#ifndef ZV_LIMITER_H
#define ZV_LIMITER_H

#include <stddef.h>
#include <stdint.h>

#include "limiter_ffi.h"

#define ZV_LIMITER_MAX_KEY 256
#define ZV_LIMITER_STRIPES 64

typedef struct {
  double rate;          /* tokens per second, >= 0 (0: a bucket never refills) */
  double burst;         /* bucket size, >= 1 */
  size_t max_entries;   /* the table bound, >= 1 */
  double idle;          /* seconds without a call after which the sweep drops a key; 0: never */
} zv_limiter_opts_t;

typedef struct {
  size_t entries;       /* keys in the table */
  size_t max_entries;
  uint64_t evictions;   /* keys dropped to admit others */
  uint64_t expired;     /* idle keys dropped by sweeps */
} zv_limiter_stats_t;

/* The monotonic clock in nanoseconds (never 0). */
uint64_t zv_limiter_clock(void);

/* A private limiter; the caller frees it with zv_limiter_free. ZV_EINVAL for bad options. */
int zv_limiter_new(const zv_limiter_opts_t *opts, zv_limiter_t **out);
void zv_limiter_free(zv_limiter_t *l);

/*
 * The process-wide registry: every thread that opens the same name gets the same limiter.
 * The first open creates it; a later open with other options fails with ZV_ECONFLICT. Each
 * successful open is paired with one zv_limiter_release; the last release frees the limiter.
 */
int zv_limiter_open(const char *name, const zv_limiter_opts_t *opts, zv_limiter_t **out);
void zv_limiter_release(zv_limiter_t *l);

/* Forgets key (its next call starts with a full bucket). *existed says whether it was there. */
int zv_limiter_reset(zv_limiter_t *l, const char *key, size_t len, int *existed);

/*
 * Drops keys idle for longer than max(idle, burst / rate) -- so that dropping a key never
 * gives back tokens it would not have had -- doing at most max_steps steps (a stripe visited or
 * an entry looked at). Returns the number of keys dropped; *more is 1 when the budget ran out
 * before a full round of the stripes. Calls resume where the last one stopped. A stripe's
 * marked tails go to its head first (not counted: each move pays for one earlier call); the
 * LRU being approximate, an idle key behind one that is not waits for a later sweep.
 */
size_t zv_limiter_sweep(zv_limiter_t *l, uint64_t now_ns, size_t max_steps, int *more);

void zv_limiter_stats(zv_limiter_t *l, zv_limiter_stats_t *out);

#endif
