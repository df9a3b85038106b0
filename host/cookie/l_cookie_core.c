/*
 * l_cookie_core.c: the zever.cookie_core binding over the Cookie header parser (cookie.c);
 * lua/zever/cookie.lua wraps it.
 *
 *   core.parse(header[, max])   -> { name = value, ... }  the first of a repeated name wins
 *                                  (RFC 6265 sends the most specific path first); at most max
 *                                  pairs are kept (default 256), the rest ignored
 *   core.get(header, name)      -> value | nil            (no table built; zever.cookie calls
                                                         zv_cookie_find through the FFI instead)
 *   core.is_token(s)            -> boolean                a valid cookie name
 *   core.is_value(s)            -> boolean                a valid Set-Cookie value
 *
 * A non-string header raises (misuse); any string parses (hostile input is dropped pair by
 * pair). Nothing here allocates outside the Lua values it returns.
 */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "cookie.h"

static int l_parse(lua_State *L) {
  size_t len, pos = 0;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_Integer max = luaL_optinteger(L, 2, 256), n = 0;
  zv_cookie_pair_t p;
  lua_newtable(L);
  while (n < max && zv_cookie_next(s, len, &pos, &p)) {
    lua_pushlstring(L, p.name, p.name_len);
    lua_rawget(L, -2);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_pushlstring(L, p.name, p.name_len);
      lua_pushlstring(L, p.value, p.value_len);
      lua_rawset(L, -3);
      n++;
    } else {
      lua_pop(L, 1);
    }
  }
  return 1;
}

static int l_get(lua_State *L) {
  size_t len, nlen, vpos, vlen;
  const char *s = luaL_checklstring(L, 1, &len);
  const char *name = luaL_checklstring(L, 2, &nlen);
  if (zv_cookie_find(s, len, name, nlen, &vpos, &vlen))
    lua_pushlstring(L, s + vpos, vlen);
  else
    lua_pushnil(L);
  return 1;
}

static int l_is_token(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_pushboolean(L, zv_cookie_is_token(s, len));
  return 1;
}

static int l_is_value(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_pushboolean(L, zv_cookie_is_value(s, len));
  return 1;
}

int luaopen_zever_cookie_core(lua_State *L);
int luaopen_zever_cookie_core(lua_State *L) {
  static const luaL_Reg funcs[] = {
    {"parse", l_parse}, {"get", l_get}, {"is_token", l_is_token}, {"is_value", l_is_value},
    {NULL, NULL}};
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  return 1;
}
