/*
 * l_http.c: the zever.http binding: an HTTP/1.1 server on the state's loop (zever.loop).
 *
 *   http.listen(opts, on_request)  -> server | nil, message (e.g. "address already in use")
 *     opts: host ("127.0.0.1"), port (0 = any free one), reuseport (true), backlog (511),
 *           fd (a listening TCP socket to accept on instead of binding: socket activation),
 *           max_header_bytes (8192), max_body_bytes (1 MiB), header_timeout (10 s),
 *           body_timeout (30 s), keepalive_timeout (75 s), write_timeout (60 s),
 *           handler_timeout (0 = none), max_connections (10000),
 *           tls (a zever.tls context: serve HTTPS, docs/tls.md; or a zever.h2 layer:
 *           HTTP/2 too, docs/http2.md)
 *     on_request(req, method, path, query) runs for each complete request in a coroutine of
 *     its own (pooled), so it may wait by yielding; query is nil when the URL has no '?'. If it
 *     raises, the error and its traceback are logged and the client gets 500
 *     {"error":"internal"} unless it was answered already.
 *     watchdog (false): start the watchdog thread even with handler_timeout 0 (for
 *           requests given a timeout of their own with req:timeout)
 *   http.nofile(want) -> soft, hard   raises the soft RLIMIT_NOFILE towards want (at most the
 *                                      hard limit) and returns the limits in force
 *   server:port() -> integer       server:close()
 *   server:stats() -> {connections, requests, pending_bytes, write_timeouts, evicted, refused,
 *                      handler_timeouts, watchdog_interrupts}
 *   server:drain(seconds[, on_done])   stop accepting, finish in-flight requests, force-close at
 *                                       the deadline, then call on_done()
 *
 *   req:header(name) -> string | nil    (case-insensitive; repeated headers joined with ", ")
 *   req:headers() -> {lower-case name = value}
 *   req:body() -> string                req:version() -> "1.1" | "1.0"
 *   req:remote_addr() -> ip, port | nil
 *   req:respond(status, body, headers) -> true | nil, "closed"
 *   req:write_head(status, headers) / req:write(chunk) / req:finish() -> true | nil, "closed"
 *     headers: nil or a flat array {"Content-Type", "text/plain", "X-A", "b", ...}
 *   req:answered() -> boolean
 *   req:timeout(seconds)        this request's handler timeout (a route's own), instead of the
 *                               server's handler_timeout; 0 turns it off for this request
 *
 * The handler watchdog (handler_timeout > 0): a request whose handler yielded and left it
 * unanswered for handler_timeout is answered 503 {"error":"handler_timeout"}; the request is
 * cancelled (reading it gives nothing, as when the client went away; answering it raises
 * "request cancelled: handler timeout", which zever.server checks first and skips) and its
 * coroutine is abandoned: it runs on when what it waits for resumes it, and its answer goes
 * nowhere. A handler that runs handler_timeout without yielding is interrupted by a count hook
 * that the worker thread sets in a signal handler when its watchdog thread signals it (see
 * WD_SIGNAL): the hook answers 500 at once, cancels the request and raises "handler timeout" in the handler,
 * which unwinds through the application's error path.
 * Compiled loops (traces) do not see hooks; docs/http-server.md says what is caught. Per
 * request the watchdog costs three stores; its thread wakes every handler_timeout / 4 (10 ms
 * to 100 ms) and reads two words.
 *
 *   zv_http_respond_ffi(req, status, body, len, hdrs, nhdrs)   req:respond's common case for
 *     LuaJIT's FFI (zever.server; see its comment below)
 *
 * Reading the request (header, headers, body, version) works until the response is complete;
 * after that they raise "request already answered" (the bytes were reused for the next request).
 * After the client went away they return nil (body: "").
 *
 * Unanswered requests: a request userdata has no finalizer while on_request runs; one still
 * unanswered (and attached) when on_request returns gets a second metatable with __gc, which
 * answers 500 if it is collected unanswered (see on_request). Answered requests cost the
 * collector nothing extra.
 *
 * Ownership: the server's C side (lserver_t) lives until all its handles closed; the Lua server
 * object only points at it. A request object (lreq_t) points at its connection only while the
 * request is unanswered and the connection open; the connection points back (c->data), and
 * whichever side goes first clears the other, so no pointer outlives what it points to.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/runtime.h"
#include "lx_static.h"
#include "lx_stream.h"
#include "server.h"

#define REQ_MT "zever.http.request"
#define GUARD_MT "zever.http.request (guarded)"
#define SRV_MT "zever.http.server"
#define STACK_HDRS ZV__HTTP_STACK_HDRS
#define METHOD_REFS 64

typedef struct sproxy_s sproxy_t;

/* The watchdog of one server: the worker writes seq/busy/limit_ms around each handler run; the
 * watchdog thread reads them and sets the count hook on a handler that runs too long. */
typedef struct {
  pthread_t thread;
  pthread_t worker;     /* the thread that runs the server's loop and handlers */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  lua_State *L;         /* a thread of the state, pinned by L_ref (hooks are per state) */
  int L_ref;
  uint32_t seq;         /* bumped before each handler run (worker: store; watchdog: load) */
  uint32_t busy;        /* a handler runs */
  uint64_t limit_ms;    /* the running request's limit; 0: none */
  uint32_t fire_seq;    /* the run the hook was set for */
  zv_http_sconn_t *conn; /* the connection of the running handler (worker only) */
  uint32_t armed;       /* the hook is set (or about to be) */
  uint64_t period_ms;
  uint64_t interrupts;  /* hooks that raised */
  int started, stop;
} wdog_t;
typedef struct {
  zv_http_server_t srv;
  zv_loop_item_t item;
  zv_loop_t *loop;
  int fn_ref, done_ref, req_mt_ref, guard_mt_ref;
  int method_refs[METHOD_REFS]; /* the method name strings, by parser method, made once */
  int closed;     /* on_closed came: only the memory is left */
  sproxy_t *proxy;
  wdog_t wd;
} lserver_t;

struct sproxy_s {
  lserver_t *s;
};

typedef zv__http_req_t lreq_t; /* lx_stream.h: shared with the streaming methods */

/* --- the request object --------------------------------------------------------------------- */

/* A request has one of two metatables (upvalues 1 and 2 of every method): the plain one, or
 * the guarded one with __gc that on_request gives to a request left unanswered. */
static lreq_t *check_req(lua_State *L) {
  lreq_t *r = lua_touserdata(L, 1);
  if (!r || !lua_getmetatable(L, 1) ||
      (!lua_rawequal(L, -1, lua_upvalueindex(1)) && !lua_rawequal(L, -1, lua_upvalueindex(2))))
    luaL_typerror(L, 1, REQ_MT);
  lua_pop(L, 1);
  return r;
}

zv__http_req_t *zv__http_check_req(lua_State *L) {
  return check_req(L);
}

/* The connection of a request that can still be read; NULL when the client went away. */
static zv_http_sconn_t *readable(lua_State *L, lreq_t *r) {
  if (r->cancelled) return NULL; /* as if the client went away: the error path may still log */
  if (r->answered) luaL_error(L, "request already answered");
  return r->c;
}

static void detach(lreq_t *r) {
  r->answered = 1;
  if (r->c) r->c->data = NULL;
  r->c = NULL;
}

static int push_closed(lua_State *L) {
  lua_pushnil(L);
  lua_pushliteral(L, "closed");
  return 2;
}

static int r_header(lua_State *L) {
  lreq_t *r = check_req(L);
  size_t len;
  const char *name = luaL_checklstring(L, 2, &len);
  zv_http_sconn_t *c = readable(L, r);
  uint32_t from = 0;
  int i, n = 0;
  luaL_Buffer b;
  if (!c) return 0;
  const zv_http_conn_t *core = &c->core;
  while ((i = zv_http_conn_header(core, name, len, &from)) >= 0) {
    const zv_http_header_t *h = &core->headers[i];
    if (n == 0) {
      lua_pushlstring(L, core->buf + h->value_off, h->value_len);
    } else {
      if (n == 1) {
        luaL_buffinit(L, &b);
        luaL_addvalue(&b); /* the first value, on top of the stack */
      }
      luaL_addlstring(&b, ", ", 2);
      luaL_addlstring(&b, core->buf + h->value_off, h->value_len);
    }
    n++;
  }
  if (n == 0) return 0;
  if (n > 1) luaL_pushresult(&b);
  return 1;
}

static int r_headers(lua_State *L) {
  lreq_t *r = check_req(L);
  zv_http_sconn_t *c = readable(L, r);
  char small[64];
  lua_newtable(L);
  if (!c) return 1;
  const zv_http_conn_t *core = &c->core;
  for (uint32_t i = 0; i < core->nheaders; i++) {
    const zv_http_header_t *h = &core->headers[i];
    const char *name = core->buf + h->name_off;
    if (h->name_len <= sizeof small) {
      for (uint32_t k = 0; k < h->name_len; k++)
        small[k] = (char)((name[k] >= 'A' && name[k] <= 'Z') ? name[k] + 32 : name[k]);
      lua_pushlstring(L, small, h->name_len);
    } else {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (uint32_t k = 0; k < h->name_len; k++)
        luaL_addchar(&b, (char)((name[k] >= 'A' && name[k] <= 'Z') ? name[k] + 32 : name[k]));
      luaL_pushresult(&b);
    }
    lua_pushvalue(L, -1);
    lua_rawget(L, -3);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_pushlstring(L, core->buf + h->value_off, h->value_len);
    } else {
      lua_pushliteral(L, ", ");
      lua_pushlstring(L, core->buf + h->value_off, h->value_len);
      lua_concat(L, 3);
    }
    lua_rawset(L, -3);
  }
  return 1;
}

static int r_body(lua_State *L) {
  lreq_t *r = check_req(L);
  zv_http_sconn_t *c = readable(L, r);
  if (!c || c->core.body_len == 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  lua_pushlstring(L, c->core.buf + c->core.body_off, c->core.body_len);
  return 1;
}

static int r_version(lua_State *L) {
  lreq_t *r = check_req(L);
  zv_http_sconn_t *c = readable(L, r);
  if (!c) return 0;
  lua_pushstring(L, c->core.parser.http_minor == 0 ? "1.0" : "1.1");
  return 1;
}

static int r_remote_addr(lua_State *L) {
  lreq_t *r = check_req(L);
  char ip[64];
  int port;
  if (!r->c || zv_http_peer(r->c, ip, sizeof ip, &port)) return 0;
  lua_pushstring(L, ip);
  lua_pushinteger(L, port);
  return 2;
}

static int r_answered(lua_State *L) {
  lreq_t *r = check_req(L);
  lua_pushboolean(L, r->answered);
  return 1;
}

static int r_timeout(lua_State *L) {
  lreq_t *r = check_req(L);
  lua_Number secs = luaL_checknumber(L, 2);
  uint64_t ms;
  lserver_t *ls;
  if (!(secs >= 0) || secs > 1e9) return luaL_argerror(L, 2, "seconds must be >= 0");
  if (!r->c || r->answered) return 0;
  ms = secs > 0 ? (uint64_t)(secs * 1000.0 + 0.5) : 0;
  /* 0 means "the server's" in the core: a request with no limit gets the largest one. */
  r->c->handler_ms = secs > 0 ? (ms ? ms : 1) : UINT64_MAX / 4;
  ls = ZV_CONTAINER_OF(r->c->srv, lserver_t, srv);
  __atomic_store_n(&ls->wd.limit_ms, secs > 0 ? (ms ? ms : 1) : 0, __ATOMIC_RELAXED);
  return 0;
}

/* Reads the flat header array at index idx into hdrs (2 strings per header): lx_stream.h. */
size_t zv__http_get_headers(lua_State *L, int idx, zv_http_str_t **hdrs, zv_http_str_t *stack) {
  size_t n;
  if (lua_isnoneornil(L, idx)) return 0;
  luaL_checktype(L, idx, LUA_TTABLE);
  n = lua_objlen(L, idx);
  if (n % 2) luaL_argerror(L, idx, "headers must be a flat array of name, value pairs");
  if (n > STACK_HDRS * 2) *hdrs = lua_newuserdata(L, n * sizeof **hdrs);
  else *hdrs = stack;
  luaL_checkstack(L, (int)n, "too many headers");
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, idx, (int)i + 1);
    /* lua_tolstring takes strings and numbers (converted in place) and is NULL for the rest. */
    (*hdrs)[i].p = lua_tolstring(L, -1, &(*hdrs)[i].n);
    if (!(*hdrs)[i].p)
      luaL_argerror(L, idx, lua_pushfstring(L, "header item %d is a %s, not a string",
                                            (int)i + 1, luaL_typename(L, -1)));
  }
  return n / 2;
}

/* A final status: 1xx are interim responses (the server sends 100 Continue itself); one sent
 * as an answer would be taken for the answer to the next pipelined request. */
static int check_status(lua_State *L, int idx) {
  lua_Integer status = luaL_checkinteger(L, idx);
  if (status < 200 || status > 999)
    luaL_argerror(L, idx, "a final status must be within 200..999 (1xx are interim responses)");
  return (int)status;
}

static lreq_t *unanswered(lua_State *L) {
  lreq_t *r = check_req(L);
  if (r->cancelled) luaL_error(L, "request cancelled: handler timeout");
  if (r->answered) luaL_error(L, "request already answered");
  return r;
}

static int r_respond(lua_State *L) {
  zv_http_str_t stack[STACK_HDRS * 2], *hdrs;
  lreq_t *r = unanswered(L);
  int status = check_status(L, 2);
  size_t len, n;
  const char *body = luaL_optlstring(L, 3, "", &len);
  int rc;
  if (r->streaming) return luaL_error(L, "respond: the response was started with write_head");
  n = zv__http_get_headers(L, 4, &hdrs, stack);
  if (!r->c) {
    r->answered = 1;
    return push_closed(L);
  }
  rc = zv_http_respond(r->c, status, hdrs, n, body, len);
  if (rc == ZV_EINVAL) return luaL_error(L, "respond: invalid response header (name or value)");
  detach(r);
  if (rc) return push_closed(L);
  lua_pushboolean(L, 1);
  return 1;
}

/* req:respond for LuaJIT's FFI: http_ffi.h says what it does. */
int zv_http_respond_ffi(void *req, int status, const char *body, size_t len,
                        const zv_http_str_t *hdrs, size_t nhdrs) {
  lreq_t *r = req;
  int rc;
  if (!r || r->answered || r->streaming || status < 200 || status > 999) return -1;
  if (!r->c) {
    r->answered = 1;
    return 1;
  }
  rc = zv_http_respond(r->c, status, hdrs, nhdrs, body ? body : "", body ? len : 0);
  if (rc == ZV_EINVAL) return -1;
  detach(r);
  return rc ? 1 : 0;
}

static int r_write_head(lua_State *L) {
  zv_http_str_t stack[STACK_HDRS * 2], *hdrs;
  lreq_t *r = unanswered(L);
  int status = check_status(L, 2);
  size_t n;
  int rc;
  if (r->streaming) return luaL_error(L, "write_head: the head was already written");
  n = zv__http_get_headers(L, 3, &hdrs, stack);
  r->streaming = 1;
  if (!r->c) return push_closed(L);
  rc = zv_http_write_head(r->c, status, hdrs, n);
  if (rc == ZV_EINVAL) {
    r->streaming = 0;
    return luaL_error(L, "write_head: invalid response header (name or value)");
  }
  if (rc) return push_closed(L);
  lua_pushboolean(L, 1);
  return 1;
}

static int r_write(lua_State *L) {
  lreq_t *r = unanswered(L);
  size_t len;
  const char *chunk = luaL_checklstring(L, 2, &len);
  if (!r->streaming) return luaL_error(L, "write: call write_head first");
  if (r->sized) {
    if (len > r->left)
      return luaL_error(L, "write: %d bytes more than the Content-Length of the head",
                        (int)(len - r->left));
    r->left -= len;
  }
  if (!r->c || zv_http_write(r->c, chunk, len)) return push_closed(L);
  lua_pushboolean(L, 1);
  return 1;
}

static int r_finish(lua_State *L) {
  lreq_t *r = unanswered(L);
  int rc;
  if (!r->streaming) return luaL_error(L, "finish: call write_head first");
  if (r->sized && r->left && r->c) {
    /* Fewer bytes than the head promised: the client must not take it for complete. */
    zv_http_sconn_t *c = r->c;
    detach(r);
    zv_http_abort(c);
    return luaL_error(L, "finish: %d bytes short of the Content-Length of the head "
                      "(the connection was closed)", (int)(r->left > 0x7fffffff ? 0x7fffffff
                                                                            : r->left));
  }
  rc = r->c ? zv_http_finish(r->c) : ZV_EIO;
  detach(r);
  if (rc) return push_closed(L);
  lua_pushboolean(L, 1);
  return 1;
}

/* Answers 500 for a request that cannot be answered by the application any more. */
static void answer_internal(zv_http_sconn_t *c) {
  static const zv_http_str_t hdrs[2] = {{"Content-Type", 12}, {"application/json", 16}};
  const char *body = zv_http_error_body(500);
  if (c->resp == ZV_HTTP_RESP_STREAM) zv_http_abort(c);
  else if (c->resp == ZV_HTTP_RESP_NONE) zv_http_respond(c, 500, hdrs, 1, body, strlen(body));
}

static int r_gc(lua_State *L) {
  lreq_t *r = lua_touserdata(L, 1);
  zv_http_sconn_t *c = r->c;
  if (!c) return 0;
  detach(r);
  fprintf(stderr, "zever: http: a request was collected without a complete response\n");
  answer_internal(c);
  return 0;
}

static int r_tostring(lua_State *L) {
  lreq_t *r = check_req(L);
  lua_pushfstring(L, "zever.http.request (%s)",
                  r->answered ? "answered" : r->c ? "open" : "closed");
  return 1;
}

/* --- the watchdog --------------------------------------------------------------------------- */

/* The watchdog of the server whose handler runs on this thread (set per request; a worker
 * thread runs one Lua state, so the hook finds it here). */
static __thread wdog_t *running_wd;

/* The count hook, on the worker thread: raises in the handler the watchdog caught, or removes
 * itself when that handler is over (the watchdog raced with its end). */
static void answer_internal(zv_http_sconn_t *c);

static void wd_hook(lua_State *L, lua_Debug *ar) {
  wdog_t *wd = running_wd;
  zv_http_sconn_t *c;
  double secs;
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  if (!wd) return;
  __atomic_store_n(&wd->armed, 0, __ATOMIC_RELAXED);
  if (!__atomic_load_n(&wd->busy, __ATOMIC_RELAXED) ||
      __atomic_load_n(&wd->seq, __ATOMIC_RELAXED) != wd->fire_seq)
    return;
  wd->interrupts++;
  secs = (double)__atomic_load_n(&wd->limit_ms, __ATOMIC_RELAXED) / 1000.0;
  c = wd->conn;
  /* The answer goes out now: the error below unwinds through the application's error path,
   * which may take its time (or be interrupted again). The request is cancelled. */
  if (c && c->data) {
    lreq_t *r = c->data;
    fprintf(stderr, "zever: http: handler timeout (%.3f s): %s %.*s ran without yielding: "
            "interrupted, answered 500\n", secs, zv_http_conn_method(&c->core),
            (int)c->core.path_len, c->core.buf + c->core.url_off);
    fflush(stderr);
    r->cancelled = 1;
    detach(r);
    answer_internal(c);
  }
  luaL_error(L, "handler timeout: the handler ran %f s without yielding (http.handler_timeout)",
             secs);
}

/* The watchdog never calls lua_sethook itself: it would rewrite LuaJIT's dispatch table from
 * another thread while the worker's VM runs (or records a trace). It sends WD_SIGNAL to the
 * worker thread instead, whose handler sets the hook there, as luajit.c and lua.c do for SIGINT:
 * lua_sethook is the call Lua allows from a signal handler of the thread running the VM. The
 * handler checks that this thread's running watchdog still asked for it (armed). */
#define WD_SIGNAL (SIGRTMIN + 2)

static void wd_signal(int sig) {
  wdog_t *wd = running_wd;
  (void)sig;
  if (wd && __atomic_load_n(&wd->armed, __ATOMIC_RELAXED) &&
      __atomic_load_n(&wd->busy, __ATOMIC_RELAXED))
    lua_sethook(wd->L, wd_hook, LUA_MASKCOUNT, 1000);
}

/* Installs the handler once per process (every server's watchdog signals its own worker). */
static pthread_once_t wd_signal_once = PTHREAD_ONCE_INIT;
static void wd_signal_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = wd_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(WD_SIGNAL, &sa, NULL);
}

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *wd_main(void *arg) {
  wdog_t *wd = arg;
  uint32_t last_seq = 0;
  uint64_t since = 0;
  int stuck_logged = 0;
  pthread_mutex_lock(&wd->mu);
  while (!wd->stop) {
    struct timespec ts;
    uint64_t now, limit;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += (long)(wd->period_ms % 1000) * 1000000L;
    ts.tv_sec += (time_t)(wd->period_ms / 1000) + ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&wd->cv, &wd->mu, &ts);
    if (wd->stop) break;
    now = mono_ms();
    if (!__atomic_load_n(&wd->busy, __ATOMIC_RELAXED)) {
      last_seq = 0;
      continue;
    }
    if (__atomic_load_n(&wd->seq, __ATOMIC_RELAXED) != last_seq || !last_seq) {
      /* A handler seen running for the first time: it started at most a period ago. */
      last_seq = __atomic_load_n(&wd->seq, __ATOMIC_RELAXED);
      since = now - wd->period_ms;
      continue;
    }
    limit = __atomic_load_n(&wd->limit_ms, __ATOMIC_RELAXED);
    if (!limit || now - since < limit) continue;
    if (!__atomic_load_n(&wd->armed, __ATOMIC_RELAXED)) {
      /* Set the hook; the same handler is interrupted again only after another limit (it
       * may have caught the error and gone on). */
      wd->fire_seq = last_seq;
      since = now;
      stuck_logged = 0;
      __atomic_store_n(&wd->armed, 1, __ATOMIC_RELAXED);
      pthread_kill(wd->worker, WD_SIGNAL);
    } else if (!stuck_logged) {
      /* A whole limit with the hook set and not run: the handler loops inside a compiled
       * trace, which never checks hooks. Nothing can stop it from here; say so once. */
      stuck_logged = 1;
      fprintf(stderr, "zever: http: a handler runs %.3f s past its handler timeout and the "
              "watchdog's hook has not run: it loops in JIT-compiled code, where hooks run only "
              "when it leaves the trace; its worker is blocked until then (see "
              "docs/http-server.md)\n", (double)limit / 1000.0);
      fflush(stderr);
    }
  }
  pthread_mutex_unlock(&wd->mu);
  return NULL;
}

/* Starts the watchdog thread of ls (limit_ms > 0). Returns 0 or -1. */
static int wd_start(lserver_t *ls, lua_State *L, uint64_t limit_ms) {
  wdog_t *wd = &ls->wd;
  lua_pushthread(L);
  wd->L_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  wd->L = L;
  wd->worker = pthread_self();
  wd->limit_ms = limit_ms;
  pthread_once(&wd_signal_once, wd_signal_install);
  wd->period_ms = limit_ms / 4 < 10 ? 10 : limit_ms / 4 > 100 ? 100 : limit_ms / 4;
  pthread_mutex_init(&wd->mu, NULL);
  {
    /* wd_main's deadlines are CLOCK_MONOTONIC: the condition variable must wait on that clock
     * (its default, CLOCK_REALTIME, made every wait time out at once: the thread spun). */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd->cv, &ca);
    pthread_condattr_destroy(&ca);
  }
  if (pthread_create(&wd->thread, NULL, wd_main, wd)) {
    pthread_cond_destroy(&wd->cv);
    pthread_mutex_destroy(&wd->mu);
    luaL_unref(L, LUA_REGISTRYINDEX, wd->L_ref);
    wd->L_ref = LUA_NOREF;
    return -1;
  }
  wd->started = 1;
  return 0;
}

static void wd_stop(lserver_t *ls) {
  wdog_t *wd = &ls->wd;
  if (!wd->started) return;
  pthread_mutex_lock(&wd->mu);
  wd->stop = 1;
  pthread_cond_signal(&wd->cv);
  pthread_mutex_unlock(&wd->mu);
  pthread_join(wd->thread, NULL);
  pthread_cond_destroy(&wd->cv);
  pthread_mutex_destroy(&wd->mu);
  wd->started = 0;
  if (__atomic_load_n(&wd->armed, __ATOMIC_RELAXED)) lua_sethook(wd->L, NULL, 0, 0);
  if (running_wd == wd) running_wd = NULL;
}

/* Drops the watchdog's pin on its thread (when the state is still there to drop it from). */
static void wd_unref(lserver_t *ls, lua_State *L) {
  if (ls->wd.L_ref != LUA_NOREF && L) luaL_unref(L, LUA_REGISTRYINDEX, ls->wd.L_ref);
  ls->wd.L_ref = LUA_NOREF;
}

/* --- server callbacks ----------------------------------------------------------------------- */

/* Pushes the method name; each distinct one is interned once and then kept by a reference. */
static void push_method(lua_State *L, lserver_t *ls, const zv_http_conn_t *core) {
  unsigned m = core->parser.method;
  if (m >= METHOD_REFS) {
    lua_pushstring(L, zv_http_conn_method(core));
    return;
  }
  if (ls->method_refs[m] == LUA_NOREF) {
    lua_pushstring(L, zv_http_conn_method(core));
    ls->method_refs[m] = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, ls->method_refs[m]);
}

/*
 * Runs on_request(req, method, path, query) in a coroutine, resumed straight from here: a
 * handler may wait (zever.sleep, I/O) by yielding, and then whatever it waits on resumes it.
 * Coroutines come from the state's one pool (zv_co_take, runtime.h), shared with zever.sched:
 * one whose handler returned without waiting goes back to the pool and serves the next request
 * (or job), so a request costs no coroutine allocation and no trip through Lua to start one. A
 * coroutine that waits leaves the pool (its reference is dropped: the waker holds it from then
 * on) and rejoins it when zever.sched's waker finishes it; one that fails is dropped.
 *
 * The request userdata gets no finalizer while on_request runs: a request answered before the
 * handler returns (the usual case) is plain garbage afterwards, which costs the collector
 * nothing. Only a request still unanswered and attached when the handler returns (it waits in
 * a coroutine, or was dropped) gets the guarded metatable, whose __gc answers 500 if it is
 * collected unanswered. LuaJIT looks for __gc when it finds the object dead, so setting the
 * metatable late is enough.
 */
static void on_request(zv_http_server_t *srv, zv_http_sconn_t *c) {
  lserver_t *ls = ZV_CONTAINER_OF(srv, lserver_t, srv);
  lua_State *L = ls->loop->L, *co;
  const zv_http_conn_t *core = &c->core;
  lreq_t *r;
  int rc, ref;
  if (!L) {
    answer_internal(c);
    return;
  }
  co = zv_co_take(ls->loop, L, &ref);
  r = lua_newuserdata(L, sizeof *r);
  r->c = c;
  r->answered = r->streaming = r->cancelled = r->sized = 0;
  r->left = 0;
  r->watch_ref = LUA_NOREF;
  c->data = r;
  lua_rawgeti(L, LUA_REGISTRYINDEX, ls->req_mt_ref);
  lua_setmetatable(L, -2);
  /* r stays on L's stack until the handler is back, so it is alive below. */
  lua_rawgeti(co, LUA_REGISTRYINDEX, ls->fn_ref);
  lua_pushvalue(L, -1);
  lua_xmove(L, co, 1);
  push_method(co, ls, core);
  lua_pushlstring(co, core->buf + core->url_off, core->path_len);
  if (core->query_off >= 0) lua_pushlstring(co, core->buf + core->query_off, core->query_len);
  else lua_pushnil(co);
  if (ls->wd.started) {
    running_wd = &ls->wd;
    ls->wd.conn = c;
    __atomic_store_n(&ls->wd.limit_ms, srv->opts.handler_timeout_ms, __ATOMIC_RELAXED);
    __atomic_store_n(&ls->wd.seq, ls->wd.seq + 1 ? ls->wd.seq + 1 : 1, __ATOMIC_RELAXED);
    __atomic_store_n(&ls->wd.busy, 1, __ATOMIC_RELAXED);
    rc = lua_resume(co, 4);
    __atomic_store_n(&ls->wd.busy, 0, __ATOMIC_RELAXED);
    ls->wd.conn = NULL;
    if (__atomic_load_n(&ls->wd.armed, __ATOMIC_RELAXED)) {
      __atomic_store_n(&ls->wd.armed, 0, __ATOMIC_RELAXED);
      lua_sethook(L, NULL, 0, 0);
    }
  } else {
    rc = lua_resume(co, 4);
  }
  zv_co_done(ls->loop, L, co, ref, rc, "http request handler");
  /* c->data == r means unanswered and the client is there. */
  if (c->data == r && !c->closing) {
    if (rc != 0 && rc != LUA_YIELD) {
      detach(r);
      answer_internal(c);
    } else {
      lua_rawgeti(L, LUA_REGISTRYINDEX, ls->guard_mt_ref);
      lua_setmetatable(L, -2);
    }
  }
  lua_pop(L, 1);
}

/* A handler yielded and left its request unanswered for its handler timeout: 503, and the
 * request is cancelled (see the file comment). */
static void on_handler_timeout(zv_http_server_t *srv, zv_http_sconn_t *c) {
  static const zv_http_str_t hdrs[4] = {{"Content-Type", 12}, {"application/json", 16},
                                        {"Retry-After", 11}, {"1", 1}};
  static const char body[] = "{\"error\":\"handler_timeout\"}";
  lreq_t *r = c->data;
  uint64_t ms = c->handler_ms ? c->handler_ms : srv->opts.handler_timeout_ms;
  fprintf(stderr, "zever: http: handler timeout (%.3f s): %s %.*s answered 503, its coroutine "
          "abandoned\n", (double)ms / 1000.0, zv_http_conn_method(&c->core),
          (int)c->core.path_len, c->core.buf + c->core.url_off);
  fflush(stderr);
  if (r) {
    r->cancelled = 1;
    detach(r);
  }
  c->must_close = 1;
  zv_http_respond(c, 503, hdrs, 2, body, sizeof body - 1);
}

static void on_conn_close(zv_http_server_t *srv, zv_http_sconn_t *c) {
  lserver_t *ls = ZV_CONTAINER_OF(srv, lserver_t, srv);
  lreq_t *r = c->data;
  c->data = NULL;
  if (!r) return;
  r->c = NULL;
  /* A streaming handler that waits (back-pressure, a heartbeat's sleep) learns it now. */
  if (r->watch_ref != LUA_NOREF) {
    if (ls->loop->L && !ls->loop->closing) zv__http_watch_fire(ls->loop->L, r, 0);
    else r->watch_ref = LUA_NOREF;
  }
}

/* An upgraded connection read more bytes: its waiting reader goes on. */
static void on_upgraded_data(zv_http_server_t *srv, zv_http_sconn_t *c) {
  lserver_t *ls = ZV_CONTAINER_OF(srv, lserver_t, srv);
  lreq_t *r = c->data;
  if (r && ls->loop->L && !ls->loop->closing) zv__http_watch_fire(ls->loop->L, r, 1);
}

/* A streamed response's queue drained to its low mark: its waiting writer goes on. */
static void on_writable(zv_http_server_t *srv, zv_http_sconn_t *c) {
  lserver_t *ls = ZV_CONTAINER_OF(srv, lserver_t, srv);
  lreq_t *r = c->data;
  if (r && ls->loop->L && !ls->loop->closing) zv__http_watch_fire(ls->loop->L, r, 1);
}

static void on_drained(zv_http_server_t *srv) {
  lserver_t *ls = ZV_CONTAINER_OF(srv, lserver_t, srv);
  lua_State *L = ls->loop->L;
  if (!L || ls->done_ref == LUA_NOREF) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, ls->done_ref);
  luaL_unref(L, LUA_REGISTRYINDEX, ls->done_ref);
  ls->done_ref = LUA_NOREF;
  zv_loop_pcall(L, 0, 0, "http drain callback");
}

static void on_closed(zv_http_server_t *srv) {
  lserver_t *ls = ZV_CONTAINER_OF(srv, lserver_t, srv);
  lua_State *L = ls->loop->L;
  zv_loop_remove(&ls->item);
  if (L && !ls->loop->closing) {
    luaL_unref(L, LUA_REGISTRYINDEX, ls->fn_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, ls->done_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, ls->req_mt_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, ls->guard_mt_ref);
    for (int i = 0; i < METHOD_REFS; i++) luaL_unref(L, LUA_REGISTRYINDEX, ls->method_refs[i]);
  }
  for (int i = 0; i < METHOD_REFS; i++) ls->method_refs[i] = LUA_NOREF;
  ls->fn_ref = ls->done_ref = ls->req_mt_ref = ls->guard_mt_ref = LUA_NOREF;
  ls->closed = 1;
  zv__http_statics_free(ls->srv.opts.statics);
  ls->srv.opts.statics = NULL;
  wd_stop(ls);
  if (L && !ls->loop->closing) wd_unref(ls, L);
  ls->wd.L_ref = LUA_NOREF;
  if (!ls->proxy) zv_free(ls);
}

static void server_teardown(zv_loop_item_t *item) {
  lserver_t *ls = ZV_CONTAINER_OF(item, lserver_t, item);
  zv_http_server_teardown(&ls->srv);
}

/* --- the server object --------------------------------------------------------------------- */

static lserver_t *check_srv(lua_State *L) {
  sproxy_t *p = luaL_checkudata(L, 1, SRV_MT);
  return p->s;
}

static int s_port(lua_State *L) {
  lserver_t *ls = check_srv(L);
  lua_pushinteger(L, ls->srv.port);
  return 1;
}

static int s_close(lua_State *L) {
  lserver_t *ls = check_srv(L);
  if (!ls->closed) zv_http_server_close(&ls->srv);
  return 0;
}

static int s_drain(lua_State *L) {
  lserver_t *ls = check_srv(L);
  lua_Number s = luaL_checknumber(L, 2);
  if (!(s >= 0) || s > 1e9) return luaL_argerror(L, 2, "seconds must be >= 0");
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TFUNCTION);
  if (ls->srv.draining) return luaL_error(L, "drain: the server is already draining");
  if (ls->closed || ls->srv.finishing) return luaL_error(L, "drain: the server is closed");
  if (!lua_isnoneornil(L, 3)) {
    lua_pushvalue(L, 3);
    ls->done_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  zv_http_server_drain(&ls->srv, (uint64_t)(s * 1000.0));
  return 0;
}

static int s_stats(lua_State *L) {
  lserver_t *ls = check_srv(L);
  lua_createtable(L, 0, 8);
  lua_pushinteger(L, (lua_Integer)ls->srv.nconns);
  lua_setfield(L, -2, "connections");
  lua_pushnumber(L, (lua_Number)ls->srv.requests);
  lua_setfield(L, -2, "requests");
  lua_pushnumber(L, (lua_Number)ls->srv.pending);
  lua_setfield(L, -2, "pending_bytes");
  lua_pushnumber(L, (lua_Number)ls->srv.write_timeouts);
  lua_setfield(L, -2, "write_timeouts");
  lua_pushnumber(L, (lua_Number)ls->srv.evicted);
  lua_setfield(L, -2, "evicted");
  lua_pushnumber(L, (lua_Number)ls->srv.refused);
  lua_setfield(L, -2, "refused");
  lua_pushnumber(L, (lua_Number)ls->srv.handler_timeouts);
  lua_setfield(L, -2, "handler_timeouts");
  lua_pushnumber(L, (lua_Number)ls->wd.interrupts);
  lua_setfield(L, -2, "watchdog_interrupts");
  return 1;
}

static int s_gc(lua_State *L) {
  sproxy_t *p = lua_touserdata(L, 1);
  lserver_t *ls = p->s;
  if (!ls) return 0;
  p->s = NULL;
  /* A server that still runs keeps running: it is pinned by its handles, not by this object. */
  if (ls->closed) zv_free(ls);
  else ls->proxy = NULL;
  return 0;
}

/* --- http.listen ---------------------------------------------------------------------------- */

static uint64_t opt_ms(lua_State *L, const char *name) {
  lua_Number s = lua_tonumber(L, -1);
  if (lua_type(L, -1) != LUA_TNUMBER || !(s > 0) || s > 1e9)
    luaL_error(L, "http.listen: %s must be a number of seconds > 0", name);
  return (uint64_t)(s * 1000.0 + 0.5) ? (uint64_t)(s * 1000.0 + 0.5) : 1;
}

static lua_Integer opt_int(lua_State *L, const char *name, lua_Integer lo, lua_Integer hi) {
  lua_Number v = lua_tonumber(L, -1);
  if (lua_type(L, -1) != LUA_TNUMBER || v != (lua_Number)(lua_Integer)v || v < lo || v > hi)
    luaL_error(L, "http.listen: %s must be an integer within %d..%d", name, (int)lo, (int)hi);
  return (lua_Integer)v;
}

static void read_opts(lua_State *L, zv_http_server_opts_t *o, int *watchdog) {
  zv_http_server_defaults(o);
  if (lua_isnoneornil(L, 1)) return;
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (!strcmp(k, "host")) {
      if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "http.listen: host must be a string");
      o->host = lua_tostring(L, -1); /* the opts table keeps it alive during listen */
    } else if (!strcmp(k, "port")) {
      o->port = (int)opt_int(L, k, 0, 65535);
    } else if (!strcmp(k, "reuseport")) {
      o->reuseport = lua_toboolean(L, -1);
    } else if (!strcmp(k, "fd")) {
      o->fd = (int)opt_int(L, k, 0, 1 << 20); /* an inherited listener (LISTEN_FDS) */
    } else if (!strcmp(k, "backlog")) {
      o->backlog = (int)opt_int(L, k, 1, 65535);
    } else if (!strcmp(k, "max_header_bytes")) {
      o->limits.max_header_bytes = (uint32_t)opt_int(L, k, 64, ZV_HTTP_MAX_HEADER_LIMIT);
    } else if (!strcmp(k, "max_body_bytes")) {
      o->limits.max_body_bytes = (uint32_t)opt_int(L, k, 0, ZV_HTTP_MAX_BODY_LIMIT);
    } else if (!strcmp(k, "header_timeout")) {
      o->header_timeout_ms = opt_ms(L, k);
    } else if (!strcmp(k, "body_timeout")) {
      o->body_timeout_ms = opt_ms(L, k);
    } else if (!strcmp(k, "keepalive_timeout")) {
      o->keepalive_timeout_ms = opt_ms(L, k);
    } else if (!strcmp(k, "write_timeout")) {
      o->write_timeout_ms = opt_ms(L, k);
    } else if (!strcmp(k, "handler_timeout")) {
      lua_Number secs = lua_tonumber(L, -1);
      if (lua_type(L, -1) != LUA_TNUMBER || !(secs >= 0) || secs > 1e9)
        luaL_error(L, "http.listen: handler_timeout must be a number of seconds >= 0");
      o->handler_timeout_ms = secs > 0 ? opt_ms(L, k) : 0;
    } else if (!strcmp(k, "watchdog")) {
      *watchdog = lua_toboolean(L, -1);
    } else if (!strcmp(k, "max_connections")) {
      o->max_connections = (uint32_t)opt_int(L, k, 1, 1000000);
    } else if (!strcmp(k, "tls")) {
      /* A transport's context (zever.tls.context): its first fields are the hook (xport.h);
       * the server retains the context while it runs. */
      zv_http_xport_ud_t *ud = luaL_testudata(L, -1, ZV_HTTP_XPORT_MT);
      if (!ud) ud = luaL_testudata(L, -1, ZV_HTTP_XPORT_MT_H2);
      if (!ud || !ud->xport) luaL_error(L, "http.listen: tls must be a zever.tls context");
      o->xport = ud->xport;
      o->xport_ctx = ud->ctx;
    } else if (!strcmp(k, "static")) {
      /* lx_static.c reads it in l_listen, once nothing else can raise */
    } else {
      luaL_error(L, "http.listen: unknown option '%s'", lua_type(L, -2) == LUA_TSTRING
                                                           ? lua_tostring(L, -2) : "?");
    }
    lua_pop(L, 1);
  }
}

static int l_listen(lua_State *L) {
  zv_http_server_opts_t o;
  zv_http_server_cb_t cb = {on_request, on_conn_close, on_drained, on_closed,
                            on_handler_timeout, on_writable, on_upgraded_data};
  zv_loop_t *loop;
  lserver_t *ls;
  sproxy_t *p;
  int rc, watchdog = 0;
  read_opts(L, &o, &watchdog);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  loop = zv_loop_of(L);
  /* The proxy first: after zv_alloc nothing may raise until ls is linked or freed. */
  p = lua_newuserdata(L, sizeof *p);
  p->s = NULL;
  luaL_getmetatable(L, SRV_MT);
  lua_setmetatable(L, -2);
  o.statics = zv__http_statics_new(L, 1);
  ls = zv_alloc(sizeof *ls);
  if (!ls) {
    zv__http_statics_free(o.statics);
    return luaL_error(L, "http.listen: out of memory");
  }
  memset(&ls->wd, 0, sizeof ls->wd);
  ls->wd.L_ref = LUA_NOREF;
  ls->loop = loop;
  ls->fn_ref = ls->done_ref = ls->req_mt_ref = ls->guard_mt_ref = LUA_NOREF;
  for (int i = 0; i < METHOD_REFS; i++) ls->method_refs[i] = LUA_NOREF;
  ls->closed = 0;
  ls->proxy = NULL;
  ls->item.prev = ls->item.next = NULL;
  ls->item.teardown = server_teardown;
  rc = zv_http_server_start(&ls->srv, &loop->uv, &o, &cb, ls);
  if (rc == ZV_EINVAL) {
    zv__http_statics_free(o.statics);
    zv_free(ls);
    return luaL_error(L, "http.listen: host must be a numeric IP address or localhost");
  }
  if (rc) {
    /* on_closed frees ls once libuv let go of the handles. */
    zv_loop_add(loop, &ls->item);
    lua_pushnil(L);
    lua_pushfstring(L, "listen on %s:%d: %s", o.host, o.port, uv_strerror(ls->srv.uverr));
    return 2;
  }
  zv_loop_add(loop, &ls->item);
  lua_pushvalue(L, 2);
  ls->fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  luaL_getmetatable(L, REQ_MT);
  ls->req_mt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  luaL_getmetatable(L, GUARD_MT);
  ls->guard_mt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  p->s = ls;
  ls->proxy = p;
  if ((o.handler_timeout_ms || watchdog) &&
      wd_start(ls, L, o.handler_timeout_ms ? o.handler_timeout_ms : 400))
    fprintf(stderr, "zever: http: the handler watchdog thread did not start: CPU-bound handlers "
            "will not be interrupted\n");
  return 1;
}

/* http.nofile(want) -> soft, hard: raises the soft RLIMIT_NOFILE towards want (up to the hard
 * limit) and returns the limits in force (math.huge for unlimited). */
static int l_nofile(lua_State *L) {
  lua_Number want = luaL_checknumber(L, 1);
  uint64_t soft, hard;
  if (!(want >= 0)) return luaL_argerror(L, 1, "want a count >= 0");
  if (zv_http_nofile(want > 1e15 ? (uint64_t)1e15 : (uint64_t)want, &soft, &hard)) return 0;
  lua_pushnumber(L, soft == UINT64_MAX ? HUGE_VAL : (lua_Number)soft);
  lua_pushnumber(L, hard == UINT64_MAX ? HUGE_VAL : (lua_Number)hard);
  return 2;
}

int luaopen_zever_http(lua_State *L);
int luaopen_zever_http(lua_State *L) {
  static const luaL_Reg req_methods[] = {
    {"header", r_header},         {"headers", r_headers},     {"body", r_body},
    {"version", r_version},       {"remote_addr", r_remote_addr},
    {"respond", r_respond},       {"write_head", r_write_head}, {"write", r_write},
    {"finish", r_finish},         {"answered", r_answered},   {"timeout", r_timeout},
    {NULL, NULL},
  };
  static const luaL_Reg srv_methods[] = {
    {"port", s_port}, {"close", s_close}, {"drain", s_drain}, {"stats", s_stats}, {NULL, NULL},
  };
  zv_loop_of(L);
  /* Two metatables share one method table; each method has both as upvalues. */
  luaL_newmetatable(L, REQ_MT);
  luaL_newmetatable(L, GUARD_MT);
  lua_newtable(L);
  for (const luaL_Reg *m = req_methods; m->name; m++) {
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, m->func, 2);
    lua_setfield(L, -2, m->name);
  }
  for (const luaL_Reg *m = zv__http_stream_methods; m->name; m++) {
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, m->func, 2);
    lua_setfield(L, -2, m->name);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, -4, "__index");
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, r_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -2);
  lua_pushcclosure(L, r_tostring, 2);
  lua_pushvalue(L, -1);
  lua_setfield(L, -4, "__tostring");
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 2);
  zv__http_ws_open(L);
  luaL_newmetatable(L, SRV_MT);
  lua_newtable(L);
  luaL_register(L, NULL, srv_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, s_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, l_listen);
  lua_setfield(L, -2, "listen");
  lua_pushcfunction(L, l_nofile);
  lua_setfield(L, -2, "nofile");
  return 1;
}
