/*
 * l_tls_core.c: the zever.tls_core binding, wrapped by lua/zever/tls.lua.
 *
 *   core.context{ cert =, key =, min_version = "1.2", ciphers =, alpn = "http/1.1", h2 = false,
 *                 ocsp = nil (a DER OCSP response file to staple) }
 *                       -> context | nil, message     (a message never holds key material)
 *   context:info()      -> subject, not_after (Unix time)
 *   core.version()      -> OpenSSL's version text
 *
 * A context is what http.listen{tls = context} takes (host/http/xport.h: its first fields are
 * the transport and its state); the server retains the C context while it runs, so collecting
 * the Lua object early is harmless.
 */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "tls.h"

static const char *opt_str(lua_State *L, int t, const char *name) {
  const char *s = NULL;
  lua_getfield(L, t, name);
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "tls.context: %s must be a string", name);
    s = lua_tostring(L, -1);
  }
  lua_pop(L, 1); /* the options table keeps the string alive */
  return s;
}

static int l_context(lua_State *L) {
  zv_tls_opts_t o;
  zv_http_xport_ud_t *ud;
  zv_tls_ctx_t *ctx;
  char err[512];
  luaL_checktype(L, 1, LUA_TTABLE);
  o.cert = opt_str(L, 1, "cert");
  o.key = opt_str(L, 1, "key");
  o.min_version = opt_str(L, 1, "min_version");
  o.ciphers = opt_str(L, 1, "ciphers");
  o.alpn = opt_str(L, 1, "alpn");
  o.ocsp = opt_str(L, 1, "ocsp");
  lua_getfield(L, 1, "h2");
  o.h2 = lua_toboolean(L, -1);
  lua_pop(L, 1);
  ud = lua_newuserdata(L, sizeof *ud);
  ud->xport = NULL;
  ud->ctx = NULL;
  luaL_getmetatable(L, ZV_HTTP_XPORT_MT);
  lua_setmetatable(L, -2);
  ctx = zv_tls_ctx_new(&o, err, sizeof err);
  if (!ctx) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  ud->xport = zv_tls_xport();
  ud->ctx = ctx;
  return 1;
}

static int c_info(lua_State *L) {
  zv_http_xport_ud_t *ud = luaL_checkudata(L, 1, ZV_HTTP_XPORT_MT);
  char subject[512];
  int64_t not_after;
  if (!ud->ctx) return luaL_error(L, "tls: the context is closed");
  zv_tls_ctx_info(ud->ctx, subject, sizeof subject, &not_after);
  lua_pushstring(L, subject);
  lua_pushnumber(L, (lua_Number)not_after);
  return 2;
}

static int c_gc(lua_State *L) {
  zv_http_xport_ud_t *ud = luaL_checkudata(L, 1, ZV_HTTP_XPORT_MT);
  if (ud->ctx) zv_tls_ctx_release(ud->ctx);
  ud->ctx = NULL;
  return 0;
}

static int l_version(lua_State *L) {
  lua_pushstring(L, zv_tls_version());
  return 1;
}

int luaopen_zever_tls_core(lua_State *L);
int luaopen_zever_tls_core(lua_State *L) {
  static const luaL_Reg fns[] = {{"context", l_context}, {"version", l_version}, {NULL, NULL}};
  if (luaL_newmetatable(L, ZV_HTTP_XPORT_MT)) {
    lua_pushcfunction(L, c_gc);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
    lua_pushcfunction(L, c_info);
    lua_setfield(L, -2, "info");
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "zever.tls.context");
    lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_register(L, NULL, fns);
  return 1;
}
