/*
 * l_cron.c: the zever.cron binding: cron specs parsed once into a small userdata, then asked for
 * their next fire time. No Lua wrapper: the scheduler calls next() once per slot, so the classic
 * API's cost does not matter.
 *
 *   cron.parse(spec)      -> schedule | nil, "minute: 61 is out of range 0-59"
 *   schedule:next(t)      -> the first minute strictly after t (Unix seconds, UTC) that matches
 *                            | nil, "out of range" (t before year 1 or after 9999)
 *   schedule:matches(t)   -> true when the minute containing t matches
 *   cron.next(spec, t)    -> cron.parse(spec):next(t), or nil, err
 *
 * t is a number (fractions are fine: the search starts at the next whole minute). A non-string
 * spec or a non-number t raises. Nothing is allocated but the userdata.
 */
#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "cron.h"

#define MT "zever.cron"

static int push_next(lua_State *L, const zv_cron_t *c, lua_Number t) {
  int64_t out;
  /* Compare as doubles first: a NaN or a huge t must not reach the int64 conversion. */
  if (!(t >= (lua_Number)ZV_CRON_TIME_MIN && t <= (lua_Number)ZV_CRON_TIME_MAX) ||
      zv_cron_next(c, (int64_t)t - (t < 0 && (lua_Number)(int64_t)t != t), &out)) {
    lua_pushnil(L);
    lua_pushliteral(L, "cron: time out of range (years 1-9999)");
    return 2;
  }
  lua_pushnumber(L, (lua_Number)out);
  return 1;
}

static int parse(lua_State *L, zv_cron_t *c) {
  size_t len;
  char err[ZV_CRON_ERRSIZE];
  const char *s = luaL_checklstring(L, 1, &len);
  if (zv_cron_parse(s, len, c, err, sizeof err)) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  return 0;
}

static int l_parse(lua_State *L) {
  zv_cron_t c;
  int n = parse(L, &c);
  if (n) return n;
  zv_cron_t *u = (zv_cron_t *)lua_newuserdata(L, sizeof *u);
  *u = c;
  luaL_getmetatable(L, MT);
  lua_setmetatable(L, -2);
  return 1;
}

static int l_next_spec(lua_State *L) {
  zv_cron_t c;
  lua_Number t = luaL_checknumber(L, 2);
  int n = parse(L, &c);
  if (n) return n;
  return push_next(L, &c, t);
}

static int l_next(lua_State *L) {
  const zv_cron_t *c = (const zv_cron_t *)luaL_checkudata(L, 1, MT);
  return push_next(L, c, luaL_checknumber(L, 2));
}

static int l_matches(lua_State *L) {
  const zv_cron_t *c = (const zv_cron_t *)luaL_checkudata(L, 1, MT);
  lua_Number t = luaL_checknumber(L, 2);
  if (!(t >= (lua_Number)ZV_CRON_TIME_MIN && t <= (lua_Number)ZV_CRON_TIME_MAX)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  int64_t i = (int64_t)t;
  if ((lua_Number)i > t) i--; /* floor for negative fractions */
  lua_pushboolean(L, zv_cron_match(c, i));
  return 1;
}

static int l_tostring(lua_State *L) {
  luaL_checkudata(L, 1, MT);
  lua_pushfstring(L, "zever.cron: %p", lua_topointer(L, 1));
  return 1;
}

int luaopen_zever_cron(lua_State *L);
int luaopen_zever_cron(lua_State *L) {
  static const luaL_Reg methods[] = {{"next", l_next}, {"matches", l_matches}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {{"parse", l_parse}, {"next", l_next_spec}, {NULL, NULL}};
  if (luaL_newmetatable(L, MT)) {
    lua_newtable(L);
    luaL_register(L, NULL, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  return 1;
}
