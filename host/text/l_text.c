/*
 * l_text.c: the zever.text binding.
 *
 *   text.distance(a, b)             -> integer (OSA distance over bytes)
 *   text.closest(word, list[, max]) -> candidate, distance  | nil when none is close enough
 *   text.threshold(len)             -> the default max distance for a word of that length
 *
 * Non-string arguments raise. Candidates that are not strings raise, naming their position.
 */
#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "text.h"

#define STACK_CANDS 64

static int l_distance(lua_State *L) {
  size_t alen, blen, d;
  const char *a = luaL_checklstring(L, 1, &alen);
  const char *b = luaL_checklstring(L, 2, &blen);
  if (zv_text_distance(a, alen, b, blen, &d)) return luaL_error(L, "out of memory");
  lua_pushinteger(L, (lua_Integer)d);
  return 1;
}

static int l_closest(lua_State *L) {
  zv_text_str_t stack[STACK_CANDS], *cands = stack;
  size_t len, n, index, dist;
  const char *word = luaL_checklstring(L, 1, &len);
  lua_Integer max = luaL_optinteger(L, 3, (lua_Integer)zv_text_threshold(len));
  int rc;
  luaL_checktype(L, 2, LUA_TTABLE);
  n = lua_objlen(L, 2);
  /* Above the stack cap the array is a userdata: the GC owns it even if we raise. */
  if (n > STACK_CANDS) cands = lua_newuserdata(L, n * sizeof *cands);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 2, (int)i + 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      return luaL_error(L, "bad argument #2 to 'closest' (candidate %d is a %s, not a string)",
                        (int)i + 1, luaL_typename(L, -1));
    /* The string stays alive: the table at index 2 still refers to it. */
    cands[i].s = lua_tolstring(L, -1, &cands[i].len);
    lua_pop(L, 1);
  }
  rc = zv_text_closest(word, len, cands, n, max < 0 ? 0 : (size_t)max, &index, &dist);
  if (rc == ZV_ENOTFOUND) {
    lua_pushnil(L);
    return 1;
  }
  if (rc) return luaL_error(L, "closest: %s", zv_strerror(rc));
  lua_rawgeti(L, 2, (int)index + 1);
  lua_pushinteger(L, (lua_Integer)dist);
  return 2;
}

static int l_threshold(lua_State *L) {
  lua_Integer len = luaL_checkinteger(L, 1);
  lua_pushinteger(L, (lua_Integer)zv_text_threshold(len < 0 ? 0 : (size_t)len));
  return 1;
}

static const luaL_Reg funcs[] = {
  {"distance", l_distance},
  {"closest", l_closest},
  {"threshold", l_threshold},
  {NULL, NULL},
};

int luaopen_zever_text(lua_State *L);
int luaopen_zever_text(lua_State *L) {
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  return 1;
}
