/*
 * lbind.h: small helpers that several bindings share (bindings only: it includes lua.h, so no
 * core may include it).
 */
#ifndef ZV_LBIND_H
#define ZV_LBIND_H

#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/zv.h"

/* Returns nil, the error's name ("NOMEM") and its message: an expected failure, for Lua. */
static inline int zv_l_fail(lua_State *L, int rc) {
  lua_pushnil(L);
  lua_pushstring(L, zv_errname(rc));
  lua_pushstring(L, zv_strerror(rc));
  return 3;
}

/* Argument i as a whole number of nanoseconds (a clock, a TTL): 0 when absent or not positive. */
static inline uint64_t zv_l_opt_u64(lua_State *L, int i) {
  lua_Number n = luaL_optnumber(L, i, 0);
  return n > 0 ? (uint64_t)n : 0;
}

#endif
