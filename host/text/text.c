/*
 * text.c: optimal-string-alignment distance with three rolling rows, and the closest match.
 *
 * The dynamic programme keeps only rows i-2, i-1 and i, each (blen + 1) cells, in one scratch:
 *
 *   scratch: [ row i-2 | row i-1 | row i ]   each row: d[j], j = 0..blen
 *
 * Common prefix and suffix are dropped first (they never change an optimal alignment), so a
 * typical typo leaves a handful of bytes to compare. The scratch sits on the stack up to
 * ZV_TEXT_STACK_CELLS cells a row, and on the heap only above that. Nothing here keeps state.
 */
#include "text.h"

#include <string.h>

#include "../core/zv.h"

typedef unsigned int cell_t;

static size_t min2(size_t a, size_t b) {
  return a < b ? a : b;
}

/* Narrows a and b to the part after their common prefix and before their common suffix. */
static void trim(const unsigned char **a, size_t *alen, const unsigned char **b, size_t *blen) {
  size_t n = min2(*alen, *blen), p = 0, s = 0;
  while (p < n && (*a)[p] == (*b)[p]) p++;
  *a += p;
  *b += p;
  *alen -= p;
  *blen -= p;
  n -= p;
  while (s < n && (*a)[*alen - 1 - s] == (*b)[*blen - 1 - s]) s++;
  *alen -= s;
  *blen -= s;
}

/*
 * The kernel. rows holds 3 * (blen + 1) cells; blen <= alen is not required. When the smallest
 * cell of a row exceeds limit the final distance must too, so it returns limit + 1 early.
 */
static size_t osa(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                  cell_t *rows, size_t limit) {
  cell_t *pp = rows, *prev = rows + blen + 1, *cur = rows + 2 * (blen + 1);
  for (size_t j = 0; j <= blen; j++) prev[j] = (cell_t)j;
  for (size_t i = 1; i <= alen; i++) {
    unsigned char ca = a[i - 1];
    cell_t rowmin;
    cur[0] = (cell_t)i;
    rowmin = cur[0];
    for (size_t j = 1; j <= blen; j++) {
      unsigned char cb = b[j - 1];
      cell_t cost = ca != cb;
      cell_t v = prev[j - 1] + cost;
      if (prev[j] + 1 < v) v = prev[j] + 1;
      if (cur[j - 1] + 1 < v) v = cur[j - 1] + 1;
      if (i > 1 && j > 1 && ca == b[j - 2] && a[i - 2] == cb && pp[j - 2] + 1 < v) v = pp[j - 2] + 1;
      cur[j] = v;
      if (v < rowmin) rowmin = v;
    }
    if (rowmin > limit) return limit + 1;
    cell_t *t = pp;
    pp = prev;
    prev = cur;
    cur = t;
  }
  return prev[blen];
}

/* Distance with an early exit above limit; scratch is caller-owned, cap cells per row. */
static int bounded(const char *as, size_t alen, const char *bs, size_t blen, size_t limit,
                   cell_t *scratch, size_t cap, size_t *out) {
  const unsigned char *a = (const unsigned char *)as, *b = (const unsigned char *)bs;
  trim(&a, &alen, &b, &blen);
  if (alen == 0 || blen == 0) {
    *out = alen + blen;
    return 0;
  }
  /* Rows run along the shorter string, so the scratch is sized by it. */
  if (blen > alen) {
    const unsigned char *t = a;
    size_t tl = alen;
    a = b;
    alen = blen;
    b = t;
    blen = tl;
  }
  if (alen - blen > limit) {
    *out = limit + 1;
    return 0;
  }
  if (blen + 1 <= cap) {
    *out = osa(a, alen, b, blen, scratch, limit);
    return 0;
  }
  cell_t *heap = zv_alloc(3 * (blen + 1) * sizeof(cell_t));
  if (!heap) return ZV_ENOMEM;
  *out = osa(a, alen, b, blen, heap, limit);
  zv_free(heap);
  return 0;
}

int zv_text_distance(const char *a, size_t alen, const char *b, size_t blen, size_t *out) {
  cell_t scratch[3 * ZV_TEXT_STACK_CELLS];
  return bounded(a, alen, b, blen, (size_t)-2, scratch, ZV_TEXT_STACK_CELLS, out);
}

size_t zv_text_threshold(size_t len) {
  return len > 8 ? 3 : 2;
}

int zv_text_closest(const char *word, size_t len, const zv_text_str_t *cands, size_t ncands,
                    size_t max_dist, size_t *index, size_t *dist) {
  cell_t stack[3 * ZV_TEXT_STACK_CELLS];
  cell_t *scratch = stack;
  size_t cap = ZV_TEXT_STACK_CELLS, best = (size_t)-1, best_i = 0, longest = len;
  int rc = 0;
  for (size_t i = 0; i < ncands; i++)
    if (cands[i].len > longest) longest = cands[i].len;
  /* One heap scratch for the whole scan, sized for the longest row it can need. */
  if (longest + 1 > cap) {
    cap = longest + 1;
    scratch = zv_alloc(3 * cap * sizeof(cell_t));
    if (!scratch) return ZV_ENOMEM;
  }
  for (size_t i = 0; i < ncands; i++) {
    size_t d, limit = best == (size_t)-1 ? max_dist : best - 1;
    if (best == 0) break;
    rc = bounded(word, len, cands[i].s, cands[i].len, limit, scratch, cap, &d);
    if (rc) break;
    if (d <= limit) {
      best = d;
      best_i = i;
    }
  }
  if (scratch != stack) zv_free(scratch);
  if (rc) return rc;
  if (best == (size_t)-1) return ZV_ENOTFOUND;
  if (index) *index = best_i;
  if (dist) *dist = best;
  return 0;
}
