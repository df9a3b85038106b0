/*
 * l_compress.c: the zever.compress binding.
 *
 *   compress.gzip(s[, level = 6]) -> string       a gzip member (RFC 1952)
 *   compress.brotli(s[, quality = 4]) -> string   a brotli stream (RFC 7932)
 *
 * The output goes into a Lua userdata sized by the bound (collected with the call's garbage):
 * nothing is malloc'd here, so an error raised after the call holds no memory. A bad level
 * raises; the encoders failing (out of memory) raises too.
 */
#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "compress.h"

static int l_gzip(lua_State *L) {
  size_t n, outlen = 0;
  const char *s = luaL_checklstring(L, 1, &n);
  int level = (int)luaL_optinteger(L, 2, 6);
  size_t cap = zv_compress_gzip_bound(n);
  char *out;
  int rc;
  if (level < 1 || level > 9) return luaL_argerror(L, 2, "level must be 1..9");
  out = lua_newuserdata(L, cap);
  rc = zv_compress_gzip(s, n, level, out, cap, &outlen);
  if (rc) return luaL_error(L, "compress.gzip: %s", zv_strerror(rc));
  lua_pushlstring(L, out, outlen);
  return 1;
}

static int l_brotli(lua_State *L) {
  size_t n, outlen = 0;
  const char *s = luaL_checklstring(L, 1, &n);
  int quality = (int)luaL_optinteger(L, 2, 4);
  size_t cap = zv_compress_brotli_bound(n);
  char *out;
  int rc;
  if (quality < 0 || quality > 11) return luaL_argerror(L, 2, "quality must be 0..11");
  out = lua_newuserdata(L, cap);
  rc = zv_compress_brotli(s, n, quality, out, cap, &outlen);
  if (rc) return luaL_error(L, "compress.brotli: %s", zv_strerror(rc));
  lua_pushlstring(L, out, outlen);
  return 1;
}

int luaopen_zever_compress(lua_State *L);
int luaopen_zever_compress(lua_State *L) {
  static const luaL_Reg fns[] = {{"gzip", l_gzip}, {"brotli", l_brotli}, {NULL, NULL}};
  lua_newtable(L);
  luaL_register(L, NULL, fns);
  return 1;
}
