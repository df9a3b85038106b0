/*
 * l_h2_core.c: the zever.h2_core binding, wrapped by lua/zever/h2.lua.
 *
 *   core.layer([tls_context]) -> layer     HTTP/2 over the TLS context (ALPN h2), or over the
 *                                          plain socket (h2c with prior knowledge); HTTP/1.1
 *                                          connections pass through either way
 *   core.version()            -> nghttp2's version text
 *
 * A layer is what http.listen{tls = layer} takes (host/http/xport.h): its first fields are the
 * transport and its state. It retains the TLS context it runs over.
 */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "h2.h"

#define LAYER_MT ZV_HTTP_XPORT_MT_H2

static int l_layer(lua_State *L) {
  zv_http_xport_ud_t *lower = NULL, *ud;
  zv_h2_ctx_t *ctx;
  if (!lua_isnoneornil(L, 1)) lower = luaL_checkudata(L, 1, ZV_HTTP_XPORT_MT);
  if (lower && !lower->ctx) return luaL_error(L, "h2.layer: the TLS context is closed");
  ud = lua_newuserdata(L, sizeof *ud);
  ud->xport = NULL;
  ud->ctx = NULL;
  luaL_getmetatable(L, LAYER_MT);
  lua_setmetatable(L, -2);
  ctx = zv_h2_ctx_new(lower ? lower->xport : NULL, lower ? lower->ctx : NULL);
  if (!ctx) return luaL_error(L, "h2.layer: out of memory");
  ud->xport = zv_h2_xport();
  ud->ctx = ctx;
  return 1;
}

static int c_gc(lua_State *L) {
  zv_http_xport_ud_t *ud = luaL_checkudata(L, 1, LAYER_MT);
  if (ud->ctx) zv_h2_ctx_release(ud->ctx);
  ud->ctx = NULL;
  return 0;
}

static int l_version(lua_State *L) {
  lua_pushstring(L, zv_h2_version());
  return 1;
}

int luaopen_zever_h2_core(lua_State *L);
int luaopen_zever_h2_core(lua_State *L) {
  static const luaL_Reg fns[] = {{"layer", l_layer}, {"version", l_version}, {NULL, NULL}};
  if (luaL_newmetatable(L, LAYER_MT)) {
    lua_pushcfunction(L, c_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_register(L, NULL, fns);
  return 1;
}
