/*
 * l_threads.c: the zever.threads binding: worker threads, each with its own Lua state and loop.
 *
 *   threads.start(n, module, payload) -> pool   each worker runs
 *                                                require(module).worker(payload, index, n)
 *                                                in a fresh state (zv_runtime_newstate), then closes
 *                                                that state
 *   pool:send(i, message) -> boolean            i = 0: every worker; false when i has ended
 *   pool:on_exit(fn)                            fn(index, ok, err) in the owner's loop
 *   pool:join()                                 blocks until every worker has ended
 *   pool:size() -> n
 *   threads.on_message(fn | nil)                in a worker: fn(message) in the worker's loop for
 *                                                each message; messages sent earlier wait for it
 *
 * Threads share no Lua values: messages and the payload are copied strings.
 *
 *   pool_t (owner)                           worker_t[i] (one thread each)
 *   +------------------------+   inbox      +------------------------------+
 *   | mu (guards everything  |  --------->  | head..tail messages          |
 *   |   marked "mu" below)   |  uv_async    | async (in the worker's loop) |
 *   | exit_async (owner loop)|  <---------  | done, ok, err                |
 *   +------------------------+   on exit    +------------------------------+
 *
 * Lifetime: the pool's memory is freed when both its Lua object was collected (which joins the
 * threads, blocking: stop your workers before dropping the pool) and its exit_async closed
 * (with the owner's loop or by the collection). Workers never outlive the pool.
 */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/runtime.h"

#define POOL_MT "zever.threads.pool"
#define MAX_WORKERS 1024

typedef struct msg_s {
  struct msg_s *next;
  size_t len;
  char data[];
} msg_t;

typedef struct pool_s pool_t;

typedef struct {
  pool_t *pool;
  int index;
  uv_thread_t tid;
  int started, joined;
  msg_t *head, *tail;  /* mu */
  int async_live;      /* mu: the worker's async accepts uv_async_send */
  int done, reported;  /* mu */
  int ok;              /* mu */
  char *err;           /* mu: zv_alloc'd message of a failed worker */
  /* worker-side only */
  uv_async_t async;
  zv_loop_t *wloop;
  zv_loop_item_t item;
  int fn_ref;
} worker_t;

struct pool_s {
  uv_mutex_t mu;
  int n;
  char *module, *payload;
  size_t payload_len;
  worker_t *workers;
  uv_async_t exit_async;
  int exit_live;       /* mu */
  int async_closed;    /* the exit_async close callback ran */
  int proxy_gone;
  zv_loop_item_t item;
  zv_loop_t *oloop;
  int exit_ref;
};

typedef struct {
  pool_t *p;
} pproxy_t;

static char worker_key;

static char *copy(const char *s, size_t len) {
  char *d = zv_alloc(len + 1);
  if (d) {
    memcpy(d, s, len);
    d[len] = 0;
  }
  return d;
}

static void pool_free(pool_t *p) {
  for (int i = 0; i < p->n; i++) {
    worker_t *w = &p->workers[i];
    while (w->head) {
      msg_t *m = w->head;
      w->head = m->next;
      zv_free(m);
    }
    zv_free(w->err);
  }
  uv_mutex_destroy(&p->mu);
  zv_free(p->module);
  zv_free(p->payload);
  zv_free(p->workers);
  zv_free(p);
}

/* --- the worker thread ---------------------------------------------------------------------- */

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Runs require(module).worker(payload, index, n); returns 0 or leaves an error message. */
static int run_worker(lua_State *L, worker_t *w) {
  pool_t *p = w->pool;
  lua_pushcfunction(L, traceback);
  lua_getglobal(L, "require");
  lua_pushstring(L, p->module);
  /* Loading the module keeps what it allocates: it runs without the collector, which comes
   * back before the worker function, its first cycle due when the heap has doubled (data -1:
   * LuaJIT sets the threshold from the pause, where 0 would start a cycle at once). */
  lua_gc(L, LUA_GCSTOP, 0);
  if (lua_pcall(L, 1, 1, 1)) return 1;
  lua_gc(L, LUA_GCRESTART, -1);
  if (lua_type(L, -1) != LUA_TTABLE) {
    lua_pushfstring(L, "module '%s' does not return a table", p->module);
    return 1;
  }
  lua_getfield(L, -1, "worker");
  if (lua_type(L, -1) != LUA_TFUNCTION) {
    lua_pushfstring(L, "module '%s' has no worker function", p->module);
    return 1;
  }
  lua_pushlstring(L, p->payload, p->payload_len);
  lua_pushinteger(L, w->index);
  lua_pushinteger(L, p->n);
  return lua_pcall(L, 3, 0, 1) != 0;
}

static void worker_main(void *arg) {
  worker_t *w = arg;
  pool_t *p = w->pool;
  lua_State *L = zv_runtime_newstate();
  char *err = NULL;
  int ok = 0;
  if (!L) {
    err = copy("cannot create a Lua state", 25);
  } else {
    lua_pushlightuserdata(L, &worker_key);
    lua_pushlightuserdata(L, w);
    lua_rawset(L, LUA_REGISTRYINDEX);
    if (run_worker(L, w)) {
      size_t len;
      const char *msg = lua_tolstring(L, -1, &len);
      if (!msg) msg = "?", len = 1;
      fprintf(stderr, "zever: worker %d: %s\n", w->index, msg);
      fflush(stderr);
      err = copy(msg, len);
    } else {
      ok = 1;
    }
    lua_close(L);
  }
  uv_mutex_lock(&p->mu);
  w->done = 1;
  w->ok = ok;
  w->err = err;
  while (w->head) {
    msg_t *m = w->head;
    w->head = m->next;
    zv_free(m);
  }
  w->tail = NULL;
  if (p->exit_live) uv_async_send(&p->exit_async);
  uv_mutex_unlock(&p->mu);
}

/* --- worker side: threads.on_message -------------------------------------------------------- */

static void inbox_cb(uv_async_t *h) {
  worker_t *w = h->data;
  pool_t *p = w->pool;
  lua_State *L = w->wloop->L;
  msg_t *m;
  if (!L) return;
  for (;;) {
    if (w->fn_ref == LUA_NOREF) return;
    uv_mutex_lock(&p->mu);
    m = w->head;
    if (m) {
      w->head = m->next;
      if (!w->head) w->tail = NULL;
    }
    uv_mutex_unlock(&p->mu);
    if (!m) return;
    lua_rawgeti(L, LUA_REGISTRYINDEX, w->fn_ref);
    lua_pushlstring(L, m->data, m->len);
    zv_free(m);
    zv_loop_pcall(L, 1, 0, "worker message callback");
  }
}

static void worker_teardown(zv_loop_item_t *item) {
  worker_t *w = ZV_CONTAINER_OF(item, worker_t, item);
  uv_mutex_lock(&w->pool->mu);
  w->async_live = 0;
  uv_mutex_unlock(&w->pool->mu);
  w->fn_ref = LUA_NOREF;
  uv_close((uv_handle_t *)&w->async, NULL);
}

static int l_on_message(lua_State *L) {
  worker_t *w;
  lua_pushlightuserdata(L, &worker_key);
  lua_rawget(L, LUA_REGISTRYINDEX);
  w = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (!w) return luaL_error(L, "threads.on_message: not in a worker thread");
  if (lua_isnoneornil(L, 1)) {
    /* Stop listening: messages wait in the inbox, and the loop may end. */
    if (w->fn_ref != LUA_NOREF) {
      luaL_unref(L, LUA_REGISTRYINDEX, w->fn_ref);
      w->fn_ref = LUA_NOREF;
      uv_unref((uv_handle_t *)&w->async);
    }
    return 0;
  }
  luaL_checktype(L, 1, LUA_TFUNCTION);
  if (!w->wloop) {
    zv_loop_t *loop = zv_loop_of(L);
    if (uv_async_init(&loop->uv, &w->async, inbox_cb)) return luaL_error(L, "uv_async_init");
    w->async.data = w;
    w->wloop = loop;
    w->item.prev = w->item.next = NULL;
    w->item.teardown = worker_teardown;
    zv_loop_add(loop, &w->item);
    uv_mutex_lock(&w->pool->mu);
    w->async_live = 1;
    uv_mutex_unlock(&w->pool->mu);
  } else if (w->fn_ref != LUA_NOREF) {
    luaL_unref(L, LUA_REGISTRYINDEX, w->fn_ref);
  }
  uv_ref((uv_handle_t *)&w->async);
  lua_pushvalue(L, 1);
  w->fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  /* Deliver what was sent before the worker listened. */
  uv_mutex_lock(&w->pool->mu);
  if (w->head) uv_async_send(&w->async);
  uv_mutex_unlock(&w->pool->mu);
  return 0;
}

/* --- owner side ----------------------------------------------------------------------------- */

static void exit_cb(uv_async_t *h) {
  pool_t *p = h->data;
  lua_State *L = p->oloop->L;
  int all = 1;
  for (int i = 0; i < p->n; i++) {
    worker_t *w = &p->workers[i];
    int report, ok;
    char *err;
    uv_mutex_lock(&p->mu);
    report = w->done && !w->reported;
    if (report) w->reported = 1;
    if (!w->reported) all = 0;
    ok = w->ok;
    err = w->err;
    uv_mutex_unlock(&p->mu);
    if (!report || !L || p->exit_ref == LUA_NOREF) continue;
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->exit_ref);
    lua_pushinteger(L, w->index);
    lua_pushboolean(L, ok);
    if (err) lua_pushstring(L, err);
    else lua_pushnil(L);
    zv_loop_pcall(L, 3, 0, "worker exit callback");
  }
  /* Nothing more to wait for: let the owner's loop end. */
  if (all) uv_unref((uv_handle_t *)&p->exit_async);
}

static void exit_async_closed(uv_handle_t *h) {
  pool_t *p = h->data;
  p->async_closed = 1;
  if (p->proxy_gone) pool_free(p);
}

static void close_exit_async(pool_t *p) {
  uv_mutex_lock(&p->mu);
  p->exit_live = 0;
  uv_mutex_unlock(&p->mu);
  uv_close((uv_handle_t *)&p->exit_async, exit_async_closed);
}

static void pool_teardown(zv_loop_item_t *item) {
  pool_t *p = ZV_CONTAINER_OF(item, pool_t, item);
  p->exit_ref = LUA_NOREF;
  close_exit_async(p);
}

static pool_t *check_pool(lua_State *L) {
  pproxy_t *pp = luaL_checkudata(L, 1, POOL_MT);
  if (!pp->p) luaL_error(L, "the pool is gone");
  return pp->p;
}

static void join_all(pool_t *p) {
  for (int i = 0; i < p->n; i++) {
    worker_t *w = &p->workers[i];
    if (w->started && !w->joined) {
      uv_thread_join(&w->tid);
      w->joined = 1;
    }
  }
}

static int p_join(lua_State *L) {
  pool_t *p = check_pool(L);
  join_all(p);
  /* Every worker has ended. With nobody to tell (no on_exit callback) the exit notice has
   * nothing left to do, so it stops holding the owner's loop now rather than when the loop
   * next runs or the pool is collected. */
  if (p->exit_ref == LUA_NOREF && p->exit_live) uv_unref((uv_handle_t *)&p->exit_async);
  return 0;
}

static int p_size(lua_State *L) {
  lua_pushinteger(L, check_pool(L)->n);
  return 1;
}

static int p_on_exit(lua_State *L) {
  pool_t *p = check_pool(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (p->exit_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, p->exit_ref);
  lua_pushvalue(L, 2);
  p->exit_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  /* Exits that happened before this call are reported now, from the loop (which the notice
   * holds again, should a join have let it go). */
  uv_mutex_lock(&p->mu);
  if (p->exit_live) {
    uv_ref((uv_handle_t *)&p->exit_async);
    uv_async_send(&p->exit_async);
  }
  uv_mutex_unlock(&p->mu);
  return 0;
}

/* Queues a copy of msg for worker w; returns 0, or 1 when w has ended. */
static int post(pool_t *p, worker_t *w, const char *msg, size_t len) {
  msg_t *m = zv_alloc(sizeof *m + len);
  int ended;
  if (!m) return -1;
  m->next = NULL;
  m->len = len;
  memcpy(m->data, msg, len);
  uv_mutex_lock(&p->mu);
  ended = w->done;
  if (!ended) {
    if (w->tail) w->tail->next = m;
    else w->head = m;
    w->tail = m;
    if (w->async_live) uv_async_send(&w->async);
  }
  uv_mutex_unlock(&p->mu);
  if (ended) zv_free(m);
  return ended;
}

static int p_send(lua_State *L) {
  pool_t *p = check_pool(L);
  lua_Integer i = luaL_checkinteger(L, 2);
  size_t len;
  const char *msg = luaL_checklstring(L, 3, &len);
  int delivered = 0, rc;
  if (i < 0 || i > p->n) return luaL_argerror(L, 2, "no such worker");
  for (int k = 0; k < p->n; k++) {
    if (i != 0 && k + 1 != i) continue;
    rc = post(p, &p->workers[k], msg, len);
    if (rc < 0) return luaL_error(L, "pool:send: out of memory");
    if (rc == 0) delivered++;
  }
  lua_pushboolean(L, delivered > 0);
  return 1;
}

static int p_gc(lua_State *L) {
  pproxy_t *pp = lua_touserdata(L, 1);
  pool_t *p = pp->p;
  if (!p) return 0;
  pp->p = NULL;
  join_all(p);
  p->proxy_gone = 1;
  if (p->async_closed) {
    pool_free(p);
  } else if (p->item.next) {
    /* The owner's loop is still open: close the async there; its callback frees the pool. */
    zv_loop_remove(&p->item);
    if (p->exit_ref != LUA_NOREF && !p->oloop->closing)
      luaL_unref(L, LUA_REGISTRYINDEX, p->exit_ref);
    p->exit_ref = LUA_NOREF;
    close_exit_async(p);
  }
  return 0;
}

static int l_start(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  size_t mlen, plen;
  const char *module = luaL_checklstring(L, 2, &mlen);
  const char *payload = luaL_optlstring(L, 3, "", &plen);
  zv_loop_t *loop;
  pproxy_t *pp;
  pool_t *p;
  if (n < 1 || n > MAX_WORKERS) return luaL_argerror(L, 1, "must be within 1..1024");
  loop = zv_loop_of(L);
  pp = lua_newuserdata(L, sizeof *pp);
  pp->p = NULL;
  luaL_getmetatable(L, POOL_MT);
  lua_setmetatable(L, -2);
  /* From here nothing raises until the pool is linked to its Lua object. */
  p = zv_alloc(sizeof *p);
  if (!p) return luaL_error(L, "threads.start: out of memory");
  memset(p, 0, sizeof *p);
  p->n = (int)n;
  p->module = copy(module, mlen);
  p->payload = copy(payload, plen);
  p->payload_len = plen;
  p->workers = zv_alloc(sizeof *p->workers * (size_t)n);
  p->exit_ref = LUA_NOREF;
  if (!p->module || !p->payload || !p->workers || uv_mutex_init(&p->mu)) {
    zv_free(p->module);
    zv_free(p->payload);
    zv_free(p->workers);
    zv_free(p);
    return luaL_error(L, "threads.start: out of memory");
  }
  memset(p->workers, 0, sizeof *p->workers * (size_t)n);
  p->oloop = loop;
  uv_async_init(&loop->uv, &p->exit_async, exit_cb);
  p->exit_async.data = p;
  p->exit_live = 1;
  p->item.teardown = pool_teardown;
  zv_loop_add(loop, &p->item);
  pp->p = p;
  for (int i = 0; i < p->n; i++) {
    worker_t *w = &p->workers[i];
    w->pool = p;
    w->index = i + 1;
    w->fn_ref = LUA_NOREF;
    if (uv_thread_create(&w->tid, worker_main, w) == 0) {
      w->started = 1;
    } else {
      uv_mutex_lock(&p->mu);
      w->done = 1;
      w->err = copy("cannot start a thread", 21);
      uv_async_send(&p->exit_async);
      uv_mutex_unlock(&p->mu);
    }
  }
  return 1;
}

int luaopen_zever_threads(lua_State *L);
int luaopen_zever_threads(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"send", p_send}, {"on_exit", p_on_exit}, {"join", p_join}, {"size", p_size}, {NULL, NULL},
  };
  static const luaL_Reg funcs[] = {
    {"start", l_start}, {"on_message", l_on_message}, {NULL, NULL},
  };
  luaL_newmetatable(L, POOL_MT);
  lua_newtable(L);
  luaL_register(L, NULL, methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, p_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  return 1;
}
