/*
 * host.h: what main.c offers to bindings that create Lua states of their own (worker threads).
 */
#ifndef ZV_HOST_H
#define ZV_HOST_H

#include <lua.h>

/*
 * Creates a Lua state set up exactly like the CLI's: standard libraries, every C module in
 * package.preload as zever.<name>, package.path pointing at the zever home first. Returns NULL
 * when the home cannot be found or memory runs out. The caller owns the state (lua_close).
 */
lua_State *zv_host_newstate(void);

#endif
