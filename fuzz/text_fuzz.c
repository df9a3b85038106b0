/*
 * text_fuzz.c: differential fuzzing of zv_text_distance and zv_text_closest.
 *
 * The input is split at its first 0xFF byte into two words (and the rest); the distance must
 * equal a plain full-table dynamic programme, be symmetric, and closest() over the second word
 * must find it exactly when it is within the threshold.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../host/core/zv.h"
#include "../host/text/text.h"

static size_t naive(const unsigned char *a, size_t n, const unsigned char *b, size_t m) {
  size_t *d = malloc((n + 1) * (m + 1) * sizeof *d), r;
#define D(i, j) d[(i) * (m + 1) + (j)]
  for (size_t i = 0; i <= n; i++) D(i, 0) = i;
  for (size_t j = 0; j <= m; j++) D(0, j) = j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      size_t v = D(i - 1, j - 1) + (a[i - 1] != b[j - 1]);
      if (D(i - 1, j) + 1 < v) v = D(i - 1, j) + 1;
      if (D(i, j - 1) + 1 < v) v = D(i, j - 1) + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && D(i - 2, j - 2) + 1 < v)
        v = D(i - 2, j - 2) + 1;
      D(i, j) = v;
    }
  r = D(n, m);
#undef D
  free(d);
  return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *cut = memchr(data, 0xFF, size);
  size_t alen = cut ? (size_t)(cut - data) : size / 2;
  const uint8_t *b = cut ? cut + 1 : data + alen;
  size_t blen = size - (size_t)(b - data), d1, d2, index, dist;
  zv_text_str_t cands[2];
  int rc;
  if (alen > 600 || blen > 600) return 0;
  assert(zv_text_distance((const char *)data, alen, (const char *)b, blen, &d1) == 0);
  assert(zv_text_distance((const char *)b, blen, (const char *)data, alen, &d2) == 0);
  assert(d1 == d2);
  assert(d1 == naive(data, alen, b, blen));
  cands[0].s = "\x01\x02\x03never";
  cands[0].len = 8;
  cands[1].s = (const char *)b;
  cands[1].len = blen;
  rc = zv_text_closest((const char *)data, alen, cands, 2, zv_text_threshold(alen), &index, &dist);
  if (rc == 0) {
    assert(dist <= zv_text_threshold(alen));
    assert(dist == (index == 1 ? d1 : naive(data, alen, (const uint8_t *)cands[0].s, 8)));
  } else {
    assert(rc == ZV_ENOTFOUND);
    assert(d1 > zv_text_threshold(alen));
  }
  return 0;
}
