/*
 * metrics_ffi.h: the per-event calls of the metrics core, as LuaJIT's FFI sees it
 * (lua/zever/metrics.lua loads it with require("zever.cdef.metrics")). The Makefile runs this
 * file through the preprocessor with -DZV_FFI_CDEF into build/ffi.h, which the host preloads:
 * these are the only declarations of these functions and types, C included.
 *
 * They write one worker's own cells (the slot zv_metrics_claim gave it): no lock, no atomic
 * read-modify-write, no allocation. A cell index is what zv_metrics_series returned.
 */
#ifndef ZV_METRICS_FFI_H
#define ZV_METRICS_FFI_H

#ifndef ZV_FFI_CDEF
#include <stdint.h>
#endif

/* Adds v to the counter or gauge at cells[cell]. */
void zv_metrics_add(double *cells, int32_t cell, double v);

/*
 * Records v in the histogram whose cells start at cells[cell]: the first bucket whose upper
 * bound (bounds[0 .. nb), ascending) is >= v gets one more count (the +Inf bucket, cell + nb,
 * when none is), and v is added to the sum at cell + nb + 1. A NaN lands in +Inf.
 */
void zv_metrics_observe(double *cells, int32_t cell, const double *bounds, int32_t nb, double v);

/* The monotonic clock in seconds (CLOCK_MONOTONIC), for request durations. */
double zv_metrics_clock(void);

/*
 * The two series one kind of answered request writes (a route, method and status): the
 * counter at cells[counter] and the histogram of nb bounds at cells[hist]. The built-in HTTP
 * metrics keep one per kind (lua/zever/metrics.lua), so a request passes one pointer.
 */
typedef struct {
  double *cells;
  const double *bounds;
  int32_t counter;
  int32_t hist;
  int32_t nb;
} zv_metrics_pair_t;

/*
 * One answered request: adds 1 to p's counter and observes the seconds since t0 (a
 * zv_metrics_clock reading) in p's histogram (as zv_metrics_observe).
 */
void zv_metrics_request(const zv_metrics_pair_t *p, double t0);

#endif
