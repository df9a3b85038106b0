/*
 * kernel.c: the scoring kernel of the vector set and its IVF index (see kernel.h): dot product,
 * norm, the bounded top-k heap and the scan that feeds it. It calls nothing of vectors.c or
 * ivf.c: both call it.
 *
 * It must not allocate: every buffer is the caller's.
 *
 * Vectorization: a float sum reduction is not vectorized by GCC without -ffast-math (it would
 * reorder additions), so dot and norm keep LANES independent partial sums in an array; the
 * inner loop over the lanes is then plain element-wise multiply-add that -O2 turns into packed
 * SSE mulps/addps (checked with objdump). The lanes are summed in a fixed order at the end, so
 * results are deterministic for a given dim.
 */
#include "kernel.h"

#include <math.h>

#define LANES 16

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
