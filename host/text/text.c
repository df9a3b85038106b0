/*
 * text.c: optimal-string-alignment distance with three rolling rows, and the closest match.
 *
 * The dynamic programme keeps only rows i-2, i-1 and i, each (blen + 1) cells, in one scratch:
 *
 *   scratch: [ row i-2 | row i-1 | row i ]   each row: d[j], j = 0..blen
 *
 * Common prefix and suffix are dropped first (they never change an optimal alignment). When the
 * shorter side then fits in 64 bytes, the same table is computed column by column as bit
 * vectors instead (Hyyro's bit-parallel form of the OSA recurrence): one 64-bit word holds a whole
 * column, so a word pair costs a few operations per byte instead of one cell each. Above 64
 * bytes the rows above are used; they sit on the stack up to ZV_TEXT_STACK_CELLS cells a row,
 * and on the heap only above that. Nothing here keeps state.
 *
 * The bit-parallel state, for pattern p (m <= 64 bytes) against text t, after j bytes of t:
 *
 *   bit i of VP / VN:  D[i][j] - D[i-1][j] is +1 / -1   (vertical deltas of column j)
 *   bit i of D0:       D[i][j] == D[i-1][j-1]           (a diagonal zero step)
 *   score:             D[m][j]
 */
#include "text.h"

#include <stdint.h>
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
 * The kernel. rows holds 3 * (blen + 1) cells. When the smallest cell of a row exceeds limit
 * the final distance must too, so it returns limit + 1 early. The inner loop keeps the left
 * and diagonal neighbours in registers; the transposition test is a rarely taken branch.
 */
static size_t osa(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                  cell_t *rows, size_t limit) {
  cell_t *pp = rows, *prev = rows + blen + 1, *cur = rows + 2 * (blen + 1);
  for (size_t j = 0; j <= blen; j++) prev[j] = (cell_t)j;
  for (size_t i = 1; i <= alen; i++) {
    unsigned char ca = a[i - 1], ca1 = i > 1 ? a[i - 2] : 0;
    int can_swap = i > 1;
    cell_t left = (cell_t)i, diag = prev[0], rowmin = left;
    cur[0] = left;
    for (size_t j = 1; j <= blen; j++) {
      unsigned char cb = b[j - 1];
      cell_t up = prev[j];
      cell_t v = diag + (ca != cb);
      cell_t w = (up < left ? up : left) + 1;
      if (w < v) v = w;
      if (can_swap && j > 1 && ca == b[j - 2] && ca1 == cb && ca != cb && pp[j - 2] + 1 < v)
        v = pp[j - 2] + 1;
      cur[j] = v;
      diag = up;
      left = v;
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

/*
 * The match masks of a pattern: mask[slot[c]] has bit i set when p[i] == c. slot[] maps every
 * byte absent from the pattern to 0, whose mask is 0, so only 256 bytes need clearing.
 */
typedef struct {
  unsigned char slot[256];
  uint64_t mask[65];
  size_t len;
} pattern_t;

static void pattern_init(pattern_t *pt, const unsigned char *p, size_t m) {
  unsigned char k = 0;
  memset(pt->slot, 0, sizeof pt->slot);
  pt->mask[0] = 0;
  for (size_t i = 0; i < m; i++) {
    unsigned char c = p[i];
    if (!pt->slot[c]) {
      pt->slot[c] = ++k;
      pt->mask[k] = 0;
    }
    pt->mask[pt->slot[c]] |= (uint64_t)1 << i;
  }
  pt->len = m;
}

/* OSA distance between the pattern (1..64 bytes) and t; above limit it returns limit + 1. */
static size_t osa_bits(const pattern_t *pt, const unsigned char *t, size_t n, size_t limit) {
  size_t m = pt->len, score = m;
  uint64_t vp = m == 64 ? ~(uint64_t)0 : ((uint64_t)1 << m) - 1, vn = 0, d0_prev = 0, pm_prev = 0;
  uint64_t top = (uint64_t)1 << (m - 1);
  for (size_t j = 0; j < n; j++) {
    uint64_t pm = pt->mask[pt->slot[t[j]]];
    uint64_t tr = (((~d0_prev) & pm) << 1) & pm_prev;
    uint64_t d0 = (((pm & vp) + vp) ^ vp) | pm | vn | tr;
    uint64_t hp = vn | ~(d0 | vp), hn = d0 & vp, x;
    if (hp & top) score++;
    else if (hn & top) score--;
    /* Each remaining byte can lower the score by one at most. */
    if (score > limit && score - limit > n - j - 1) return limit + 1;
    x = (hp << 1) | 1;
    vn = x & d0;
    vp = (hn << 1) | ~(x | d0);
    pm_prev = pm;
    d0_prev = d0;
  }
  return score;
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
  if (blen <= 64) {
    pattern_t pt;
    pattern_init(&pt, b, blen);
    *out = osa_bits(&pt, a, alen, limit);
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

/* The scan for words of 1..64 bytes: the word is the pattern of every comparison. */
static size_t closest_bits(const char *word, size_t len, const zv_text_str_t *cands,
                           size_t ncands, size_t max_dist, size_t *best_i) {
  pattern_t pt;
  size_t best = (size_t)-1;
  pattern_init(&pt, (const unsigned char *)word, len);
  for (size_t i = 0; i < ncands && best != 0; i++) {
    size_t limit = best == (size_t)-1 ? max_dist : best - 1, d, n = cands[i].len;
    if ((n > len ? n - len : len - n) > limit) continue;
    d = n == 0 ? len : osa_bits(&pt, (const unsigned char *)cands[i].s, n, limit);
    if (d <= limit) {
      best = d;
      *best_i = i;
    }
  }
  return best;
}

/* The scan for other words, with one scratch of rows for all comparisons. */
static int closest_rows(const char *word, size_t len, const zv_text_str_t *cands, size_t ncands,
                        size_t max_dist, size_t *best_i, size_t *best_out) {
  cell_t stack[3 * ZV_TEXT_STACK_CELLS];
  cell_t *scratch = stack;
  size_t cap = ZV_TEXT_STACK_CELLS, best = (size_t)-1;
  int rc = 0;
  /* Rows run along the shorter side of each pair, so len + 1 cells always suffice. */
  if (len + 1 > cap) {
    cap = len + 1;
    scratch = zv_alloc(3 * cap * sizeof(cell_t));
    if (!scratch) return ZV_ENOMEM;
  }
  for (size_t i = 0; i < ncands && best != 0 && rc == 0; i++) {
    size_t d, limit = best == (size_t)-1 ? max_dist : best - 1;
    rc = bounded(word, len, cands[i].s, cands[i].len, limit, scratch, cap, &d);
    if (rc == 0 && d <= limit) {
      best = d;
      *best_i = i;
    }
  }
  if (scratch != stack) zv_free(scratch);
  *best_out = best;
  return rc;
}

int zv_text_closest(const char *word, size_t len, const zv_text_str_t *cands, size_t ncands,
                    size_t max_dist, size_t *index, size_t *dist) {
  size_t best, best_i = 0;
  if (len >= 1 && len <= 64) {
    best = closest_bits(word, len, cands, ncands, max_dist, &best_i);
  } else {
    int rc = closest_rows(word, len, cands, ncands, max_dist, &best_i, &best);
    if (rc) return rc;
  }
  if (best == (size_t)-1) return ZV_ENOTFOUND;
  if (index) *index = best_i;
  if (dist) *dist = best;
  return 0;
}
