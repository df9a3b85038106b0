/*
 * vectors_bench.c: the top-k cosine scan of host/vectors/ alone, at 1k, 10k and 100k rows of
 * dimension 384 (top_k 10), next to the memory-bandwidth floor of the same scan.
 *
 *   BenchmarkVectorKernel          100k x 384 through zv_vectors_set_query (153.6 MB of rows)
 *   BenchmarkVectorKernel10k/1k    the same at 10k and 1k rows (15.4 MB, 1.5 MB: caches help)
 *   BenchmarkVectorRead100k        a plain read of the same 153.6 MB (sum of floats, 16 lanes):
 *                                  the floor, bytes scanned / read bandwidth
 *   BenchmarkVectorMemcpy100k      memcpy of the same bytes (reads + writes), for reference
 *   BenchmarkVectorIVF100k         the IVF-flat index (ivf.h) over 100k x 384 clustered rows,
 *                                  top 10, at the smallest nprobe whose recall@10 against the
 *                                  exact scan is >= 0.95 (measured here, over 200 queries)
 *   BenchmarkVectorIVFDefault100k  the same at the index's default nprobe (nlist / 12)
 *   BenchmarkVectorExactClustered100k  the exact scan of the same clustered rows and queries
 *
 * After the lines it prints the floor and the kernel's ratio to it, and the index's build
 * time, nlist, nprobe and recall. Data is seeded, not timed. Clustered data: 1000 centres
 * uniform in [-1, 1]^384, each row a centre plus per-component noise of standard deviation
 * SIGMA = 0.75 (two rows of a cluster have cosine ~0.37, of two clusters ~0: at 0.5 one list
 * already finds 99.8% of the neighbours, at 0.85 it takes 128 of 316 lists for 95%); queries
 * are fresh points drawn the same way (not rows of the set). The recall search doubles nprobe
 * from 1 and prints each step.
 * Run: make bench BENCH=Vector (or build/bench/vectors_bench Vector).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "vectors/ivf.h"
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

#define CLUSTERS 1000
#define NQUERY 200
#ifndef SIGMA
#define SIGMA 0.75f
#endif
static zv_vectors_set_t *clustered;
static float *centres, *queries;
static size_t ivf_nprobe;
static double ivf_recall, ivf_build_ms;

/* About normal (sum of 4 uniforms, scaled to unit variance). */
static float next_normal(void) {
  float s = next_random() + next_random() + next_random() + next_random();
  return s * 0.8660254f; /* var of one uniform(-1,1) is 1/3; of 4: 4/3 */
}

static void clustered_point(float *row) {
  seed = seed * 1664525u + 1013904223u;
  const float *c = centres + (size_t)(seed >> 8) % CLUSTERS * DIM;
  for (int j = 0; j < DIM; j++) row[j] = c[j] + SIGMA * next_normal();
}

/* recall@TOPK of the index at nprobe over the query set, against the exact scan. */
static double recall_at(zv_vectors_set_t *s, size_t nprobe) {
  zv_vectors_hit_t exact[TOPK], approx[TOPK];
  size_t ne, na, found = 0, total = 0;
  for (int i = 0; i < NQUERY; i++) {
    const float *q = queries + (size_t)i * DIM;
    zv_vectors_set_query(s, q, TOPK, exact, &ne);
    zv_vectors_set_query_approx(s, q, TOPK, nprobe, approx, &na);
    for (size_t a = 0; a < ne; a++) {
      for (size_t b = 0; b < na; b++) found += exact[a].slot == approx[b].slot;
    }
    total += ne;
  }
  return (double)found / (double)total;
}

static zv_vectors_set_t *clustered_set(void) {
  if (clustered) return clustered;
  float row[DIM];
  seed = 777;
  centres = zv_alloc(sizeof(float) * CLUSTERS * DIM);
  queries = zv_alloc(sizeof(float) * NQUERY * DIM);
  if (!centres || !queries || zv_vectors_set_new(DIM, &clustered)) abort();
  for (size_t i = 0; i < (size_t)CLUSTERS * DIM; i++) centres[i] = next_random();
  for (size_t r = 0; r < sizes[0]; r++) {
    clustered_point(row);
    if (zv_vectors_set_put(clustered, r, row)) abort();
  }
  for (int i = 0; i < NQUERY; i++) clustered_point(queries + (size_t)i * DIM);
  zv_vectors_ivf_opts_t o = {0, 0, 0, 0, 42};
  uint64_t t0 = zv_bench_now();
  if (zv_vectors_set_build_index(clustered, &o)) abort();
  ivf_build_ms = (double)(zv_bench_now() - t0) / 1e6;
  zv_vectors_ivf_info_t info;
  zv_vectors_ivf_info(zv_vectors_set_index(clustered), &info);
  for (ivf_nprobe = 1; ivf_nprobe <= info.nlist; ivf_nprobe *= 2) {
    ivf_recall = recall_at(clustered, ivf_nprobe);
    printf("# IVF 100k: nprobe %zu recall@%d %.3f\n", ivf_nprobe, TOPK, ivf_recall);
    if (ivf_recall >= 0.95) break;
  }
  return clustered;
}

static void bench_ivf_100k(zv_bench_t *b) {
  zv_vectors_set_t *s = clustered_set();
  zv_vectors_hit_t hits[TOPK];
  size_t got;
  zv_vectors_set_query_approx(s, queries, TOPK, ivf_nprobe, hits, &got);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_vectors_set_query_approx(s, queries + i % NQUERY * DIM, TOPK, ivf_nprobe, hits, &got);
    zv_bench_keep(hits[0].slot + got);
  }
}

/* The same at the index's default nprobe (what a query without options gets). */
static void bench_ivf_default_100k(zv_bench_t *b) {
  zv_vectors_set_t *s = clustered_set();
  zv_vectors_hit_t hits[TOPK];
  size_t got;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_vectors_set_query_approx(s, queries + i % NQUERY * DIM, TOPK, 0, hits, &got);
    zv_bench_keep(hits[0].slot + got);
  }
}

static void bench_exact_clustered_100k(zv_bench_t *b) {
  zv_vectors_set_t *s = clustered_set();
  zv_vectors_hit_t hits[TOPK];
  size_t got;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_vectors_set_query(s, queries + i % NQUERY * DIM, TOPK, hits, &got);
    zv_bench_keep(hits[0].slot + got);
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
    ZV_BENCH(VectorIVF100k, bench_ivf_100k)
    ZV_BENCH(VectorIVFDefault100k, bench_ivf_default_100k)
    ZV_BENCH(VectorExactClustered100k, bench_exact_clustered_100k)
  };
  zv_bench_main(argc, argv, cases, ZV_ARRAY_SIZE(cases));
  const char *filter = argc > 1 ? argv[1] : getenv("BENCH");
  if (clustered) {
    zv_vectors_ivf_info_t info;
    zv_vectors_ivf_info(zv_vectors_set_index(clustered), &info);
    printf("# IVF 100k x %d clustered (%d centres): build %.0f ms (nlist %zu, %zu training "
           "rows max), nprobe %zu, recall@%d %.3f over %d queries; default nprobe %zu: "
           "recall@%d %.3f\n",
           DIM, CLUSTERS, ivf_build_ms, info.nlist, (size_t)ZV_VECTORS_IVF_SAMPLE(info.nlist),
           ivf_nprobe, TOPK, ivf_recall, NQUERY, info.nprobe, TOPK, recall_at(clustered, 0));
    zv_vectors_set_free(clustered);
    zv_free(centres);
    zv_free(queries);
  }
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
