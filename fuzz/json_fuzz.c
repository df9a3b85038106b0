/*
 * json_fuzz.c: libFuzzer target for the JSON core (host/json/).
 *
 * Whatever the input, zv_json_parse must not crash or read past it (the input is copied into a
 * buffer of exactly its size), and:
 *   - a rejection has a known cause and an offset inside the input (or at its end);
 *   - an accepted text gives a well-formed tape: containers' counts add up to the tokens that
 *     follow them, strings lie inside the input and unescape to at most their length;
 *   - every number token written back with zv_json_format_number reads back to itself;
 *   - the prefix zv_json_clean_len allows, between quotes, reads back as one string token of
 *     exactly those bytes, unescaped (zever.session's record cache relies on it).
 * Run: make fuzz FUZZ_TIME=20 (seeds in fuzz/corpus/json_fuzz/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "json/json.h"

static void check(int ok) {
  if (!ok) abort();
}

static zv_json_tape_t tape;

/* Walks the value at token *k; returns 0 when the tape ran out (a malformed tape). */
static int walk(const char *s, size_t n, size_t *k, int depth) {
  const zv_json_tok_t *t;
  check(depth <= ZV_JSON_MAX_DEPTH);
  if (*k >= tape.n) return 0;
  t = &tape.toks[(*k)++];
  switch (t->kind) {
  case ZV_JSON_STRING: {
    char *out;
    size_t len;
    check((size_t)t->v.off + t->len <= n);
    out = malloc(t->len ? t->len : 1);
    len = zv_json_unescape(s + t->v.off, t->len, out);
    check(len <= t->len);
    check(!(t->flags & ZV_JSON_ESCAPED) ? len == t->len : 1);
    free(out);
    return 1;
  }
  case ZV_JSON_DOUBLE: {
    char buf[ZV_JSON_NUMBUF];
    size_t len = zv_json_format_number(t->v.d, buf);
    check(len > 0 && len < sizeof buf && strtod(buf, NULL) == t->v.d);
    return 1;
  }
  case ZV_JSON_ARRAY:
    for (uint32_t i = 0; i < t->len; i++)
      if (!walk(s, n, k, depth + 1)) return 0;
    return 1;
  case ZV_JSON_OBJECT:
    for (uint32_t i = 0; i < t->len; i++) {
      if (*k >= tape.n || tape.toks[*k].kind != ZV_JSON_STRING) return 0;
      if (!walk(s, n, k, depth + 1) || !walk(s, n, k, depth + 1)) return 0;
    }
    return 1;
  default:
    return t->kind <= ZV_JSON_INT;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size ? size : 1);
  int cause = -1, rc;
  size_t at = 0, k = 0;
  memcpy(s, data, size);
  rc = zv_json_parse(s, size, &tape, &cause, &at);
  if (rc) {
    check(rc == ZV_EINVAL);
    check(cause > ZV_JSON_CNONE && cause < ZV_JSON_CMAX && cause != ZV_JSON_CNOMEM);
    check(at <= size);
  } else {
    check(walk(s, size, &k, 0));
    check(k == tape.n);
  }
  /* Any 8 bytes, read as a double, are written as a number that reads back (or refused). */
  if (size >= 8) {
    double d;
    char buf[ZV_JSON_NUMBUF];
    size_t len;
    memcpy(&d, data, sizeof d);
    len = zv_json_format_number(d, buf);
    if (len) check(strtod(buf, NULL) == d || (d == 0 && strtod(buf, NULL) == 0));
  }
  /* The clean prefix of any input, quoted, is a JSON string that reads back as itself. */
  {
    size_t clean = zv_json_clean_len((const char *)data, size);
    char *q = malloc(clean + 2);
    check(clean <= size);
    q[0] = '"';
    memcpy(q + 1, data, clean);
    q[clean + 1] = '"';
    check(zv_json_parse(q, clean + 2, &tape, &cause, &at) == 0);
    check(tape.n == 1 && tape.toks[0].kind == ZV_JSON_STRING && !tape.toks[0].flags);
    check(tape.toks[0].v.off == 1 && tape.toks[0].len == clean);
    free(q);
  }
  free(s);
  return 0;
}
