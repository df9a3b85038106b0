/*
 * l_flag_core.c: the zever.flag_core binding: the classic-API door to host/flag/ for hosts
 * without the FFI symbol (adapters.flag.rules prefers zv_flag_bucket through the FFI).
 *
 *   core.bucket(name, key) -> 0..9999
 *
 * Must not keep state or allocate.
 */
#include <lauxlib.h>
#include <lua.h>

#include "flag.h"

static int l_bucket(lua_State *L) {
  size_t nlen, klen;
  const char *name = luaL_checklstring(L, 1, &nlen);
  const char *key = luaL_checklstring(L, 2, &klen);
  lua_pushinteger(L, (lua_Integer)zv_flag_bucket(name, nlen, key, klen));
  return 1;
}

static const luaL_Reg funcs[] = {
  {"bucket", l_bucket},
  {NULL, NULL},
};

int luaopen_zever_flag_core(lua_State *L);
int luaopen_zever_flag_core(lua_State *L) {
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  return 1;
}
