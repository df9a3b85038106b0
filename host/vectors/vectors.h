/*
 * vectors.h: the vector battery's C core: a dense float32 set (one row per vector, norms
 * precomputed) and the top-k cosine scan over it.
 *
 * It must stay free of Lua and SQLite: the db adapter keeps the set coherent with its table
 * and maps slots to ids; benchmarks and fuzz targets call this file alone.
 *
 *   zv_vectors_set_t
 *   +-------+-----+-----+------------------------------------------+
 *   | dim   | n   | cap | rows:  [slot 0: dim floats][slot 1] ...  |  64-byte aligned, cap rows
 *   |       |     |     | norms: [|r0|][|r1|] ...                  |  cap floats
 *   |       |     |     | heap:  top-k scratch (score, slot) pairs |  grown to the largest k
 *   +-------+-----+-----+------------------------------------------+
 *
 * A query scans every row: score = dot(q, r) / (|q| |r|), kept in a bounded min-heap of size
 * k whose root is the weakest survivor, so a row costs one compare unless it beats the root.
 * A zero-norm row scores 0. The heap lives in the set (allocated once, grown only when k
 * grows), so a query allocates nothing after the first at a given k.
 *
 * A set may also own an opt-in approximate index (ivf.h: IVF-flat, declared there with the
 * zv_vectors_set_*_index calls); put and remove keep it in step, clear and free drop it.
 */
#ifndef ZV_VECTORS_H
#define ZV_VECTORS_H

#include <stddef.h>
#include <stdint.h>

#include "vectors_ffi.h"

/* The bounded min-heap; storage is the caller's (cap entries). */
typedef struct {
  zv_vectors_hit_t *items;
  size_t n, cap;
} zv_vectors_topk_t;

/* Dot product of n floats; written with 16 independent lanes so that -O2 vectorizes it. */
float zv_vectors_dot(const float *a, const float *b, size_t n);

/* Euclidean norm of n floats (same lanes as dot). */
float zv_vectors_norm(const float *a, size_t n);

/* Starts an empty heap over items[cap]; cap 0 keeps nothing. */
void zv_vectors_topk_init(zv_vectors_topk_t *h, zv_vectors_hit_t *items, size_t cap);

/* Offers (score, slot): kept when the heap has room or it beats the weakest survivor (a
 * higher score, or an equal score with a lower slot). Allocates nothing. */
void zv_vectors_topk_push(zv_vectors_topk_t *h, float score, uint32_t slot);

/* Sorts the survivors best first (score descending, then slot ascending); the heap is then
 * spent (its items are a sorted array of h->n hits). */
void zv_vectors_topk_sort(zv_vectors_topk_t *h);

/* The scan kernel: offers every row of rows[n * dim] (norms[n], slots first_slot...) scored
 * against q (|q| = qnorm > 0). Allocates nothing. */
void zv_vectors_scan(zv_vectors_topk_t *h, const float *q, float qnorm, const float *rows,
                     const float *norms, size_t n, size_t dim, uint32_t first_slot);

/* A new empty set of dim-dimensional vectors (dim >= 1). Returns 0 or ZV_EINVAL/ZV_ENOMEM;
 * the caller owns *out and frees it with zv_vectors_set_free. */
int zv_vectors_set_new(size_t dim, zv_vectors_set_t **out);
void zv_vectors_set_free(zv_vectors_set_t *s);

size_t zv_vectors_set_dim(const zv_vectors_set_t *s);
/* Empties the set, keeping its memory. */
void zv_vectors_set_clear(zv_vectors_set_t *s);

/* The k best rows for q (dim floats), best first, into hits[*n_out] (hits has room for k).
 * A zero q scores every row 0. Returns 0 or ZV_ENOMEM (growing the heap scratch). */
int zv_vectors_set_query(zv_vectors_set_t *s, const float *q, size_t k, zv_vectors_hit_t *hits,
                         size_t *n_out);

/* Raw access for the FFI: the row of slot (dim floats), valid until the next put/remove. */
const float *zv_vectors_set_row(const zv_vectors_set_t *s, size_t slot);

#endif
