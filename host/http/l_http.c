/*
 * l_http.c: the zever.http binding: an HTTP/1.1 server on the state's loop (zever.loop).
 *
 *   http.listen(opts, on_request)  -> server | nil, message (e.g. "address already in use")
 *     opts: host ("127.0.0.1"), port (0 = any free one), reuseport (true), backlog (511),
 *           fd (a listening TCP socket to accept on instead of binding: socket activation),
 *           max_header_bytes (8192), max_body_bytes (1 MiB), max_stream_bytes (0: off; the
 *           largest streamed request body, docs/streaming.md), header_timeout (10 s),
 *           body_timeout (30 s), keepalive_timeout (75 s), write_timeout (60 s),
 *           handler_timeout (0 = none), max_connections (10000),
 *           tls (a zever.tls context: serve HTTPS, docs/tls.md; or a zever.h2 layer:
 *           HTTP/2 too, docs/http2.md)
 *     on_request(req, method, path, query[, streamed]) runs for each complete request (or, with
 *     streamed true, for a request whose body still comes: lx_body.c) in a coroutine of
 *     its own (pooled), so it may wait by yielding; query is nil when the URL has no '?'. If it
 *     raises, the error and its traceback are logged and the client gets 500
 *     {"error":"internal"} unless it was answered already.
 *     watchdog (false): start the watchdog thread even with handler_timeout 0 (for
 *           requests given a timeout of their own with req:timeout)
 *   http.nofile(want) -> soft, hard   raises the soft RLIMIT_NOFILE towards want (at most the
 *                                      hard limit) and returns the limits in force
 *   server:port() -> integer
 *   server:close([grace])   stop accepting; a request being read or answered is answered with
 *                           Connection: close, then its connection closes; an idle keep-alive
 *                           connection closes after grace seconds (1) or after its next request
 *   server:stats() -> {connections, streams, requests, pending_bytes, stream_pending_bytes,
 *                      write_timeouts, evicted, refused, handler_timeouts, watchdog_interrupts}
 *     connections counts sockets (what max_connections caps); streams the HTTP/2 streams
 *     running (each a virtual connection); stream_pending_bytes the response bytes HTTP/2
 *     holds for its streams until the client's flow-control window takes them
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
 * The parts: this file (listen, the server object, the server's callbacks: on_request runs the
 * handler), lx_request.c (the request object: accessors and the response writer), lx_watchdog.c
 * (the handler watchdog's thread and hook), lx_stream.c (streamed responses, upgrades) and
 * lx_static.c (static mounts); they share lx_http.h and lx_stream.h.
 *
 * Ownership: the server's C side (lserver_t) lives until all its handles closed; the Lua server
 * object only points at it. A request object (lreq_t) points at its connection only while the
 * request is unanswered and the connection open; the connection points back (c->data), and
 * whichever side goes first clears the other, so no pointer outlives what it points to.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/runtime.h"
#include "lx_http.h"
#include "lx_static.h"
#include "lx_stream.h"
#include "server.h"

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
  int rc, ref, nargs = 4;
  if (!L) {
    zv__http_answer_internal(c);
    return;
  }
  co = zv_co_take(ls->loop, L, &ref);
  r = lua_newuserdata(L, sizeof *r);
  r->c = c;
  r->answered = r->streaming = r->cancelled = r->sized = 0;
  r->left = r->body_pos = 0;
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
  if (c->body_streaming) {
    /* The body still comes (lx_body.c): the application reads it or buffers it first. */
    lua_pushboolean(co, 1);
    nargs = 5;
  }
  if (ls->wd.started) {
    zv__http_running_wd = &ls->wd;
    ls->wd.conn = c;
    __atomic_store_n(&ls->wd.limit_ms, srv->opts.handler_timeout_ms, __ATOMIC_RELAXED);
    __atomic_store_n(&ls->wd.seq, ls->wd.seq + 1 ? ls->wd.seq + 1 : 1, __ATOMIC_RELAXED);
    __atomic_store_n(&ls->wd.busy, 1, __ATOMIC_RELAXED);
    rc = lua_resume(co, nargs);
    __atomic_store_n(&ls->wd.busy, 0, __ATOMIC_RELAXED);
    ls->wd.conn = NULL;
    if (__atomic_load_n(&ls->wd.armed, __ATOMIC_RELAXED)) {
      __atomic_store_n(&ls->wd.armed, 0, __ATOMIC_RELAXED);
      lua_sethook(L, NULL, 0, 0);
    }
  } else {
    rc = lua_resume(co, nargs);
  }
  zv_co_done(ls->loop, L, co, ref, rc, "http request handler");
  /* c->data == r means unanswered and the client is there. */
  if (c->data == r && !c->closing) {
    if (rc != 0 && rc != LUA_YIELD) {
      zv__http_detach(r);
      zv__http_answer_internal(c);
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
    zv__http_detach(r);
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

/* A streamed request body's reader waited and something came: it goes on. */
static void on_body(zv_http_server_t *srv, zv_http_sconn_t *c) {
  lserver_t *ls = ZV_CONTAINER_OF(srv, lserver_t, srv);
  lreq_t *r = c->data;
  if (r && r->watch_ref != LUA_NOREF && ls->loop->L && !ls->loop->closing)
    zv__http_watch_fire(ls->loop->L, r, 1);
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
  zv__http_wd_stop(&ls->wd);
  if (L && !ls->loop->closing) zv__http_wd_unref(&ls->wd, L);
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

/* server:close([grace]): idle connections close after grace seconds (default CLOSE_GRACE). */
#define CLOSE_GRACE 1.0

static int s_close(lua_State *L) {
  lserver_t *ls = check_srv(L);
  lua_Number grace = luaL_optnumber(L, 2, CLOSE_GRACE);
  if (!(grace >= 0) || grace > 1e9) return luaL_argerror(L, 2, "grace must be seconds >= 0");
  if (!ls->closed) zv_http_server_close(&ls->srv, (uint64_t)(grace * 1000.0 + 0.5));
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
  lua_createtable(L, 0, 10);
  /* Sockets; the streams (HTTP/2) run as virtual connections, counted apart. */
  lua_pushinteger(L, (lua_Integer)(ls->srv.nconns - ls->srv.nstreams));
  lua_setfield(L, -2, "connections");
  lua_pushinteger(L, (lua_Integer)ls->srv.nstreams);
  lua_setfield(L, -2, "streams");
  lua_pushnumber(L, (lua_Number)ls->srv.stream_pending);
  lua_setfield(L, -2, "stream_pending_bytes");
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
    } else if (!strcmp(k, "max_stream_bytes")) {
      lua_Number v = lua_tonumber(L, -1);
      if (lua_type(L, -1) != LUA_TNUMBER || !(v >= 0) || v > (lua_Number)ZV_HTTP_MAX_STREAM_LIMIT ||
          v != (lua_Number)(uint64_t)v)
        luaL_error(L, "http.listen: max_stream_bytes must be an integer within 0..2^50");
      o->limits.max_stream_bytes = (uint64_t)v;
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
                            on_handler_timeout, on_writable, on_upgraded_data, on_body};
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
      zv__http_wd_start(&ls->wd, L, o.handler_timeout_ms ? o.handler_timeout_ms : 400))
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
  static const luaL_Reg srv_methods[] = {
    {"port", s_port}, {"close", s_close}, {"drain", s_drain}, {"stats", s_stats}, {NULL, NULL},
  };
  zv_loop_of(L);
  /* Two metatables share one method table; each method has both as upvalues. */
  luaL_newmetatable(L, REQ_MT);
  luaL_newmetatable(L, GUARD_MT);
  lua_newtable(L);
  for (const luaL_Reg *m = zv__http_req_methods; m->name; m++) {
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
  for (const luaL_Reg *m = zv__http_body_methods; m->name; m++) {
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, m->func, 2);
    lua_setfield(L, -2, m->name);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, -4, "__index");
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, zv__http_req_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -2);
  lua_pushcclosure(L, zv__http_req_tostring, 2);
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
