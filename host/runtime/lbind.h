/*
 * lbind.h: small helpers that several bindings share (bindings only: it includes lua.h, so no
 * core may include it).
 */
#ifndef ZV_LBIND_H
#define ZV_LBIND_H

#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"

/*
 * An expected failure, for Lua: pushes nil, message, code and returns 3 (luv's order: the
 * message for people, the code for programs). code is a name, never a number: zv.h's table for
 * a core's error ("NOMEM", "TOOLONG": zv_errname, which zever.sys.E exports) or the binding's
 * own kind when the core has a finer one (zever.sqlite's "constraint", "busy"). Misuse raises
 * instead (luaL_error), as the standard library does. Every binding reports this way.
 */
static inline int zv_l_failure(lua_State *L, const char *message, const char *code) {
  lua_pushnil(L);
  lua_pushstring(L, message);
  lua_pushstring(L, code);
  return 3;
}

/* zv_l_failure for a core's return code rc (< 0): nil, zv_strerror(rc), zv_errname(rc). */
static inline int zv_l_fail(lua_State *L, int rc) {
  return zv_l_failure(L, zv_strerror(rc), zv_errname(rc));
}

/* Argument i as a whole number of nanoseconds (a clock, a TTL): 0 when absent or not positive. */
static inline uint64_t zv_l_opt_u64(lua_State *L, int i) {
  lua_Number n = luaL_optnumber(L, i, 0);
  return n > 0 ? (uint64_t)n : 0;
}

/*
 * Handle classes: a userdata holding one pointer to a process-wide core object (a cache, a
 * limiter, ...). zv_l_newmeta registers the metatable mt (methods as __index, gc as __gc);
 * zv_l_newclass does that and leaves a new table of funcs on the stack: the module. zv_l_newhandle pushes a handle with a
 * NULL pointer, so that __gc of a failed open has nothing to release; the caller fills the slot
 * it returns. zv_l_checkhandle returns the pointer of handle 1 and raises "<what>: the handle
 * was released" once release cleared it.
 */
static inline void zv_l_newmeta(lua_State *L, const char *mt, const luaL_Reg *methods,
                                lua_CFunction gc) {
  luaL_newmetatable(L, mt);
  lua_newtable(L);
  luaL_register(L, NULL, methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
}

static inline void zv_l_newclass(lua_State *L, const char *mt, const luaL_Reg *methods,
                                 lua_CFunction gc, const luaL_Reg *funcs) {
  zv_l_newmeta(L, mt, methods, gc);
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
}

static inline void **zv_l_newhandle(lua_State *L, const char *mt) {
  void **slot = lua_newuserdata(L, sizeof *slot);
  *slot = NULL;
  luaL_getmetatable(L, mt);
  lua_setmetatable(L, -2);
  return slot;
}

static inline void *zv_l_checkhandle(lua_State *L, const char *mt, const char *what) {
  void **slot = luaL_checkudata(L, 1, mt);
  if (!*slot) luaL_error(L, "%s: the handle was released", what);
  return *slot;
}

/*
 * The four methods every handle class over a shared store has, made from its core's functions
 * (P##_sweep(h, now_ns, max_steps, &more) -> removed, P##_release(h), P##_clock()), so the
 * cache, idempotency, limiter and lock bindings declare them once (MT_ the metatable, WHAT
 * the name in the released-handle error):
 *   handle:sweep(max_steps[, now_ns]) -> removed, more    handle:ptr() -> lightuserdata
 *   handle:release()                                      core.clock() -> monotonic ns
 */
#define ZV_L_STORE_METHODS(P, MT_, WHAT)                                                     \
  static int l_sweep(lua_State *L) {                                                        \
    lua_Number steps = luaL_checknumber(L, 2);                                               \
    int more;                                                                                \
    size_t removed = P##_sweep(zv_l_checkhandle(L, MT_, WHAT), zv_l_opt_u64(L, 3),           \
                               steps > 0 ? (size_t)steps : 0, &more);                        \
    lua_pushnumber(L, (lua_Number)removed);                                                  \
    lua_pushboolean(L, more);                                                                \
    return 2;                                                                                \
  }                                                                                          \
  static int l_ptr(lua_State *L) {                                                          \
    lua_pushlightuserdata(L, zv_l_checkhandle(L, MT_, WHAT));                                \
    return 1;                                                                                \
  }                                                                                          \
  static int l_release(lua_State *L) {                                                      \
    void **slot = luaL_checkudata(L, 1, MT_);                                                \
    if (*slot) P##_release(*slot);                                                           \
    *slot = NULL;                                                                            \
    return 0;                                                                                \
  }                                                                                          \
  static int l_clock(lua_State *L) {                                                        \
    lua_pushnumber(L, (lua_Number)P##_clock());                                              \
    return 1;                                                                                \
  }

/* Sets field k of the table on top of the stack to the number v. */
static inline void zv_l_setnumber(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

#endif
