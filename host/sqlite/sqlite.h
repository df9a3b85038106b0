/*
 * sqlite.h: the pure core of the zever.sqlite binding: a bounded prepared-statement cache keyed
 * by SQL text, and the mapping from SQLite result codes to zever error codes.
 *
 * It must not call SQLite (benchmarks and fuzz targets link every core file without
 * -lsqlite3): statements are opaque handles here, and finalizing them is the binding's job.
 *
 * The cache, one per connection:
 *
 *   hashes:  [ h0 h1 h2 ... h(cap-1) ]       scanned linearly (4 cache lines at cap 64)
 *   entries: [ {sql copy, len, handle, last use, busy} ... ]
 *
 * A lookup hashes the text, scans the hash array and compares the text of equal hashes; a miss
 * inserts into a free entry or evicts the least recently used entry that is not busy. An entry
 * is busy between get and release (a statement being stepped, e.g. by an each() loop); a second
 * user of the same text gets ZV_ECONFLICT and prepares a private statement.
 */
#ifndef ZV_SQLITE_H
#define ZV_SQLITE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/zv.h"

#define ZV_SQLITE_CACHE_DEFAULT 64
#define ZV_SQLITE_CACHE_MAX 4096

typedef struct {
  char *sql;
  size_t len;
  void *handle;
  uint64_t used;
  uint64_t born; /* the tick at which this handle was put: names one handle for its life */
  int busy;
} zv_sqlite_entry_t;

typedef struct {
  uint32_t *hashes;
  zv_sqlite_entry_t *entries;
  size_t n;
  size_t cap;
  uint64_t tick;
} zv_sqlite_cache_t;

/* Allocates room for cap entries (1..ZV_SQLITE_CACHE_MAX). Returns 0, ZV_EINVAL or ZV_ENOMEM. */
int zv_sqlite_cache_init(zv_sqlite_cache_t *c, size_t cap);

/*
 * Looks sql up. On a hit that is not busy, marks the entry busy, stores its handle and index
 * and returns 0. Returns ZV_ENOTFOUND on a miss and ZV_ECONFLICT when the entry is busy.
 * Allocates nothing.
 */
int zv_sqlite_cache_get(zv_sqlite_cache_t *c, const char *sql, size_t len, void **handle,
                        size_t *index);

/*
 * The entry at index, by the birth tick a caller remembered from an earlier get or put (its
 * key for the SQL text, so a repeated lookup hashes and compares nothing): as get, 0 with the
 * handle stored and the entry busy; ZV_ENOTFOUND when the slot now holds another handle (evicted
 * and reused, or drained); ZV_ECONFLICT when busy. Allocates nothing.
 */
int zv_sqlite_cache_take(zv_sqlite_cache_t *c, size_t index, uint64_t born, void **handle);

/*
 * Inserts sql -> handle as a busy entry (the caller is about to use it) and stores its index.
 * When the cache is full the least recently used idle entry is evicted and its handle stored in
 * *evicted for the caller to finalize (else *evicted is NULL). Copies the text (one
 * allocation). Returns 0, ZV_ECONFLICT when every entry is busy, or ZV_ENOMEM; on failure the
 * cache does not own handle.
 */
int zv_sqlite_cache_put(zv_sqlite_cache_t *c, const char *sql, size_t len, void *handle,
                        size_t *index, void **evicted);

/* Marks the entry idle again. */
void zv_sqlite_cache_release(zv_sqlite_cache_t *c, size_t index);

/*
 * Calls fin(handle, ctx) on every idle entry and empties it (for closing a connection); busy
 * entries keep their index and their users finalize them after release. No lookup may follow.
 */
void zv_sqlite_cache_drain(zv_sqlite_cache_t *c, void (*fin)(void *handle, void *ctx), void *ctx);

/* Frees the arrays; the caller has finalized every handle. */
void zv_sqlite_cache_free(zv_sqlite_cache_t *c);

/*
 * The zever error code for an SQLite result code (primary or extended) and its message:
 * "constraint", "busy", "syntax", "schema", "readonly", "io", "full", "cantopen", "corrupt",
 * "toobig", "mismatch", "range", "nomem", "misuse", "interrupt", "sql" or "error".
 */
const char *zv_sqlite_code(int rc, const char *msg);

#endif
