/*
 * breaker_bench.c: the shared breaker core (host/breaker/): a closed breaker's guard (allow +
 * record of a success: the whole per-call cost of the inproc adapter), the refusal of an open
 * one, and a trial's allow + record in half-open state that stays half open. The clock is
 * passed in (a counter), so the numbers are the core's. Issue #22's target for the guard:
 * <= 50 ns, 0 allocs.
 *
 *   make bench BENCH=Breaker
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "breaker/breaker.h"

static zv_breaker_t *fresh(const char *name, uint32_t window, uint32_t min_calls) {
  zv_breaker_cfg_t cfg = {0.5, 1.0, 0, 1000000000ull, window, min_calls, 1000000};
  zv_breaker_t *b;
  if (zv_breaker_open(name, &cfg, &b)) abort();
  return b;
}

static void bench_closed_guard(zv_bench_t *b) {
  zv_breaker_t *br = fresh("bench-closed", 100, 100);
  uint64_t retry;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    if (zv_breaker_allow(br, i + 1, &retry)) abort();
    zv_bench_keep(zv_breaker_record(br, 0, 0, i + 1));
  }
  zv_breaker_release(br);
}

static void bench_open_refusal(zv_bench_t *b) {
  zv_breaker_t *br = fresh("bench-open", 1, 1);
  uint64_t retry;
  zv_breaker_record(br, 1, 0, 1);   /* one failure of one call: open for a second */
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_bench_keep(zv_breaker_allow(br, 2, &retry));
  zv_breaker_release(br);
}

static void bench_half_open_trial(zv_bench_t *b) {
  zv_breaker_t *br = fresh("bench-half", 1, 1);
  uint64_t retry;
  zv_breaker_record(br, 1, 0, 1);
  uint64_t now = 2000000000ull;   /* past open_for: half open, a million trials to close */
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    if (zv_breaker_allow(br, now, &retry) == 0) zv_bench_keep(zv_breaker_record(br, 0, 0, now));
    if (i % 500000 == 499999) zv_breaker_reset(br), zv_breaker_record(br, 1, 0, 1);
  }
  zv_breaker_release(br);
}

ZV_BENCH_MAIN(ZV_BENCH(BreakerClosedGuard, bench_closed_guard)
              ZV_BENCH(BreakerOpenRefusal, bench_open_refusal)
              ZV_BENCH(BreakerHalfOpenTrial, bench_half_open_trial))
