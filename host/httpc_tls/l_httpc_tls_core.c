/*
 * l_httpc_tls_core.c: the zever.httpc_tls_core binding (lib/zever/httpc_tls.so, OpenSSL).
 *
 *   core.context{ ca_file =, cert =, key =, verify = true } -> context | nil, message
 *
 * A context is what zever.httpc_core's conn:tls takes (host/httpc/tlsx.h: its first fields
 * are the hook table and the C context); a connection retains the C context while it lives,
 * so collecting the Lua object early is harmless.
 */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "tls.h"

static const char *opt_str(lua_State *L, int t, const char *name) {
  const char *s = NULL;
  lua_getfield(L, t, name);
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "httpc_tls.context: %s must be a string", name);
    s = lua_tostring(L, -1);
  }
  lua_pop(L, 1); /* the options table keeps the string alive */
  return s;
}

static int l_context(lua_State *L) {
  zv_httpc_tls_opts_t o;
  zv_httpc_tls_ud_t *ud;
  char err[400];
  luaL_checktype(L, 1, LUA_TTABLE);
  o.ca_file = opt_str(L, 1, "ca_file");
  o.cert = opt_str(L, 1, "cert");
  o.key = opt_str(L, 1, "key");
  lua_getfield(L, 1, "verify");
  o.verify = lua_isnil(L, -1) ? 1 : lua_toboolean(L, -1);
  lua_pop(L, 1);
  ud = lua_newuserdata(L, sizeof *ud);
  ud->vt = NULL;
  ud->ctx = NULL;
  luaL_getmetatable(L, ZV_HTTPC_TLS_MT);
  lua_setmetatable(L, -2);
  ud->ctx = zv_httpc_tls_ctx_new(&o, err, sizeof err);
  if (!ud->ctx) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  ud->vt = zv_httpc_tls_hook();
  return 1;
}

static int c_gc(lua_State *L) {
  zv_httpc_tls_ud_t *ud = luaL_checkudata(L, 1, ZV_HTTPC_TLS_MT);
  if (ud->ctx) ud->vt->release(ud->ctx);
  ud->ctx = NULL;
  return 0;
}

int luaopen_zever_httpc_tls_core(lua_State *L);
int luaopen_zever_httpc_tls_core(lua_State *L) {
  static const luaL_Reg fns[] = {{"context", l_context}, {NULL, NULL}};
  if (luaL_newmetatable(L, ZV_HTTPC_TLS_MT)) {
    lua_pushcfunction(L, c_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushliteral(L, ZV_HTTPC_TLS_MT);
    lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_register(L, NULL, fns);
  return 1;
}
