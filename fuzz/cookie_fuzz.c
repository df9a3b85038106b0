/*
 * cookie_fuzz.c: libFuzzer target for the Cookie header parser (host/cookie/).
 *
 * Whatever the input, parsing must not crash, loop or read past it, and every pair it returns
 * must hold what cookie.h promises: spans inside the input and in order, a token name, a value
 * without CTL or DQUOTE, and a name that, written back as "name=value", parses to itself;
 * zv_cookie_find agrees with the first pair of each name zv_cookie_next gives.
 * Run: make fuzz FUZZ_TIME=20 (seeds in fuzz/corpus/cookie_fuzz/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cookie/cookie.h"

static void check(int ok) {
  if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  size_t pos = 0, last = 0, n = 0;
  zv_cookie_pair_t p;
  while (zv_cookie_next(s, size, &pos, &p)) {
    check(pos > last && pos <= size);
    check(p.name >= s + last && p.name + p.name_len <= s + pos);
    check(p.value >= p.name + p.name_len && p.value + p.value_len <= s + pos);
    check(zv_cookie_is_token(p.name, p.name_len));
    for (size_t i = 0; i < p.value_len; i++) {
      unsigned char c = (unsigned char)p.value[i];
      check(c >= 0x20 && c != 0x7f && c != '"');
    }
    if (p.name_len + p.value_len + 1 <= 512) {
      char buf[512];
      size_t bp = 0;
      zv_cookie_pair_t q;
      memcpy(buf, p.name, p.name_len);
      buf[p.name_len] = '=';
      memcpy(buf + p.name_len + 1, p.value, p.value_len);
      /* A value with ';' cannot come out of the parser, so the pair reads back whole, except
       * that leading or trailing blanks of the value are trimmed. */
      if (p.value_len == 0 || (p.value[0] != ' ' && p.value[0] != '\t' &&
                               p.value[p.value_len - 1] != ' ' && p.value[p.value_len - 1] != '\t')) {
        check(zv_cookie_next(buf, p.name_len + 1 + p.value_len, &bp, &q) == 1);
        check(q.name_len == p.name_len && memcmp(q.name, p.name, p.name_len) == 0);
        check(q.value_len == p.value_len && memcmp(q.value, p.value, p.value_len) == 0);
      }
    }
    /* zv_cookie_find, asked for this name, gives this pair unless an earlier pair has it. */
    {
      size_t vpos, vlen, fp = 0;
      zv_cookie_pair_t f;
      while (zv_cookie_next(s, size, &fp, &f) &&
             !(f.name_len == p.name_len && memcmp(f.name, p.name, p.name_len) == 0)) {}
      check(zv_cookie_find(s, size, p.name, p.name_len, &vpos, &vlen) == 1);
      check(s + vpos == f.value && vlen == f.value_len);
    }
    last = pos;
    n++;
  }
  /* A name no pair has is not found: the input's first bytes as a name, when no pair has it. */
  if (size > 0) {
    size_t nl = size < 8 ? size : 8, vpos, vlen, fp = 0, hit = 0;
    zv_cookie_pair_t f;
    while (zv_cookie_next(s, size, &fp, &f))
      if (f.name_len == nl && memcmp(f.name, s, nl) == 0) hit = 1;
    check(zv_cookie_find(s, size, s, nl, &vpos, &vlen) == (int)hit);
  }
  check(pos == size);
  check(n <= size / 2 + 1);
  return 0;
}
