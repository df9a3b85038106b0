/*
 * l_limiter_core.c: the zever.limiter_core binding (lua/zever/limiter.lua and the memory
 * adapter wrap it; the per-call path there goes through LuaJIT's FFI to limiter.h).
 *
 *   core.open(name, rate, burst, max_entries, idle) -> handle | nil, message, code
 *   handle:allow(key, cost[, now_ns])  -> allowed, remaining, retry_after | nil, message, code
 *   handle:reset(key)                  -> existed                         | nil, message, code
 *   handle:sweep(max_steps[, now_ns])  -> removed, more
 *   handle:stats()                     -> { entries, max_entries, evictions, expired }
 *   handle:ptr()                       -> lightuserdata (the zv_limiter_t *, for the FFI)
 *   handle:release()                   -> drops this state's reference (also done by __gc)
 *   core.clock()                       -> the monotonic clock in nanoseconds (a number)
 *   core.MAX_KEY                       -> 256
 *
 * now_ns absent or 0 reads the monotonic clock; specs pass a fake one. Codes are zv_errname
 * names ("TOOLONG", "INVAL", "CONFLICT", "NOMEM"). Using a released handle raises.
 */
#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "limiter.h"

#define MT "zever.limiter_core"

static zv_limiter_t *check(lua_State *L) {
  return zv_l_checkhandle(L, MT, "limiter");
}

ZV_L_STORE_METHODS(zv_limiter, MT, "limiter")

static int l_open(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  zv_limiter_opts_t o;
  o.rate = luaL_checknumber(L, 2);
  o.burst = luaL_checknumber(L, 3);
  lua_Number max = luaL_checknumber(L, 4);
  o.max_entries = max >= 1 ? (size_t)max : 0;
  o.idle = luaL_optnumber(L, 5, 0);
  void **slot = zv_l_newhandle(L, MT);
  zv_limiter_t *l;
  int rc = zv_limiter_open(name, &o, &l);
  if (rc) return zv_l_fail(L, rc);
  *slot = l;
  return 1;
}

static int l_allow(lua_State *L) {
  zv_limiter_t *l = check(L);
  size_t len;
  const char *key = luaL_checklstring(L, 2, &len);
  double cost = luaL_optnumber(L, 3, 1);
  zv_limiter_result_t r;
  int rc = zv_limiter_allow(l, key, len, cost, zv_l_opt_u64(L, 4), &r);
  if (rc) return zv_l_fail(L, rc);
  lua_pushboolean(L, r.allowed);
  lua_pushnumber(L, r.remaining);
  lua_pushnumber(L, r.retry_after);
  return 3;
}

static int l_reset(lua_State *L) {
  zv_limiter_t *l = check(L);
  size_t len;
  const char *key = luaL_checklstring(L, 2, &len);
  int existed;
  int rc = zv_limiter_reset(l, key, len, &existed);
  if (rc) return zv_l_fail(L, rc);
  lua_pushboolean(L, existed);
  return 1;
}

static int l_stats(lua_State *L) {
  zv_limiter_t *l = check(L);
  zv_limiter_stats_t st;
  zv_limiter_stats(l, &st);
  lua_createtable(L, 0, 4);
  zv_l_setnumber(L, "entries", (double)st.entries);
  zv_l_setnumber(L, "max_entries", (double)st.max_entries);
  zv_l_setnumber(L, "evictions", (double)st.evictions);
  zv_l_setnumber(L, "expired", (double)st.expired);
  return 1;
}

static const luaL_Reg methods[] = {
  {"allow", l_allow},
  {"reset", l_reset},
  {"sweep", l_sweep},
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

int luaopen_zever_limiter_core(lua_State *L);
int luaopen_zever_limiter_core(lua_State *L) {
  zv_l_newclass(L, MT, methods, l_release, funcs);
  lua_pushinteger(L, ZV_LIMITER_MAX_KEY);
  lua_setfield(L, -2, "MAX_KEY");
  return 1;
}
