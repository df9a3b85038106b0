/*
 * sql_fuzz.c: libFuzzer target for the SQL renderer's core (host/sql/sql.c).
 *
 * From arbitrary bytes it checks invariants, aborting on a violation:
 *   - escape_like: undoing the escapes gives the input back, and no unescaped % or _ is left;
 *   - ident: the output is quoted parts with doubled quotes (or fails on NUL/empty parts);
 *   - raw: converting ? to $n never crashes and counts placeholders outside quotes;
 *   - group-term dedup: terms split at ',' keep exactly the first occurrence of each, as a
 *     naive quadratic check says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../host/sql/sql.h"

static void check_like(const char *s, size_t n) {
  zv_sql_buf_t b;
  size_t j = 0;
  zv_sql_buf_init(&b);
  zv_sql_escape_like(&b, s, n);
  if (b.err) abort();
  for (size_t i = 0; i < b.len; i++) {
    char c = b.data[i];
    if (c == '\\') {
      if (++i >= b.len) abort();
      c = b.data[i];
      if (c != '\\' && c != '%' && c != '_') abort();
    } else if (c == '%' || c == '_') {
      abort();
    }
    if (j >= n || s[j++] != c) abort();
  }
  if (j != n) abort();
  zv_sql_buf_free(&b);
}

static void check_ident(const char *s, size_t n) {
  zv_sql_buf_t b;
  int bad = memchr(s, '\0', n) != NULL || n == 0 || s[0] == '.' || s[n - 1] == '.' ||
            (n > 1 && memmem(s, n, "..", 2) != NULL);
  zv_sql_buf_init(&b);
  zv_sql_ident(&b, s, n);
  if (bad != (b.err != 0)) abort();
  if (!b.err) {
    /* Outside quotes only dots and bare stars may appear. */
    int in = 0;
    for (size_t i = 0; i < b.len; i++) {
      char c = b.data[i];
      if (c == '"') {
        if (in && i + 1 < b.len && b.data[i + 1] == '"') {
          i++;
          continue;
        }
        in = !in;
      } else if (!in && c != '.' && c != '*') {
        abort();
      }
    }
    if (in) abort();
  }
  zv_sql_buf_free(&b);
}

static void check_raw(const char *s, size_t n) {
  zv_sql_buf_t b;
  uint64_t next = 1;
  size_t count = 0;
  zv_sql_buf_init(&b);
  zv_sql_raw(&b, ZV_SQL_POSTGRES, s, n, &next, &count);
  if (!b.err && next != count + 1) abort();
  zv_sql_buf_free(&b);
}

static void check_dedup(const char *s, size_t n) {
  zv_sql_buf_t b;
  zv_sql_dedup_t d;
  const char *terms[512];
  size_t lens[512], nt = 0, kept = 0, from = 0;
  for (size_t i = 0; i <= n && nt < 512; i++) {
    if (i == n || s[i] == ',') {
      terms[nt] = s + from;
      lens[nt++] = i - from;
      from = i + 1;
    }
  }
  zv_sql_buf_init(&b);
  zv_sql_dedup_begin(&d, &b);
  for (size_t t = 0; t < nt; t++) {
    size_t undo = b.len, start, k;
    int first = 1;
    for (k = 0; k < t; k++)
      if (lens[k] == lens[t] && !memcmp(terms[k], terms[t], lens[t])) first = 0;
    if (kept) zv_sql_lit(&b, ", ");
    start = b.len;
    zv_sql_append(&b, terms[t], lens[t]);
    if (zv_sql_dedup_term(&d, undo, start) != first) abort();
    kept += (size_t)first;
    if (!first && b.len != undo) abort();
  }
  zv_sql_dedup_end(&d);
  zv_sql_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  check_like(s, size);
  check_ident(s, size);
  check_raw(s, size);
  check_dedup(s, size);
  return 0;
}
