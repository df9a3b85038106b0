/*
 * l_pg.c: the zever.pg binding: PostgreSQL connections (pg.h) driven by the Lua state's event
 * loop, wrapped by lua/adapters/db/postgres.lua (which owns pooling, types and errors).
 *
 *   pg.connect(uri, options, timeout, token) -> conn[, "unavailable", message]
 *        connects in the background; later the token (a zever.sched token) completes with
 *        true or false, "unavailable", message; a failure to even start is returned at once
 *        (the caller does not await then)
 *   conn:send(token, mode, sql, binds, n[, name]) -> true | nil, code, message
 *        mode "simple" | "params" | "prepare" | "prepared"; binds[1..n] are strings, numbers,
 *        booleans, nil or pg.null (light userdata NULL); later the token completes with true,
 *        false, "server" (conn:error() says what) or false, "unavailable" | "closed", message
 *   conn:copy(token, sql, data) -> true | nil, code, message   COPY ... FROM STDIN with data
 *   conn:pipeline(token, ops, n) -> true | nil, code, message   n ops in pipeline mode, one
 *        round trip: ops[i] = { mode, sql, binds, nbinds, name, sync } with mode "params" |
 *        "prepare" | "prepared" and sync true for a sync point after the op (the last op always
 *        has one); later the token completes with true (each op's outcome: status/result/
 *        error(i)) or false, "unavailable" | "closed", message
 *   conn:cptr(), conn:slot()   the connection and its waiter slot for the FFI send
 *        (zv_pgconn_send, pg_ffi.h): slot[1] = token, then the send; the reply completes it
 *   conn:status(i)  -> "ok" | "error" | "aborted"   the pipeline's op i (1-based)
 *   conn:result([i]) -> light userdata PGresult * | nil   (decoded with the FFI: pg_ffi.h)
 *   conn:ptr()      -> light userdata zv_pg_t * | nil   the connection for the FFI (pg_ffi.h:
 *        zv_pg_result, zv_pg_clear): valid until conn:close()
 *   conn:error([i]) -> sqlstate, message, constraint, column, table, position | nil
 *   pg.round_trips() -> operations sent and awaited by this process (one per send, copy or
 *        pipeline): what the specs and benchmarks count round trips with
 *   conn:check()    -> true when usable (reads what the server sent while idle, no waiting)
 *   conn:listen(fn) -> fn(channel, payload) per notification, fn(nil, message) when it broke
 *   conn:info()     -> usable, busy, server_version, last_error
 *   conn:close()    a pending statement completes with "closed"
 *
 * Every completion goes through zv_token_complete (runtime.h), zever.sched's one wake-up path:
 * a waiting coroutine is resumed from here, a plain caller's box marked done.
 *
 * Loop handles: the poll handle keeps the loop alive only while a connect or a statement is
 * running; an idle connection (listening or not) never does. The connect timer likewise.
 *
 * It must not raise while it holds memory of its own (binds are read before anything is
 * allocated) and must not call Lua while the loop is closing or from __gc.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "../runtime/runtime.h"
#include "pg.h"
#include "pg_ffi.h"

#define CONN_MT "zever.pg.conn"
#define STACK_BINDS 16
#define COPY_CHUNK 65536

enum { CONNECTING, IDLE, BUSY, COPY, BROKEN, CLOSED };

typedef struct zv_pgconn_s pgconn_t; /* zv_pgconn_t of pg_ffi.h */

typedef struct {
  uv_poll_t h;
  pgconn_t *c; /* NULL once the connection let go of it */
} watch_t;

struct zv_pgconn_s {
  zv_loop_item_t item;
  zv_loop_t *loop;
  uv_timer_t timer;    /* the connect deadline */
  watch_t *w;
  int wfd;
  int events;
  zv_pg_t *pg;
  int phase;
  int slot_ref;        /* a table: [1] is the waiter (a zever.sched token) of the running
                          connect or statement, nil when none; the FFI send's caller sets it */
  int notify_ref;      /* LISTEN callback, LUA_NOREF when none */
  lua_State *cur;      /* set while close() runs outside the loop */
  int gc;              /* inside __gc: call nothing */
  char *copy;          /* COPY data still to send (copy_off..copy_len) */
  size_t copy_len, copy_off;
  char err[256];
};

static void advance(pgconn_t *c);

/* --- completion ----------------------------------------------------------------------------- */

static lua_State *state_of(pgconn_t *c) {
  if (c->gc || c->loop->closing) return NULL;
  return c->cur ? c->cur : (lua_State *)c->loop->L;
}

/* Pushes the outcome on L: ok[, code[, message]]; returns how many values. */
static int push_outcome(lua_State *L, int ok, const char *code, const char *msg) {
  lua_pushboolean(L, ok);
  if (!code) return 1;
  lua_pushstring(L, code);
  if (!msg) return 2;
  lua_pushstring(L, msg);
  return 3;
}

/*
 * Completes the waiter (slot[1], cleared first) with ok[, code[, message]] through
 * zv_token_complete: zever.sched's one wake-up path (a waiting coroutine is resumed here, a
 * plain caller's box is marked done). Nothing when no one waits or Lua cannot be called.
 */
static void finish(pgconn_t *c, int ok, const char *code, const char *msg) {
  lua_State *L = state_of(c);
  if (!L || c->slot_ref == LUA_NOREF) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->slot_ref);
  lua_rawgeti(L, -1, 1);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 2);
    return;
  }
  lua_pushnil(L);
  lua_rawseti(L, -3, 1);
  lua_remove(L, -2);
  zv_token_complete(c->loop, L, push_outcome(L, ok, code, msg), "pg reply");
}

/* Makes the value at index token the waiter (slot[1]). */
static void arm(lua_State *L, pgconn_t *c, int token) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->slot_ref);
  lua_pushvalue(L, token);
  lua_rawseti(L, -2, 1);
  lua_pop(L, 1);
}

/* --- the poll handle ------------------------------------------------------------------------ */

static void watch_closed(uv_handle_t *h) {
  zv_free(h->data);
}

static void drop_watch(pgconn_t *c) {
  if (!c->w) return;
  c->w->c = NULL;
  uv_close((uv_handle_t *)&c->w->h, watch_closed);
  c->w = NULL;
  c->events = 0;
}

static void poll_cb(uv_poll_t *h, int status, int events) {
  watch_t *w = h->data;
  (void)events;
  if (!w->c) return;
  /* On an error (a reset socket) libuv has stopped the handle: forget the events, so that the
   * next set_events starts it again, and let libpq find the socket error itself when it reads. */
  if (status < 0) w->c->events = 0;
  advance(w->c);
}

/* Watches the socket for events; the handle keeps the loop alive only while work runs. */
static void set_events(pgconn_t *c, int events) {
  int fd = zv_pg_fd(c->pg);
  if (fd < 0) return;
  if (c->w && c->wfd != fd) drop_watch(c);
  if (!c->w) {
    watch_t *w = zv_alloc(sizeof *w);
    if (!w) return;
    memset(w, 0, sizeof *w);
    if (uv_poll_init(&c->loop->uv, &w->h, fd)) {
      zv_free(w);
      return;
    }
    w->h.data = w;
    w->c = c;
    c->w = w;
    c->wfd = fd;
    c->events = 0;
  }
  if (events != c->events) {
    c->events = events;
    if (events) uv_poll_start(&c->w->h, events, poll_cb);
    else uv_poll_stop(&c->w->h);
  }
  if (c->phase == IDLE) uv_unref((uv_handle_t *)&c->w->h);
  else uv_ref((uv_handle_t *)&c->w->h);
}

/* --- state machine -------------------------------------------------------------------------- */

static void broken(pgconn_t *c, const char *why) {
  snprintf(c->err, sizeof c->err, "%s", why && *why ? why : "the connection broke");
  c->phase = BROKEN;
  uv_timer_stop(&c->timer);
  zv_free(c->copy);
  c->copy = NULL;
  drop_watch(c);
  finish(c, 0, "unavailable", c->err);
  if (c->phase == BROKEN && c->notify_ref != LUA_NOREF) {
    lua_State *L = state_of(c);
    if (L) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, c->notify_ref);
      lua_pushnil(L);
      lua_pushstring(L, c->err);
      zv_loop_pcall(L, 2, 0, "pg listen");
    }
  }
}

/* Hands out the notifications that arrived; stops when the callback closed the connection. */
static void deliver(pgconn_t *c) {
  const char *channel, *payload;
  while (c->phase == IDLE && c->notify_ref != LUA_NOREF && zv_pg_notify(c->pg, &channel, &payload)) {
    lua_State *L = state_of(c);
    if (!L) return;
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->notify_ref);
    lua_pushstring(L, channel);
    lua_pushstring(L, payload);
    zv_loop_pcall(L, 2, 0, "pg listen");
  }
}

static void step_connect(pgconn_t *c) {
  int rc = zv_pg_connect_poll(c->pg);
  if (rc == ZV_EIO) {
    broken(c, zv_pg_errmsg(c->pg));
  } else if (rc == 0) {
    uv_timer_stop(&c->timer);
    c->phase = IDLE;
    set_events(c, UV_READABLE);
    finish(c, 1, NULL, NULL);
  } else {
    set_events(c, rc == ZV_PG_WANT_READ ? UV_READABLE : UV_WRITABLE);
  }
}

/* Sends COPY data and the end; returns 1 when all went, 0 when it waits, -1 when it broke. */
static int step_copy(pgconn_t *c) {
  while (c->copy && c->copy_off < c->copy_len) {
    size_t n = c->copy_len - c->copy_off;
    int rc;
    if (n > COPY_CHUNK) n = COPY_CHUNK;
    rc = zv_pg_put_copy(c->pg, c->copy + c->copy_off, n);
    if (rc == ZV_PG_WANT_WRITE) return 0;
    if (rc) return -1;
    c->copy_off += n;
  }
  {
    int rc = zv_pg_end_copy(c->pg, NULL);
    if (rc == ZV_PG_WANT_WRITE) return 0;
    if (rc) return -1;
  }
  zv_free(c->copy);
  c->copy = NULL;
  return 1;
}

static void advance(pgconn_t *c) {
  for (;;) {
    int rc, want = 0;
    switch (c->phase) {
    case CONNECTING:
      step_connect(c);
      return;
    case IDLE:
      if (zv_pg_input(c->pg) == ZV_EIO || !zv_pg_ok(c->pg)) {
        broken(c, zv_pg_errmsg(c->pg));
        return;
      }
      deliver(c);
      return;
    case COPY:
      rc = step_copy(c);
      if (rc < 0) {
        broken(c, zv_pg_errmsg(c->pg));
        return;
      }
      if (rc == 0) {
        set_events(c, UV_READABLE | UV_WRITABLE);
        return;
      }
      c->phase = BUSY;
      break;
    case BUSY:
      rc = zv_pg_flush(c->pg);
      if (rc == ZV_EIO) {
        broken(c, zv_pg_errmsg(c->pg));
        return;
      }
      if (rc == ZV_PG_WANT_WRITE) want = UV_WRITABLE;
      rc = zv_pg_input(c->pg);
      if (rc == ZV_EIO) {
        broken(c, zv_pg_errmsg(c->pg));
        return;
      }
      if (rc == ZV_PG_COPY) {
        if (!c->copy) { /* a COPY FROM STDIN sent by exec: refuse the data */
          zv_pg_end_copy(c->pg, "zever: use db:copy_in for COPY FROM STDIN");
        } else {
          c->phase = COPY;
        }
        break;
      }
      if (rc == ZV_PG_WANT_READ) {
        set_events(c, UV_READABLE | want);
        return;
      }
      /* done (a COPY the server refused before it began never took its data: free it) */
      zv_free(c->copy);
      c->copy = NULL;
      c->phase = zv_pg_ok(c->pg) ? IDLE : BROKEN;
      if (c->phase == BROKEN) {
        broken(c, zv_pg_errmsg(c->pg));
        return;
      }
      set_events(c, UV_READABLE);
      finish(c, zv_pg_error(c->pg) == NULL, zv_pg_error(c->pg) ? "server" : NULL, NULL);
      deliver(c);
      return;
    default:
      return;
    }
  }
}

static void timer_cb(uv_timer_t *t) {
  pgconn_t *c = ZV_CONTAINER_OF(t, pgconn_t, timer);
  if (c->phase == CONNECTING) broken(c, "connect timed out");
}

/* --- lifetime ------------------------------------------------------------------------------- */

static void timer_closed(uv_handle_t *h) {
  pgconn_t *c = ZV_CONTAINER_OF((uv_timer_t *)h, pgconn_t, timer);
  zv_free(c);
}

/* Closes the connection; a waiter gets "closed". The memory goes in the timer's close callback. */
static void conn_close(pgconn_t *c, lua_State *L) {
  if (c->phase == CLOSED) return;
  c->phase = CLOSED;
  zv_loop_remove(&c->item);
  uv_timer_stop(&c->timer);
  drop_watch(c);
  zv_pg_free(c->pg);
  c->pg = NULL;
  zv_free(c->copy);
  c->copy = NULL;
  c->cur = L;
  finish(c, 0, "closed", "the connection is closed");
  if (L) {
    luaL_unref(L, LUA_REGISTRYINDEX, c->notify_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, c->slot_ref);
  }
  c->notify_ref = c->slot_ref = LUA_NOREF;
  c->cur = NULL;
  uv_close((uv_handle_t *)&c->timer, timer_closed);
}

static void teardown(zv_loop_item_t *item) {
  pgconn_t *c = ZV_CONTAINER_OF(item, pgconn_t, item);
  conn_close(c, NULL);
}

/* The connection of handle 1; NULL once closed (every method answers "closed" then). */
static pgconn_t *check_conn(lua_State *L) {
  void **slot = luaL_checkudata(L, 1, CONN_MT);
  return *slot;
}

static int closed_failure(lua_State *L) {
  lua_pushnil(L);
  lua_pushliteral(L, "closed");
  lua_pushliteral(L, "the connection is closed");
  return 3;
}

static int l_gc(lua_State *L) {
  void **slot = lua_touserdata(L, 1);
  pgconn_t *c = *slot;
  if (c) {
    c->gc = 1;
    c->cur = L;
    *slot = NULL;
    conn_close(c, L);
  }
  return 0;
}

static int l_close(lua_State *L) {
  void **slot = luaL_checkudata(L, 1, CONN_MT);
  pgconn_t *c = *slot;
  if (c) {
    *slot = NULL;
    conn_close(c, L);
  }
  return 0;
}

/* pg.connect(uri, options, timeout, token) -> conn[, "unavailable", message] */
static int l_connect(lua_State *L) {
  const char *uri = luaL_checkstring(L, 1);
  const char *options = luaL_optstring(L, 2, NULL);
  double timeout = luaL_optnumber(L, 3, 10);
  void **slot;
  pgconn_t *c;
  int rc;
  luaL_checkany(L, 4);
  lua_settop(L, 4);
  slot = zv_l_newhandle(L, CONN_MT);
  c = zv_alloc(sizeof *c);
  if (!c) return luaL_error(L, "pg: out of memory");
  memset(c, 0, sizeof *c);
  c->loop = zv_loop_of(L);
  c->slot_ref = c->notify_ref = LUA_NOREF;
  c->item.teardown = teardown;
  uv_timer_init(&c->loop->uv, &c->timer);
  uv_unref((uv_handle_t *)&c->timer);
  zv_loop_add(c->loop, &c->item);
  *slot = c;
  lua_createtable(L, 1, 0);
  c->slot_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  c->phase = CONNECTING;
  rc = zv_pg_connect_start(uri, options, &c->pg);
  if (rc) {
    /* Nothing waits yet: the failure is the call's (the caller does not await). */
    snprintf(c->err, sizeof c->err, "%s", c->pg ? zv_pg_errmsg(c->pg) : "out of memory");
    c->phase = BROKEN;
    lua_pushliteral(L, "unavailable");
    lua_pushstring(L, c->err);
    return 3;
  }
  arm(L, c, 4);
  if (timeout > 0) {
    uv_update_time(&c->loop->uv);
    uv_timer_start(&c->timer, timer_cb, (uint64_t)(timeout * 1000 + 0.5), 0);
    uv_ref((uv_handle_t *)&c->timer);
  }
  set_events(c, UV_WRITABLE);
  return 1;
}

/* "00".."99": two digits a step (one division by 100 instead of two by 10). */
static const char DIGITS2[] =
  "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
  "8081828384858687888990919293949596979899";

/* Writes the decimal digits of v (|v| < 2^63) into buf (32 bytes), NUL-terminated; returns the
 * length. The common bind, an integer id, without snprintf's format parsing: the digits are
 * written from the end of a scratch buffer, two at a time, then copied once. */
static int int_text(char *buf, long long v) {
  char tmp[24];
  char *p = tmp + sizeof tmp;
  int k = 0, n;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  while (u >= 100) {
    unsigned r = (unsigned)(u % 100);
    u /= 100;
    p -= 2;
    memcpy(p, DIGITS2 + 2 * r, 2);
  }
  if (u >= 10) {
    p -= 2;
    memcpy(p, DIGITS2 + 2 * u, 2);
  } else {
    *--p = (char)('0' + u);
  }
  if (v < 0) buf[k++] = '-';
  n = (int)(tmp + sizeof tmp - p);
  memcpy(buf + k, p, (size_t)n);
  k += n;
  buf[k] = '\0';
  return k;
}

/* A number bind as PostgreSQL text into buf (32 bytes): integers exact, NaN and the infinities
 * by name, others with 17 significant digits. Returns the length. */
static int num_text(char *buf, double v) {
  if (isnan(v)) return snprintf(buf, 32, "NaN");
  if (isinf(v)) return snprintf(buf, 32, v > 0 ? "Infinity" : "-Infinity");
  if (v == floor(v) && fabs(v) < 9.2e18) return int_text(buf, (long long)v);
  return snprintf(buf, 32, "%.17g", v);
}

/* Reads binds[1..n] into values/lens (numbers formatted into nums); raises on a bad type. */
static void read_binds(lua_State *L, int t, int n, const char **values, int *lens,
                       char (*nums)[32]) {
  for (int i = 0; i < n; i++) {
    int ty;
    lua_rawgeti(L, t, i + 1);
    ty = lua_type(L, -1);
    if (ty == LUA_TSTRING) {
      size_t len;
      values[i] = lua_tolstring(L, -1, &len);
      if (len > 0x7fffffff) luaL_error(L, "db: parameter %d is too long", i + 1);
      lens[i] = (int)len;
    } else if (ty == LUA_TNUMBER) {
      values[i] = nums[i];
      lens[i] = num_text(nums[i], lua_tonumber(L, -1));
    } else if (ty == LUA_TBOOLEAN) {
      values[i] = lua_toboolean(L, -1) ? "t" : "f";
      lens[i] = 1;
    } else if (ty == LUA_TNIL || (ty == LUA_TLIGHTUSERDATA && !lua_touserdata(L, -1))) {
      values[i] = NULL;
      lens[i] = 0;
    } else {
      luaL_error(L, "db: cannot bind a %s (parameter %d)", luaL_typename(L, -1), i + 1);
    }
  }
}

static int send_failed(lua_State *L, pgconn_t *c, int rc) {
  if (rc == ZV_EINVAL) return luaL_error(L, "pg: a statement is already running on this connection");
  lua_pushnil(L);
  lua_pushliteral(L, "unavailable");
  lua_pushstring(L, c->phase == BROKEN && c->err[0] ? c->err : zv_pg_errmsg(c->pg));
  return 3;
}

/* Operations sent and awaited by this process: one each (a pipeline is one). */
static unsigned long long round_trips;

/* Starts driving the statement just queued: 0, or ZV_EIO when the socket is gone (the server
 * went away while the connection sat idle; the connection is BROKEN then, nothing would ever
 * wake a waiter). No Lua: the FFI send calls it too. */
static int start_io(pgconn_t *c) {
  int rc = c->copy ? ZV_PG_WANT_WRITE : zv_pg_flush(c->pg);
  if (rc == ZV_EIO || zv_pg_fd(c->pg) < 0) {
    snprintf(c->err, sizeof c->err, "%s", zv_pg_errmsg(c->pg));
    c->phase = BROKEN;
    zv_free(c->copy);
    c->copy = NULL;
    drop_watch(c);
    return ZV_EIO;
  }
  c->phase = BUSY;
  round_trips++;
  /* Usually the statement went out whole: then only the reply is awaited, and the poll keeps
   * the events it had while idle (no epoll change). A broken socket shows when reading. */
  set_events(c, rc == ZV_PG_WANT_WRITE ? UV_READABLE | UV_WRITABLE : UV_READABLE);
  return 0;
}

/* Arms the waiter at index token and starts driving the statement. */
static int started(lua_State *L, pgconn_t *c, int token) {
  if (start_io(c)) return send_failed(L, c, ZV_EIO);
  arm(L, c, token);
  lua_pushboolean(L, 1);
  return 1;
}

/* Queues [pre, the statement] as one pipeline (pg.h): both ops in one segment, so a failing
 * pre skips the statement. */
static int send_pair(pgconn_t *c, const char *pre, int mode, const char *text, int n,
                     const char *const *values, const int *lens) {
  int rc = zv_pg_pipeline_begin(c->pg, 2);
  if (rc) return rc;
  rc = zv_pg_pipeline_op(c->pg, ZV_PG_OP_PARAMS, "", pre, 0, NULL, NULL);
  if (!rc) {
    rc = mode == ZV_PG_SEND_PREPARED
      ? zv_pg_pipeline_op(c->pg, ZV_PG_OP_PREPARED, text, "", n, values, lens)
      : zv_pg_pipeline_op(c->pg, ZV_PG_OP_PARAMS, "", text, n, values, lens);
  }
  if (!rc) rc = zv_pg_pipeline_end(c->pg);
  return rc ? ZV_EIO : 0; /* libpq could not queue: the connection is unusable, mid-pipeline */
}

int zv_pgconn_send(zv_pgconn_t *c, int mode, const char *pre, const char *text, int n,
                   const char *const *values, const int *lens, const double *nums) {
  const char *v[ZV_PG_FFI_BINDS];
  int l[ZV_PG_FFI_BINDS];
  char digits[ZV_PG_FFI_BINDS][32];
  int rc;
  if (c->phase == BROKEN) return ZV_EIO;
  if (c->phase != IDLE || n < 0 || n > ZV_PG_FFI_BINDS) return ZV_EINVAL;
  if (pre && mode == ZV_PG_SEND_SIMPLE) return ZV_EINVAL;
  for (int i = 0; i < n; i++) { /* copied: libpq reads them during the send only */
    if (lens[i] < 0) {
      v[i] = digits[i];
      l[i] = num_text(digits[i], nums[i]);
    } else {
      v[i] = values[i];
      l[i] = lens[i];
    }
  }
  if (pre) rc = send_pair(c, pre, mode, text, n, v, l);
  else if (mode == ZV_PG_SEND_PREPARED) rc = zv_pg_send_prepared(c->pg, text, n, v, l);
  else if (mode == ZV_PG_SEND_PARAMS) rc = zv_pg_send_params(c->pg, text, n, v, l);
  else rc = zv_pg_send_simple(c->pg, text);
  if (rc == ZV_ENOMEM) return rc;
  if (rc == ZV_EIO) {
    snprintf(c->err, sizeof c->err, "%s", zv_pg_errmsg(c->pg));
    c->phase = BROKEN;
    drop_watch(c);
  }
  return rc ? rc : start_io(c);
}

const char *zv_pgconn_errmsg(zv_pgconn_t *c) {
  return c->err[0] ? c->err : "the connection broke";
}

/* conn:send(token, mode, sql, binds, n[, name]) */
static int l_send(lua_State *L) {
  static const char *const modes[] = {"simple", "params", "prepare", "prepared", NULL};
  pgconn_t *c = check_conn(L);
  int mode = luaL_checkoption(L, 3, NULL, modes);
  const char *sql = luaL_checkstring(L, 4);
  int n = (int)luaL_optinteger(L, 6, 0);
  const char *name = luaL_optstring(L, 7, "");
  const char *svalues[STACK_BINDS], **values = svalues;
  int slens[STACK_BINDS], *lens = slens;
  char snums[STACK_BINDS][32], (*nums)[32] = snums;
  int rc;
  luaL_checkany(L, 2);
  if (!c) return closed_failure(L);
  if (n < 0 || n > 65535) return luaL_error(L, "db: too many parameters (%d)", n);
  if (n > 0) {
    luaL_checktype(L, 5, LUA_TTABLE);
    luaL_checkstack(L, n + 4, "db: too many parameters");
    if (n > STACK_BINDS) {
      char *mem = lua_newuserdata(L, (size_t)n * (sizeof *values + sizeof *lens + 32));
      values = (const char **)(void *)mem;
      lens = (int *)(void *)(mem + (size_t)n * sizeof *values);
      nums = (char (*)[32])(void *)(mem + (size_t)n * (sizeof *values + sizeof *lens));
    }
    read_binds(L, 5, n, values, lens, nums);
  }
  if (c->phase == BROKEN) return send_failed(L, c, ZV_EIO);
  if (c->phase != IDLE) return send_failed(L, c, ZV_EINVAL);
  switch (mode) {
  case 0: rc = zv_pg_send_simple(c->pg, sql); break;
  case 1: rc = zv_pg_send_params(c->pg, sql, n, values, lens); break;
  case 2: rc = zv_pg_send_prepare(c->pg, name, sql); break;
  default: rc = zv_pg_send_prepared(c->pg, name, n, values, lens); break;
  }
  if (rc) return send_failed(L, c, rc);
  return started(L, c, 2);
}

/* conn:copy(token, sql, data) */
static int l_copy(lua_State *L) {
  pgconn_t *c = check_conn(L);
  const char *sql = luaL_checkstring(L, 3);
  size_t len;
  const char *data = luaL_checklstring(L, 4, &len);
  int rc;
  luaL_checkany(L, 2);
  if (!c) return closed_failure(L);
  if (c->phase == BROKEN) return send_failed(L, c, ZV_EIO);
  if (c->phase != IDLE) return send_failed(L, c, ZV_EINVAL);
  c->copy = zv_alloc(len ? len : 1);
  if (!c->copy) return luaL_error(L, "pg: out of memory");
  memcpy(c->copy, data, len);
  c->copy_len = len;
  c->copy_off = 0;
  rc = zv_pg_send_simple(c->pg, sql);
  if (rc) {
    zv_free(c->copy);
    c->copy = NULL;
    return send_failed(L, c, rc);
  }
  return started(L, c, 2);
}

/* The binds of op (a table at index op) into *values and *lens (the stack arrays given, or a
 * userdata left on the stack for more than STACK_BINDS); *n is set. What it pushes stays on the
 * stack (the caller's settop drops it once the op is queued). Raises on a bad op. */
static void op_binds(lua_State *L, int op, int i, int *n, const char ***values, int **lens,
                     char (**nums)[32]) {
  int t;
  lua_rawgeti(L, op, 4);
  *n = (int)luaL_optinteger(L, -1, 0);
  if (*n < 0 || *n > 65535) luaL_error(L, "pg: pipeline op %d: too many parameters (%d)", i, *n);
  if (*n == 0) return;
  lua_rawgeti(L, op, 3);
  if (!lua_istable(L, -1)) luaL_error(L, "pg: pipeline op %d: binds must be a table", i);
  t = lua_gettop(L);
  luaL_checkstack(L, *n + 4, "db: too many parameters");
  if (*n > STACK_BINDS) {
    char *mem = lua_newuserdata(L, (size_t)*n * (sizeof **values + sizeof **lens + 32));
    *values = (const char **)(void *)mem;
    *lens = (int *)(void *)(mem + (size_t)*n * sizeof **values);
    *nums = (char (*)[32])(void *)(mem + (size_t)*n * (sizeof **values + sizeof **lens));
  }
  read_binds(L, t, *n, *values, *lens, *nums);
}

/* conn:pipeline(token, ops, n) */
static int l_pipeline(lua_State *L) {
  static const char *const modes[] = {"params", "prepare", "prepared", NULL};
  pgconn_t *c = check_conn(L);
  int nops = (int)luaL_checkinteger(L, 4);
  const char *svalues[STACK_BINDS], **values;
  int slens[STACK_BINDS], *lens;
  char snums[STACK_BINDS][32], (*nums)[32];
  int rc;
  luaL_checkany(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  if (nops < 1 || nops > 65535) return luaL_error(L, "pg: a pipeline has 1 to 65535 ops (%d)", nops);
  luaL_checkstack(L, 8, "pg: pipeline");
  /* Every op is checked before anything is queued: a raise never leaves half a pipeline. */
  for (int i = 1; i <= nops; i++) {
    int nb, top = lua_gettop(L);
    lua_rawgeti(L, 3, i);
    if (!lua_istable(L, -1)) return luaL_error(L, "pg: pipeline op %d is not a table", i);
    lua_rawgeti(L, -1, 1);
    values = svalues, lens = slens, nums = snums;
    if (luaL_checkoption(L, -1, NULL, modes) != 1) op_binds(L, top + 1, i, &nb, &values, &lens, &nums);
    lua_rawgeti(L, top + 1, 2);
    if (lua_type(L, -1) != LUA_TSTRING) return luaL_error(L, "pg: pipeline op %d has no SQL", i);
    lua_settop(L, top);
  }
  if (!c) return closed_failure(L);
  if (c->phase == BROKEN) return send_failed(L, c, ZV_EIO);
  if (c->phase != IDLE) return send_failed(L, c, ZV_EINVAL);
  rc = zv_pg_pipeline_begin(c->pg, nops);
  if (rc == ZV_ENOMEM) return luaL_error(L, "pg: out of memory");
  if (rc) return send_failed(L, c, rc);
  for (int i = 1; i <= nops && !rc; i++) {
    int top = lua_gettop(L), mode, nb = 0, sync;
    const char *sql, *name;
    lua_rawgeti(L, 3, i);
    lua_rawgeti(L, top + 1, 1);
    mode = luaL_checkoption(L, -1, NULL, modes);
    lua_rawgeti(L, top + 1, 2);
    sql = lua_tostring(L, -1);
    lua_rawgeti(L, top + 1, 5);
    name = lua_isstring(L, -1) ? lua_tostring(L, -1) : "";
    lua_rawgeti(L, top + 1, 6);
    sync = lua_toboolean(L, -1);
    values = svalues, lens = slens, nums = snums;
    if (mode != 1) op_binds(L, top + 1, i, &nb, &values, &lens, &nums);
    rc = zv_pg_pipeline_op(c->pg, mode, name, sql, nb, values, lens);
    if (!rc && sync && i < nops) rc = zv_pg_pipeline_sync(c->pg);
    lua_settop(L, top);
  }
  if (!rc) rc = zv_pg_pipeline_end(c->pg);
  if (rc) {
    /* libpq could not queue (the connection broke): it is unusable, mid-pipeline. */
    snprintf(c->err, sizeof c->err, "%s", zv_pg_errmsg(c->pg));
    c->phase = BROKEN;
    drop_watch(c);
    return send_failed(L, c, ZV_EIO);
  }
  return started(L, c, 2);
}

/* conn:status(i) for the finished pipeline's op i (1-based). */
static int l_status(lua_State *L) {
  pgconn_t *c = check_conn(L);
  int i = (int)luaL_checkinteger(L, 2) - 1;
  int st = c && c->pg ? zv_pg_pipeline_status(c->pg, i) : ZV_PG_ABORTED;
  if (st == ZV_PG_OK) lua_pushliteral(L, "ok");
  else if (st == ZV_PG_FAILED) lua_pushliteral(L, "error");
  else lua_pushliteral(L, "aborted");
  return 1;
}

static int l_round_trips(lua_State *L) {
  lua_pushnumber(L, (lua_Number)round_trips);
  return 1;
}

static int l_result(lua_State *L) {
  pgconn_t *c = check_conn(L);
  PGresult *r = !c || !c->pg ? NULL
    : lua_isnoneornil(L, 2) ? zv_pg_result(c->pg)
    : zv_pg_pipeline_result(c->pg, (int)luaL_checkinteger(L, 2) - 1);
  if (!r) return 0;
  lua_pushlightuserdata(L, r);
  return 1;
}

static void push_field(lua_State *L, const PGresult *r, int field) {
  const char *s = PQresultErrorField(r, field);
  if (s) lua_pushstring(L, s);
  else lua_pushnil(L);
}

/* The failed statement's fields; never the DETAIL (it holds values). */
static int l_error(lua_State *L) {
  pgconn_t *c = check_conn(L);
  PGresult *r = !c || !c->pg ? NULL
    : lua_isnoneornil(L, 2) ? zv_pg_error(c->pg)
    : zv_pg_pipeline_error(c->pg, (int)luaL_checkinteger(L, 2) - 1);
  if (!r) return 0;
  push_field(L, r, PG_DIAG_SQLSTATE);
  push_field(L, r, PG_DIAG_MESSAGE_PRIMARY);
  push_field(L, r, PG_DIAG_CONSTRAINT_NAME);
  push_field(L, r, PG_DIAG_COLUMN_NAME);
  push_field(L, r, PG_DIAG_TABLE_NAME);
  push_field(L, r, PG_DIAG_STATEMENT_POSITION);
  return 6;
}

/* conn:ptr() -> light userdata zv_pg_t * (the FFI's handle on this connection: pg_ffi.h) | nil */
static int l_ptr(lua_State *L) {
  pgconn_t *c = check_conn(L);
  if (!c || !c->pg) return 0;
  lua_pushlightuserdata(L, c->pg);
  return 1;
}

/* conn:cptr() -> light userdata zv_pgconn_t * (zv_pgconn_send: pg_ffi.h), conn:slot() -> the
 * waiter table (slot[1] = token before zv_pgconn_send); both nil once closed. */
static int l_cptr(lua_State *L) {
  pgconn_t *c = check_conn(L);
  if (!c || !c->pg) return 0;
  lua_pushlightuserdata(L, c);
  return 1;
}

static int l_slot(lua_State *L) {
  pgconn_t *c = check_conn(L);
  if (!c || c->slot_ref == LUA_NOREF) return 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->slot_ref);
  return 1;
}

static int l_clear(lua_State *L) {
  pgconn_t *c = check_conn(L);
  if (c && c->pg) zv_pg_clear(c->pg);
  return 0;
}

static int l_check(lua_State *L) {
  pgconn_t *c = check_conn(L);
  if (!c || c->phase != IDLE) {
    lua_pushboolean(L, c && (c->phase == BUSY || c->phase == COPY || c->phase == CONNECTING));
    return 1;
  }
  c->cur = L;
  advance(c); /* reads what came while idle: a server that went away shows up now */
  c->cur = NULL;
  lua_pushboolean(L, c->phase == IDLE);
  return 1;
}

static int l_listen(lua_State *L) {
  pgconn_t *c = check_conn(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (!c) return closed_failure(L);
  luaL_unref(L, LUA_REGISTRYINDEX, c->notify_ref);
  lua_pushvalue(L, 2);
  c->notify_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_info(lua_State *L) {
  pgconn_t *c = check_conn(L);
  if (!c) {
    lua_pushboolean(L, 0);
    lua_pushboolean(L, 0);
    lua_pushinteger(L, 0);
    lua_pushliteral(L, "the connection is closed");
    return 4;
  }
  lua_pushboolean(L, c->phase == IDLE);
  lua_pushboolean(L, c->phase == BUSY || c->phase == COPY || c->phase == CONNECTING);
  lua_pushinteger(L, c->pg ? zv_pg_server_version(c->pg) : 0);
  if (c->err[0]) lua_pushstring(L, c->err);
  else lua_pushnil(L);
  return 4;
}

int luaopen_zever_pg(lua_State *L);
int luaopen_zever_pg(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"send", l_send},   {"copy", l_copy},     {"result", l_result}, {"error", l_error},
    {"clear", l_clear}, {"check", l_check},   {"listen", l_listen}, {"info", l_info},
    {"close", l_close}, {"pipeline", l_pipeline}, {"status", l_status}, {"ptr", l_ptr},
    {"cptr", l_cptr},   {"slot", l_slot},
    {NULL, NULL},
  };
  static const luaL_Reg funcs[] = {{"connect", l_connect}, {"round_trips", l_round_trips},
                                   {NULL, NULL}};
  zv_l_newclass(L, CONN_MT, methods, l_gc, funcs);
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  return 1;
}
