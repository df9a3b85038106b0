/*
 * duration_fuzz.c: libFuzzer target for the duration core (host/duration/).
 *
 * The first byte picks the accepted formats (low 3 bits; 0 means all) and days (bit 3); the rest
 * is the input. Whatever the input, parsing must not crash or read past it, and:
 *   - a rejection has a known cause whose span lies inside the input, and its texts fit;
 *   - an accepted value, written in every format (with and without days), reads back to itself
 *     through a codec that accepts that format;
 *   - the first 8 bytes, read as an int64, round-trip through every format too.
 * Run: make fuzz FUZZ_TIME=20 (seeds in fuzz/corpus/duration_fuzz/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "duration/duration.h"

static void check(int ok) {
  if (!ok) abort();
}

static void round_trip(int64_t ns) {
  for (unsigned fmt = 1; fmt <= ZV_DURATION_NANO; fmt <<= 1) {
    for (int days = 0; days <= 1; days++) {
      char buf[ZV_DURATION_BUFSIZE];
      size_t len = 0;
      int64_t back = 0;
      zv_duration_cause_t cause;
      check(zv_duration_format(ns, fmt, days, buf, sizeof buf, &len) == 0);
      check(len < sizeof buf && buf[len] == '\0' && strlen(buf) == len);
      check(zv_duration_parse(buf, len, fmt, days, &back, &cause) == 0);
      check(back == ns);
      /* The module's reader (every format, days allowed) reads every written form too. */
      check(zv_duration_parse(buf, len, ZV_DURATION_ALL, 1, &back, &cause) == 0);
      check(back == ns);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned accept;
  int days, rc;
  int64_t ns = 0;
  zv_duration_cause_t cause;
  char text[ZV_DURATION_MSGSIZE];
  const char *s;
  size_t len;
  if (size == 0) return 0;
  accept = data[0] & 7u;
  if (accept == 0) accept = ZV_DURATION_ALL;
  days = (data[0] >> 3) & 1;
  /* A copy of exactly len bytes, so that ASan catches any read past the input. */
  len = size - 1;
  s = len ? malloc(len) : NULL;
  if (len) memcpy((char *)s, data + 1, len);

  rc = zv_duration_parse(s, len, accept, days, &ns, &cause);
  if (rc == 0) {
    round_trip(ns);
  } else {
    size_t n;
    check(rc == ZV_EINVAL || rc == ZV_ERANGE);
    check(cause.code > ZV_DURATION_CNONE && cause.code < ZV_DURATION_CMAX);
    check((rc == ZV_ERANGE) == (cause.code == ZV_DURATION_COVERFLOW));
    check(cause.at >= 0 && cause.len >= 0 && (size_t)cause.at + (size_t)cause.len <= len);
    n = zv_duration_cause_text(&cause, s, len, text, sizeof text);
    check(n < sizeof text && strlen(text) == n);
    n = zv_duration_message(s, len, 1, ZV_DURATION_UNITS, accept, text, sizeof text);
    check(n < sizeof text && strlen(text) == n);
    /* Days only widen what is accepted; the written-out value must not change meaning. */
    if (!days && zv_duration_parse(s, len, accept, 1, &ns, &cause) == 0) round_trip(ns);
  }
  free((void *)s);

  if (size >= 9) {
    int64_t v;
    memcpy(&v, data + 1, sizeof v);
    round_trip(v);
  }
  return 0;
}
