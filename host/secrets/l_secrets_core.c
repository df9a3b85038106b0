/*
 * l_secrets_core.c: the zever.secrets_core binding: the classic-API door to host/secrets/ for
 * hosts without the FFI symbol.
 *
 *   core.stat(path) -> mode, uid, euid | nil, errno
 *
 * Must not keep state or allocate.
 */
#include <lauxlib.h>
#include <lua.h>

#include "secrets.h"

static int l_stat(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uint32_t mode, uid, euid;
  int rc = zv_secrets_stat(path, &mode, &uid, &euid);
  if (rc != 0) {
    lua_pushnil(L);
    lua_pushinteger(L, -rc);
    return 2;
  }
  lua_pushinteger(L, (lua_Integer)mode);
  lua_pushinteger(L, (lua_Integer)uid);
  lua_pushinteger(L, (lua_Integer)euid);
  return 3;
}

static const luaL_Reg funcs[] = {
  {"stat", l_stat},
  {NULL, NULL},
};

int luaopen_zever_secrets_core(lua_State *L);
int luaopen_zever_secrets_core(lua_State *L) {
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  return 1;
}
