/*
 * vectors.c: the dense float32 set (see vectors.h): rows, norms, the top-k query over them, and
 * the opt-in IVF index kept in step. The scoring kernel (dot, norm, top-k heap, scan) is
 * kernel.c's; the files call one way: vectors.c -> ivf.c -> kernel.c, vectors.c -> kernel.c.
 *
 * It must not know where vectors come from (SQLite, files) nor allocate in the scan: the heap
 * scratch belongs to the set and grows only when a larger k is asked for.
 */
#include "vectors.h"

#include <math.h>
#include <string.h>

#include "../core/zv.h"
#include "ivf.h"

#define ALIGN 64

struct zv_vectors_set_s {
  size_t dim, n, cap;
  float *rows;   /* cap * dim floats, ALIGN-aligned (rows_raw is what zv_alloc returned) */
  void *rows_raw;
  float *norms;  /* cap floats */
  zv_vectors_hit_t *heap;
  size_t heap_cap;
  zv_vectors_ivf_t *ivf; /* the opt-in approximate index (ivf.h), or NULL */
};

int zv_vectors_set_new(size_t dim, zv_vectors_set_t **out) {
  *out = NULL;
  if (dim == 0 || dim > (1u << 20)) return ZV_EINVAL;
  zv_vectors_set_t *s = zv_alloc(sizeof *s);
  if (!s) return ZV_ENOMEM;
  memset(s, 0, sizeof *s);
  s->dim = dim;
  *out = s;
  return 0;
}

void zv_vectors_set_free(zv_vectors_set_t *s) {
  if (!s) return;
  zv_free(s->rows_raw);
  zv_free(s->norms);
  zv_free(s->heap);
  zv_vectors_ivf_free(s->ivf);
  zv_free(s);
}

size_t zv_vectors_set_dim(const zv_vectors_set_t *s) { return s->dim; }
size_t zv_vectors_set_count(const zv_vectors_set_t *s) { return s->n; }
void zv_vectors_set_clear(zv_vectors_set_t *s) {
  s->n = 0;
  zv_vectors_set_drop_index(s);
}

const float *zv_vectors_set_row(const zv_vectors_set_t *s, size_t slot) {
  return s->rows + slot * s->dim;
}

/* Grows rows and norms to hold at least want rows; the set is unchanged on failure. */
static int grow(zv_vectors_set_t *s, size_t want) {
  size_t cap = s->cap ? s->cap : 64;
  while (cap < want) cap *= 2;
  if (cap > SIZE_MAX / sizeof(float) / s->dim - 1) return ZV_ENOMEM;
  void *raw = zv_alloc(cap * s->dim * sizeof(float) + ALIGN);
  float *norms = zv_alloc(cap * sizeof(float));
  if (!raw || !norms) {
    zv_free(raw);
    zv_free(norms);
    return ZV_ENOMEM;
  }
  float *rows = (float *)(((uintptr_t)raw + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
  if (s->n) {
    memcpy(rows, s->rows, s->n * s->dim * sizeof(float));
    memcpy(norms, s->norms, s->n * sizeof(float));
  }
  zv_free(s->rows_raw);
  zv_free(s->norms);
  s->rows_raw = raw;
  s->rows = rows;
  s->norms = norms;
  s->cap = cap;
  return 0;
}

int zv_vectors_set_put(zv_vectors_set_t *s, size_t slot, const float *v) {
  if (slot > s->n) return ZV_ERANGE;
  if (slot == s->n) {
    if (s->n == UINT32_MAX) return ZV_ERANGE;
    if (s->n == s->cap) {
      int rc = grow(s, s->n + 1);
      if (rc) return rc;
    }
    s->n++;
  } else if (s->ivf) {
    zv_vectors_ivf_put(s->ivf, slot, s->n);
  }
  memcpy(s->rows + slot * s->dim, v, s->dim * sizeof(float));
  s->norms[slot] = zv_vectors_norm(v, s->dim);
  return 0;
}

int zv_vectors_set_remove(zv_vectors_set_t *s, size_t slot) {
  if (slot >= s->n) return ZV_ERANGE;
  size_t last = s->n - 1;
  if (s->ivf) zv_vectors_ivf_remove(s->ivf, slot, s->n);
  if (slot != last) {
    memcpy(s->rows + slot * s->dim, s->rows + last * s->dim, s->dim * sizeof(float));
    s->norms[slot] = s->norms[last];
  }
  s->n = last;
  return 0;
}

/* Grows the heap scratch to k entries (it never shrinks). */
static int reserve_heap(zv_vectors_set_t *s, size_t k) {
  if (k <= s->heap_cap) return 0;
  zv_vectors_hit_t *heap = zv_alloc(k * sizeof *heap);
  if (!heap) return ZV_ENOMEM;
  zv_free(s->heap);
  s->heap = heap;
  s->heap_cap = k;
  return 0;
}

int zv_vectors_set_query(zv_vectors_set_t *s, const float *q, size_t k, zv_vectors_hit_t *hits,
                         size_t *n_out) {
  return zv_vectors_set_query_mask(s, q, k, NULL, hits, n_out);
}

int zv_vectors_set_query_mask(zv_vectors_set_t *s, const float *q, size_t k, const uint8_t *mask,
                              zv_vectors_hit_t *hits, size_t *n_out) {
  *n_out = 0;
  if (k > s->n) k = s->n;
  if (k == 0) return 0;
  int rc = reserve_heap(s, k);
  if (rc) return rc;
  zv_vectors_topk_t h;
  zv_vectors_topk_init(&h, s->heap, k);
  float qnorm = zv_vectors_norm(q, s->dim);
  if (!mask && qnorm > 0) {
    zv_vectors_scan(&h, q, qnorm, s->rows, s->norms, s->n, s->dim, 0);
  } else if (qnorm > 0) {
    /* Runs of selected rows go to the kernel as blocks. */
    size_t r = 0;
    while (r < s->n) {
      while (r < s->n && !mask[r]) r++;
      size_t start = r;
      while (r < s->n && mask[r]) r++;
      if (r > start) {
        zv_vectors_scan(&h, q, qnorm, s->rows + start * s->dim, s->norms + start, r - start,
                        s->dim, (uint32_t)start);
      }
    }
  } else {
    for (size_t r = 0; r < s->n && h.n < k; r++) {
      if (!mask || mask[r]) zv_vectors_topk_push(&h, 0.0f, (uint32_t)r);
    }
  }
  zv_vectors_topk_sort(&h);
  memcpy(hits, h.items, h.n * sizeof *hits);
  *n_out = h.n;
  return 0;
}

int zv_vectors_set_build_index(zv_vectors_set_t *s, const zv_vectors_ivf_opts_t *opts) {
  zv_vectors_ivf_t *ix;
  int rc = zv_vectors_ivf_build(s->rows, s->norms, s->n, s->dim, opts, &ix);
  if (rc) return rc;
  zv_vectors_ivf_free(s->ivf);
  s->ivf = ix;
  return 0;
}

void zv_vectors_set_drop_index(zv_vectors_set_t *s) {
  zv_vectors_ivf_free(s->ivf);
  s->ivf = NULL;
}

const zv_vectors_ivf_t *zv_vectors_set_index(const zv_vectors_set_t *s) { return s->ivf; }

int zv_vectors_set_query_approx(zv_vectors_set_t *s, const float *q, size_t k, size_t nprobe,
                                zv_vectors_hit_t *hits, size_t *n_out) {
  if (!s->ivf) return zv_vectors_set_query_mask(s, q, k, NULL, hits, n_out);
  *n_out = 0;
  if (k > s->n) k = s->n;
  if (k == 0) return 0;
  float qnorm = zv_vectors_norm(q, s->dim);
  /* A zero query scores everything 0: the exact path already answers it by slot order. */
  if (!(qnorm > 0)) return zv_vectors_set_query_mask(s, q, k, NULL, hits, n_out);
  int rc = reserve_heap(s, k);
  if (rc) return rc;
  zv_vectors_topk_t h;
  zv_vectors_topk_init(&h, s->heap, k);
  zv_vectors_ivf_scan(s->ivf, &h, q, qnorm, s->rows, s->norms, s->n, nprobe);
  zv_vectors_topk_sort(&h);
  memcpy(hits, h.items, h.n * sizeof *hits);
  *n_out = h.n;
  return 0;
}
