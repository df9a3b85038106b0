/*
 * l_router.c: the zever.router binding over the segment trie of trie.c.
 *
 *   local r = router.new()
 *   r:add(method, pattern, id)  registers a route; raises on misuse or conflict
 *   r:match(method, path)  -> id, params                  a hit
 *                          -> nil, 404                    no route
 *                          -> nil, 405, allow             only other methods ("GET, HEAD, OPTIONS")
 *                          -> nil, 204, allow             OPTIONS with no OPTIONS route
 *                          -> nil, 301 | 308, location    the trailing-slash twin is a hit
 *   r:allow(path)          -> "GET, HEAD, OPTIONS" | nil when no route takes the path
 *   r:routes()             -> { {method=, pattern=, id=}, ... } in registration order
 *   router.MAX_PARAMS, router.empty_params
 *
 *   zv_router_match_ffi(box, method, mlen, path, plen, out)  the hit-only match for LuaJIT's FFI
 *                          (zever.app's dispatch; see its comment below)
 *
 * params maps names to percent-decoded values, in a fresh table per hit; a route without
 * parameters gets router.empty_params, one shared table that refuses writes. The path is the raw
 * path without the query string; location is the corrected path and the caller adds the query.
 *
 * It must not keep Lua state in the core, nor raise while holding heap memory: the decoding
 * scratch is on the stack or in a luaL_Buffer.
 */
#include <limits.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "trie.h"

#define MT "zever.router"

typedef struct {
  zv_router_t *r;
} box_t;

/* Raises msg at the caller of the running C function (level 1): the line that called r:add. */
static int raise_at_caller(lua_State *L, const char *msg) {
  luaL_where(L, 1);
  lua_pushstring(L, msg);
  lua_concat(L, 2);
  return lua_error(L);
}

static zv_router_t *check_router(lua_State *L) {
  box_t *b = luaL_checkudata(L, 1, MT);
  if (!b->r) luaL_error(L, "zever.router: the router is freed");
  return b->r;
}

/* A string argument, strictly (numbers are not converted). */
static const char *check_str(lua_State *L, int i, size_t *len) {
  if (lua_type(L, i) != LUA_TSTRING) luaL_typerror(L, i, "string");
  return lua_tolstring(L, i, len);
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes %XX in s[0..n) into out (room for n bytes); an invalid escape stays as it is. */
static size_t decode(const char *s, size_t n, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int hi, lo;
    if (s[i] == '%' && i + 2 < n && (hi = hexval((unsigned char)s[i + 1])) >= 0 &&
        (lo = hexval((unsigned char)s[i + 2])) >= 0) {
      out[k++] = (char)(hi << 4 | lo);
      i += 2;
    } else {
      out[k++] = s[i];
    }
  }
  return k;
}

#define DECODE_STACK 256

static void push_decoded(lua_State *L, const char *s, size_t n) {
  char buf[DECODE_STACK];
  if (!memchr(s, '%', n)) {
    lua_pushlstring(L, s, n);
    return;
  }
  if (n <= sizeof buf) {
    lua_pushlstring(L, buf, decode(s, n, buf));
    return;
  }
  /* Long values decode in stack-sized chunks; an escape never straddles two chunks. */
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  while (n > 0) {
    size_t take = n < sizeof buf ? n : sizeof buf;
    if (take < n) {
      if (s[take - 1] == '%') take -= 1;
      else if (s[take - 2] == '%') take -= 2;
    }
    luaL_addlstring(&b, buf, decode(s, take, buf));
    s += take;
    n -= take;
  }
  luaL_pushresult(&b);
}

static int l_new(lua_State *L) {
  box_t *b = lua_newuserdata(L, sizeof *b);
  b->r = NULL;
  luaL_getmetatable(L, MT);
  lua_setmetatable(L, -2);
  if (zv_router_new(&b->r)) return luaL_error(L, "zever.router: out of memory");
  return 1;
}

static int l_gc(lua_State *L) {
  box_t *b = luaL_checkudata(L, 1, MT);
  zv_router_free(b->r);
  b->r = NULL;
  return 0;
}

static int l_tostring(lua_State *L) {
  box_t *b = luaL_checkudata(L, 1, MT);
  lua_pushfstring(L, "zever.router (%d routes)", b->r ? (int)zv_router_count(b->r) : 0);
  return 1;
}

static int l_add(lua_State *L) {
  char err[2 * ZV_ROUTER_MAX_PATTERN + 256];
  zv_router_t *r = check_router(L);
  size_t mlen, plen;
  const char *method = check_str(L, 2, &mlen);
  const char *pattern = check_str(L, 3, &plen);
  lua_Number idn = luaL_checknumber(L, 4);
  int id;
  /* The range test comes first: converting NaN or a huge number to int is undefined. */
  if (!(idn >= INT_MIN && idn <= INT_MAX) || (lua_Number)(id = (int)idn) != idn)
    return luaL_argerror(L, 4, "an integer that fits in 32 bits expected");
  if (zv_router_add(r, method, mlen, pattern, plen, id, err, sizeof err))
    return raise_at_caller(L, err);
  return 0;
}

/* check_router for match, which runs per request: the metatable is upvalue 2, so the check is
 * one pointer comparison rather than a registry lookup by name. */
static zv_router_t *check_router_fast(lua_State *L) {
  box_t *b = lua_touserdata(L, 1);
  if (!b || !lua_getmetatable(L, 1) || !lua_rawequal(L, -1, lua_upvalueindex(2)))
    luaL_typerror(L, 1, MT);
  lua_pop(L, 1);
  if (!b->r) luaL_error(L, "zever.router: the router is freed");
  return b->r;
}

static int l_match(lua_State *L) {
  zv_router_match_t m;
  zv_router_t *r = check_router_fast(L);
  size_t mlen, plen;
  const char *method = check_str(L, 2, &mlen);
  const char *path = check_str(L, 3, &plen);
  switch (zv_router_match(r, method, mlen, path, plen, &m)) {
  case ZV_ROUTER_FOUND:
    lua_pushinteger(L, m.id);
    if (m.nparams == 0) {
      lua_pushvalue(L, lua_upvalueindex(1));
      return 2;
    }
    lua_createtable(L, 0, m.nparams);
    for (int i = 0; i < m.nparams; i++) {
      lua_pushlstring(L, m.params[i].name, m.params[i].name_len);
      push_decoded(L, path + m.params[i].off, m.params[i].len);
      lua_rawset(L, -3);
    }
    return 2;
  case ZV_ROUTER_NOT_ALLOWED:
  case ZV_ROUTER_AUTO_OPTIONS: {
    char allow[ZV_ROUTER_ALLOW_CAP];
    size_t n = zv_router_allow_string(r, m.allow, allow, sizeof allow);
    lua_pushnil(L);
    lua_pushinteger(L, m.status);
    lua_pushlstring(L, allow, n);
    return 3;
  }
  case ZV_ROUTER_REDIRECT:
    lua_pushnil(L);
    lua_pushinteger(L, m.status);
    if (m.slash > 0) {
      lua_pushvalue(L, 3);
      lua_pushliteral(L, "/");
      lua_concat(L, 2);
    } else {
      lua_pushlstring(L, path, plen - 1);
    }
    return 3;
  default:
    lua_pushnil(L);
    lua_pushinteger(L, m.status);
    return 2;
  }
}

/* The per-request match for LuaJIT's FFI: router_ffi.h says what it does. */
int zv_router_match_ffi(const void *box, const char *method, size_t mlen, const char *path,
                        size_t plen, zv_router_ffi_match_t *out) {
  const box_t *b = box;
  zv_router_match_t m;
  if (!b || !b->r || plen > INT32_MAX) return -1;
  if (zv_router_match(b->r, method, mlen, path, plen, &m) != ZV_ROUTER_FOUND) return -1;
  for (int i = 0; i < m.nparams; i++) {
    if (memchr(path + m.params[i].off, '%', m.params[i].len)) return -1;
    out->spans[2 * i] = (int32_t)m.params[i].off;
    out->spans[2 * i + 1] = (int32_t)m.params[i].len;
  }
  out->id = m.id;
  out->nparams = m.nparams;
  return 0;
}

static int l_allow(lua_State *L) {
  char allow[ZV_ROUTER_ALLOW_CAP];
  zv_router_t *r = check_router(L);
  size_t plen;
  const char *path = check_str(L, 2, &plen);
  uint32_t mask = zv_router_allowed(r, path, plen);
  if (!mask) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushlstring(L, allow, zv_router_allow_string(r, mask, allow, sizeof allow));
  return 1;
}

static int l_routes(lua_State *L) {
  zv_router_t *r = check_router(L);
  size_t n = zv_router_count(r);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    int method, id;
    const char *pattern, *name;
    size_t plen, nlen;
    zv_router_route(r, i, &method, &pattern, &plen, &id);
    name = zv_router_method_name(r, method, &nlen);
    lua_createtable(L, 0, 3);
    lua_pushlstring(L, name, nlen);
    lua_setfield(L, -2, "method");
    lua_pushlstring(L, pattern, plen);
    lua_setfield(L, -2, "pattern");
    lua_pushinteger(L, id);
    lua_setfield(L, -2, "id");
    lua_rawseti(L, -2, (int)i + 1);
  }
  return 1;
}

static int l_readonly(lua_State *L) {
  return luaL_error(L, "zever.router: the params of a route without parameters are read-only");
}

static const luaL_Reg methods[] = {
  {"add", l_add},
  {"allow", l_allow},
  {"routes", l_routes},
  {NULL, NULL},
};

int luaopen_zever_router(lua_State *L);
int luaopen_zever_router(lua_State *L) {
  /* The shared, read-only params table of routes without parameters. */
  lua_newtable(L);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, l_readonly);
  lua_setfield(L, -2, "__newindex");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  int empty = lua_gettop(L);

  luaL_newmetatable(L, MT);
  lua_pushcfunction(L, l_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, l_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_newtable(L);
  luaL_register(L, NULL, methods);
  lua_pushvalue(L, empty);
  lua_pushvalue(L, -3); /* the metatable */
  lua_pushcclosure(L, l_match, 2);
  lua_setfield(L, -2, "match");
  lua_setfield(L, -2, "__index");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);

  lua_createtable(L, 0, 3);
  lua_pushcfunction(L, l_new);
  lua_setfield(L, -2, "new");
  lua_pushinteger(L, ZV_ROUTER_MAX_PARAMS);
  lua_setfield(L, -2, "MAX_PARAMS");
  lua_pushvalue(L, empty);
  lua_setfield(L, -2, "empty_params");
  return 1;
}
