/*
 * l_lock_core.c: the zever.lock_core binding (lua/adapters/lock/memory.lua wraps it).
 *
 *   core.open(name)                                  -> handle | nil, message, code
 *   handle:acquire(key, ttl_ns[, now_ns])            -> fence | false (held) | nil, message, code
 *   handle:extend(key, fence, ttl_ns[, now_ns])      -> true | false (not held) | nil, message, code
 *   handle:unlock(key, fence[, now_ns])              -> true | false (not held) | nil, message, code
 *   handle:holder(key[, now_ns])                     -> fence, left_ns | false
 *   handle:sweep(max_steps[, now_ns])                -> removed, more
 *   handle:clear()                                   drops every entry
 *   handle:stats()                                   -> { entries, acquired, contended, expired }
 *   handle:ptr()                                     -> lightuserdata (the zv_lock_t *, for the FFI)
 *   handle:release()                                 drops this state's reference (also __gc)
 *   core.clock()                                     -> the monotonic clock in nanoseconds
 *   core.MAX_KEY                                     -> 1024
 *
 * Fences are whole numbers below 2^53 (a number holds them exactly: 2^53 acquisitions would
 * take a century at a billion a second). now_ns absent or 0 reads the monotonic clock. Codes
 * are zv_errname names ("TOOLONG", "INVAL", "NOMEM"). Using a released handle raises.
 */
#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "lock.h"

#define MT "zever.lock_core"

static zv_lock_t *check(lua_State *L) {
  return zv_l_checkhandle(L, MT, "lock");
}

ZV_L_STORE_METHODS(zv_lock, MT, "lock")

static int l_open(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  void **slot = zv_l_newhandle(L, MT);
  zv_lock_t *l;
  int rc = zv_lock_open(name, &l);
  if (rc) return zv_l_fail(L, rc);
  *slot = l;
  return 1;
}

static uint64_t check_fence(lua_State *L, int i) {
  lua_Number n = luaL_checknumber(L, i);
  return n >= 1 ? (uint64_t)n : 0;
}

/* 0 -> true, 1 -> false, < 0 -> nil, message, code. */
static int outcome(lua_State *L, int rc) {
  if (rc < 0) return zv_l_fail(L, rc);
  lua_pushboolean(L, rc == 0);
  return 1;
}

static int l_acquire(lua_State *L) {
  zv_lock_t *l = check(L);
  size_t len;
  const char *key = luaL_checklstring(L, 2, &len);
  uint64_t fence = 0;
  int rc = zv_lock_acquire(l, key, len, zv_l_opt_u64(L, 3), zv_l_opt_u64(L, 4), &fence);
  if (rc) return outcome(L, rc);
  lua_pushnumber(L, (lua_Number)fence);
  return 1;
}

static int l_extend(lua_State *L) {
  zv_lock_t *l = check(L);
  size_t len;
  const char *key = luaL_checklstring(L, 2, &len);
  return outcome(L, zv_lock_extend(l, key, len, check_fence(L, 3), zv_l_opt_u64(L, 4),
                                   zv_l_opt_u64(L, 5)));
}

static int l_unlock(lua_State *L) {
  zv_lock_t *l = check(L);
  size_t len;
  const char *key = luaL_checklstring(L, 2, &len);
  return outcome(L, zv_lock_unlock(l, key, len, check_fence(L, 3), zv_l_opt_u64(L, 4)));
}

static int l_holder(lua_State *L) {
  zv_lock_t *l = check(L);
  size_t len;
  const char *key = luaL_checklstring(L, 2, &len);
  uint64_t fence, left;
  int rc = zv_lock_holder(l, key, len, zv_l_opt_u64(L, 3), &fence, &left);
  if (rc) return zv_l_fail(L, rc);
  if (!fence) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_pushnumber(L, (lua_Number)fence);
  lua_pushnumber(L, (lua_Number)left);
  return 2;
}

static int l_clear(lua_State *L) {
  zv_lock_clear(check(L));
  return 0;
}

static int l_stats(lua_State *L) {
  zv_lock_stats_t st;
  zv_lock_stats(check(L), &st);
  lua_createtable(L, 0, 4);
  zv_l_setnumber(L, "entries", (double)st.entries);
  zv_l_setnumber(L, "acquired", (double)st.acquired);
  zv_l_setnumber(L, "contended", (double)st.contended);
  zv_l_setnumber(L, "expired", (double)st.expired);
  return 1;
}

static const luaL_Reg methods[] = {
  {"acquire", l_acquire},
  {"extend", l_extend},
  {"unlock", l_unlock},
  {"holder", l_holder},
  {"sweep", l_sweep},
  {"clear", l_clear},
  {"stats", l_stats},
  {"ptr", l_ptr},
  {"release", l_release},
  {NULL, NULL},
};

static const luaL_Reg funcs[] = {
  {"open", l_open},
  {"clock", l_clock},
  {NULL, NULL},
};

int luaopen_zever_lock_core(lua_State *L);
int luaopen_zever_lock_core(lua_State *L) {
  zv_l_newclass(L, MT, methods, l_release, funcs);
  lua_pushinteger(L, ZV_LOCK_MAX_KEY);
  lua_setfield(L, -2, "MAX_KEY");
  return 1;
}
