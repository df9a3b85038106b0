/*
 * sql.h: the pure core of the SQL renderer: a string builder with a sticky error, identifier
 * quoting, placeholders for both dialects, the LIKE escaper and grouping-term deduplication.
 *
 * It knows nothing of Lua: the binding (l_sql.c) walks the query AST and calls these functions.
 * It must never put a value into SQL text: values go to the bind list, text only holds quoted
 * identifiers, keywords and placeholders.
 *
 * The builder (SQLite's StrAccum):
 *
 *   zv_sql_buf_t: [ data ........ len | spare ... cap ]   err = 0 or the first ZV_E* failure
 *
 * After the first failure every append does nothing; the caller checks b->err once at the end.
 * The buffer is meant to be owned by module state and reused: zv_sql_buf_reset keeps capacity,
 * so steady-state rendering allocates nothing.
 */
#ifndef ZV_SQL_H
#define ZV_SQL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../core/zv.h"

typedef enum { ZV_SQL_SQLITE = 0, ZV_SQL_POSTGRES = 1 } zv_sql_dialect_t;

typedef struct {
  char *data;
  size_t len;
  size_t cap;
  int err;
} zv_sql_buf_t;

/* An empty builder; it allocates on the first append. */
void zv_sql_buf_init(zv_sql_buf_t *b);
/* Frees the builder's memory and leaves it empty (reusable). */
void zv_sql_buf_free(zv_sql_buf_t *b);
/* Empties the builder and clears its error; capacity is kept. */
static inline void zv_sql_buf_reset(zv_sql_buf_t *b) {
  b->len = 0;
  b->err = 0;
}

/*
 * Makes room for n more bytes; returns 1 when they are there, 0 after a failure (sticky:
 * b->err is set to ZV_ENOMEM or ZV_ETOOLONG and stays set). May allocate.
 */
int zv__sql_reserve(zv_sql_buf_t *b, size_t n);

static inline int zv_sql_reserve(zv_sql_buf_t *b, size_t n) {
  if (b->err) return 0;
  if (b->cap - b->len >= n) return 1;
  return zv__sql_reserve(b, n);
}

static inline void zv_sql_append(zv_sql_buf_t *b, const char *s, size_t n) {
  if (!zv_sql_reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
}

static inline void zv_sql_appendc(zv_sql_buf_t *b, char c) {
  if (!zv_sql_reserve(b, 1)) return;
  b->data[b->len++] = c;
}

#define zv_sql_lit(b, s) zv_sql_append((b), "" s, sizeof(s) - 1)

/* Appends a NUL-terminated string. */
static inline void zv_sql_appends(zv_sql_buf_t *b, const char *s) {
  zv_sql_append(b, s, strlen(s));
}

/* Records the first failure; later failures and appends are ignored. */
static inline void zv_sql_fail(zv_sql_buf_t *b, int err) {
  if (!b->err) b->err = err;
}

/* Appends the decimal form of v. */
void zv_sql_append_uint(zv_sql_buf_t *b, uint64_t v);

/*
 * Appends a quoted identifier. Dots separate parts ("users.id" -> "users"."id"); a part that is
 * exactly "*" stays bare ("users.*" -> "users".*, "*" -> *); a double quote inside a part is
 * doubled. An empty part or a NUL byte fails with ZV_EINVAL.
 */
void zv_sql_ident(zv_sql_buf_t *b, const char *s, size_t n);

/*
 * Like zv_sql_ident, but "name AS alias" (AS in any case, one space either side, first
 * occurrence) renders as "name" AS "alias"; the alias is one part (dots are kept inside it).
 * Identifiers that contain " as " can therefore not be written in alias positions.
 */
void zv_sql_ident_alias(zv_sql_buf_t *b, const char *s, size_t n);

/* Appends the placeholder of the index-th bind (1-based): "?" for sqlite, "$<index>" for pg. */
static inline void zv_sql_placeholder(zv_sql_buf_t *b, zv_sql_dialect_t d, uint64_t index) {
  if (d == ZV_SQL_SQLITE) {
    zv_sql_appendc(b, '?');
  } else {
    zv_sql_appendc(b, '$');
    zv_sql_append_uint(b, index);
  }
}

/*
 * Appends s with every '\', '%' and '_' preceded by '\', for LIKE ... ESCAPE '\'. This is a
 * value, not SQL text: the binding uses a second builder and binds the result. Allocates only
 * when the builder must grow.
 */
void zv_sql_escape_like(zv_sql_buf_t *b, const char *s, size_t n);

/*
 * Appends a raw SQL fragment, turning each '?' outside quotes ('...', "...") into the dialect's
 * placeholder, numbered from *next (which is advanced). Stores in *count the number of
 * placeholders seen. A NUL byte or an unterminated quote fails with ZV_ESYNTAX.
 */
void zv_sql_raw(zv_sql_buf_t *b, zv_sql_dialect_t d, const char *s, size_t n, uint64_t *next,
                size_t *count);

/* 1 when s is a plain SQL name: [A-Za-z_][A-Za-z0-9_]*, at most 63 bytes. */
int zv_sql_is_name(const char *s, size_t n);

/*
 * Grouping-term deduplication. Terms are rendered into the builder one after another; after
 * each, zv_sql_dedup_term says whether its text [start, b->len) was seen before in this list
 * and, if so, truncates the builder to undo (dropping the term and its separator).
 *
 *   spans: (off, len, hash) of each kept term, on the stack up to ZV_SQL_DEDUP_STACK
 *   slots: open-addressing index of spans (1-based, 0 = empty), built when the list grows
 *          past ZV_SQL_DEDUP_LINEAR terms
 *
 * Up to ZV_SQL_DEDUP_LINEAR kept terms are compared by a linear scan; above that by hash.
 * Nothing is allocated until more than ZV_SQL_DEDUP_STACK terms are kept, and then one block
 * per doubling. zv_sql_dedup_end frees it; call it on every path. When the caller may be
 * unwound before reaching zv_sql_dedup_end (a Lua error), it sets d->keep after begin: the
 * live heap block (or NULL) is then mirrored in *d->keep, so the owner of that slot can free a
 * block left behind (zv_sql_dedup_end sets *d->keep back to NULL).
 */
#define ZV_SQL_DEDUP_LINEAR 8
#define ZV_SQL_DEDUP_STACK 64

typedef struct {
  uint32_t off;
  uint32_t len;
  uint32_t hash;
} zv_sql_span_t;

typedef struct {
  zv_sql_buf_t *b;
  size_t n;
  size_t cap;
  zv_sql_span_t *spans;
  uint32_t *slots;
  size_t nslots;
  void *heap;
  void **keep;
  zv_sql_span_t stack_spans[ZV_SQL_DEDUP_STACK];
  uint32_t stack_slots[ZV_SQL_DEDUP_STACK * 2];
} zv_sql_dedup_t;

void zv_sql_dedup_begin(zv_sql_dedup_t *d, zv_sql_buf_t *b);
/* Returns 1 when the term is new (kept), 0 when it was a duplicate (removed) or on failure. */
int zv_sql_dedup_term(zv_sql_dedup_t *d, size_t undo, size_t start);
void zv_sql_dedup_end(zv_sql_dedup_t *d);

#endif
