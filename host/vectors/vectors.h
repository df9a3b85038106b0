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

#include "ivf.h"
#include "kernel.h"
#include "vectors_ffi.h"

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

/* The set's own index (vectors.c keeps it in step with put/remove; clear and free drop it). */

/* Builds an index over the set's rows now, replacing any previous one (kept on failure).
 * Returns 0, ZV_EINVAL (an empty set) or ZV_ENOMEM. */
int zv_vectors_set_build_index(zv_vectors_set_t *s, const zv_vectors_ivf_opts_t *opts);
void zv_vectors_set_drop_index(zv_vectors_set_t *s);

#endif
