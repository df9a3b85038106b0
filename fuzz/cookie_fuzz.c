/*
 * cookie_fuzz.c: libFuzzer target for the Cookie header parser (host/cookie/).
 *
 * Whatever the input, parsing must not crash, loop or read past it, and every pair it returns
 * must hold what cookie.h promises: spans inside the input and in order, a token name, a value
 * without CTL or DQUOTE, and a name that, written back as "name=value", parses to itself.
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
    last = pos;
    n++;
  }
  check(pos == size);
  check(n <= size / 2 + 1);
  return 0;
}
