/*
 * lx_http.h: what the parts of the zever.http binding share (l_http.c, the server and its
 * callbacks; lx_request.c, the request object; lx_watchdog.c, the handler watchdog). The
 * streaming methods' share is lx_stream.h. Not for use outside the zever.http binding.
 *
 *   lserver_t --srv--> zv_http_server_t (server.h)     the Lua server object (a proxy) points
 *       |--wd--> wdog_t (its watchdog thread)          at lserver_t; lserver_t outlives it
 *       +--proxy--> sproxy_t                           until on_closed
 */
#ifndef ZV_HTTP_LX_HTTP_H
#define ZV_HTTP_LX_HTTP_H

#include <pthread.h>

#include <lauxlib.h>
#include <lua.h>

#include "../runtime/runtime.h"
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
} zv__http_wdog_t;
typedef zv__http_wdog_t wdog_t;

typedef struct {
  zv_http_server_t srv;
  zv_loop_item_t item;
  zv_loop_t *loop;
  int fn_ref, done_ref, req_mt_ref, guard_mt_ref;
  int method_refs[METHOD_REFS]; /* the method name strings, by parser method, made once */
  int closed;     /* on_closed came: only the memory is left */
  sproxy_t *proxy;
  wdog_t wd;
} zv__http_lserver_t;
typedef zv__http_lserver_t lserver_t;

struct sproxy_s {
  lserver_t *s;
};

typedef zv__http_req_t lreq_t; /* lx_stream.h: shared with the streaming methods */

/* lx_request.c: the request's own methods (header, body, respond, ...), registered by
 * luaopen_zever_http with both metatables as upvalues, and the metamethods. */
extern const luaL_Reg zv__http_req_methods[];
int zv__http_req_gc(lua_State *L);
int zv__http_req_tostring(lua_State *L);
/* lx_request.c: marks r answered and unlinks it from its connection (both directions). */
void zv__http_detach(lreq_t *r);
/* lx_request.c: answers 500 for a request the application can no longer answer (aborts a
 * streamed one). */
void zv__http_answer_internal(zv_http_sconn_t *c);

/* lx_watchdog.c: the watchdog of the server whose handler runs on this thread (on_request sets
 * it per request; a worker thread runs one Lua state). */
extern __thread wdog_t *zv__http_running_wd;
/* lx_watchdog.c: starts wd's thread for the state of L (limit_ms > 0); 0 or -1. */
int zv__http_wd_start(wdog_t *wd, lua_State *L, uint64_t limit_ms);
/* lx_watchdog.c: stops and joins wd's thread (nothing when it did not start). */
void zv__http_wd_stop(wdog_t *wd);
/* lx_watchdog.c: drops wd's pin on its Lua thread (when L, the state, is still there). */
void zv__http_wd_unref(wdog_t *wd, lua_State *L);

#endif
