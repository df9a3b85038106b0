/*
 * lx_watchdog.c: the handler watchdog of zever.http (handler_timeout; l_http.c's file comment
 * says what it does for the application): a thread per server that watches the worker's
 * handler runs, and the count hook it has the worker set (through WD_SIGNAL) to interrupt a
 * handler that runs too long without yielding.
 *
 * It must not call into Lua from its own thread (only lua_sethook, from the worker's signal
 * handler), and costs the worker three stores per request (on_request).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "lx_http.h"
#include "server.h"

/* --- the watchdog --------------------------------------------------------------------------- */

/* The watchdog of the server whose handler runs on this thread (set per request; a worker
 * thread runs one Lua state, so the hook finds it here). */
__thread wdog_t *zv__http_running_wd;

/* The count hook, on the worker thread: raises in the handler the watchdog caught, or removes
 * itself when that handler is over (the watchdog raced with its end). */
static void wd_hook(lua_State *L, lua_Debug *ar) {
  wdog_t *wd = zv__http_running_wd;
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
    zv__http_detach(r);
    zv__http_answer_internal(c);
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
  wdog_t *wd = zv__http_running_wd;
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
int zv__http_wd_start(wdog_t *wd, lua_State *L, uint64_t limit_ms) {
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

void zv__http_wd_stop(wdog_t *wd) {
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
  if (zv__http_running_wd == wd) zv__http_running_wd = NULL;
}

/* Drops the watchdog's pin on its thread (when the state is still there to drop it from). */
void zv__http_wd_unref(wdog_t *wd, lua_State *L) {
  if (wd->L_ref != LUA_NOREF && L) luaL_unref(L, LUA_REGISTRYINDEX, wd->L_ref);
  wd->L_ref = LUA_NOREF;
}

