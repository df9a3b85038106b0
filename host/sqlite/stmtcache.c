/*
 * stmtcache.c: the bounded statement cache and the result-code names of zever.sqlite.
 *
 * It must stay free of SQLite calls and of Lua: handles are opaque pointers. The only
 * allocations are the two arrays (at init) and one copy of each cached SQL text.
 */
#include "sqlite.h"

#include <string.h>

/* SQLite's primary result codes (stable, documented in sqlite3.h). */
enum {
  RC_ERROR = 1, RC_INTERNAL, RC_PERM, RC_ABORT, RC_BUSY, RC_LOCKED, RC_NOMEM, RC_READONLY,
  RC_INTERRUPT, RC_IOERR, RC_CORRUPT, RC_NOTFOUND, RC_FULL, RC_CANTOPEN, RC_PROTOCOL, RC_EMPTY,
  RC_SCHEMA, RC_TOOBIG, RC_CONSTRAINT, RC_MISMATCH, RC_MISUSE, RC_NOLFS, RC_AUTH, RC_FORMAT,
  RC_RANGE, RC_NOTADB
};

int zv_sqlite_cache_init(zv_sqlite_cache_t *c, size_t cap) {
  memset(c, 0, sizeof *c);
  if (cap == 0 || cap > ZV_SQLITE_CACHE_MAX) return ZV_EINVAL;
  c->hashes = zv_alloc(cap * sizeof *c->hashes);
  c->entries = zv_alloc(cap * sizeof *c->entries);
  if (!c->hashes || !c->entries) {
    zv_sqlite_cache_free(c);
    return ZV_ENOMEM;
  }
  c->cap = cap;
  return 0;
}

int zv_sqlite_cache_get(zv_sqlite_cache_t *c, const char *sql, size_t len, void **handle,
                        size_t *index) {
  uint32_t h = zv_hash(sql, len);
  for (size_t i = 0; i < c->n; i++) {
    zv_sqlite_entry_t *e;
    if (c->hashes[i] != h) continue;
    e = &c->entries[i];
    if (!e->handle) continue;
    if (e->len != len || memcmp(e->sql, sql, len)) continue;
    if (e->busy) return ZV_ECONFLICT;
    e->busy = 1;
    e->used = ++c->tick;
    *handle = e->handle;
    *index = i;
    return 0;
  }
  return ZV_ENOTFOUND;
}

int zv_sqlite_cache_take(zv_sqlite_cache_t *c, size_t index, uint64_t born, void **handle) {
  zv_sqlite_entry_t *e;
  if (index >= c->n) return ZV_ENOTFOUND;
  e = &c->entries[index];
  if (!e->handle || e->born != born) return ZV_ENOTFOUND;
  if (e->busy) return ZV_ECONFLICT;
  e->busy = 1;
  e->used = ++c->tick;
  *handle = e->handle;
  return 0;
}

int zv_sqlite_cache_put(zv_sqlite_cache_t *c, const char *sql, size_t len, void *handle,
                        size_t *index, void **evicted) {
  size_t i;
  char *copy;
  *evicted = NULL;
  if (c->cap == 0) return ZV_ECONFLICT;
  if (c->n < c->cap) {
    i = c->n;
  } else {
    size_t best = c->cap;
    for (i = 0; i < c->n; i++)
      if (!c->entries[i].busy && (best == c->cap || c->entries[i].used < c->entries[best].used))
        best = i;
    if (best == c->cap) return ZV_ECONFLICT;
    i = best;
  }
  copy = zv_alloc(len + 1);
  if (!copy) return ZV_ENOMEM;
  memcpy(copy, sql, len);
  copy[len] = '\0';
  if (i < c->n) {
    *evicted = c->entries[i].handle;
    zv_free(c->entries[i].sql);
  } else {
    c->n++;
  }
  c->entries[i].sql = copy;
  c->entries[i].len = len;
  c->entries[i].handle = handle;
  c->entries[i].used = ++c->tick;
  c->entries[i].born = c->tick;
  c->entries[i].busy = 1;
  c->hashes[i] = zv_hash(sql, len);
  *index = i;
  return 0;
}

void zv_sqlite_cache_release(zv_sqlite_cache_t *c, size_t index) {
  if (index < c->n) c->entries[index].busy = 0;
}

void zv_sqlite_cache_drain(zv_sqlite_cache_t *c, void (*fin)(void *handle, void *ctx), void *ctx) {
  /* Slots are not compacted: a busy user still holds its index and releases it later. */
  for (size_t i = 0; i < c->n; i++) {
    zv_sqlite_entry_t *e = &c->entries[i];
    if (e->busy || !e->handle) continue;
    fin(e->handle, ctx);
    zv_free(e->sql);
    e->sql = NULL;
    e->len = 0;
    e->handle = NULL;
    c->hashes[i] = 0;
  }
}

void zv_sqlite_cache_free(zv_sqlite_cache_t *c) {
  for (size_t i = 0; i < c->n; i++) zv_free(c->entries[i].sql);
  zv_free(c->hashes);
  zv_free(c->entries);
  memset(c, 0, sizeof *c);
}

const char *zv_sqlite_code(int rc, const char *msg) {
  switch (rc & 0xff) {
  case RC_CONSTRAINT:
    return "constraint";
  case RC_BUSY:
  case RC_LOCKED:
    return "busy";
  case RC_READONLY:
  case RC_PERM:
    return "readonly";
  case RC_IOERR:
  case RC_NOLFS:
    return "io";
  case RC_FULL:
    return "full";
  case RC_CANTOPEN:
    return "cantopen";
  case RC_CORRUPT:
  case RC_NOTADB:
  case RC_FORMAT:
    return "corrupt";
  case RC_TOOBIG:
    return "toobig";
  case RC_MISMATCH:
    return "mismatch";
  case RC_RANGE:
    return "range";
  case RC_NOMEM:
    return "nomem";
  case RC_MISUSE:
    return "misuse";
  case RC_INTERRUPT:
    return "interrupt";
  case RC_SCHEMA:
    return "schema";
  case RC_ERROR:
    if (msg && (strstr(msg, "syntax error") || strstr(msg, "incomplete input") ||
                strstr(msg, "unrecognized token")))
      return "syntax";
    if (msg && (strstr(msg, "no such ") || strstr(msg, "already exists") ||
                strstr(msg, "has no column")))
      return "schema";
    return "sql";
  default:
    return "error";
  }
}
