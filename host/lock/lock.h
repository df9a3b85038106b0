/*
 * lock.h: process-wide mutual-exclusion leases with fencing tokens (the memory adapter of the
 * lock battery), shared by every worker thread that opens the same name.
 *
 * It must stay free of Lua and libuv: it is benchmarked on its own.
 *
 *   zv_lock_t
 *   +--------------------------------------------------------------+
 *   | next_fence (atomic, starts at 1)                             |
 *   | stripe[0..63]: lock | buckets[] -> entry -> entry            |
 *   |   entry: | node | fence (the holder's, 0: free) | expires_ns | key |
 *   +--------------------------------------------------------------+
 *
 * A lease on a key is an entry whose fence is not 0 and whose expiry is in the future. The
 * fence is drawn from one counter of the table, so it grows with every acquisition: a fencing
 * token (a resource that saw fence n refuses writes with a smaller one) and the holder's proof
 * of ownership at once (extend and unlock compare it). Unlocking keeps the entry (fence 0) for
 * 10 s: acquiring the same key again soon allocates nothing. Entries of expired leases, and of
 * released ones after those 10 s, are dropped by a bounded sweep that each new key's admission
 * runs, so the table follows the keys in use. A call takes one stripe lock and never two.
 *
 * Time is a monotonic count of nanoseconds passed as now_ns; 0 reads CLOCK_MONOTONIC (the
 * binding does), specs pass a fake clock starting at 1.
 */
#ifndef ZV_LOCK_H
#define ZV_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "lock_ffi.h"

#define ZV_LOCK_MAX_KEY 1024

/* What acquire, extend and unlock return besides 0 (done) and a negative ZV_E* code. */
#define ZV_LOCK_BUSY 1      /* acquire: another holder's lease is live */
#define ZV_LOCK_NOT_HELD 1  /* extend, unlock: the fence given does not hold the key now */


typedef struct {
  size_t entries;         /* keys in the table, held or not yet swept */
  uint64_t acquired;      /* leases granted */
  uint64_t contended;     /* acquisitions refused because the key was held */
  uint64_t expired;       /* entries dropped by sweeps */
} zv_lock_stats_t;

uint64_t zv_lock_clock(void);

/* A private table; free it with zv_lock_free. ZV_ENOMEM. */
int zv_lock_new(zv_lock_t **out);
void zv_lock_free(zv_lock_t *l);

/* The process-wide registry: every open of a name shares one table; pair each with a release. */
int zv_lock_open(const char *name, zv_lock_t **out);
void zv_lock_release(zv_lock_t *l);

/*
 * The fence holding key now and the nanoseconds its lease has left (*fence 0 when free).
 * Returns 0 or ZV_ETOOLONG.
 */
int zv_lock_holder(zv_lock_t *l, const char *key, size_t len, uint64_t now_ns, uint64_t *fence,
                   uint64_t *left_ns);

/* Drops free and expired entries, visiting at most max_steps buckets; *more as stripes.h says. */
size_t zv_lock_sweep(zv_lock_t *l, uint64_t now_ns, size_t max_steps, int *more);

/* Drops every entry (specs: a fresh table under a shared name). */
void zv_lock_clear(zv_lock_t *l);

void zv_lock_stats(zv_lock_t *l, zv_lock_stats_t *out);

#endif
