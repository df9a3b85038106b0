/*
 * l_post_core.c: the zever.post_core binding (lua/adapters/trace/otlp.lua's default sender).
 *
 *   core.post(host, port, path, content_type, body, timeout_seconds) -> status | nil, message, code
 *
 * Blocks the calling thread for up to timeout_seconds (post.h). Codes: "INVAL", "IO".
 */
#include <lauxlib.h>
#include <lua.h>

#include "../runtime/lbind.h"
#include "post.h"

static int l_post(lua_State *L) {
  const char *host = luaL_checkstring(L, 1);
  int port = (int)luaL_checkinteger(L, 2);
  const char *path = luaL_checkstring(L, 3);
  const char *ctype = luaL_checkstring(L, 4);
  size_t len;
  const char *body = luaL_checklstring(L, 5, &len);
  lua_Number timeout = luaL_checknumber(L, 6);
  int status;
  int rc = zv_post(host, port, path, ctype, body, len,
                   timeout > 0 && timeout < 3600 ? (int)(timeout * 1000 + 0.5) : 0, &status);
  if (rc) return zv_l_fail(L, rc);
  lua_pushinteger(L, status);
  return 1;
}

static const luaL_Reg funcs[] = {
  {"post", l_post},
  {NULL, NULL},
};

int luaopen_zever_post_core(lua_State *L);
int luaopen_zever_post_core(lua_State *L) {
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  return 1;
}
