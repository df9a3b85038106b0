/*
 * bench.h: the micro-benchmark harness (header only; one bench program per C module).
 *
 * A benchmark is a function over b->n iterations, as in Go's testing.B:
 *
 *   static void bench_text_distance(zv_bench_t *b) {
 *     ... setup, not timed once zv_bench_reset(b) is called ...
 *     zv_bench_reset(b);
 *     for (uint64_t i = 0; i < b->n; i++) zv_bench_keep(zv_text_distance(...));
 *   }
 *   ZV_BENCH_MAIN(ZV_BENCH(TextDistance, bench_text_distance))
 *
 * The harness grows n until one run takes about 0.5 s (ZV_BENCH_TIME in seconds overrides it),
 * then runs the benchmark 5 times (ZV_BENCH_COUNT) at that n and prints the median as a Go-style
 * line:
 *
 *   BenchmarkTextDistance  12345678  45.20 ns/op  0 B/op  0 allocs/op
 *
 * Allocations are counted by the core's allocator (bench builds use -DZV_ALLOC_STATS), from the
 * last zv_bench_reset to the end of the function, and divided by n. A filter (first argument, or
 * the BENCH environment variable) selects benchmarks whose name contains it, or every benchmark
 * of a program whose file name contains it, without case (BENCH=Idempotency); a filter that
 * starts with '=' selects the one benchmark of exactly that name (BENCH==LockAcquireUnlock).
 *
 * Instructions rather than time: ZV_BENCH_N=n runs each selected benchmark once at exactly n
 * iterations (no growth, no repeats), inside zv_bench_body(), a function of its own that
 * callgrind can count alone (--toggle-collect=zv_bench_body). bench/instructions.sh runs it at
 * two n and prints the slope, instructions per op, which load on the machine cannot move.
 */
#ifndef ZV_BENCH_H
#define ZV_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../host/core/zv.h"

typedef struct {
  uint64_t n;
  uint64_t start_ns;
  zv_alloc_stats_t start_alloc;
} zv_bench_t;

typedef struct {
  const char *name;
  void (*fn)(zv_bench_t *b);
} zv_bench_case_t;

#define ZV_BENCH(name, fn) {#name, fn},

static volatile uint64_t zv_bench_sink;

/* Keeps a result alive so the compiler cannot drop the work that produced it. */
#define zv_bench_keep(x) (zv_bench_sink += (uint64_t)(x))

static uint64_t zv_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Restarts the clock and the allocation counters: call it after setup. */
static inline void zv_bench_reset(zv_bench_t *b) {
  zv_alloc_stats(&b->start_alloc);
  b->start_ns = zv_bench_now();
}

typedef struct {
  double ns_per_op;
  double bytes_per_op;
  double allocs_per_op;
} zv_bench_result_t;

/* The benchmark's own run, kept out of line so that callgrind can count it alone. */
__attribute__((noinline)) void zv_bench_body(void (*fn)(zv_bench_t *), zv_bench_t *b);
__attribute__((noinline)) void zv_bench_body(void (*fn)(zv_bench_t *), zv_bench_t *b) {
  fn(b);
}

static zv_bench_result_t zv_bench_once(void (*fn)(zv_bench_t *), uint64_t n) {
  zv_bench_t b;
  zv_alloc_stats_t end;
  zv_bench_result_t r;
  b.n = n;
  zv_bench_reset(&b);
  zv_bench_body(fn, &b);
  uint64_t elapsed = zv_bench_now() - b.start_ns;
  zv_alloc_stats(&end);
  r.ns_per_op = (double)elapsed / (double)n;
  r.bytes_per_op = (double)(end.bytes - b.start_alloc.bytes) / (double)n;
  r.allocs_per_op = (double)(end.allocs - b.start_alloc.allocs) / (double)n;
  return r;
}

static int zv_bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double zv_bench_median(double *v, int count) {
  qsort(v, (size_t)count, sizeof(double), zv_bench_cmp);
  return count % 2 ? v[count / 2] : (v[count / 2 - 1] + v[count / 2]) / 2;
}

static double zv_bench_env(const char *name, double fallback) {
  const char *s = getenv(name);
  return s && *s ? atof(s) : fallback;
}

static void zv_bench_run_case(const zv_bench_case_t *c) {
  double target_ns = zv_bench_env("ZV_BENCH_TIME", 0.5) * 1e9;
  int count = (int)zv_bench_env("ZV_BENCH_COUNT", 5);
  double ns[64], bytes[64], allocs[64];
  uint64_t n = 1;
  double fixed = zv_bench_env("ZV_BENCH_N", 0);
  if (count < 1) count = 1;
  if (count > 64) count = 64;
  if (fixed >= 1) {
    n = (uint64_t)fixed;
    count = 1;
  }
  /* Grow n until a run takes the target time, as Go's testing package does. */
  while (fixed < 1) {
    zv_bench_result_t r = zv_bench_once(c->fn, n);
    double total = r.ns_per_op * (double)n;
    if (total >= target_ns || n >= 1000000000u) break;
    double want = total > 0 ? target_ns / r.ns_per_op * 1.2 : (double)n * 100;
    if (want > (double)n * 100) want = (double)n * 100;
    if (want < (double)n + 1) want = (double)n + 1;
    n = (uint64_t)want;
  }
  for (int i = 0; i < count; i++) {
    zv_bench_result_t r = zv_bench_once(c->fn, n);
    ns[i] = r.ns_per_op;
    bytes[i] = r.bytes_per_op;
    allocs[i] = r.allocs_per_op;
  }
  printf("Benchmark%-28s %10llu %12.2f ns/op %8.0f B/op %6.2f allocs/op\n", c->name,
         (unsigned long long)n, zv_bench_median(ns, count), zv_bench_median(bytes, count),
         zv_bench_median(allocs, count));
  fflush(stdout);
}

/* 1 when needle occurs in hay, ASCII letters compared without case. */
static int zv_bench_icontains(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++) {
    size_t k = 0;
    while (k < n && hay[k] && (hay[k] | 0x20) == (needle[k] | 0x20) &&
           ((hay[k] | 0x20) >= 'a' && (hay[k] | 0x20) <= 'z' ? 1 : hay[k] == needle[k]))
      k++;
    if (k == n) return 1;
  }
  return n == 0;
}

static int zv_bench_main(int argc, char **argv, const zv_bench_case_t *cases, size_t ncases) {
  const char *filter = argc > 1 ? argv[1] : getenv("BENCH");
  /* A filter naming the program (BENCH=Idempotency for idempotency_bench) selects all of it,
   * as `make bench` does for the Lua benchmarks' file names. */
  const char *prog = argv[0] ? strrchr(argv[0], '/') : NULL;
  prog = prog ? prog + 1 : (argv[0] ? argv[0] : "");
  if (filter && *filter && zv_bench_icontains(prog, filter)) filter = NULL;
  for (size_t i = 0; i < ncases; i++) {
    if (filter && *filter == '=' && strcmp(cases[i].name, filter + 1) != 0) continue;
    if (filter && *filter && *filter != '=' && !strstr(cases[i].name, filter)) continue;
    zv_bench_run_case(&cases[i]);
  }
  return 0;
}

#define ZV_BENCH_MAIN(...)                                                    \
  int main(int argc, char **argv) {                                           \
    static const zv_bench_case_t cases[] = {__VA_ARGS__};                     \
    return zv_bench_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0])); \
  }

#endif
