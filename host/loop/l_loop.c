/*
 * l_loop.c: the zever.loop binding: one libuv loop per Lua state, timers and signal watchers.
 *
 *   loop.run([mode])        -> more   runs until loop.stop() or nothing is active; mode is
 *                                      "default", "once" or "nowait"; more is true when handles
 *                                      are still active
 *   loop.stop()                        makes run() return after the current callback
 *   loop.now()              -> seconds the loop's monotonic clock, refreshed by the call
 *   loop.after(s, fn)       -> handle  calls fn() once, s seconds from now
 *   loop.every(s, fn)       -> handle  calls fn() every s seconds until handle:stop()
 *   loop.signal(name, fn)   -> handle  calls fn(name) on each delivery of the signal ("SIGTERM",
 *                                      "SIGINT", "SIGHUP", "SIGUSR1", ...); signal watchers do not
 *                                      keep run() going on their own
 *   loop.watch(path, fn)    -> handle | nil, message
 *                                      calls fn(name, event) when path (a file, or a folder's
 *                                      direct entries; not recursive) changes: name is the entry
 *                                      (or nil), event "change" or "rename", or an error message
 *                                      (uv_fs_event: inotify on Linux); a path that cannot be
 *                                      watched is nil and libuv's message; watchers do not keep
 *                                      run() going on their own
 *   loop.poll(fd, events, fn) -> handle | nil, message
 *                                      calls fn(ready) each time fd is ready for events ("r",
 *                                      "w" or "rw"; ready the same letters, or libuv's message
 *                                      when the socket failed); an active poll keeps run() going
 *                                      (a benchmark's or a driver's own socket on the loop)
 *   handle:stop()                      stops it; doing so twice is harmless
 *   handle:active()         -> boolean
 *
 *   loop.spawn(fn, ...)     -> co      runs fn(...) now in a coroutine of the state's one pool
 *                                      (runtime.h: the pool HTTP requests take theirs from too)
 *                                      until it returns or first waits; a failure is reported on
 *                                      stderr with its traceback, never raised; co is back in the
 *                                      pool already when fn returned without waiting
 *   loop.resume(co, ...)               resumes a coroutine that waits (yielded) with ...; when it
 *                                      then finishes it goes back to the pool; a failure is
 *                                      reported as above; one that does not wait is reported and
 *                                      left alone (an idle pooled coroutine is never started here)
 *   loop.complete(token, ...)          completes a zever.sched token (a waiting coroutine: as
 *                                      resume; a box: box[1..n] = ..., box.done = true): the one
 *                                      wake-up path, shared with bindings that finish a wait in C
 *                                      (runtime.h: zv_token_complete)
 *
 *   loop.timer(fn)          -> timer   a re-armable timer, created stopped: one uv_timer_t for its
 *                                      whole life, so arming it again allocates nothing
 *   timer:start(s)                     calls fn() once, s seconds from now; starting an armed
 *                                      timer moves its deadline (no second call)
 *   timer:stop()                       disarms it (fn is not called); it can be started again
 *   timer:active()          -> boolean armed and not yet fired
 *   timer:unref()                      an armed timer no longer keeps run() going (a
 *                                      housekeeping timer, such as a pool's idle sweep)
 *   timer:close()                      frees it for good; later start() raises, stop() and
 *                                      close() do nothing. Collecting the object closes it too,
 *                                      so keep it while you need it.
 * An armed timer keeps run() going, a stopped one does not.
 *
 * Callbacks run with lua_pcall in the state that called loop.run() (never inside a coroutine of
 * ours); an error is written to stderr with its traceback and the loop goes on.
 *
 * Ownership: a handle's C side (ltimer_t) is allocated with zv_alloc and holds the callback in
 * the registry while active, so the Lua object may be collected while the timer keeps running.
 * The C side is freed only in the libuv close callback. The Lua object (hproxy_t) and the C side
 * point at each other; whichever goes first clears the other's pointer.
 *
 * It must not raise while it holds memory it allocated (every allocation is linked into the
 * loop's item list or freed before any call that may raise).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/runtime.h"

typedef struct hproxy_s hproxy_t;

typedef struct {
  union {
    uv_handle_t handle;
    uv_timer_t timer;
    uv_signal_t signal;
    uv_fs_event_t fs;
    uv_poll_t poll;
  } h;
  zv_loop_item_t item;
  zv_loop_t *loop;
  int fn_ref;   /* the callback while active; LUA_NOREF once stopped */
  int repeat;   /* every(): keeps running after a call */
  int rearm;    /* timer(): stays open after a call, start() arms it again */
  int signum;
  hproxy_t *proxy;
} ltimer_t;

struct hproxy_s {
  ltimer_t *t;
};

#define HANDLE_MT "zever.loop.handle"
#define TIMER_MT "zever.loop.timer"

static int l_run(lua_State *L) {
  static const char *const modes[] = {"default", "once", "nowait", NULL};
  static const uv_run_mode uvmodes[] = {UV_RUN_DEFAULT, UV_RUN_ONCE, UV_RUN_NOWAIT};
  int mode = luaL_checkoption(L, 1, "default", modes);
  zv_loop_t *loop = zv_loop_of(L);
  int more;
  if (loop->running) return luaL_error(L, "loop.run: the loop is already running");
  loop->running = 1;
  loop->L = L;
  more = uv_run(&loop->uv, uvmodes[mode]);
  loop->running = 0;
  loop->L = NULL;
  lua_pushboolean(L, more != 0);
  return 1;
}

static void count_handle(uv_handle_t *h, void *arg) {
  lua_State *L = arg;
  if (!uv_is_active(h) || !uv_has_ref(h)) return;
  lua_pushstring(L, uv_handle_type_name(uv_handle_get_type(h)));
  lua_rawseti(L, -2, (int)lua_objlen(L, -2) + 1);
}

/* loop.handles() -> {kind, ...}: the handles that keep loop.run() going (active and
 * referenced), by libuv kind ("timer", "tcp", "async", ...). For specs and diagnostics. */
static int l_handles(lua_State *L) {
  zv_loop_t *loop = zv_loop_of(L);
  lua_newtable(L);
  uv_walk(&loop->uv, count_handle, L);
  return 1;
}

#define CO_FAILED "a coroutine failed"

static int l_spawn(lua_State *L) {
  zv_loop_t *loop = lua_touserdata(L, lua_upvalueindex(1));
  int n = lua_gettop(L), ref, rc;
  lua_State *co;
  luaL_checktype(L, 1, LUA_TFUNCTION);
  co = zv_co_take(loop, L, &ref);
  /* The result goes under fn and its arguments, which then move to co. */
  lua_pushthread(co);
  lua_xmove(co, L, 1);
  lua_insert(L, 1);
  lua_xmove(L, co, n);
  rc = lua_resume(co, n - 1);
  zv_co_done(loop, L, co, ref, rc, CO_FAILED);
  return 1;
}

static int l_resume(lua_State *L) {
  zv_loop_t *loop = lua_touserdata(L, lua_upvalueindex(1));
  luaL_argcheck(L, lua_tothread(L, 1) != NULL, 1, "coroutine expected");
  zv_token_complete(loop, L, lua_gettop(L) - 1, CO_FAILED);
  return 0;
}

/* loop.complete(token, ...): zever.sched.complete (runtime.h: zv_token_complete). */
static int l_complete(lua_State *L) {
  zv_loop_t *loop = lua_touserdata(L, lua_upvalueindex(1));
  luaL_checkany(L, 1);
  zv_token_complete(loop, L, lua_gettop(L) - 1, CO_FAILED);
  return 0;
}

static int l_stop(lua_State *L) {
  zv_loop_t *loop = zv_loop_of(L);
  if (loop->running) uv_stop(&loop->uv);
  return 0;
}

static int l_now(lua_State *L) {
  zv_loop_t *loop = zv_loop_of(L);
  /* The cached time is stale after long Lua work or between runs; refreshing costs a vDSO read. */
  uv_update_time(&loop->uv);
  lua_pushnumber(L, (lua_Number)uv_now(&loop->uv) / 1000.0);
  return 1;
}

/* --- timers and signal watchers ------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h) {
  ltimer_t *t = h->data;
  if (t->proxy) t->proxy->t = NULL;
  zv_free(t);
}

/* Stops t: drops its callback, detaches its Lua object and closes the handle (freed later). */
static void handle_stop(lua_State *L, ltimer_t *t) {
  if (t->fn_ref == LUA_NOREF) return;
  luaL_unref(L, LUA_REGISTRYINDEX, t->fn_ref);
  t->fn_ref = LUA_NOREF;
  if (t->proxy) t->proxy->t = NULL;
  t->proxy = NULL;
  zv_loop_remove(&t->item);
  uv_close(&t->h.handle, handle_closed);
}

/* The loop is closing with the state: no Lua calls, the registry goes away anyway. */
static void handle_teardown(zv_loop_item_t *item) {
  ltimer_t *t = ZV_CONTAINER_OF(item, ltimer_t, item);
  t->fn_ref = LUA_NOREF;
  uv_close(&t->h.handle, handle_closed);
}

static void timer_cb(uv_timer_t *h) {
  ltimer_t *t = h->data;
  lua_State *L = t->loop->L;
  if (!L || t->fn_ref == LUA_NOREF) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, t->fn_ref);
  if (!t->repeat && !t->rearm) handle_stop(L, t);
  zv_loop_pcall(L, 0, 0, "timer callback");
}

static const struct {
  const char *name;
  int signum;
} signals[] = {
  {"SIGHUP", SIGHUP},   {"SIGINT", SIGINT},     {"SIGQUIT", SIGQUIT},   {"SIGTERM", SIGTERM},
  {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2},   {"SIGPIPE", SIGPIPE},   {"SIGCHLD", SIGCHLD},
  {"SIGWINCH", SIGWINCH}, {"SIGALRM", SIGALRM}, {"SIGCONT", SIGCONT},
};

static void signal_cb(uv_signal_t *h, int signum) {
  ltimer_t *t = h->data;
  lua_State *L = t->loop->L;
  if (!L || t->fn_ref == LUA_NOREF) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, t->fn_ref);
  for (size_t i = 0; i < ZV_ARRAY_SIZE(signals); i++) {
    if (signals[i].signum == signum) {
      lua_pushstring(L, signals[i].name);
      zv_loop_pcall(L, 1, 0, "signal callback");
      return;
    }
  }
  lua_pushinteger(L, signum);
  zv_loop_pcall(L, 1, 0, "signal callback");
}

static void fs_event_cb(uv_fs_event_t *h, const char *name, int events, int status) {
  ltimer_t *t = h->data;
  lua_State *L = t->loop->L;
  if (!L || t->fn_ref == LUA_NOREF) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, t->fn_ref);
  if (name) lua_pushstring(L, name); else lua_pushnil(L);
  if (status < 0) lua_pushstring(L, uv_strerror(status));
  else lua_pushstring(L, (events & UV_RENAME) ? "rename" : "change");
  zv_loop_pcall(L, 2, 0, "watch callback");
}

/* Pushes a new Lua object for t (metatable in upvalue 1) and pins fn at index fn_index. */
static void handle_push(lua_State *L, ltimer_t *t, int fn_index) {
  hproxy_t *p = lua_newuserdata(L, sizeof *p);
  p->t = t;
  t->proxy = p;
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_setmetatable(L, -2);
  lua_pushvalue(L, fn_index);
  t->fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Allocates a handle's C side; raises (having allocated nothing) when memory runs out. */
static ltimer_t *handle_new(lua_State *L, zv_loop_t *loop) {
  ltimer_t *t = zv_alloc(sizeof *t);
  if (!t) {
    luaL_error(L, "out of memory");
    return NULL;
  }
  t->loop = loop;
  t->fn_ref = LUA_NOREF;
  t->repeat = 0;
  t->rearm = 0;
  t->signum = 0;
  t->proxy = NULL;
  t->item.prev = t->item.next = NULL;
  t->item.teardown = handle_teardown;
  return t;
}

static uint64_t check_ms(lua_State *L, int index) {
  lua_Number s = luaL_checknumber(L, index);
  if (!(s >= 0) || s > 1e12) luaL_argerror(L, index, "seconds must be >= 0");
  return (uint64_t)ceil(s * 1000.0);
}

static int timer_start(lua_State *L, int repeat) {
  uint64_t ms = check_ms(L, 1);
  zv_loop_t *loop;
  ltimer_t *t;
  luaL_checktype(L, 2, LUA_TFUNCTION);
  loop = zv_loop_of(L);
  /* every(0) would spin: repeat at least once per millisecond. */
  if (repeat && ms == 0) ms = 1;
  t = handle_new(L, loop);
  uv_timer_init(&loop->uv, &t->h.timer);
  t->h.handle.data = t;
  t->repeat = repeat;
  zv_loop_add(loop, &t->item);
  handle_push(L, t, 2);
  /* Count from now, not from the loop's cached time, which is stale after long Lua work. */
  uv_update_time(&loop->uv);
  uv_timer_start(&t->h.timer, timer_cb, ms, repeat ? ms : 0);
  return 1;
}

static int l_after(lua_State *L) {
  return timer_start(L, 0);
}

static int l_every(lua_State *L) {
  return timer_start(L, 1);
}

static int l_signal(lua_State *L) {
  zv_loop_t *loop;
  ltimer_t *t;
  int signum = 0, rc;
  if (lua_type(L, 1) == LUA_TNUMBER) {
    signum = (int)lua_tointeger(L, 1);
  } else {
    const char *name = luaL_checkstring(L, 1);
    for (size_t i = 0; i < ZV_ARRAY_SIZE(signals); i++)
      if (!strcmp(signals[i].name, name)) signum = signals[i].signum;
    if (!signum) return luaL_argerror(L, 1, lua_pushfstring(L, "unknown signal '%s'", name));
  }
  luaL_checktype(L, 2, LUA_TFUNCTION);
  loop = zv_loop_of(L);
  t = handle_new(L, loop);
  uv_signal_init(&loop->uv, &t->h.signal);
  t->h.handle.data = t;
  t->repeat = 1;
  t->signum = signum;
  rc = uv_signal_start(&t->h.signal, signal_cb, signum);
  if (rc) {
    uv_close(&t->h.handle, handle_closed);
    return luaL_error(L, "loop.signal: %s", uv_strerror(rc));
  }
  uv_unref(&t->h.handle);
  zv_loop_add(loop, &t->item);
  handle_push(L, t, 2);
  return 1;
}

/*
 * loop.timer(fn): the C side lives until close() or the object's collection; fn stays pinned
 * in the registry as long. start/stop only call uv_timer_start/uv_timer_stop on the same handle.
 */
static int l_timer(lua_State *L) {
  zv_loop_t *loop;
  ltimer_t *t;
  luaL_checktype(L, 1, LUA_TFUNCTION);
  loop = zv_loop_of(L);
  t = handle_new(L, loop);
  uv_timer_init(&loop->uv, &t->h.timer);
  t->h.handle.data = t;
  t->rearm = 1;
  zv_loop_add(loop, &t->item);
  handle_push(L, t, 1);
  return 1;
}

static int tm_start(lua_State *L) {
  hproxy_t *p = luaL_checkudata(L, 1, TIMER_MT);
  uint64_t ms = check_ms(L, 2);
  ltimer_t *t = p->t;
  if (!t) return luaL_error(L, "timer:start: the timer is closed");
  /* Count from now, not from the loop's cached time, which is stale after long Lua work. */
  uv_update_time(&t->loop->uv);
  uv_timer_start(&t->h.timer, timer_cb, ms, 0);
  return 0;
}

static int tm_stop(lua_State *L) {
  hproxy_t *p = luaL_checkudata(L, 1, TIMER_MT);
  if (p->t) uv_timer_stop(&p->t->h.timer);
  return 0;
}

static int tm_active(lua_State *L) {
  hproxy_t *p = luaL_checkudata(L, 1, TIMER_MT);
  lua_pushboolean(L, p->t && uv_is_active(&p->t->h.handle));
  return 1;
}

static int tm_unref(lua_State *L) {
  hproxy_t *p = luaL_checkudata(L, 1, TIMER_MT);
  if (p->t) uv_unref(&p->t->h.handle);
  return 0;
}

static int tm_close(lua_State *L) {
  hproxy_t *p = luaL_checkudata(L, 1, TIMER_MT);
  if (p->t) handle_stop(L, p->t);
  return 0;
}

/* Nothing else can re-arm the timer once its object is gone: close it (and unpin fn). */
static int tm_gc(lua_State *L) {
  hproxy_t *p = lua_touserdata(L, 1);
  if (p->t) handle_stop(L, p->t);
  return 0;
}

static int tm_tostring(lua_State *L) {
  hproxy_t *p = luaL_checkudata(L, 1, TIMER_MT);
  lua_pushfstring(L, "zever.loop.timer (%s)",
    !p->t ? "closed" : uv_is_active(&p->t->h.handle) ? "armed" : "stopped");
  return 1;
}

static int h_stop(lua_State *L) {
  hproxy_t *p = luaL_checkudata(L, 1, HANDLE_MT);
  if (p->t) handle_stop(L, p->t);
  return 0;
}

static int h_active(lua_State *L) {
  hproxy_t *p = luaL_checkudata(L, 1, HANDLE_MT);
  lua_pushboolean(L, p->t != NULL);
  return 1;
}

static int h_gc(lua_State *L) {
  hproxy_t *p = lua_touserdata(L, 1);
  /* The handle goes on (its callback pins it); it only forgets this object. */
  if (p->t) p->t->proxy = NULL;
  p->t = NULL;
  return 0;
}

static int h_tostring(lua_State *L) {
  hproxy_t *p = luaL_checkudata(L, 1, HANDLE_MT);
  lua_pushfstring(L, "zever.loop.handle (%s)", p->t ? "active" : "stopped");
  return 1;
}

static int l_watch(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  zv_loop_t *loop;
  ltimer_t *t;
  int rc;
  luaL_checktype(L, 2, LUA_TFUNCTION);
  loop = zv_loop_of(L);
  t = handle_new(L, loop);
  rc = uv_fs_event_init(&loop->uv, &t->h.fs);
  if (rc) {
    zv_free(t);
    return luaL_error(L, "loop.watch: %s", uv_strerror(rc));
  }
  t->h.handle.data = t;
  t->repeat = 1;
  /* libuv copies path. A path that cannot be watched is an expected failure: nil, message. */
  rc = uv_fs_event_start(&t->h.fs, fs_event_cb, path, 0);
  if (rc) {
    uv_close(&t->h.handle, handle_closed);
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, uv_strerror(rc));
    return 2;
  }
  uv_unref(&t->h.handle);
  zv_loop_add(loop, &t->item);
  handle_push(L, t, 2);
  return 1;
}

static void poll_cb(uv_poll_t *h, int status, int events) {
  ltimer_t *t = h->data;
  lua_State *L = t->loop->L;
  if (!L || t->fn_ref == LUA_NOREF) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, t->fn_ref);
  if (status < 0) lua_pushstring(L, uv_strerror(status));
  else lua_pushstring(L, (events & UV_READABLE) ? ((events & UV_WRITABLE) ? "rw" : "r") : "w");
  zv_loop_pcall(L, 1, 0, "poll callback");
}

/* loop.poll(fd, events, fn) -> handle: fn(events) each time fd is ready ("r", "w", "rw"; an
 * error message when the socket failed: libuv stopped watching then). */
static int l_poll(lua_State *L) {
  static const char *const names[] = {"r", "w", "rw", NULL};
  static const int events[] = {UV_READABLE, UV_WRITABLE, UV_READABLE | UV_WRITABLE};
  int fd = (int)luaL_checkinteger(L, 1);
  int ev = events[luaL_checkoption(L, 2, NULL, names)];
  zv_loop_t *loop;
  ltimer_t *t;
  int rc;
  luaL_checktype(L, 3, LUA_TFUNCTION);
  if (fd < 0) return luaL_argerror(L, 1, "a file descriptor is >= 0");
  loop = zv_loop_of(L);
  t = handle_new(L, loop);
  rc = uv_poll_init(&loop->uv, &t->h.poll, fd);
  if (rc) {
    zv_free(t);
    lua_pushnil(L);
    lua_pushstring(L, uv_strerror(rc));
    return 2;
  }
  t->h.handle.data = t;
  t->repeat = 1;
  rc = uv_poll_start(&t->h.poll, ev, poll_cb);
  if (rc) {
    uv_close(&t->h.handle, handle_closed);
    lua_pushnil(L);
    lua_pushstring(L, uv_strerror(rc));
    return 2;
  }
  zv_loop_add(loop, &t->item);
  handle_push(L, t, 3);
  return 1;
}

int luaopen_zever_loop(lua_State *L);
int luaopen_zever_loop(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"stop", h_stop},
    {"active", h_active},
    {NULL, NULL},
  };
  static const luaL_Reg timer_methods[] = {
    {"start", tm_start},
    {"stop", tm_stop},
    {"active", tm_active},
    {"unref", tm_unref},
    {"close", tm_close},
    {NULL, NULL},
  };
  static const luaL_Reg plain[] = {
    {"run", l_run},
    {"stop", l_stop},
    {"now", l_now},
    {"handles", l_handles},
    {NULL, NULL},
  };
  static const luaL_Reg with_mt[] = {
    {"after", l_after},
    {"every", l_every},
    {"signal", l_signal},
    {"watch", l_watch},
    {"poll", l_poll},
    {NULL, NULL},
  };
  zv_loop_t *loop = zv_loop_of(L);
  lua_newtable(L);
  luaL_register(L, NULL, plain);
  lua_pushlightuserdata(L, loop);
  lua_pushcclosure(L, l_spawn, 1);
  lua_setfield(L, -2, "spawn");
  lua_pushlightuserdata(L, loop);
  lua_pushcclosure(L, l_resume, 1);
  lua_setfield(L, -2, "resume");
  lua_pushlightuserdata(L, loop);
  lua_pushcclosure(L, l_complete, 1);
  lua_setfield(L, -2, "complete");
  luaL_newmetatable(L, HANDLE_MT);
  lua_newtable(L);
  luaL_register(L, NULL, methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, h_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, h_tostring);
  lua_setfield(L, -2, "__tostring");
  for (const luaL_Reg *r = with_mt; r->name; r++) {
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, r->func, 1);
    lua_setfield(L, -3, r->name);
  }
  lua_pop(L, 1);
  luaL_newmetatable(L, TIMER_MT);
  lua_newtable(L);
  luaL_register(L, NULL, timer_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, tm_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, tm_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcclosure(L, l_timer, 1);
  lua_setfield(L, -2, "timer");
  return 1;
}
