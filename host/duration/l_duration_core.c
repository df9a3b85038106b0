/*
 * l_duration_core.c: the zever.duration_core binding, the classic Lua C API over the duration
 * core. lua/zever/duration.lua wraps it (and calls the core through LuaJIT's FFI on the per-call
 * paths, which the classic API cannot get JIT-compiled); applications require zever.duration.
 *
 *   core.parse(s, accept, days)          -> seconds         | nil, code, format, at, len
 *   core.parse_ns(s, accept, days)       -> hi, lo          | nil, code, format, at, len
 *   core.format(hi, lo, fmt, days)       -> string
 *   core.format_seconds(x, fmt, days)    -> string          | nil (NaN or out of int64 ns)
 *   core.cause_text(code, format, at, len[, input])  -> `unknown unit "x"`
 *   core.message(input, quote, write, accept)        -> `invalid duration "1x": want ...`
 *   core.format_id(name)                 -> 1, 2, 4         | nil
 *   core.ISO8601, core.UNITS, core.NANO, core.ALL; core.causes: code -> name ("UNIT")
 *
 * int64 nanoseconds cross the classic API as two integers, hi (signed) and lo (unsigned), each
 * 32 bits: ns = hi * 2^32 + lo. accept is a mask of the format bits, days a boolean. Wrong
 * argument types raise; a rejected input returns nil and the cause's four fields. Nothing here
 * allocates outside the Lua strings it returns, and nothing raises while holding C memory.
 */
#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "duration.h"

static int push_cause(lua_State *L, const zv_duration_cause_t *c) {
  lua_pushnil(L);
  lua_pushinteger(L, c->code);
  lua_pushinteger(L, c->format);
  lua_pushinteger(L, c->at);
  lua_pushinteger(L, c->len);
  return 5;
}

static int check_parse(lua_State *L, int64_t *ns, zv_duration_cause_t *c) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  unsigned accept = (unsigned)luaL_checkinteger(L, 2);
  int days = lua_toboolean(L, 3);
  return zv_duration_parse(s, len, accept, days, ns, c);
}

static int l_parse(lua_State *L) {
  int64_t ns;
  zv_duration_cause_t c;
  if (check_parse(L, &ns, &c)) return push_cause(L, &c);
  lua_pushnumber(L, (lua_Number)ns / 1e9);
  return 1;
}

static int l_parse_ns(lua_State *L) {
  int64_t ns;
  zv_duration_cause_t c;
  if (check_parse(L, &ns, &c)) return push_cause(L, &c);
  lua_pushinteger(L, (lua_Integer)(ns >> 32));
  lua_pushinteger(L, (lua_Integer)(uint32_t)ns);
  return 2;
}

static int push_format(lua_State *L, int64_t ns, int fmt_arg) {
  char buf[ZV_DURATION_BUFSIZE];
  size_t len;
  unsigned fmt = (unsigned)luaL_checkinteger(L, fmt_arg);
  int rc = zv_duration_format(ns, fmt, lua_toboolean(L, fmt_arg + 1), buf, sizeof buf, &len);
  if (rc) return luaL_argerror(L, fmt_arg, "unknown format");
  lua_pushlstring(L, buf, len);
  return 1;
}

static int l_format(lua_State *L) {
  lua_Integer hi = luaL_checkinteger(L, 1), lo = luaL_checkinteger(L, 2);
  uint64_t u = ((uint64_t)(uint32_t)hi << 32) | (uint32_t)lo;
  return push_format(L, (int64_t)u, 3);
}

static int l_format_seconds(lua_State *L) {
  int64_t ns;
  if (zv_duration_from_seconds(luaL_checknumber(L, 1), &ns)) {
    lua_pushnil(L);
    return 1;
  }
  return push_format(L, ns, 2);
}

static int l_cause_text(lua_State *L) {
  char buf[ZV_DURATION_MSGSIZE];
  zv_duration_cause_t c;
  size_t len = 0, n;
  const char *input = luaL_optlstring(L, 5, NULL, &len);
  c.code = (int32_t)luaL_checkinteger(L, 1);
  c.format = (int32_t)luaL_checkinteger(L, 2);
  c.at = (int32_t)luaL_checkinteger(L, 3);
  c.len = (int32_t)luaL_checkinteger(L, 4);
  n = zv_duration_cause_text(&c, input, len, buf, sizeof buf);
  lua_pushlstring(L, buf, n);
  return 1;
}

static int l_message(lua_State *L) {
  char buf[ZV_DURATION_MSGSIZE];
  size_t len, n;
  const char *input = luaL_checklstring(L, 1, &len);
  int quote = lua_toboolean(L, 2);
  unsigned write = (unsigned)luaL_checkinteger(L, 3);
  unsigned accept = (unsigned)luaL_checkinteger(L, 4);
  n = zv_duration_message(input, len, quote, write, accept, buf, sizeof buf);
  lua_pushlstring(L, buf, n);
  return 1;
}

static int l_format_id(lua_State *L) {
  size_t len;
  const char *name = luaL_checklstring(L, 1, &len);
  unsigned id = zv_duration_format_id(name, len);
  if (id)
    lua_pushinteger(L, (lua_Integer)id);
  else
    lua_pushnil(L);
  return 1;
}

static const luaL_Reg funcs[] = {
  {"parse", l_parse},
  {"parse_ns", l_parse_ns},
  {"format", l_format},
  {"format_seconds", l_format_seconds},
  {"cause_text", l_cause_text},
  {"message", l_message},
  {"format_id", l_format_id},
  {NULL, NULL},
};

static const char *const cause_names[] = {
#define ZV__X(name, tmpl) #name,
  ZV_DURATION_CAUSE_MAP(ZV__X)
#undef ZV__X
};

int luaopen_zever_duration_core(lua_State *L);
int luaopen_zever_duration_core(lua_State *L) {
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  lua_pushinteger(L, ZV_DURATION_ISO8601);
  lua_setfield(L, -2, "ISO8601");
  lua_pushinteger(L, ZV_DURATION_UNITS);
  lua_setfield(L, -2, "UNITS");
  lua_pushinteger(L, ZV_DURATION_NANO);
  lua_setfield(L, -2, "NANO");
  lua_pushinteger(L, ZV_DURATION_ALL);
  lua_setfield(L, -2, "ALL");
  lua_createtable(L, ZV_DURATION_CMAX, 0);
  for (int i = 0; i < ZV_DURATION_CMAX; i++) {
    lua_pushstring(L, cause_names[i]);
    lua_rawseti(L, -2, i);
  }
  lua_setfield(L, -2, "causes");
  return 1;
}
