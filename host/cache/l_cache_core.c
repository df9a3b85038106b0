/*
 * l_cache_core.c: the zever.cache_core binding (the memory cache adapter wraps it; its get and
 * set go through LuaJIT's FFI to cache.h when the host exports the core).
 *
 *   core.open(name, max_bytes)        -> handle | nil, message, code
 *   handle:get(key[, now_ns])         -> raw, type | nil        raw: string (STRING, JSON),
 *                                                                number, boolean
 *   handle:set(key, raw, type, ttl_ns, mode[, now_ns]) -> true | nil, message, code
 *                                        mode 0 set, 1 add (code "CONFLICT" when present)
 *   handle:delete(key[, now_ns])      -> existed
 *   handle:exists(key[, now_ns])      -> boolean
 *   handle:incr(key, n, ttl_ns[, now_ns]) -> number | nil, message, code ("INVAL": not a number)
 *   handle:sweep(max_steps[, now_ns]) -> removed, more
 *   handle:clear()
 *   handle:stats()                    -> { entries, bytes, max_bytes, evictions, expired }
 *   handle:ptr()                      -> lightuserdata (the zv_cache_t *, for the FFI)
 *   handle:release()                  -> drops this state's reference (also done by __gc)
 *   core.clock(), core.OVERHEAD, core.STRING/NUMBER/BOOLEAN/JSON
 *
 * Types are the caller's tags (cache.h). Using a released handle raises. A value larger than
 * the stack buffer is read into a userdata that the collector owns, so nothing leaks if the
 * push raises.
 */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "cache.h"

#define MT "zever.cache_core"
#define STACK_VALUE 512

static zv_cache_t *check(lua_State *L) {
  return zv_l_checkhandle(L, MT, "cache");
}

ZV_L_STORE_METHODS(zv_cache, MT, "cache")

static int l_open(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  lua_Number max = luaL_checknumber(L, 2);
  void **slot = zv_l_newhandle(L, MT);
  zv_cache_t *c;
  int rc = zv_cache_open(name, max >= 1 ? (size_t)max : 0, &c);
  if (rc) return zv_l_fail(L, rc);
  *slot = c;
  return 1;
}

static int push_value(lua_State *L, const char *p, size_t len, int type) {
  double d;
  switch (type) {
  case ZV_CACHE_NUMBER:
    memcpy(&d, p, sizeof d);
    lua_pushnumber(L, d);
    break;
  case ZV_CACHE_BOOLEAN:
    lua_pushboolean(L, len > 0 && p[0]);
    break;
  default:
    lua_pushlstring(L, p, len);
  }
  lua_pushinteger(L, type);
  return 2;
}

static int l_get(lua_State *L) {
  zv_cache_t *c = check(L);
  size_t klen, len;
  const char *key = luaL_checklstring(L, 2, &klen);
  uint64_t now = zv_l_opt_u64(L, 3);
  char stack[STACK_VALUE];
  int type;
  int rc = zv_cache_get(c, key, klen, now, stack, sizeof stack, &len, &type);
  while (rc == ZV_ERANGE) {
    char *big = lua_newuserdata(L, len);
    rc = zv_cache_get(c, key, klen, now, big, len, &len, &type);
    if (rc == 0) return push_value(L, big, len, type);
    lua_pop(L, 1);
  }
  if (rc) {
    lua_pushnil(L);
    return 1;
  }
  return push_value(L, stack, len, type);
}

static int l_set(lua_State *L) {
  zv_cache_t *c = check(L);
  size_t klen, vlen = 0;
  const char *key = luaL_checklstring(L, 2, &klen);
  int type = (int)luaL_checkinteger(L, 4);
  const char *value;
  double d;
  char b;
  if (type == ZV_CACHE_NUMBER) {
    d = luaL_checknumber(L, 3);
    value = (const char *)&d;
    vlen = sizeof d;
  } else if (type == ZV_CACHE_BOOLEAN) {
    b = (char)lua_toboolean(L, 3);
    value = &b;
    vlen = 1;
  } else {
    value = luaL_checklstring(L, 3, &vlen);
  }
  int mode = (int)luaL_optinteger(L, 6, ZV_CACHE_SET);
  int rc = zv_cache_set(c, key, klen, type, value, vlen, zv_l_opt_u64(L, 5), zv_l_opt_u64(L, 7),
                        mode);
  if (rc) return zv_l_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_delete(lua_State *L) {
  zv_cache_t *c = check(L);
  size_t klen;
  const char *key = luaL_checklstring(L, 2, &klen);
  int existed;
  zv_cache_delete(c, key, klen, zv_l_opt_u64(L, 3), &existed);
  lua_pushboolean(L, existed);
  return 1;
}

static int l_exists(lua_State *L) {
  zv_cache_t *c = check(L);
  size_t klen;
  const char *key = luaL_checklstring(L, 2, &klen);
  int exists;
  zv_cache_exists(c, key, klen, zv_l_opt_u64(L, 3), &exists);
  lua_pushboolean(L, exists);
  return 1;
}

static int l_incr(lua_State *L) {
  zv_cache_t *c = check(L);
  size_t klen;
  const char *key = luaL_checklstring(L, 2, &klen);
  double n = luaL_checknumber(L, 3), out;
  int rc = zv_cache_incr(c, key, klen, n, zv_l_opt_u64(L, 4), zv_l_opt_u64(L, 5), &out);
  if (rc) return zv_l_fail(L, rc);
  lua_pushnumber(L, out);
  return 1;
}

static int l_clear(lua_State *L) {
  zv_cache_clear(check(L));
  return 0;
}

static int l_stats(lua_State *L) {
  zv_cache_stats_t st;
  zv_cache_stats(check(L), &st);
  lua_createtable(L, 0, 5);
  zv_l_setnumber(L, "entries", (double)st.entries);
  zv_l_setnumber(L, "bytes", (double)st.bytes);
  zv_l_setnumber(L, "max_bytes", (double)st.max_bytes);
  zv_l_setnumber(L, "evictions", (double)st.evictions);
  zv_l_setnumber(L, "expired", (double)st.expired);
  return 1;
}

static const luaL_Reg methods[] = {
  {"get", l_get},       {"set", l_set},     {"delete", l_delete}, {"exists", l_exists},
  {"incr", l_incr},     {"sweep", l_sweep}, {"clear", l_clear},   {"stats", l_stats},
  {"ptr", l_ptr},       {"release", l_release}, {NULL, NULL},
};

static const luaL_Reg funcs[] = {
  {"open", l_open},
  {"clock", l_clock},
  {NULL, NULL},
};

int luaopen_zever_cache_core(lua_State *L);
int luaopen_zever_cache_core(lua_State *L) {
  zv_l_newclass(L, MT, methods, l_release, funcs);
  lua_pushinteger(L, (lua_Integer)zv_cache_overhead());
  lua_setfield(L, -2, "OVERHEAD");
  lua_pushinteger(L, ZV_CACHE_STRING);
  lua_setfield(L, -2, "STRING");
  lua_pushinteger(L, ZV_CACHE_NUMBER);
  lua_setfield(L, -2, "NUMBER");
  lua_pushinteger(L, ZV_CACHE_BOOLEAN);
  lua_setfield(L, -2, "BOOLEAN");
  lua_pushinteger(L, ZV_CACHE_JSON);
  lua_setfield(L, -2, "JSON");
  return 1;
}
