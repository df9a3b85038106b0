/*
 * l_sqlite.c: the zever.sqlite binding: connections to Debian's libsqlite3 for the db adapter.
 *
 *   sqlite.open(path[, opts])   -> conn | nil, message, code
 *       opts: busy_timeout (ms, default 5000), statements (cache size, default 64),
 *             wal (default true; ignored for ":memory:"), foreign_keys (default true)
 *   conn:exec(sql[, binds[, n]])   -> changes, last_insert_id      | nil, message, code
 *   conn:query(sql[, binds[, n]])  -> array of rows                | nil, message, code
 *   conn:first(sql[, binds[, n]])  -> row | nil (no row)           | nil, message, code
 *   conn:each(sql, binds, n, fn)   -> rows seen (fn(row) returning false stops early)
 *                                                                  | nil, message, code
 *   conn:close()                   -> true (idempotent; __gc does it too)
 *   conn:is_open()                 -> boolean
 *   conn:cached()                  -> number of statements in the cache
 *   conn:_ptr(), conn:_error(rc, sql)  for the FFI read path (zv_sqlite_ffi_acquire/release,
 *                                  used by lua/adapters/db/sqlite.lua)
 *   sqlite.null                    -> NULL sentinel for binds (light userdata NULL)
 *   sqlite.blob(s)                 -> a value that binds as a BLOB (strings bind as TEXT)
 *   sqlite.memory_used()           -> bytes SQLite counts as allocated (0: statistics are off)
 *   sqlite.writelock()             -> { takes, waits, handoffs, timeouts, refused, waiting }:
 *                                     the process's write locks (writegate.c), which zever.db
 *                                     takes before BEGIN IMMEDIATE (conn:control)
 *   sqlite.gate()                  -> threads waiting for a write lock now, and the waits that
 *                                     a commit ended early (writegate.c: every connection's
 *                                     busy handler)
 *   sqlite.version                 -> the library's version string
 *
 * Connections never treat "double-quoted" text as a string literal (SQLITE_DBCONFIG_DQS_*):
 * quoted identifiers that name nothing fail with "schema" instead of silently matching text.
 *
 * Values: binds are numbers (integral ones as INTEGER), strings (TEXT), booleans (1/0),
 * nil or sqlite.null (NULL), sqlite.blob values (BLOB) and int64_t/uint64_t cdata (INTEGER).
 * Rows are tables keyed by column name; NULL columns are absent; INTEGER beyond +-2^53 comes back
 * as an int64_t cdata (exact), below it as a Lua number; BLOB and TEXT as strings.
 *
 * Errors never raise: they return nil, a message holding SQLite's text and the SQL (never the
 * bound values) and a code (sqlite.h: zv_sqlite_code, plus "closed" and "invalid"): the order of
 * every binding (runtime/lbind.h, zv_l_failure). A Lua error thrown by an each() callback is
 * re-raised after the statement is reset. After close, every call returns nil, message,
 * "closed".
 *
 * It must not raise while a statement is checked out of the cache, except from each()'s
 * callback, which runs under lua_pcall.
 *
 * The first load in the process configures libsqlite3 before anything initializes it
 * (configure_once, below): memory statistics off and mutexes that spin briefly before they
 * block, for the worker threads that share SQLite's per-process state.
 */
#include <lauxlib.h>
#include <lua.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "sqlite.h"
#include "sqlite_ffi.h"
#include "writegate.h"

#define CONN_MT "zever.sqlite.conn"
#define BLOB_MT "zever.sqlite.blob"
#define LUA_TCDATA_ 10 /* LuaJIT's type tag for cdata */
#define SQL_IN_MESSAGE 400

typedef struct {
  sqlite3 *db;
  zv_sqlite_cache_t cache;
  zv_sqlite_gate_t gate; /* the busy handler's state (writegate.c) */
  zv_sqlite_wlock_t *wlock; /* the process's write lock of the file (writegate.c), or NULL */
  int wl_held;              /* this connection holds wlock */
  int closed;
  int active;
} conn_t;

/* A statement checked out for one call (sqlite_ffi.h: the FFI path reads it too). */
typedef zv_sqlite_use_t use_t;

static char key_to64, key_from64;

static const char int64_chunk[] =
  "local ffi, bit = require('ffi'), require('bit')\n"
  "local i64, u64 = ffi.typeof('int64_t'), ffi.typeof('uint64_t')\n"
  "local function to64(hi, lo) return i64(hi) * 4294967296 + lo end\n"
  "local function from64(v)\n"
  "  if not (ffi.istype(i64, v) or ffi.istype(u64, v)) then return nil end\n"
  "  local x = ffi.cast(i64, v)\n"
  "  return tonumber(bit.arshift(x, 32)), tonumber(bit.band(x, 0xffffffffLL))\n"
  "end\n"
  "return to64, from64\n";

static conn_t *check_conn(lua_State *L) {
  return luaL_checkudata(L, 1, CONN_MT);
}

/* nil, message, code (zv_l_failure's order); the message ends with the SQL when there is one
 * (at most SQL_IN_MESSAGE bytes of it). */
static int push_err(lua_State *L, const char *code, const char *msg, const char *sql, size_t len) {
  if (sql) {
    size_t n = len > SQL_IN_MESSAGE ? SQL_IN_MESSAGE : len;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, msg);
    luaL_addstring(&b, " (sql: ");
    luaL_addlstring(&b, sql, n);
    if (n < len) luaL_addstring(&b, "...");
    luaL_addchar(&b, ')');
    luaL_pushresult(&b);
    msg = lua_tostring(L, -1);
  }
  zv_l_failure(L, msg, code);
  if (sql) lua_remove(L, -4);
  return 3;
}

static int push_closed(lua_State *L) {
  return push_err(L, "closed", "database is closed", NULL, 0);
}

/* Copies SQLite's current error and returns nil, message, code. */
static int push_sqlite_err(lua_State *L, conn_t *c, int rc, const char *sql, size_t len) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
  return push_err(L, zv_sqlite_code(rc, msg), msg, sql, len);
}

static void push_int64(lua_State *L, sqlite3_int64 v) {
  const sqlite3_int64 exact = (sqlite3_int64)1 << 53;
  if (v >= -exact && v <= exact) {
    lua_pushnumber(L, (lua_Number)v);
    return;
  }
  lua_pushlightuserdata(L, &key_to64);
  lua_rawget(L, LUA_REGISTRYINDEX);
  lua_pushnumber(L, (lua_Number)(int32_t)(v >> 32));
  lua_pushnumber(L, (lua_Number)(uint32_t)v);
  lua_call(L, 2, 1);
}

static void finalize_handle(void *handle, void *ctx) {
  (void)ctx;
  sqlite3_finalize(handle);
}

static void conn_close(conn_t *c) {
  if (c->closed) return;
  c->closed = 1;
  zv_sqlite_cache_drain(&c->cache, finalize_handle, NULL);
  /* close_v2 turns a connection with live statements into a zombie freed by their finalize. */
  sqlite3_close_v2(c->db);
  c->db = NULL;
  /* after the close, which rolled back an open transaction and freed SQLite's lock */
  zv_sqlite_wlock_close(c->wlock, c);
  c->wlock = NULL;
  c->wl_held = 0;
  if (c->active == 0) zv_sqlite_cache_free(&c->cache);
}

static int only_blank(const char *s) {
  for (; *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n' && *s != ';') return 0;
  return 1;
}

/*
 * Checks a statement out: from the cache, or freshly prepared (and cached when possible).
 * u->stmt is NULL for an empty statement; u->multi is set (and nothing checked out) when sql
 * holds several statements. Returns an SQLite result code.
 */
static int acquire(conn_t *c, const char *sql, size_t len, use_t *u) {
  void *h, *evicted;
  const char *tail = NULL;
  size_t idx;
  int rc = zv_sqlite_cache_get(&c->cache, sql, len, &h, &idx), miss = rc == ZV_ENOTFOUND;
  u->stmt = NULL;
  u->cached = 0;
  u->multi = 0;
  u->born = 0;
  if (rc == 0) {
    u->stmt = h;
    u->slot = idx;
    u->cached = 1;
    u->born = c->cache.entries[idx].born;
    c->active++;
    return SQLITE_OK;
  }
  rc = sqlite3_prepare_v3(c->db, sql, (int)len, miss ? SQLITE_PREPARE_PERSISTENT : 0, &u->stmt,
                          &tail);
  if (rc != SQLITE_OK) return rc;
  if (!u->stmt) return SQLITE_OK;
  if (tail && tail < sql + len && !only_blank(tail)) {
    sqlite3_finalize(u->stmt);
    u->stmt = NULL;
    u->multi = 1;
    return SQLITE_OK;
  }
  if (miss && zv_sqlite_cache_put(&c->cache, sql, len, u->stmt, &idx, &evicted) == 0) {
    if (evicted) sqlite3_finalize(evicted);
    u->slot = idx;
    u->cached = 1;
    u->born = c->cache.entries[idx].born;
  }
  c->active++;
  return SQLITE_OK;
}

/*
 * Gives a checked-out statement back: reset, bindings cleared when clear (the FFI path does not
 * need it: sqlite_ffi.h, zv_sqlite_ffi_done), idle in the cache.
 */
static void give_back(conn_t *c, use_t *u, int clear) {
  if (!u->stmt) return;
  sqlite3_reset(u->stmt);
  if (clear) sqlite3_clear_bindings(u->stmt);
  if (u->cached) {
    zv_sqlite_cache_release(&c->cache, u->slot);
    if (c->closed) {
      c->cache.entries[u->slot].handle = NULL;
      sqlite3_finalize(u->stmt);
    }
  } else {
    sqlite3_finalize(u->stmt);
  }
  u->stmt = NULL;
  if (--c->active == 0 && c->closed) zv_sqlite_cache_free(&c->cache);
}

static void release(conn_t *c, use_t *u) {
  give_back(c, u, 1);
}

/*
 * Binds binds[1..n] (the table at index t) to the statement. Returns 0, or pushes nil, code,
 * message and returns 3. Strings are bound SQLITE_STATIC: the binds table keeps them alive for
 * the call, and release() clears the bindings before returning.
 */
static int bind_all(lua_State *L, conn_t *c, sqlite3_stmt *st, int t, int n, const char *sql,
                    size_t len) {
  int want = sqlite3_bind_parameter_count(st);
  char msg[128];
  if (want != n) {
    snprintf(msg, sizeof msg, "statement has %d placeholders but %d values were given", want, n);
    return push_err(L, "invalid", msg, sql, len);
  }
  for (int i = 1; i <= n; i++) {
    int rc = SQLITE_OK;
    lua_rawgeti(L, t, i);
    switch (lua_type(L, -1)) {
    case LUA_TNUMBER: {
      lua_Number d = lua_tonumber(L, -1);
      if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == (lua_Number)(sqlite3_int64)d)
        rc = sqlite3_bind_int64(st, i, (sqlite3_int64)d);
      else
        rc = sqlite3_bind_double(st, i, d);
      break;
    }
    case LUA_TSTRING: {
      size_t sl;
      const char *s = lua_tolstring(L, -1, &sl);
      rc = sqlite3_bind_text64(st, i, s, sl, SQLITE_STATIC, SQLITE_UTF8);
      break;
    }
    case LUA_TBOOLEAN:
      rc = sqlite3_bind_int(st, i, lua_toboolean(L, -1));
      break;
    case LUA_TNIL:
    case LUA_TLIGHTUSERDATA:
      rc = sqlite3_bind_null(st, i);
      break;
    case LUA_TUSERDATA: {
      size_t *blob = luaL_testudata(L, -1, BLOB_MT);
      if (!blob) goto bad;
      rc = sqlite3_bind_blob64(st, i, blob + 1, *blob, SQLITE_STATIC);
      break;
    }
    case LUA_TCDATA_: {
      lua_pushlightuserdata(L, &key_from64);
      lua_rawget(L, LUA_REGISTRYINDEX);
      lua_pushvalue(L, -2);
      lua_call(L, 1, 2);
      if (lua_isnil(L, -2)) {
        lua_pop(L, 2);
        goto bad;
      }
      sqlite3_uint64 hi = (sqlite3_uint64)(uint32_t)(int32_t)lua_tonumber(L, -2);
      sqlite3_uint64 lo = (sqlite3_uint64)(uint32_t)lua_tonumber(L, -1);
      lua_pop(L, 2);
      rc = sqlite3_bind_int64(st, i, (sqlite3_int64)((hi << 32) | lo));
      break;
    }
    default:
      goto bad;
    }
    lua_pop(L, 1);
    if (rc != SQLITE_OK) return push_sqlite_err(L, c, rc, sql, len);
    continue;
  bad:
    snprintf(msg, sizeof msg, "value %d is a %s, which cannot be bound", i,
             luaL_typename(L, -1));
    lua_pop(L, 1);
    return push_err(L, "invalid", msg, sql, len);
  }
  return 0;
}

static void push_value(lua_State *L, sqlite3_stmt *st, int i) {
  switch (sqlite3_column_type(st, i)) {
  case SQLITE_INTEGER:
    push_int64(L, sqlite3_column_int64(st, i));
    break;
  case SQLITE_FLOAT:
    lua_pushnumber(L, sqlite3_column_double(st, i));
    break;
  case SQLITE_TEXT:
    lua_pushlstring(L, (const char *)sqlite3_column_text(st, i),
                    (size_t)sqlite3_column_bytes(st, i));
    break;
  case SQLITE_BLOB: {
    const void *p = sqlite3_column_blob(st, i);
    lua_pushlstring(L, p ? p : "", (size_t)sqlite3_column_bytes(st, i));
    break;
  }
  default:
    lua_pushnil(L);
  }
}

/* Pushes the column names at names+0 .. names+ncol-1 (stack slots); returns ncol. */
static int push_names(lua_State *L, sqlite3_stmt *st) {
  int ncol = sqlite3_column_count(st);
  luaL_checkstack(L, ncol + 8, "too many columns");
  for (int i = 0; i < ncol; i++) lua_pushstring(L, sqlite3_column_name(st, i));
  return ncol;
}

/* Pushes the current row as a table keyed by the names at stack slot names. */
static void push_row(lua_State *L, sqlite3_stmt *st, int names, int ncol) {
  lua_createtable(L, 0, ncol);
  for (int i = 0; i < ncol; i++) {
    if (sqlite3_column_type(st, i) == SQLITE_NULL) continue;
    lua_pushvalue(L, names + i);
    push_value(L, st, i);
    lua_rawset(L, -3);
  }
}

/* The common prologue: sql at 2, binds at 3 (table or nil), n at 4. */
typedef struct {
  conn_t *c;
  const char *sql;
  size_t len;
  int binds;
  int n;
} call_t;

static int prologue(lua_State *L, call_t *k) {
  k->c = check_conn(L);
  k->sql = luaL_checklstring(L, 2, &k->len);
  k->binds = 3;
  if (lua_isnoneornil(L, 3)) {
    k->n = 0;
  } else {
    luaL_checktype(L, 3, LUA_TTABLE);
    k->n = lua_isnoneornil(L, 4) ? (int)lua_objlen(L, 3) : (int)luaL_checkinteger(L, 4);
  }
  return !k->c->closed;
}

/* Checks out and binds; returns 0 on success, or the number of results already pushed. */
static int start(lua_State *L, call_t *k, use_t *u) {
  int rc = acquire(k->c, k->sql, k->len, u), r;
  if (rc != SQLITE_OK) return push_sqlite_err(L, k->c, rc, k->sql, k->len);
  if (u->multi) return -1;
  if (!u->stmt) return 0;
  r = bind_all(L, k->c, u->stmt, k->binds, k->n, k->sql, k->len);
  if (r) release(k->c, u);
  return r;
}

/* The FFI path for reads: sqlite_ffi.h says what these do. */
int zv_sqlite_ffi_acquire(void *conn, const char *sql, size_t len, int n, use_t *u) {
  conn_t *c = conn;
  if (c->closed || acquire(c, sql, len, u) != SQLITE_OK) return 1;
  if (!u->stmt) return 1;
  if (sqlite3_bind_parameter_count(u->stmt) != n) {
    release(c, u);
    return 1;
  }
  return 0;
}

void zv_sqlite_ffi_release(void *conn, use_t *u) {
  release(conn, u);
}

int zv_sqlite_ffi_acquire_slot(void *conn, size_t slot, uint64_t born, int n, use_t *u) {
  conn_t *c = conn;
  void *h;
  if (c->closed || zv_sqlite_cache_take(&c->cache, slot, born, &h) != 0) return 1;
  u->stmt = h;
  u->slot = slot;
  u->cached = 1;
  u->multi = 0;
  u->born = born;
  c->active++;
  if (sqlite3_bind_parameter_count(h) != n) {
    give_back(c, u, 0);
    return 1;
  }
  return 0;
}

void zv_sqlite_ffi_done(void *conn, use_t *u) {
  give_back(conn, u, 0);
}

sqlite3 *zv_sqlite_ffi_db(void *conn) {
  return ((conn_t *)conn)->db;
}

const char *zv_sqlite_ffi_wtake(void *conn) {
  conn_t *c = conn;
  int rc;
  if (c->closed || !c->wlock || c->wl_held) return NULL;
  zv_sqlite_gate_spell(&c->gate);
  rc = zv_sqlite_wlock_take(c->wlock, c, c->gate.timeout_ms);
  if (rc == 0) {
    c->wl_held = 1;
    return NULL;
  }
  if (rc == ZV_SQLITE_WLOCK_OWN_THREAD)
    return "database is locked by another transaction of this thread";
  return "database is locked";
}

void zv_sqlite_ffi_wdone(void *conn) {
  conn_t *c = conn;
  c->gate.carry = 0;
  if (c->wl_held && (c->closed || sqlite3_get_autocommit(c->db))) {
    c->wl_held = 0;
    zv_sqlite_wlock_give(c->wlock, c);
  }
}

/* conn:_ptr() -> the conn_t as a light userdata, for the FFI path (the caller keeps conn alive). */
static int l_ptr(lua_State *L) {
  lua_pushlightuserdata(L, check_conn(L));
  return 1;
}

/* conn:_error(rc, sql) -> nil, message, code for a failed sqlite3_step of the FFI path. */
static int l_error(lua_State *L) {
  conn_t *c = check_conn(L);
  size_t len;
  int rc = (int)luaL_checkinteger(L, 2);
  const char *sql = luaL_checklstring(L, 3, &len);
  return push_sqlite_err(L, c, rc, sql, len);
}

static int l_exec(lua_State *L) {
  call_t k;
  use_t u;
  int r, rc;
  if (!prologue(L, &k)) return push_closed(L);
  r = start(L, &k, &u);
  if (r > 0) return r;
  if (r < 0) {
    char *err = NULL;
    if (k.n > 0) return push_err(L, "invalid", "several statements cannot take values", k.sql, k.len);
    rc = sqlite3_exec(k.c->db, k.sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", err ? err : sqlite3_errstr(rc));
      sqlite3_free(err);
      return push_err(L, zv_sqlite_code(rc, msg), msg, k.sql, k.len);
    }
  } else if (u.stmt) {
    while ((rc = sqlite3_step(u.stmt)) == SQLITE_ROW) {
    }
    if (rc != SQLITE_DONE) {
      r = push_sqlite_err(L, k.c, rc, k.sql, k.len);
      release(k.c, &u);
      return r;
    }
    release(k.c, &u);
  }
  lua_pushnumber(L, (lua_Number)sqlite3_changes64(k.c->db));
  push_int64(L, sqlite3_last_insert_rowid(k.c->db));
  return 2;
}

static int rows_common(lua_State *L, int only_first) {
  call_t k;
  use_t u;
  int r, rc, names, ncol, count = 0;
  if (!prologue(L, &k)) return push_closed(L);
  lua_settop(L, 4);
  r = start(L, &k, &u);
  if (r > 0) return r;
  if (r < 0) return push_err(L, "invalid", "query takes one statement", k.sql, k.len);
  if (!u.stmt) {
    if (only_first) return 0;
    lua_newtable(L);
    return 1;
  }
  names = lua_gettop(L) + 1;
  ncol = push_names(L, u.stmt);
  if (!only_first) lua_createtable(L, 4, 0);
  while ((rc = sqlite3_step(u.stmt)) == SQLITE_ROW) {
    push_row(L, u.stmt, names, ncol);
    if (only_first) break;
    lua_rawseti(L, -2, ++count);
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    r = push_sqlite_err(L, k.c, rc, k.sql, k.len);
    release(k.c, &u);
    return r;
  }
  release(k.c, &u);
  if (only_first && rc != SQLITE_ROW) return 0;
  return 1;
}

static int l_query(lua_State *L) {
  return rows_common(L, 0);
}

static int l_first(lua_State *L) {
  return rows_common(L, 1);
}

static int l_each(lua_State *L) {
  call_t k;
  use_t u;
  int r, rc, names, ncol, count = 0;
  luaL_checktype(L, 5, LUA_TFUNCTION);
  if (!prologue(L, &k)) return push_closed(L);
  lua_settop(L, 5);
  r = start(L, &k, &u);
  if (r > 0) return r;
  if (r < 0) return push_err(L, "invalid", "each takes one statement", k.sql, k.len);
  if (!u.stmt) {
    lua_pushinteger(L, 0);
    return 1;
  }
  names = lua_gettop(L) + 1;
  ncol = push_names(L, u.stmt);
  while ((rc = sqlite3_step(u.stmt)) == SQLITE_ROW) {
    int stop;
    count++;
    lua_pushvalue(L, 5);
    push_row(L, u.stmt, names, ncol);
    if (lua_pcall(L, 1, 1, 0) != 0) {
      release(k.c, &u);
      return lua_error(L);
    }
    stop = lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (k.c->closed) {
      release(k.c, &u);
      return push_closed(L);
    }
    if (stop) break;
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    r = push_sqlite_err(L, k.c, rc, k.sql, k.len);
    release(k.c, &u);
    return r;
  }
  release(k.c, &u);
  lua_pushinteger(L, count);
  return 1;
}

static int l_close(lua_State *L) {
  conn_close(check_conn(L));
  lua_pushboolean(L, 1);
  return 1;
}

static int l_gc(lua_State *L) {
  conn_t *c = luaL_checkudata(L, 1, CONN_MT);
  conn_close(c);
  return 0;
}

static int l_is_open(lua_State *L) {
  lua_pushboolean(L, !check_conn(L)->closed);
  return 1;
}

static int l_cached(lua_State *L) {
  conn_t *c = check_conn(L);
  size_t n = 0;
  for (size_t i = 0; i < c->cache.n; i++) n += c->cache.entries[i].handle != NULL;
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

static int opt_field(lua_State *L, int t, const char *name, int def) {
  int v = def;
  if (lua_isnoneornil(L, t)) return def;
  lua_getfield(L, t, name);
  if (lua_type(L, -1) == LUA_TBOOLEAN) v = lua_toboolean(L, -1);
  else if (lua_type(L, -1) == LUA_TNUMBER) v = (int)lua_tointeger(L, -1);
  else if (!lua_isnil(L, -1)) luaL_error(L, "bad option '%s' to 'open'", name);
  lua_pop(L, 1);
  return v;
}

/*
 * The WAL hook: SQLite calls it after a commit in WAL mode, once the write lock is released.
 * It wakes the worker threads waiting for that lock (writegate.c), then does what the hook it
 * replaces did (sqlite3_wal_autocheckpoint's default of 1000 pages): a passive checkpoint.
 * A `PRAGMA wal_autocheckpoint` puts SQLite's own hook back; waiters then wake by their delay.
 */
#define AUTOCHECKPOINT 1000

static int on_commit(void *arg, sqlite3 *db, const char *name, int pages) {
  (void)arg;
  zv_sqlite_gate_release();
  if (pages >= AUTOCHECKPOINT)
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
  return SQLITE_OK;
}

static int pragma(conn_t *c, const char *sql) {
  return sqlite3_exec(c->db, sql, NULL, NULL, NULL);
}

static int l_open(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int timeout, ncache, wal, fk, rc;
  conn_t *c;
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  timeout = opt_field(L, 2, "busy_timeout", 5000);
  ncache = opt_field(L, 2, "statements", ZV_SQLITE_CACHE_DEFAULT);
  wal = opt_field(L, 2, "wal", 1);
  fk = opt_field(L, 2, "foreign_keys", 1);
  if (ncache < 1 || ncache > ZV_SQLITE_CACHE_MAX)
    return luaL_error(L, "bad option 'statements' to 'open' (1..%d)", ZV_SQLITE_CACHE_MAX);
  c = lua_newuserdata(L, sizeof *c);
  memset(c, 0, sizeof *c);
  c->closed = 1; /* until fully open, __gc has nothing to do */
  luaL_getmetatable(L, CONN_MT);
  lua_setmetatable(L, -2);
  if (zv_sqlite_cache_init(&c->cache, (size_t)ncache)) return luaL_error(L, "out of memory");
  rc = sqlite3_open_v2(path, &c->db,
                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "cannot open %s: %s", path,
             c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
    sqlite3_close_v2(c->db);
    c->db = NULL;
    zv_sqlite_cache_free(&c->cache);
    return push_err(L, zv_sqlite_code(rc, msg), msg, NULL, 0);
  }
  c->closed = 0;
  sqlite3_extended_result_codes(c->db, 1);
  /* A double-quoted name is always an identifier: a misspelt column is an error, not a string. */
  sqlite3_db_config(c->db, SQLITE_DBCONFIG_DQS_DML, 0, (int *)NULL);
  sqlite3_db_config(c->db, SQLITE_DBCONFIG_DQS_DDL, 0, (int *)NULL);
  /* busy_timeout's wait, woken early by a commit of another worker thread (writegate.c). */
  c->gate.timeout_ms = timeout;
  sqlite3_busy_handler(c->db, zv_sqlite_gate_busy, &c->gate);
  sqlite3_wal_hook(c->db, on_commit, NULL);
  rc = pragma(c, fk ? "PRAGMA foreign_keys = ON" : "PRAGMA foreign_keys = OFF");
  if (rc == SQLITE_OK && wal && strcmp(path, ":memory:") && path[0]) {
    /* Switching a new file to WAL takes an exclusive lock. When several processes open a new
     * file at once (two `zever worker`s), SQLite answers SQLITE_BUSY at once rather than call
     * the busy handler where waiting could deadlock; so the switch is retried here, every
     * 10 ms, up to busy_timeout. Once one of them switched, the others' pragma only reads. */
    int waited = 0;
    while ((rc = pragma(c, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")) != SQLITE_OK &&
           (rc & 0xff) == SQLITE_BUSY && waited < timeout) {
      sqlite3_sleep(10);
      waited += 10;
    }
  }
  if (rc != SQLITE_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "cannot set up %s: %s", path, sqlite3_errmsg(c->db));
    conn_close(c);
    return push_err(L, zv_sqlite_code(rc, msg), msg, NULL, 0);
  }
  /* The file exists now (SQLite created it at open); a temporary or memory database has no
   * name and no lock. */
  c->wlock = zv_sqlite_wlock_open(sqlite3_db_filename(c->db, "main"));
  return 1;
}

static int l_blob(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  size_t *b = lua_newuserdata(L, sizeof(size_t) + n);
  *b = n;
  memcpy(b + 1, s, n);
  luaL_getmetatable(L, BLOB_MT);
  lua_setmetatable(L, -2);
  return 1;
}

/*
 * Process-wide set-up of libsqlite3, before anything initializes it (it is loaded with this
 * module, so nothing in the process has called it yet; pthread_once holds a second worker's
 * load until it is done):
 *
 * - memory statistics off (SQLITE_CONFIG_MEMSTATUS): with them on, Debian's build (no
 *   lookaside) takes one process-wide mutex on every sqlite3_malloc and sqlite3_free.
 * - SQLite's own mutexes (pthreads), with an enter that first spins on try-lock for a
 *   moment (SPINS rounds of a pause) before it blocks. The worker threads of `zever serve`
 *   share what SQLite keeps per process: the WAL index's lock table (its mutex is held across
 *   the fcntl() that takes or drops a read lock, on every read transaction, so on every
 *   autocommit select), the VFS mutex of each memory barrier, the unlock-notify list. A
 *   worker blocking on one of those sleeps in the kernel and waits to be scheduled again;
 *   the holder leaves within a system call's time, so spinning that long is cheaper.
 *   (nginx's workers are processes and share none of it.) Measured in BENCHMARKS.md,
 *   "Session 9".
 *
 * sqlite3_config fails (SQLITE_MISUSE) once SQLite is initialized: then it is left as it is,
 * only slower. The default mutex methods are read back after one initialize/shutdown (before
 * that SQLite has not chosen them), which is safe only while no connection exists: hence the
 * MEMSTATUS call succeeding first.
 */
/* The busy handler's threads waiting now, and the waits a commit ended early (writegate.c). */
static int l_gate(lua_State *L) {
  int waiting;
  uint64_t wakes;
  zv_sqlite_gate_stats(&waiting, &wakes);
  lua_pushinteger(L, waiting);
  lua_pushnumber(L, (lua_Number)wakes);
  return 2;
}

/* The process's write locks (writegate.c): { takes, waits, handoffs, timeouts, refused,
 * waiting }. */
static int l_writelock(lua_State *L) {
  zv_sqlite_wlock_stats_t s;
  zv_sqlite_wlock_stats(&s);
  lua_createtable(L, 0, 6);
  lua_pushnumber(L, (lua_Number)s.takes);
  lua_setfield(L, -2, "takes");
  lua_pushnumber(L, (lua_Number)s.waits);
  lua_setfield(L, -2, "waits");
  lua_pushnumber(L, (lua_Number)s.handoffs);
  lua_setfield(L, -2, "handoffs");
  lua_pushnumber(L, (lua_Number)s.timeouts);
  lua_setfield(L, -2, "timeouts");
  lua_pushnumber(L, (lua_Number)s.refused);
  lua_setfield(L, -2, "refused");
  lua_pushinteger(L, s.waiting);
  lua_setfield(L, -2, "waiting");
  return 1;
}

/* What SQLite's memory statistics count; 0 while they are off (configure_once). */
static int l_memory_used(lua_State *L) {
  lua_pushnumber(L, (lua_Number)sqlite3_memory_used());
  return 1;
}

static pthread_once_t configured = PTHREAD_ONCE_INIT;
static sqlite3_mutex_methods base_mutex;

#define SPINS 200

static void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ __volatile__("pause");
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static void spin_enter(sqlite3_mutex *m) {
  for (int i = 0; i < SPINS; i++) {
    if (base_mutex.xMutexTry(m) == SQLITE_OK) return;
    cpu_pause();
  }
  base_mutex.xMutexEnter(m);
}

/*
 * The default VFS is "zever-unix": SQLite's "unix" VFS with one method changed in the files it
 * opens, the WAL-index memory barrier (xShmBarrier). unix's barrier is a full fence
 * (__sync_synchronize) and then, "for redundancy", an enter and leave of SQLite's one global
 * VFS mutex; WAL calls it twice in every read transaction, so every autocommit select of every
 * worker thread took that process-wide mutex twice (the threads of `zever serve` met on it;
 * nginx's worker processes each have their own). The fence alone is the barrier the WAL-index
 * protocol asks for (sqlite3.h: "xShmBarrier ... implements a memory barrier"); locking,
 * durability and isolation are unix's own, unchanged. Everything else is unix's: the wrapper's
 * xOpen calls unix's and then points the file at a copy of unix's methods table whose barrier is
 * fence_barrier (only for the table seen on the first open that has a barrier, posixIoMethods;
 * any other table is left alone). Registered once per process, before any connection opens.
 */
static sqlite3_vfs *base_vfs, shim_vfs;
static const sqlite3_io_methods *base_methods;
static sqlite3_io_methods fenced_methods;
static pthread_mutex_t shim_lock = PTHREAD_MUTEX_INITIALIZER;

static void fence_barrier(sqlite3_file *f) {
  (void)f;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static int shim_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
                     int *out) {
  const sqlite3_io_methods *m;
  int rc;
  (void)vfs;
  rc = base_vfs->xOpen(base_vfs, name, f, flags, out);
  m = f->pMethods;
  if (rc != SQLITE_OK || !m || m->iVersion < 2 || !m->xShmBarrier) return rc;
  pthread_mutex_lock(&shim_lock); /* opens are rare: once per connection and per journal */
  if (!base_methods) {
    base_methods = m;
    fenced_methods = *m;
    fenced_methods.xShmBarrier = fence_barrier;
  }
  if (m == base_methods) f->pMethods = &fenced_methods;
  pthread_mutex_unlock(&shim_lock);
  return rc;
}

static void register_vfs(void) {
  base_vfs = sqlite3_vfs_find("unix");
  if (!base_vfs || base_vfs->szOsFile <= 0) return;
  shim_vfs = *base_vfs; /* unix's methods and its pAppData (its locking-style finder) */
  shim_vfs.pNext = NULL;
  shim_vfs.zName = "zever-unix";
  shim_vfs.xOpen = shim_open;
  (void)sqlite3_vfs_register(&shim_vfs, 1);
}

static void configure_mutexes(void) {
  sqlite3_mutex_methods m;
  if (sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK) return;
  if (sqlite3_initialize() != SQLITE_OK || sqlite3_shutdown() != SQLITE_OK) return;
  if (sqlite3_config(SQLITE_CONFIG_GETMUTEX, &base_mutex) == SQLITE_OK && base_mutex.xMutexTry &&
      base_mutex.xMutexEnter) {
    m = base_mutex;
    m.xMutexEnter = spin_enter;
    (void)sqlite3_config(SQLITE_CONFIG_MUTEX, &m);
  }
}

/* A VFS can be registered at any time; only connections opened afterwards use it. */
static void configure_once(void) {
  configure_mutexes();
  if (sqlite3_initialize() == SQLITE_OK) register_vfs();
}

/* The name of the default VFS ("zever-unix" once configure_once ran). */
static int l_vfs(lua_State *L) {
  sqlite3_vfs *v = sqlite3_vfs_find(NULL);
  lua_pushstring(L, v ? v->zName : "");
  return 1;
}

int luaopen_zever_sqlite(lua_State *L);
int luaopen_zever_sqlite(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"exec", l_exec},       {"query", l_query},   {"first", l_first},   {"each", l_each},
    {"close", l_close},     {"is_open", l_is_open}, {"cached", l_cached},
    {"_ptr", l_ptr},        {"_error", l_error},  {NULL, NULL}};
  static const luaL_Reg funcs[] = {{"open", l_open}, {"blob", l_blob},
                                   {"memory_used", l_memory_used}, {"vfs", l_vfs},
                                   {"gate", l_gate},
                                   {"writelock", l_writelock},
                                   {NULL, NULL}};
  pthread_once(&configured, configure_once);
  if (luaL_loadbuffer(L, int64_chunk, sizeof int64_chunk - 1, "=zever.sqlite") != 0)
    return lua_error(L);
  lua_call(L, 0, 2);
  lua_pushlightuserdata(L, &key_from64);
  lua_insert(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
  lua_pushlightuserdata(L, &key_to64);
  lua_insert(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
  luaL_newmetatable(L, CONN_MT);
  lua_pushcfunction(L, l_gc);
  lua_setfield(L, -2, "__gc");
  lua_newtable(L);
  luaL_register(L, NULL, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newmetatable(L, BLOB_MT);
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  lua_pushstring(L, sqlite3_libversion());
  lua_setfield(L, -2, "version");
  return 1;
}
