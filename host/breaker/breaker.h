/*
 * breaker.h: circuit breakers shared by every worker thread of a process (the inproc adapter of
 * the breaker battery): closed / open / half-open over a sliding window of the last calls.
 *
 * It must stay free of Lua and libuv: it is benchmarked on its own.
 *
 *   zv_breaker_t  (one per name, in the registry; the options are those of the first open)
 *   +-------------------------------------------------------------------+
 *   | state (atomic: allow reads it without the lock)   | spin lock     |
 *   | cfg: failure_rate, slow_rate, slow_ns, window, min_calls,         |
 *   |      open_ns, half_open_calls                                     |
 *   | until_ns (open: when it half-opens) | trials | trial_ok           |
 *   | calls, failures, slow (counts over the window) | pos              |
 *   | outcome[window]: 0 none, 1 ok, 2 failed, 3 slow, 4 failed+slow    |
 *   +-------------------------------------------------------------------+
 *
 * The state machine is the front-end's own (lua/zever/breaker.lua): CLOSED counts the last
 * `window` outcomes and opens once it holds min_calls of them and the failures (or the slow
 * calls) reach their share; OPEN refuses until until_ns, then HALF_OPEN lets half_open_calls
 * trial calls through; all of them succeeding closes it with an empty window, the first
 * failing or slow one opens it again. Time is a monotonic count of nanoseconds passed as
 * now_ns; 0 reads CLOCK_MONOTONIC.
 */
#ifndef ZV_BREAKER_H
#define ZV_BREAKER_H

#include <stddef.h>
#include <stdint.h>

#include "breaker_ffi.h"

#define ZV_BREAKER_MAX_NAME 256
#define ZV_BREAKER_MAX_WINDOW 100000

enum { ZV_BREAKER_CLOSED = 0, ZV_BREAKER_OPEN = 1, ZV_BREAKER_HALF_OPEN = 2 };

typedef struct {
  double failure_rate;        /* (0, 1] */
  double slow_rate;           /* (0, 1] */
  uint64_t slow_ns;           /* a call at least this long is slow; 0: none is */
  uint64_t open_ns;           /* how long OPEN lasts */
  uint32_t window;            /* 1 .. ZV_BREAKER_MAX_WINDOW */
  uint32_t min_calls;         /* >= 1 */
  uint32_t half_open_calls;   /* >= 1 */
} zv_breaker_cfg_t;

typedef struct {
  int state;                  /* as allow sees it now (OPEN past until_ns reads HALF_OPEN) */
  uint32_t calls, failures, slow;
  uint64_t rejected, opened;
  uint64_t retry_ns;          /* OPEN: nanoseconds left */
} zv_breaker_stats_t;

uint64_t zv_breaker_clock(void);

/*
 * The process-wide breaker called name (at most ZV_BREAKER_MAX_NAME bytes), created with cfg on
 * the first open and shared by later ones whatever their cfg. Pair each open with a release
 * (which frees a private breaker of zv_breaker_new at once).
 * Returns 0, ZV_EINVAL (a cfg out of range), ZV_ETOOLONG or ZV_ENOMEM.
 */
int zv_breaker_open(const char *name, const zv_breaker_cfg_t *cfg, zv_breaker_t **out);
void zv_breaker_release(zv_breaker_t *b);

/*
 * A private breaker, in no registry (the memory adapter: one per Lua state). Free it with
 * zv_breaker_release too. Returns 0, ZV_EINVAL or ZV_ENOMEM.
 */
int zv_breaker_new(const zv_breaker_cfg_t *cfg, zv_breaker_t **out);

/* The options the breaker was created with. */
void zv_breaker_cfg(zv_breaker_t *b, zv_breaker_cfg_t *out);

void zv_breaker_stats(zv_breaker_t *b, uint64_t now_ns, zv_breaker_stats_t *out);

/* Back to CLOSED with an empty window (the counters of rejected and opened stay). */
void zv_breaker_reset(zv_breaker_t *b);

#endif
