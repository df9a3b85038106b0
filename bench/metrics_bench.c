/*
 * metrics_bench.c: the metrics core's hot path (host/metrics/): a counter increment and a
 * histogram observation into a worker's own slot (the calls LuaJIT's FFI makes per request),
 * and a scrape of 200 series merged over 4 slots (the slow path, for scale).
 *
 *   make bench BENCH=Metrics
 */
#include <stdio.h>

#include "bench.h"
#include "metrics/metrics.h"

static const double BOUNDS[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define NB ((int32_t)(sizeof BOUNDS / sizeof BOUNDS[0]))

static zv_metrics_t *m;
static double *cells;
static int32_t counter_cell, hist_cell;

static void setup(void) {
  if (m) return;
  const char *labels[] = {"route", "method", "status"};
  int32_t fc, fh;
  if (zv_metrics_new(65536, &m)) abort();
  if (zv_metrics_family(m, "http_requests_total", "Requests.", ZV_METRICS_COUNTER, labels, 3,
                        NULL, 0, &fc)) abort();
  if (zv_metrics_family(m, "http_request_duration_seconds", "Latency.", ZV_METRICS_HISTOGRAM,
                        labels, 2, BOUNDS, (size_t)NB, &fh)) abort();
  for (int i = 0; i < 100; i++) {
    char route[32];
    int n = snprintf(route, sizeof route, "/r%d/:id", i);
    const char *v[] = {route, "GET", "200"};
    size_t lens[] = {(size_t)n, 3, 3};
    if (zv_metrics_series(m, fc, v, lens, 3, &counter_cell)) abort();
    if (zv_metrics_series(m, fh, v, lens, 2, &hist_cell)) abort();
  }
  for (int i = 0; i < 4; i++) {
    if (zv_metrics_claim(m, &cells) < 0) abort();
  }
}

static void bench_counter_inc(zv_bench_t *b) {
  setup();
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_metrics_add(cells, counter_cell, 1);
  zv_bench_keep(cells[counter_cell]);
}

/* Latencies spread over the buckets (a linear scan of 11 bounds: ~6 compares on average). */
static void bench_histogram_observe(zv_bench_t *b) {
  static const double v[8] = {0.0004, 0.003, 0.02, 0.07, 0.2, 0.8, 3, 12};
  setup();
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_metrics_observe(cells, hist_cell, BOUNDS, NB, v[i & 7]);
  zv_bench_keep(cells[hist_cell]);
}

static void bench_scrape(zv_bench_t *b) {
  setup();
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    char *text;
    size_t len;
    if (zv_metrics_render(m, ZV_METRICS_PROMETHEUS, &text, &len)) abort();
    zv_bench_keep(len);
    zv_free(text);
  }
}

ZV_BENCH_MAIN(ZV_BENCH(MetricsCounterInc, bench_counter_inc)
              ZV_BENCH(MetricsHistogramObserve, bench_histogram_observe)
              ZV_BENCH(MetricsScrape200Series, bench_scrape))
