/*
 * static_fuzz.c: libFuzzer target for the decisions of static file serving
 * (host/http/static.c): path cleaning, Range, Accept-Encoding q-values, If-None-Match, HTTP
 * dates and MIME lookup.
 *
 * The first byte picks a file size (0, 1, 100 or a large one) for the Range decision; the rest
 * is given to every parser as it is. Invariants: a cleaned path never holds a "." segment start,
 * "\\", a NUL or control byte, or an empty segment, and is shorter than its buffer; a Range
 * decided ONE lies inside the file and is not empty; a q-value is within 0..1000; a parsed date
 * formats back to the same text. It must not crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "http/conn.h"
#include "http/static.h"

static void check_clean(const char *p, size_t n) {
  char out[64];
  size_t len;
  int dir;
  if (zv_static_clean(p, n, out, sizeof out, &len, &dir)) return;
  if (len >= sizeof out || strlen(out) != len) abort();
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)out[i];
    if (ch < 0x20 || ch == 0x7f || ch == '\\') abort();
    if ((i == 0 || out[i - 1] == '/') && (ch == '.' || ch == '/')) abort();
  }
  if (len && out[len - 1] == '/') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const uint64_t sizes[4] = {0, 1, 100, (uint64_t)1 << 40};
  const char *p;
  size_t n;
  uint64_t fsize, off = 0, cnt = 0;
  int r, q;
  int64_t t;
  char etag[48];
  if (size < 1) return 0;
  fsize = sizes[data[0] & 3];
  p = (const char *)data + 1;
  n = size - 1;

  check_clean(p, n);

  r = zv_static_range(p, n, fsize, &off, &cnt);
  if (r == ZV_STATIC_RANGE_ONE && (cnt == 0 || off >= fsize || off + cnt > fsize)) abort();
  if (r != ZV_STATIC_RANGE_NONE && r != ZV_STATIC_RANGE_ONE && r != ZV_STATIC_RANGE_UNSAT)
    abort();

  q = zv_static_accept_q(p, n, "gzip");
  if (q < 0 || q > 1000) abort();
  q = zv_static_accept_q(p, n, "br");
  if (q < 0 || q > 1000) abort();

  zv_static_etag(1700000000, fsize, etag);
  (void)zv_static_etag_match(p, n, etag, strlen(etag));

  if (zv_static_parse_date(p, n, &t) == 0 && t >= 0 && t < 253402300800LL) {
    char back[32];
    zv_http_date(t, back);
    /* The weekday is not checked on input; the rest must round-trip. */
    if (memcmp(back + 3, p + 3, 26) && !(p[23] == '6' && p[24] == '0')) abort();
  }

  {
    const char *type = zv_static_mime(p, n);
    if (!type || !type[0]) abort();
    (void)zv_static_compressed_type(type);
  }
  return 0;
}
