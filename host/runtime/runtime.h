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
 * Creates a Lua state set up exactly like the CLI's: standard libraries, every C module in
 * package.preload as zever.<name> (and its FFI declarations as zever.cdef.<name>), package.path
 * pointing at the zever home first. Returns NULL when the home cannot be found or memory runs
 * out. The caller owns the state (lua_close).
 */
lua_State *zv_runtime_newstate(void);

#endif
