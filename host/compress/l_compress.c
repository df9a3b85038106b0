/*
 * l_compress.c: the zever.compress binding.
 *
 *   compress.gzip(s[, level = 6]) -> string       a gzip member (RFC 1952)
 *   compress.brotli(s[, quality = 4]) -> string   a brotli stream (RFC 7932)
 *
 *   compress.inflater() -> z                     streaming gzip/zlib decoding (the HTTP client)
 *   z:feed(s) -> out, ended | nil, message      out: what s decoded to; ended: the stream's end
 *   z:close()                                    frees the state (also at collection)
 *
 *   compress.pmd_deflater(window_bits, level) -> d   permessage-deflate (RFC 7692), one
 *   d:deflate(s[, reset]) -> string                  WebSocket connection's compressor: a
 *                                                    message without the 00 00 FF FF tail;
 *                                                    reset: no context takeover
 *   compress.pmd_inflater(window_bits) -> i          its decompressor
 *   i:inflate(s, limit[, reset]) -> string | nil, "too_big" | "corrupt"
 *                      a message (the tail appended here); decoding stops as soon as the
 *                      output passes limit bytes (a zip bomb costs limit bytes, no more)
 *   d:close() / i:close()                            frees the state (also at collection)
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

#define INFLATER_MT "zever.compress.inflater"

static int l_inflater(lua_State *L) {
  zv_compress_inflate_t **slot = lua_newuserdata(L, sizeof *slot);
  *slot = NULL;
  luaL_getmetatable(L, INFLATER_MT);
  lua_setmetatable(L, -2);
  if (zv_compress_inflate_new(slot)) return luaL_error(L, "compress.inflater: out of memory");
  return 1;
}

/* Decodes s piece by piece into a luaL_Buffer: nothing malloc'd is held across a raise. */
static int z_feed(lua_State *L) {
  zv_compress_inflate_t **slot = luaL_checkudata(L, 1, INFLATER_MT);
  size_t n, off = 0;
  const char *s = luaL_checklstring(L, 2, &n);
  luaL_Buffer b;
  int end = 0;
  if (!*slot) return luaL_error(L, "compress.inflater: closed");
  luaL_buffinit(L, &b);
  for (;;) {
    char *out = luaL_prepbuffer(&b);
    size_t used = 0, outlen = 0;
    int rc = zv_compress_inflate(*slot, s + off, n - off, &used, out, LUAL_BUFFERSIZE, &outlen,
                                 &end);
    if (rc) {
      lua_pushnil(L);
      lua_pushstring(L, rc == ZV_ENOMEM ? "out of memory" : "corrupt compressed data");
      return 2;
    }
    luaL_addsize(&b, outlen);
    off += used;
    if (end || (off == n && outlen < LUAL_BUFFERSIZE)) break;
    if (!used && !outlen) break;
  }
  luaL_pushresult(&b);
  lua_pushboolean(L, end);
  return 2;
}

static int z_close(lua_State *L) {
  zv_compress_inflate_t **slot = luaL_checkudata(L, 1, INFLATER_MT);
  zv_compress_inflate_free(*slot);
  *slot = NULL;
  return 0;
}

#define PMD_MT "zever.compress.pmd"

static int l_pmd_new(lua_State *L, int deflating) {
  int bits = (int)luaL_checkinteger(L, 1);
  int level = deflating ? (int)luaL_optinteger(L, 2, 6) : 0;
  zv_pmd_t **slot = lua_newuserdata(L, sizeof *slot);
  int rc;
  *slot = NULL;
  luaL_getmetatable(L, PMD_MT);
  lua_setmetatable(L, -2);
  rc = zv_pmd_new(slot, deflating, bits, level);
  if (rc == ZV_EINVAL)
    return luaL_error(L, "compress.pmd: window_bits must be %s and level 1..9",
                      deflating ? "9..15" : "8..15");
  if (rc) return luaL_error(L, "compress.pmd: out of memory");
  return 1;
}

static int l_pmd_deflater(lua_State *L) { return l_pmd_new(L, 1); }
static int l_pmd_inflater(lua_State *L) { return l_pmd_new(L, 0); }

static zv_pmd_t *check_pmd(lua_State *L) {
  zv_pmd_t **slot = luaL_checkudata(L, 1, PMD_MT);
  if (!*slot) luaL_error(L, "compress.pmd: closed");
  return *slot;
}

static int pmd_deflate(lua_State *L) {
  zv_pmd_t *z = check_pmd(L);
  size_t n, outlen = 0, cap;
  const char *s = luaL_checklstring(L, 2, &n);
  int reset = lua_toboolean(L, 3), rc;
  char *out;
  cap = zv_pmd_bound(z, n);
  out = lua_newuserdata(L, cap);
  rc = zv_pmd_deflate(z, s, n, out, cap, &outlen);
  if (reset) zv_pmd_reset(z);
  if (rc) return luaL_error(L, "compress.pmd: deflate: %s", zv_strerror(rc));
  lua_pushlstring(L, out, outlen);
  return 1;
}

/* Inflates s then the 4-byte tail into a luaL_Buffer, at most limit bytes. */
static int pmd_inflate(lua_State *L) {
  zv_pmd_t *z = check_pmd(L);
  size_t n, total = 0;
  const char *s = luaL_checklstring(L, 2, &n);
  lua_Number limit = luaL_checknumber(L, 3);
  int reset = lua_toboolean(L, 4);
  luaL_Buffer b;
  const char *err = NULL;
  luaL_argcheck(L, limit >= 0, 3, "a limit is >= 0");
  luaL_buffinit(L, &b);
  for (int part = 0; part < 2 && !err; part++) {
    const char *in = part ? ZV_PMD_TAIL : s;
    size_t len = part ? 4 : n, off = 0;
    for (;;) {
      char *out = luaL_prepbuffer(&b);
      size_t used = 0, outlen = 0;
      int end = 0, rc = zv_pmd_inflate(z, in + off, len - off, &used, out, LUAL_BUFFERSIZE,
                                       &outlen, &end);
      if (rc) {
        err = rc == ZV_ENOMEM ? "out of memory" : "corrupt";
        break;
      }
      luaL_addsize(&b, outlen);
      total += outlen;
      off += used;
      if ((lua_Number)total > limit) {
        err = "too_big";
        break;
      }
      if (end) {
        part = 1; /* the sender's stream ended: the tail is not needed */
        break;
      }
      if (off == len && outlen < LUAL_BUFFERSIZE) break;
      if (!used && !outlen) break;
    }
  }
  if (reset || err) zv_pmd_reset(z);
  if (err) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  luaL_pushresult(&b);
  return 1;
}

static int pmd_close(lua_State *L) {
  zv_pmd_t **slot = luaL_checkudata(L, 1, PMD_MT);
  zv_pmd_free(*slot);
  *slot = NULL;
  return 0;
}

int luaopen_zever_compress(lua_State *L);
int luaopen_zever_compress(lua_State *L) {
  static const luaL_Reg fns[] = {{"gzip", l_gzip}, {"brotli", l_brotli}, {NULL, NULL}};
  static const luaL_Reg zm[] = {{"feed", z_feed}, {"close", z_close}, {NULL, NULL}};
  if (luaL_newmetatable(L, INFLATER_MT)) {
    lua_newtable(L);
    luaL_register(L, NULL, zm);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, z_close);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, PMD_MT)) {
    static const luaL_Reg pm[] = {
      {"deflate", pmd_deflate}, {"inflate", pmd_inflate}, {"close", pmd_close}, {NULL, NULL}};
    lua_newtable(L);
    luaL_register(L, NULL, pm);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, pmd_close);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, l_pmd_deflater);
  lua_setfield(L, -2, "pmd_deflater");
  lua_pushcfunction(L, l_pmd_inflater);
  lua_setfield(L, -2, "pmd_inflater");
  lua_pushcfunction(L, l_inflater);
  lua_setfield(L, -2, "inflater");
  luaL_register(L, NULL, fns);
  return 1;
}
