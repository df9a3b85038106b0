/*
 * ivf.h: the opt-in approximate index of the vector battery: IVF-flat (an inverted file of
 * row slots over k-means centroids, the rows themselves scanned flat, uncompressed).
 *
 * It must stay free of Lua and SQLite, and it does not own the rows: it is built over the
 * rows and norms of a zv_vectors_set_t (vectors.c owns one per set and keeps it in step), and
 * every call that reads rows is handed them again, so a set that grew its storage is fine.
 * It calls only the kernel (kernel.h); the set's calls that take an index are vectors.h's.
 *
 *   zv_vectors_ivf_t
 *   +-----------+-------------------------------------------+
 *   | centroids | nlist x dim floats, unit length           |   spherical k-means
 *   | offsets   | nlist + 1: list c is members[off[c]..]    |
 *   | members   | n_built slots, grouped by list            |
 *   | stale     | n_built flags: slot rewritten since built |   scanned exactly, skipped
 *   | stale_at  | the stale slots, in order (n_built cap)   |   in the lists
 *   | probe     | nlist (score, list) pairs: probe scratch  |
 *   +-----------+-------------------------------------------+
 *   slots [0, n_indexed) are indexed; [n_indexed, n) is the tail, scanned exactly.
 *
 * A query scores q against the centroids, keeps the nprobe best lists, and offers their
 * members to the caller's top-k heap (the same dot product and heap as the exact scan), then
 * the stale slots and the tail. Writes after the build cost nothing at write time: a rewritten
 * slot is marked stale, an appended row lands in the tail, a removal shrinks n_indexed when
 * the last indexed row moves. Recall depends on the data: clustered data (real embeddings)
 * does well; uniform random vectors in many dimensions have no clusters to find.
 */
#ifndef ZV_VECTORS_IVF_H
#define ZV_VECTORS_IVF_H

#include <stddef.h>
#include <stdint.h>

#include "kernel.h"
#include "vectors_ffi.h"

typedef struct {
  size_t nlist;   /* lists (centroids); 0: round(sqrt(n)); clamped to [1, n] */
  size_t nprobe;  /* lists a query scans by default; 0: ZV_VECTORS_IVF_NPROBE(nlist) */
  size_t iters;   /* Lloyd iterations; 0: 10 */
  size_t sample;  /* rows k-means trains on; 0: min(n, ZV_VECTORS_IVF_SAMPLE(nlist)) */
  uint64_t seed;  /* the same seed, rows and options build the same index */
} zv_vectors_ivf_opts_t;

/* The default training sample: 128 rows per list (the rest of the rows are only assigned).
 * Half that builds in about half the time but lost much recall on the benchmark's clustered
 * data (recall@10 0.90 instead of 0.98 at nprobe 1: docs/vectors.md). */
#define ZV_VECTORS_IVF_SAMPLE(nlist) (128 * (nlist))

/* The default probes: a twelfth of the lists, at least 1 (see docs/vectors.md for recall). */
#define ZV_VECTORS_IVF_NPROBE(nlist) ((nlist) / 12 > 0 ? (nlist) / 12 : 1)

/* Builds an index over rows[n * dim] (norms[n]); zero-norm rows go to list 0 and do not
 * train. Allocates the index and temporary training memory (freed before it returns); the
 * caller owns *out (zv_vectors_ivf_free). Returns 0, ZV_EINVAL (n == 0 or n > UINT32_MAX) or
 * ZV_ENOMEM. Cost: (iters + 1) x sample x nlist + n x nlist dot products of dim floats. */
int zv_vectors_ivf_build(const float *rows, const float *norms, size_t n, size_t dim,
                         const zv_vectors_ivf_opts_t *opts, zv_vectors_ivf_t **out);
void zv_vectors_ivf_free(zv_vectors_ivf_t *ix);

/* The set wrote the row at slot (before the write, the set held n rows). */
void zv_vectors_ivf_put(zv_vectors_ivf_t *ix, size_t slot, size_t n);

/* The set removed slot by moving its last row (n - 1, n rows before) into it. */
void zv_vectors_ivf_remove(zv_vectors_ivf_t *ix, size_t slot, size_t n);

/* Offers to h the rows of the nprobe lists nearest q (0: the index's default; more than
 * nlist: all), the stale slots and the tail [n_indexed, n). qnorm > 0. Allocates nothing. */
void zv_vectors_ivf_scan(zv_vectors_ivf_t *ix, zv_vectors_topk_t *h, const float *q, float qnorm,
                         const float *rows, const float *norms, size_t n, size_t nprobe);

/* zv_vectors_set_index, zv_vectors_set_query_approx and zv_vectors_ivf_info: vectors_ffi.h. */

#endif
