/*
 * sqlite_ffi.h: the read path of the SQLite binding that LuaJIT compiles, as LuaJIT's FFI sees it
 * (lua/adapters/db/sqlite.lua loads it with require("zever.cdef.sqlite")). The Makefile runs this
 * file through the preprocessor with -DZV_FFI_CDEF into build/ffi.h, which the host preloads:
 * these are the only declarations of these functions and types, C included, so Lua never types
 * them again.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * macros are expanded by the preprocessor.
 */
#ifndef ZV_SQLITE_FFI_H
#define ZV_SQLITE_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>
#else
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef struct sqlite3_value sqlite3_value;
typedef long long sqlite3_int64;
#endif

/* A statement checked out for one call (cached in the connection's statement cache or private). */
typedef struct {
  sqlite3_stmt *stmt;
  size_t slot;
  int cached;
  int multi;
  uint64_t born; /* the cache entry's birth tick when cached, else 0 */
} zv_sqlite_use_t;

/*
 * The FFI path for reads and writes (first/query/exec from lua/adapters/db/sqlite.lua), which LuaJIT compiles:
 * Lua checks a statement out here, binds, steps and decodes through sqlite3_* directly, and
 * gives it back. zv_sqlite_ffi_acquire returns 0 with the statement checked out (cached or
 * private, exactly as the classic calls do) when conn is open, sql is one statement and it has
 * n placeholders; otherwise nonzero with nothing checked out, and the caller takes the classic
 * path, which repeats the work and reports the error. Every checkout must be released by
 * zv_sqlite_ffi_release before any Lua code that could raise or re-enter runs.
 */

int zv_sqlite_ffi_acquire(void *conn, const char *sql, size_t len, int n, zv_sqlite_use_t *u);
void zv_sqlite_ffi_release(void *conn, zv_sqlite_use_t *u);

/*
 * The same checkout by the cache slot and birth tick an earlier acquire reported in u (the Lua
 * side keeps SQL text -> slot in a table, keyed by the interned string: no hashing or comparing
 * of the text per call). Returns 0 with the statement checked out when conn is open, the slot
 * still holds that statement, it is idle and has n placeholders; otherwise nonzero with nothing
 * checked out, and the caller acquires by text.
 */
int zv_sqlite_ffi_acquire_slot(void *conn, size_t slot, uint64_t born, int n,
                               zv_sqlite_use_t *u);

/*
 * Gives the statement back as zv_sqlite_ffi_release does, without clearing its bindings: for
 * the FFI path, which binds every placeholder before each step (acquire checks the count), so a
 * stale binding is never read. The text pointers bound SQLITE_STATIC stay in the idle statement
 * and are overwritten before its next step.
 */
void zv_sqlite_ffi_done(void *conn, zv_sqlite_use_t *u);

/* The connection's sqlite3 handle, for sqlite3_changes64 and sqlite3_last_insert_rowid after
 * an exec of the FFI path (NULL once closed). */
sqlite3 *zv_sqlite_ffi_db(void *conn);

/*
 * The process's write lock of the connection's file (writegate.h), around a transaction of
 * zever.db (lua/adapters/db/sqlite.lua, conn:control): zv_sqlite_ffi_wtake before BEGIN
 * IMMEDIATE waits, at most busy_timeout, for the worker threads of this process that hold or
 * wait for it, and returns NULL when taken (or when the connection has no such lock: memory,
 * temporary, closed), else why not, as a static text: "database is locked" when the wait timed
 * out, "database is locked by another transaction of this thread" when another connection of
 * this thread holds it (waiting would never end).
 * zv_sqlite_ffi_wdone after every transaction statement gives it on once the connection is
 * back in autocommit (COMMIT, ROLLBACK, a failed BEGIN; its WAL hook's checkpoint included).
 */
const char *zv_sqlite_ffi_wtake(void *conn);
void zv_sqlite_ffi_wdone(void *conn);

/*
 * The SQLite calls the FFI path makes between acquire and release, with sqlite3.h's own
 * signatures: C sees these next to sqlite3.h, so the compiler rejects any drift.
 */
int sqlite3_bind_int64(sqlite3_stmt *st, int i, sqlite3_int64 v);
int sqlite3_bind_double(sqlite3_stmt *st, int i, double v);
int sqlite3_bind_text(sqlite3_stmt *st, int i, const char *s, int n, void (*destructor)(void *));
int sqlite3_bind_null(sqlite3_stmt *st, int i);
int sqlite3_step(sqlite3_stmt *st);
int sqlite3_column_count(sqlite3_stmt *st);
const char *sqlite3_column_name(sqlite3_stmt *st, int i);
int sqlite3_column_type(sqlite3_stmt *st, int i);
sqlite3_int64 sqlite3_column_int64(sqlite3_stmt *st, int i);
double sqlite3_column_double(sqlite3_stmt *st, int i);
const unsigned char *sqlite3_column_text(sqlite3_stmt *st, int i);
const void *sqlite3_column_blob(sqlite3_stmt *st, int i);
int sqlite3_column_bytes(sqlite3_stmt *st, int i);
int sqlite3_stmt_status(sqlite3_stmt *st, int op, int reset);
/* A row's column as its value (one connection-mutex round and API exit per column instead of
 * one per column_* call): read only on the connection's own thread, before the next step or
 * reset (an "unprotected" value: our connections are used by one thread at a time). */
sqlite3_value *sqlite3_column_value(sqlite3_stmt *st, int i);
int sqlite3_value_type(sqlite3_value *v);
sqlite3_int64 sqlite3_value_int64(sqlite3_value *v);
double sqlite3_value_double(sqlite3_value *v);
int sqlite3_reset(sqlite3_stmt *st);
sqlite3_int64 sqlite3_changes64(sqlite3 *db);

/*
 * What a raw FFI caller needs besides (bench/db_overhead_lua_bench.lua measures zever.db against
 * plain libsqlite3 calls of the same SQL), and the adapter's held statements (conn:control):
 * open, prepare, finalize, close.
 */
int sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs);
int sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st, const char **tail);
int sqlite3_finalize(sqlite3_stmt *st);
/* The adapter's held transaction statements (conn:control) check their shape once. */
int sqlite3_bind_parameter_count(sqlite3_stmt *st);
int sqlite3_close_v2(sqlite3 *db);
sqlite3_int64 sqlite3_last_insert_rowid(sqlite3 *db);

#endif
