/*
 * l_loop.h: what the zever.loop binding offers to other bindings (zever.http, zever.threads):
 * the loop of a Lua state and the protected call that every loop callback goes through.
 */
#ifndef ZV_L_LOOP_H
#define ZV_L_LOOP_H

#include <lua.h>

#include "loop.h"

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

#endif
