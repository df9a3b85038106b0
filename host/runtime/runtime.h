/*
 * runtime.h: what bindings may share besides lbind.h: the event loop of a Lua state, the
 * protected call every loop callback goes through, and a fresh Lua state for a worker thread.
 *
 * host/runtime/ is the layer under the bindings: a binding (host/<name>/l_*.c, lx_*.c) includes
 * runtime/, host/core/ and its own folder, never another module's binding header. The runtime
 * is built into the host only; benchmarks and fuzz targets link cores without Lua and never see
 * it. It must not include another module's binding (it may use a core: loop/loop.h).
 */
#ifndef ZV_RUNTIME_H
#define ZV_RUNTIME_H

#include <lauxlib.h>
#include <lua.h>

#include "../loop/loop.h"

/*
 * Returns the loop of L's Lua state, creating it on first use (it lives in the registry and is
 * closed, with every handle on it, when the state closes). Raises when libuv cannot start one.
 */
zv_loop_t *zv_loop_of(lua_State *L);

/*
 * Calls the function that sits below its nargs arguments on L's stack in protected mode with a
 * traceback handler. On error it writes "zever: <what>: <message and traceback>" to stderr and
 * leaves nothing; on success it leaves nresults results. Returns 0 or the lua_pcall status.
 */
int zv_loop_pcall(lua_State *L, int nargs, int nresults, const char *what);

/*
 * The coroutine pool: the one place where code of this state gets a coroutine to run in. HTTP
 * requests (zever.http, from C), jobs, timers and tests (zever.sched.spawn, through
 * zever.loop.spawn) all take theirs here, so a warm pool serves every kind of work.
 *
 * Why in C and inline: a request takes and gives back a coroutine with a few loads and stores
 * (no call into Lua, no allocation once warm), so the HTTP hot path costs what its own private
 * pool cost before. A pool in Lua (a body loop that yields back to it, as zever.sched had)
 * would cost the request a trip through the Lua VM to start.
 *
 *   co = zv_co_take(loop, L, &ref)      an idle coroutine (status 0, empty stack), or a new one
 *                                        pinned by a registry reference; ref is its reference
 *   ...push a function and its arguments on co; rc = lua_resume(co, nargs)...
 *   zv_co_done(loop, L, co, ref, rc, what)
 *     rc == 0: co finished; it goes back to the pool (reference kept; one is made when ref is
 *              LUA_NOREF, as for a coroutine that waited and was resumed by its waker), or is
 *              released when the pool is full
 *     LUA_YIELD: co waits; its reference is dropped: whatever completes the wait holds it now
 *     an error: reported (zv_co_report) and the reference dropped
 * A pooled coroutine must only be started by this pair: resuming an idle one as if it waited
 * would call whatever sits on its stack (zever.loop.resume checks for a yielded status).
 */
static inline lua_State *zv_co_take(zv_loop_t *loop, lua_State *L, int *ref) {
  lua_State *co;
  if (loop->nco > 0) {
    loop->nco--;
    *ref = loop->co_ref[loop->nco];
    return loop->co[loop->nco];
  }
  co = lua_newthread(L);
  *ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return co;
}

/*
 * The one failure reporter of coroutines: writes "zever: <what>: <message and co's traceback>"
 * to stderr, the message being the error on co's top. Leaves both stacks as they were.
 */
void zv_co_report(lua_State *L, lua_State *co, const char *what);

static inline void zv_co_done(zv_loop_t *loop, lua_State *L, lua_State *co, int ref, int rc,
                              const char *what) {
  if (rc == 0 && loop->nco < ZV_LOOP_COROUTINES) {
    lua_settop(co, 0);
    if (ref == LUA_NOREF) {
      lua_pushthread(co);
      lua_xmove(co, L, 1);
      ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    loop->co[loop->nco] = co;
    loop->co_ref[loop->nco++] = ref;
    return;
  }
  if (rc != 0 && rc != LUA_YIELD) zv_co_report(L, co, what);
  luaL_unref(L, LUA_REGISTRYINDEX, ref);
}

/*
 * The C side of zever.sched's token: the one way a waiter is woken (zever.sched.complete is
 * zever.loop.complete, which calls this; bindings that finish a wait in C call it directly).
 * Completes the token that sits below its nargs values on L's stack and pops them all:
 *   a coroutine that waits (yielded): resumed with the values, then zv_co_done (back to the
 *     pool when it finished, reported when it failed);
 *   a box (a table: a plain caller pumping the loop in zever.sched.await): box[1..nargs] set
 *     to the values and box.done = true;
 *   anything else (a coroutine that does not wait, not a token): reported on stderr as
 *     "zever: <what>: ..." and left alone (an idle pooled coroutine is never started here).
 * L must not be the coroutine itself. Raises nothing.
 */
void zv_token_complete(zv_loop_t *loop, lua_State *L, int nargs, const char *what);

/*
 * Creates a Lua state set up exactly like the CLI's: standard libraries, every C module in
 * package.preload as zever.<name> (and its FFI declarations as zever.cdef.<name>), package.path
 * pointing at the zever home first. Returns NULL when the home cannot be found or memory runs
 * out. The caller owns the state (lua_close).
 */
lua_State *zv_runtime_newstate(void);

/*
 * The end of the CLI's process (exit.c). zv_runtime_track_exit(L) wraps L's io.popen so that
 * the state remembers a child to wait for; call it once, right after zv_runtime_newstate.
 * zv_runtime_must_close(L) says whether lua_close(L) could do more than free memory (a module
 * with such finalizers loaded, an event loop, io.popen used, an ASan build, ZEVER_LUA_CLOSE=1).
 * zv_runtime_end(L, code) flushes stdout, closes L only when it must, and exits with code: it
 * does not return, and L is unusable after it.
 */
void zv_runtime_track_exit(lua_State *L);
int zv_runtime_must_close(lua_State *L);
void zv_runtime_end(lua_State *L, int code);
/* True when L has an event loop (loop_state.c). */
int zv__loop_exists(lua_State *L);

/*
 * The bundle hooks (bundle_state.c; sys/bundle.h), used only when the host runs from a bundle:
 * zv__bundle_searcher(L) puts the payload's searcher at package.loaders[2];
 * zv__bundle_dlopen(folder, err, cap) returns the handle of the payload's lib/<folder>.so,
 * loaded once per process, or NULL with a message in err.
 */
void zv__bundle_searcher(lua_State *L);
void *zv__bundle_dlopen(const char *folder, char *err, size_t cap);
/* True when the host runs from a bundle (for bindings, which do not include sys/bundle.h). */
int zv__bundle_active(void);

#endif
