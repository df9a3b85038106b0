/*
 * kernel.h: the scoring kernel shared by the vector set (vectors.c) and its IVF index (ivf.c):
 * cosine scores over float32 rows and a bounded top-k heap. Pure functions over caller-owned
 * memory; kernel.c calls nothing of vectors.c or ivf.c.
 */
#ifndef ZV_VECTORS_KERNEL_H
#define ZV_VECTORS_KERNEL_H

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

#endif
