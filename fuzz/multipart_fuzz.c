/*
 * multipart_fuzz.c: libFuzzer target for the streaming multipart parser (host/http/multipart.c)
 * and its header-value helpers.
 *
 * The input is parsed twice with the boundary "XyZ": once in one feed, once cut into chunks whose
 * sizes come from the input's first bytes (1..16 bytes each, so delimiters and header lines are
 * split everywhere). Both runs must produce the same transcript of events (headers, data
 * bytes, part ends) and the same result: splitting never changes what is parsed. The data
 * bytes of a part are joined before comparing (a split run hands them out in more pieces).
 * The input is also given to zv_multipart_boundary and zv_multipart_disposition. It must not
 * crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/multipart.h"

#define LOG_MAX (1 << 16)

typedef struct {
  unsigned char log[LOG_MAX];
  size_t len;
  int overflow;
} transcript_t;

static void put(transcript_t *t, char tag, const char *p, size_t n) {
  if (t->overflow || t->len + n + 1 > LOG_MAX) {
    t->overflow = 1;
    return;
  }
  if (tag) t->log[t->len++] = (unsigned char)tag;
  memcpy(t->log + t->len, p, n);
  t->len += n;
}

static int on_header(void *ud, const char *name, size_t nlen, const char *value, size_t vlen) {
  if (nlen == 0) abort();
  put(ud, 'H', name, nlen);
  put(ud, ':', value, vlen);
  return 0;
}
static int on_headers_done(void *ud) {
  put(ud, 'D', "", 0);
  return 0;
}
static int on_data(void *ud, const char *p, size_t n) {
  if (n == 0) abort(); /* never an empty piece */
  put(ud, 0, p, n);
  return 0;
}
static int on_part_end(void *ud) {
  put(ud, 'E', "", 0);
  return 0;
}

static const zv_multipart_cb_t cb = {on_header, on_headers_done, on_data, on_part_end};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static transcript_t a, b;
  zv_multipart_t *m1 = malloc(sizeof *m1), *m2 = malloc(sizeof *m2);
  const char *body = (const char *)data;
  int r1, r2;
  size_t i = 0, k = 0;
  if (!m1 || !m2) abort();
  a.len = b.len = 0;
  a.overflow = b.overflow = 0;
  if (zv_multipart_init(m1, "XyZ", 3, 64) || zv_multipart_init(m2, "XyZ", 3, 64)) abort();
  r1 = zv_multipart_feed(m1, body, size, &cb, &a);
  if (!r1) r1 = zv_multipart_finish(m1);
  r2 = 0;
  while (i < size && !r2) {
    size_t n = 1 + (size ? data[k++ % size] % 16 : 0);
    if (n > size - i) n = size - i;
    r2 = zv_multipart_feed(m2, body + i, n, &cb, &b);
    i += n;
  }
  if (!r2) r2 = zv_multipart_finish(m2);
  if (r1 != r2) abort();
  if (!a.overflow && !b.overflow && (a.len != b.len || memcmp(a.log, b.log, a.len))) abort();
  free(m1);
  free(m2);

  {
    const char *bd;
    size_t bn;
    char name[64], filename[64];
    int has;
    if (zv_multipart_boundary(body, size, &bd, &bn) == 0 &&
        (bd < body || bd + bn > body + size || bn == 0))
      abort();
    if (zv_multipart_disposition(body, size, name, sizeof name, filename, sizeof filename,
                                 &has) == 0 &&
        (strlen(name) >= sizeof name || strlen(filename) >= sizeof filename))
      abort();
  }
  return 0;
}
