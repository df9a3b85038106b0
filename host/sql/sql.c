/*
 * sql.c: the builder, quoting, placeholders, the LIKE escaper and grouping-term dedup.
 *
 * Everything here appends into a zv_sql_buf_t and reports failure through its sticky error;
 * nothing keeps global state. It must not learn about Lua or about query structure: that is the
 * binding's walk (l_sql.c).
 */
#include "sql.h"

/* The builder refuses to grow beyond this: a statement that large is a bug, not a query. */
#define MAX_SQL ((size_t)1 << 30)

void zv_sql_buf_init(zv_sql_buf_t *b) {
  b->data = NULL;
  b->len = b->cap = 0;
  b->err = 0;
}

void zv_sql_buf_free(zv_sql_buf_t *b) {
  zv_free(b->data);
  zv_sql_buf_init(b);
}

int zv__sql_reserve(zv_sql_buf_t *b, size_t n) {
  size_t want = b->len + n, cap = b->cap ? b->cap : 256;
  char *p;
  if (b->err) return 0;
  if (n > MAX_SQL || want > MAX_SQL) {
    b->err = ZV_ETOOLONG;
    return 0;
  }
  while (cap < want) cap *= 2;
  p = zv_realloc(b->data, cap);
  if (!p) {
    b->err = ZV_ENOMEM;
    return 0;
  }
  b->data = p;
  b->cap = cap;
  return 1;
}

void zv_sql_append_uint(zv_sql_buf_t *b, uint64_t v) {
  char tmp[24];
  size_t i = sizeof tmp;
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  zv_sql_append(b, tmp + i, sizeof tmp - i);
}

/* One dot-free part: "part" with inner quotes doubled, or a bare "*". */
static void ident_part(zv_sql_buf_t *b, const char *s, size_t n) {
  size_t i;
  if (n == 0) {
    zv_sql_fail(b, ZV_EINVAL);
    return;
  }
  if (n == 1 && s[0] == '*') {
    zv_sql_appendc(b, '*');
    return;
  }
  /* Worst case every byte is a quote: reserve once, then write without checks. */
  if (!zv_sql_reserve(b, 2 * n + 2)) return;
  char *w = b->data + b->len;
  *w++ = '"';
  for (i = 0; i < n; i++) {
    char c = s[i];
    if (c == '\0') {
      zv_sql_fail(b, ZV_EINVAL);
      return;
    }
    if (c == '"') *w++ = '"';
    *w++ = c;
  }
  *w++ = '"';
  b->len = (size_t)(w - b->data);
}

/* Bytes that stop the identifier fast path: a dot, a double quote, NUL, and '*'. */
static const unsigned char ident_special[256] = {['.'] = 1, ['"'] = 1, ['\0'] = 1, ['*'] = 1};

void zv_sql_ident(zv_sql_buf_t *b, const char *s, size_t n) {
  const char *end = s + n, *dot;
  size_t i;
  /* The common case, a plain name: one scan, one reserve, one copy. */
  for (i = 0; i < n && !ident_special[(unsigned char)s[i]]; i++) {
  }
  if (i == n && n > 0) {
    if (!zv_sql_reserve(b, n + 2)) return;
    char *w = b->data + b->len;
    w[0] = '"';
    memcpy(w + 1, s, n);
    w[n + 1] = '"';
    b->len += n + 2;
    return;
  }
  for (;;) {
    dot = memchr(s, '.', (size_t)(end - s));
    if (!dot) break;
    ident_part(b, s, (size_t)(dot - s));
    zv_sql_appendc(b, '.');
    s = dot + 1;
  }
  ident_part(b, s, (size_t)(end - s));
}

/* Finds the first " as " (any case) in s; returns its offset or n. */
static size_t find_as(const char *s, size_t n) {
  for (size_t i = 0; i + 4 <= n; i++) {
    if (s[i] == ' ' && (s[i + 1] == 'a' || s[i + 1] == 'A') && (s[i + 2] == 's' || s[i + 2] == 'S') &&
        s[i + 3] == ' ')
      return i;
  }
  return n;
}

void zv_sql_ident_alias(zv_sql_buf_t *b, const char *s, size_t n) {
  size_t at = find_as(s, n);
  zv_sql_ident(b, s, at);
  if (at == n) return;
  zv_sql_lit(b, " AS ");
  ident_part(b, s + at + 4, n - at - 4);
}

/* Bytes that LIKE treats specially, plus the escape character itself. */
static const unsigned char like_special[256] = {['\\'] = 1, ['%'] = 1, ['_'] = 1};

void zv_sql_escape_like(zv_sql_buf_t *b, const char *s, size_t n) {
  /* One capacity check for the worst case, then a tight copy loop. */
  if (!zv_sql_reserve(b, 2 * n)) return;
  char *w = b->data + b->len;
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (p < end) {
    unsigned char c = *p++;
    if (like_special[c]) *w++ = '\\';
    *w++ = (char)c;
  }
  b->len = (size_t)(w - b->data);
}

void zv_sql_raw(zv_sql_buf_t *b, zv_sql_dialect_t d, const char *s, size_t n, uint64_t *next,
                size_t *count) {
  size_t i = 0, from = 0, seen = 0;
  *count = 0;
  while (i < n) {
    char c = s[i];
    if (c == '\0') {
      zv_sql_fail(b, ZV_ESYNTAX);
      return;
    }
    if (c == '\'' || c == '"') {
      /* A quoted run ends at the next unpaired quote of the same kind ('' and "" are pairs). */
      size_t j = i + 1;
      for (;;) {
        if (j >= n) {
          zv_sql_fail(b, ZV_ESYNTAX);
          return;
        }
        if (s[j] == '\0') {
          zv_sql_fail(b, ZV_ESYNTAX);
          return;
        }
        if (s[j] == c) {
          if (j + 1 < n && s[j + 1] == c) {
            j += 2;
            continue;
          }
          break;
        }
        j++;
      }
      i = j + 1;
      continue;
    }
    if (c == '?') {
      zv_sql_append(b, s + from, i - from);
      zv_sql_placeholder(b, d, (*next)++);
      seen++;
      from = i + 1;
    }
    i++;
  }
  zv_sql_append(b, s + from, n - from);
  *count = seen;
}

int zv_sql_is_name(const char *s, size_t n) {
  if (n == 0 || n > 63) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return 0;
  }
  return 1;
}

/* --- grouping-term dedup ------------------------------------------------------------------ */

void zv_sql_dedup_begin(zv_sql_dedup_t *d, zv_sql_buf_t *b) {
  d->b = b;
  d->n = 0;
  d->cap = ZV_SQL_DEDUP_STACK;
  d->spans = d->stack_spans;
  d->slots = NULL;
  d->nslots = 0;
  d->heap = NULL;
  d->keep = NULL;
}

void zv_sql_dedup_end(zv_sql_dedup_t *d) {
  zv_free(d->heap);
  d->heap = NULL;
  if (d->keep) *d->keep = NULL;
}

static void index_insert(zv_sql_dedup_t *d, size_t i) {
  size_t mask = d->nslots - 1, k = d->spans[i].hash & mask;
  while (d->slots[k]) k = (k + 1) & mask;
  d->slots[k] = (uint32_t)(i + 1);
}

/* Builds (or rebuilds) the hash index over the kept spans. */
static void index_build(zv_sql_dedup_t *d) {
  memset(d->slots, 0, d->nslots * sizeof *d->slots);
  for (size_t i = 0; i < d->n; i++) index_insert(d, i);
}

/* Doubles the span array and the index into one heap block. Returns 0 on failure. */
static int grow(zv_sql_dedup_t *d) {
  size_t cap = d->cap * 2, nslots = cap * 2;
  void *heap = zv_alloc(cap * sizeof(zv_sql_span_t) + nslots * sizeof(uint32_t));
  if (!heap) {
    zv_sql_fail(d->b, ZV_ENOMEM);
    return 0;
  }
  memcpy(heap, d->spans, d->n * sizeof(zv_sql_span_t));
  zv_free(d->heap);
  d->heap = heap;
  if (d->keep) *d->keep = heap;
  d->spans = heap;
  d->slots = (uint32_t *)((char *)heap + cap * sizeof(zv_sql_span_t));
  d->cap = cap;
  d->nslots = nslots;
  index_build(d);
  return 1;
}

int zv_sql_dedup_term(zv_sql_dedup_t *d, size_t undo, size_t start) {
  zv_sql_buf_t *b = d->b;
  const char *text = b->data + start;
  size_t len = b->len - start, i;
  uint32_t h;
  if (b->err) return 0;
  if (d->n < ZV_SQL_DEDUP_LINEAR) {
    for (i = 0; i < d->n; i++) {
      if (d->spans[i].len == len && !memcmp(b->data + d->spans[i].off, text, len)) {
        b->len = undo;
        return 0;
      }
    }
    h = 0;
  } else {
    if (!d->slots) {
      d->slots = d->stack_slots;
      d->nslots = ZV_ARRAY_SIZE(d->stack_slots);
      for (i = 0; i < d->n; i++)
        d->spans[i].hash = zv_hash(b->data + d->spans[i].off, d->spans[i].len);
      index_build(d);
    }
    h = zv_hash(text, len);
    size_t mask = d->nslots - 1, k = h & mask;
    while (d->slots[k]) {
      const zv_sql_span_t *sp = &d->spans[d->slots[k] - 1];
      if (sp->hash == h && sp->len == len && !memcmp(b->data + sp->off, text, len)) {
        b->len = undo;
        return 0;
      }
      k = (k + 1) & mask;
    }
  }
  if (d->n == d->cap && !grow(d)) return 0;
  d->spans[d->n].off = (uint32_t)start;
  d->spans[d->n].len = (uint32_t)len;
  d->spans[d->n].hash = h;
  d->n++;
  if (d->slots) index_insert(d, d->n - 1);
  return 1;
}
