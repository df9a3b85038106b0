/*
 * vectors.c: the dense float32 set and the top-k cosine scan (see vectors.h).
 *
 * It must not know where vectors come from (SQLite, files) nor allocate in the scan: the heap
 * scratch belongs to the set and grows only when a larger k is asked for.
 *
 * Vectorization: a float sum reduction is not vectorized by GCC without -ffast-math (it would
 * reorder additions), so dot and norm keep LANES independent partial sums in an array; the
 * inner loop over the lanes is then plain element-wise multiply-add that -O2 turns into packed
 * SSE mulps/addps (checked with objdump). The lanes are summed in a fixed order at the end, so
 * results are deterministic for a given dim.
 */
#include "vectors.h"

#include <math.h>
#include <string.h>

#include "../core/zv.h"
#include "ivf.h"

#define LANES 16
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

float zv_vectors_dot(const float *restrict a, const float *restrict b, size_t n) {
  /* Four groups of four lanes: the SLP vectorizer packs each group into one SSE register. */
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0;
  float u0 = 0, u1 = 0, u2 = 0, u3 = 0, v0 = 0, v1 = 0, v2 = 0, v3 = 0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES) {
    const float *x = a + i, *y = b + i;
    s0 += x[0] * y[0]; s1 += x[1] * y[1]; s2 += x[2] * y[2]; s3 += x[3] * y[3];
    t0 += x[4] * y[4]; t1 += x[5] * y[5]; t2 += x[6] * y[6]; t3 += x[7] * y[7];
    u0 += x[8] * y[8]; u1 += x[9] * y[9]; u2 += x[10] * y[10]; u3 += x[11] * y[11];
    v0 += x[12] * y[12]; v1 += x[13] * y[13]; v2 += x[14] * y[14]; v3 += x[15] * y[15];
  }
  float tail = 0;
  for (; i < n; i++) tail += a[i] * b[i];
  s0 += t0 + (u0 + v0); s1 += t1 + (u1 + v1); s2 += t2 + (u2 + v2); s3 += t3 + (u3 + v3);
  return (s0 + s2) + (s1 + s3) + tail;
}

float zv_vectors_norm(const float *a, size_t n) {
  return sqrtf(zv_vectors_dot(a, a, n));
}

void zv_vectors_topk_init(zv_vectors_topk_t *h, zv_vectors_hit_t *items, size_t cap) {
  h->items = items;
  h->n = 0;
  h->cap = cap;
}

/* a is weaker than b: a lower score, or the same score and a later slot. */
static inline int weaker(const zv_vectors_hit_t *a, const zv_vectors_hit_t *b) {
  return a->score < b->score || (a->score == b->score && a->slot > b->slot);
}

static void sift_down(zv_vectors_hit_t *it, size_t n, size_t i) {
  zv_vectors_hit_t x = it[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && weaker(&it[c + 1], &it[c])) c++;
    if (!weaker(&it[c], &x)) break;
    it[i] = it[c];
    i = c;
  }
  it[i] = x;
}

void zv_vectors_topk_push(zv_vectors_topk_t *h, float score, uint32_t slot) {
  zv_vectors_hit_t x = {score, slot};
  zv_vectors_hit_t *it = h->items;
  if (h->n < h->cap) {
    size_t i = h->n++;
    while (i > 0) {
      size_t p = (i - 1) / 2;
      if (!weaker(&x, &it[p])) break;
      it[i] = it[p];
      i = p;
    }
    it[i] = x;
    return;
  }
  if (h->cap == 0 || !weaker(&it[0], &x)) return;
  it[0] = x;
  sift_down(it, h->n, 0);
}

void zv_vectors_topk_sort(zv_vectors_topk_t *h) {
  /* Heap sort in place: pop the weakest to the end, so the array ends best first. */
  zv_vectors_hit_t *it = h->items;
  for (size_t n = h->n; n > 1; n--) {
    zv_vectors_hit_t t = it[0];
    it[0] = it[n - 1];
    it[n - 1] = t;
    sift_down(it, n - 1, 0);
  }
}

void zv_vectors_scan(zv_vectors_topk_t *h, const float *q, float qnorm, const float *rows,
                     const float *norms, size_t n, size_t dim, uint32_t first_slot) {
  float floor_score = -INFINITY;
  for (size_t r = 0; r < n; r++) {
    float d = zv_vectors_dot(q, rows + r * dim, dim);
    float nr = norms[r];
    float score = nr > 0 ? d / (qnorm * nr) : 0.0f;
    /* Cheap reject against the weakest survivor once the heap is full. */
    if (h->n == h->cap && score < floor_score) continue;
    zv_vectors_topk_push(h, score, first_slot + (uint32_t)r);
    if (h->n == h->cap && h->cap > 0) floor_score = h->items[0].score;
  }
}

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
