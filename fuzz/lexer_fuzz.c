/*
 * lexer_fuzz.c: libFuzzer target for the .zen lexer (host/lexer/).
 *
 * Whatever the input, lexing must not crash, hang or read past it, and:
 *   - it returns 0 and the last token is the one EOF, at the end of the input;
 *   - tokens are in order, do not overlap, lie inside the input, have known kinds, and their
 *     lines and columns never go backwards;
 *   - every diagnostic lies inside the input, and its message is NUL-terminated at msglen;
 *   - every STRING token decodes into at most its own length;
 *   - a second run on the same lexer (warm buffers) gives the same tokens.
 * The parser is Lua and is not fuzzed here (that would need Lua in the fuzzer); its specs feed it
 * truncated, unbalanced and junk-laden files instead. Run: make fuzz FUZZ_BIN=build/fuzz/lexer_fuzz
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "lexer/lexer.h"

static void check(int ok) {
  if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  zv_lexer_t lx;
  char *src = size ? malloc(size) : NULL;
  char *out = size ? malloc(size) : NULL;
  size_t ntoks;
  if (size) memcpy(src, data, size);
  zv_lexer_init(&lx);
  check(zv_lexer_run(&lx, src, size) == 0);
  check(lx.ntoks >= 1 && lx.toks[lx.ntoks - 1].kind == ZV_TOK_EOF);
  check(lx.toks[lx.ntoks - 1].off <= size);
  for (size_t i = 0; i < lx.ntoks; i++) {
    const zv_lexer_token_t *t = &lx.toks[i];
    check(t->kind < ZV_TOK_MAX);
    check((size_t)t->off + t->len <= size);
    check(t->line >= 1 && t->col >= 1);
    check((t->kind == ZV_TOK_EOF) == (i == lx.ntoks - 1));
    if (t->kind != ZV_TOK_EOF) check(t->len >= 1);
    if (i > 0) {
      const zv_lexer_token_t *p = &lx.toks[i - 1];
      check(p->off + p->len <= t->off);
      check(p->line < t->line || (p->line == t->line && p->col < t->col));
    }
    if (t->kind == ZV_TOK_STRING) {
      size_t n = (size_t)-1;
      zv_lexer_string_value(src, t, out, &n);
      check(n <= t->len);
    }
  }
  for (size_t i = 0; i < lx.ndiags; i++) {
    const zv_lexer_diag_t *d = &lx.diags[i];
    check((size_t)d->off + d->len <= size);
    check(d->msg && d->msg[d->msglen] == '\0' && strlen(d->msg) == d->msglen);
    if (i > 0) check(lx.diags[i - 1].off <= d->off);
  }
  ntoks = lx.ntoks;
  {
    zv_lexer_token_t *copy = malloc(ntoks * sizeof *copy);
    memcpy(copy, lx.toks, ntoks * sizeof *copy);
    check(zv_lexer_run(&lx, src, size) == 0);
    check(lx.ntoks == ntoks && memcmp(copy, lx.toks, ntoks * sizeof *copy) == 0);
    free(copy);
  }
  zv_lexer_free(&lx);
  free(src);
  free(out);
  return 0;
}
