/*
 * vectors_ffi.h: the per-call entries of the vector set and its IVF index, as LuaJIT's FFI sees it
 * (lua/adapters/vectors/db.lua loads it with require("zever.cdef.vectors")). The Makefile runs
 * this file through the preprocessor with -DZV_FFI_CDEF into build/ffi.h, which the host preloads:
 * these are the only declarations of these functions and types, C included, so Lua never types
 * them again.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * macros are expanded by the preprocessor.
 */
#ifndef ZV_VECTORS_FFI_H
#define ZV_VECTORS_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

typedef struct zv_vectors_set_s zv_vectors_set_t;

/* One survivor of a scan. */
typedef struct {
  float score;
  uint32_t slot;
} zv_vectors_hit_t;

size_t zv_vectors_set_count(const zv_vectors_set_t *s);

/* Writes v (dim floats, copied) at slot: slot < n replaces, slot == n appends (may grow the
 * rows: ZV_ENOMEM leaves the set unchanged), slot > n is ZV_ERANGE. */
int zv_vectors_set_put(zv_vectors_set_t *s, size_t slot, const float *v);

/* Removes slot by moving the last row into it (slots are not stable: the caller moves its
 * id of the last slot to slot). ZV_ERANGE when slot >= n. */
int zv_vectors_set_remove(zv_vectors_set_t *s, size_t slot);

/* zv_vectors_set_query (vectors.h) over the rows whose mask[slot] is non-zero (mask has
 * count() bytes); mask NULL scans every row. Rows outside the mask are skipped before their
 * dot product. */
int zv_vectors_set_query_mask(zv_vectors_set_t *s, const float *q, size_t k, const uint8_t *mask,
                              zv_vectors_hit_t *hits, size_t *n_out);

typedef struct zv_vectors_ivf_s zv_vectors_ivf_t;

/* What the index looks like now, for the adapter's rebuild policy and for users. */
typedef struct {
  size_t nlist, nprobe, n_built, n_indexed, n_stale;
} zv_vectors_ivf_info_t;

void zv_vectors_ivf_info(const zv_vectors_ivf_t *ix, zv_vectors_ivf_info_t *out);

/* The set's index, or NULL. */
const zv_vectors_ivf_t *zv_vectors_set_index(const zv_vectors_set_t *s);

/* zv_vectors_set_query through the index when the set has one (probing nprobe lists; 0: the
 * index's default), else the exact scan. Same results shape, same allocation rules. */
int zv_vectors_set_query_approx(zv_vectors_set_t *s, const float *q, size_t k, size_t nprobe,
                                zv_vectors_hit_t *hits, size_t *n_out);

#endif
