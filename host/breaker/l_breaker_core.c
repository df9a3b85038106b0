/*
 * l_breaker_core.c: the zever.breaker_core binding (lua/adapters/breaker/inproc.lua wraps it).
 *
 *   core.open(name, cfg)              -> handle | nil, message, code   (shared by name)
 *   core.new(cfg)                     -> handle | nil, message, code   (private: this state's)
 *       cfg: { failure_rate, slow_rate, slow_ns (0: none), open_ns, window, min_calls,
 *              half_open_calls }  (checked by the front-end; out of range gives INVAL)
 *   handle:allow([now_ns])            -> 0 go | 1 open | 2 trials taken, retry_ns
 *   handle:record(failed, took_ns[, now_ns]) -> state (0 closed, 1 open, 2 half open)
 *   handle:stats([now_ns])            -> { state, calls, failures, slow, rejected, opened,
 *                                          retry_ns }
 *   handle:cfg()                      -> the options the breaker was created with
 *   handle:reset()                    closed, with an empty window
 *   handle:ptr()                      -> lightuserdata (the zv_breaker_t *, for the FFI)
 *   handle:release()                  drops this state's reference (also __gc)
 *   core.clock()                      -> the monotonic clock in nanoseconds
 *
 * now_ns absent or 0 reads the monotonic clock. Using a released handle raises.
 */
#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "breaker.h"

#define MT "zever.breaker_core"

static zv_breaker_t *check(lua_State *L) {
  return zv_l_checkhandle(L, MT, "breaker");
}

static int l_ptr(lua_State *L) {
  lua_pushlightuserdata(L, check(L));
  return 1;
}

static int l_release(lua_State *L) {
  void **slot = luaL_checkudata(L, 1, MT);
  if (*slot) zv_breaker_release(*slot);
  *slot = NULL;
  return 0;
}

static int l_clock(lua_State *L) {
  lua_pushnumber(L, (lua_Number)zv_breaker_clock());
  return 1;
}

static lua_Number field(lua_State *L, const char *k) {
  lua_getfield(L, 2, k);
  lua_Number v = luaL_optnumber(L, -1, 0);
  lua_pop(L, 1);
  return v;
}

static uint32_t count(lua_Number v) {
  return v >= 1 && v <= 4e9 ? (uint32_t)v : 0;
}

/* The options table at index 2. */
static void read_cfg(lua_State *L, zv_breaker_cfg_t *out) {
  zv_breaker_cfg_t cfg;
  cfg.failure_rate = field(L, "failure_rate");
  cfg.slow_rate = field(L, "slow_rate");
  lua_Number slow = field(L, "slow_ns"), open = field(L, "open_ns");
  cfg.slow_ns = slow > 0 ? (uint64_t)slow : 0;
  cfg.open_ns = open > 0 ? (uint64_t)open : 0;
  cfg.window = count(field(L, "window"));
  cfg.min_calls = count(field(L, "min_calls"));
  cfg.half_open_calls = count(field(L, "half_open_calls"));
  *out = cfg;
}

static int l_open(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  zv_breaker_cfg_t cfg;
  read_cfg(L, &cfg);
  void **slot = zv_l_newhandle(L, MT);
  zv_breaker_t *b;
  int rc = zv_breaker_open(name, &cfg, &b);
  if (rc) return zv_l_fail(L, rc);
  *slot = b;
  return 1;
}

static int l_new(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_pushvalue(L, 1);   /* the options at index 2, as read_cfg wants them */
  zv_breaker_cfg_t cfg;
  read_cfg(L, &cfg);
  void **slot = zv_l_newhandle(L, MT);
  zv_breaker_t *b;
  int rc = zv_breaker_new(&cfg, &b);
  if (rc) return zv_l_fail(L, rc);
  *slot = b;
  return 1;
}

static int l_allow(lua_State *L) {
  uint64_t retry = 0;
  int rc = zv_breaker_allow(check(L), zv_l_opt_u64(L, 2), &retry);
  lua_pushinteger(L, rc);
  lua_pushnumber(L, (lua_Number)retry);
  return 2;
}

static int l_record(lua_State *L) {
  zv_breaker_t *b = check(L);
  int failed = lua_toboolean(L, 2);
  lua_pushinteger(L, zv_breaker_record(b, failed, zv_l_opt_u64(L, 3), zv_l_opt_u64(L, 4)));
  return 1;
}

static int l_stats(lua_State *L) {
  zv_breaker_stats_t st;
  zv_breaker_stats(check(L), zv_l_opt_u64(L, 2), &st);
  lua_createtable(L, 0, 7);
  zv_l_setnumber(L, "state", st.state);
  zv_l_setnumber(L, "calls", st.calls);
  zv_l_setnumber(L, "failures", st.failures);
  zv_l_setnumber(L, "slow", st.slow);
  zv_l_setnumber(L, "rejected", (double)st.rejected);
  zv_l_setnumber(L, "opened", (double)st.opened);
  zv_l_setnumber(L, "retry_ns", (double)st.retry_ns);
  return 1;
}

static int l_cfg(lua_State *L) {
  zv_breaker_cfg_t c;
  zv_breaker_cfg(check(L), &c);
  lua_createtable(L, 0, 7);
  zv_l_setnumber(L, "failure_rate", c.failure_rate);
  zv_l_setnumber(L, "slow_rate", c.slow_rate);
  zv_l_setnumber(L, "slow_ns", (double)c.slow_ns);
  zv_l_setnumber(L, "open_ns", (double)c.open_ns);
  zv_l_setnumber(L, "window", c.window);
  zv_l_setnumber(L, "min_calls", c.min_calls);
  zv_l_setnumber(L, "half_open_calls", c.half_open_calls);
  return 1;
}

static int l_reset(lua_State *L) {
  zv_breaker_reset(check(L));
  return 0;
}

static const luaL_Reg methods[] = {
  {"allow", l_allow},
  {"record", l_record},
  {"stats", l_stats},
  {"cfg", l_cfg},
  {"reset", l_reset},
  {"ptr", l_ptr},
  {"release", l_release},
  {NULL, NULL},
};

static const luaL_Reg funcs[] = {
  {"open", l_open},
  {"new", l_new},
  {"clock", l_clock},
  {NULL, NULL},
};

int luaopen_zever_breaker_core(lua_State *L);
int luaopen_zever_breaker_core(lua_State *L) {
  zv_l_newclass(L, MT, methods, l_release, funcs);
  lua_pushinteger(L, ZV_BREAKER_MAX_NAME);
  lua_setfield(L, -2, "MAX_NAME");
  return 1;
}
