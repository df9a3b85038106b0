/*
 * vectors_bench.c: the top-k cosine scan of host/vectors/ alone, at 1k, 10k and 100k rows of
 * dimension 384 (top_k 10), next to the memory-bandwidth floor of the same scan.
 *
 *   BenchmarkVectorKernel          100k x 384 through zv_vectors_set_query (153.6 MB of rows)
 *   BenchmarkVectorKernel10k/1k    the same at 10k and 1k rows (15.4 MB, 1.5 MB: caches help)
 *   BenchmarkVectorRead100k        a plain read of the same 153.6 MB (sum of floats, 16 lanes):
 *                                  the floor, bytes scanned / read bandwidth
 *   BenchmarkVectorMemcpy100k      memcpy of the same bytes (reads + writes), for reference
 *
 * After the lines it prints the floor and the kernel's ratio to it. Data is seeded, not timed.
 * Run: make bench BENCH=Vector (or build/bench/vectors_bench Vector).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "vectors/vectors.h"

#define DIM 384
#define TOPK 10

static zv_vectors_set_t *sets[3];
static const size_t sizes[3] = {100000, 10000, 1000};
static float query[DIM];
static float *copy_dst;

static uint32_t seed = 12345;
static float next_random(void) {
  seed = seed * 1664525u + 1013904223u;
  return (float)(seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

static zv_vectors_set_t *set_of(int which) {
  if (sets[which]) return sets[which];
  float row[DIM];
  zv_vectors_set_t *s;
  if (zv_vectors_set_new(DIM, &s)) abort();
  for (size_t r = 0; r < sizes[which]; r++) {
    for (int j = 0; j < DIM; j++) row[j] = next_random();
    if (zv_vectors_set_put(s, r, row)) abort();
  }
  for (int j = 0; j < DIM; j++) query[j] = next_random();
  sets[which] = s;
  return s;
}

static void kernel(zv_bench_t *b, int which) {
  zv_vectors_set_t *s = set_of(which);
  zv_vectors_hit_t hits[TOPK];
  size_t got;
  zv_vectors_set_query(s, query, TOPK, hits, &got); /* the heap scratch: once, not per op */
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_vectors_set_query(s, query, TOPK, hits, &got);
    zv_bench_keep(hits[0].slot + got);
  }
}

static void bench_kernel_100k(zv_bench_t *b) { kernel(b, 0); }
static void bench_kernel_10k(zv_bench_t *b) { kernel(b, 1); }
static void bench_kernel_1k(zv_bench_t *b) { kernel(b, 2); }

/* The fastest plain read we could write: four SSE registers of partial sums (see vectors.c). */
static float read_sum(const float *restrict p, size_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0;
  float u0 = 0, u1 = 0, u2 = 0, u3 = 0, v0 = 0, v1 = 0, v2 = 0, v3 = 0;
  for (size_t i = 0; i + 16 <= n; i += 16) {
    const float *x = p + i;
    s0 += x[0]; s1 += x[1]; s2 += x[2]; s3 += x[3];
    t0 += x[4]; t1 += x[5]; t2 += x[6]; t3 += x[7];
    u0 += x[8]; u1 += x[9]; u2 += x[10]; u3 += x[11];
    v0 += x[12]; v1 += x[13]; v2 += x[14]; v3 += x[15];
  }
  return (s0 + s1 + s2 + s3) + (t0 + t1 + t2 + t3) + (u0 + u1 + u2 + u3) + (v0 + v1 + v2 + v3);
}

static void bench_read_100k(zv_bench_t *b) {
  zv_vectors_set_t *s = set_of(0);
  const float *rows = zv_vectors_set_row(s, 0);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_bench_keep(read_sum(rows, sizes[0] * DIM) > 0);
}

static void bench_memcpy_100k(zv_bench_t *b) {
  zv_vectors_set_t *s = set_of(0);
  size_t bytes = sizes[0] * DIM * sizeof(float);
  if (!copy_dst) copy_dst = zv_alloc(bytes);
  if (!copy_dst) abort();
  memcpy(copy_dst, zv_vectors_set_row(s, 0), bytes);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    memcpy(copy_dst, zv_vectors_set_row(s, 0), bytes);
    zv_bench_keep(copy_dst[i % 1000] > 0);
  }
}

/* Median of 5 timed single passes of fn over the 100k set, in ns. */
static double median_pass(void (*fn)(zv_bench_t *)) {
  double v[5];
  for (int i = 0; i < 5; i++) {
    zv_bench_t b;
    b.n = 1;
    fn(&b);
    v[i] = (double)(zv_bench_now() - b.start_ns);
  }
  return zv_bench_median(v, 5);
}

int main(int argc, char **argv) {
  static const zv_bench_case_t cases[] = {
    ZV_BENCH(VectorKernel, bench_kernel_100k)
    ZV_BENCH(VectorKernel10k, bench_kernel_10k)
    ZV_BENCH(VectorKernel1k, bench_kernel_1k)
    ZV_BENCH(VectorRead100k, bench_read_100k)
    ZV_BENCH(VectorMemcpy100k, bench_memcpy_100k)
  };
  zv_bench_main(argc, argv, cases, ZV_ARRAY_SIZE(cases));
  const char *filter = argc > 1 ? argv[1] : getenv("BENCH");
  if (filter && *filter && !strstr("VectorKernel", filter)) return 0;
  double bytes = (double)sizes[0] * DIM * sizeof(float) + (double)sizes[0] * sizeof(float);
  double read_ns = median_pass(bench_read_100k);
  double scan_ns = median_pass(bench_kernel_100k);
  printf("# 100k x %d: %.1f MB scanned; read bandwidth %.2f GB/s; floor %.2f ms; "
         "kernel %.2f ms = %.2fx the floor\n",
         DIM, bytes / 1e6, bytes / read_ns, read_ns / 1e6, scan_ns / 1e6, scan_ns / read_ns);
  zv_free(copy_dst);
  for (int i = 0; i < 3; i++) zv_vectors_set_free(sets[i]);
  return 0;
}
