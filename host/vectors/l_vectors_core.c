/*
 * l_vectors_core.c: the zever.vectors_core binding: a zv_vectors_set_t owned by a userdata.
 * The db adapter (lua/adapters/vectors/db.lua) calls put/remove/query through LuaJIT's FFI
 * on handle:ptr(); these methods are the classic path and what the specs drive directly.
 *
 *   core.new(dim)                  -> handle                    (raises on dim < 1)
 *   handle:put(slot, floats)       -> true | nil, message, code (floats: a string of dim float32,
 *                                                                slot 0-based, n appends)
 *   handle:remove(slot)            -> true | nil, message, code (the last row moves into slot)
 *   handle:query(floats, k[, nprobe]) -> { {slot, score}, ... } best first | nil, message, code
 *                                     (nprobe given: through the index if built, 0 its default)
 *   handle:build_index{nlist =, nprobe =, iters =, sample =, seed =}
 *                                  -> true | nil, message, code (options 0/absent: defaults)
 *   handle:drop_index()
 *   handle:index_info()            -> { nlist, nprobe, built, indexed, stale } | nil (no index)
 *   handle:count(), handle:dim(), handle:clear()
 *   handle:ptr()                   -> lightuserdata (the zv_vectors_set_t *, for the FFI)
 *   handle:free()                  -> frees the set now (also done by __gc); later use raises
 *
 * Codes are zv_errname names ("RANGE", "INVAL", "NOMEM"). It must not raise while holding C
 * memory: the only allocations are inside the set, which the userdata owns.
 */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "ivf.h"
#include "vectors.h"

#define MT "zever.vectors_core"

typedef struct {
  zv_vectors_set_t *s;
} handle_t;

static zv_vectors_set_t *check(lua_State *L) {
  handle_t *h = luaL_checkudata(L, 1, MT);
  if (!h->s) luaL_error(L, "vectors: the set was freed");
  return h->s;
}

static const float *check_floats(lua_State *L, int i, zv_vectors_set_t *s) {
  size_t len;
  const char *p = luaL_checklstring(L, i, &len);
  if (len != zv_vectors_set_dim(s) * sizeof(float)) {
    luaL_error(L, "vectors: want %d float32 values", (int)zv_vectors_set_dim(s));
  }
  return (const float *)p; /* Lua strings are aligned for any scalar type. */
}

static int l_new(lua_State *L) {
  lua_Integer dim = luaL_checkinteger(L, 1);
  if (dim < 1) return luaL_argerror(L, 1, "dimension must be >= 1");
  handle_t *h = lua_newuserdata(L, sizeof *h);
  h->s = NULL;
  luaL_getmetatable(L, MT);
  lua_setmetatable(L, -2);
  int rc = zv_vectors_set_new((size_t)dim, &h->s);
  if (rc) return luaL_error(L, "vectors: %s", zv_strerror(rc));
  return 1;
}

static int l_put(lua_State *L) {
  zv_vectors_set_t *s = check(L);
  lua_Integer slot = luaL_checkinteger(L, 2);
  const float *v = check_floats(L, 3, s);
  if (slot < 0) return zv_l_fail(L, ZV_ERANGE);
  int rc = zv_vectors_set_put(s, (size_t)slot, v);
  if (rc) return zv_l_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_remove(lua_State *L) {
  zv_vectors_set_t *s = check(L);
  lua_Integer slot = luaL_checkinteger(L, 2);
  if (slot < 0) return zv_l_fail(L, ZV_ERANGE);
  int rc = zv_vectors_set_remove(s, (size_t)slot);
  if (rc) return zv_l_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_query(lua_State *L) {
  zv_vectors_set_t *s = check(L);
  const float *q = check_floats(L, 2, s);
  lua_Integer k = luaL_checkinteger(L, 3);
  if (k < 0) return luaL_argerror(L, 3, "k must be >= 0");
  lua_Integer nprobe = -1; /* -1: exact */
  if (!lua_isnoneornil(L, 4)) {
    nprobe = luaL_checkinteger(L, 4);
    if (nprobe < 0) return luaL_argerror(L, 4, "nprobe must be >= 0");
  }
  size_t n = zv_vectors_set_count(s);
  if ((size_t)k > n) k = (lua_Integer)n;
  /* The hits buffer is a Lua userdata, so a later Lua error cannot leak it. */
  zv_vectors_hit_t *hits = lua_newuserdata(L, (size_t)k * sizeof *hits + 1);
  size_t got;
  int rc;
  if (nprobe < 0) {
    rc = zv_vectors_set_query(s, q, (size_t)k, hits, &got);
  } else {
    rc = zv_vectors_set_query_approx(s, q, (size_t)k, (size_t)nprobe, hits, &got);
  }
  if (rc) return zv_l_fail(L, rc);
  lua_createtable(L, (int)got, 0);
  for (size_t i = 0; i < got; i++) {
    lua_createtable(L, 2, 0);
    lua_pushinteger(L, hits[i].slot);
    lua_rawseti(L, -2, 1);
    lua_pushnumber(L, hits[i].score);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, (int)i + 1);
  }
  return 1;
}

/* opts[name] as a count >= 0 (absent: 0, the default); raises otherwise (before any C
 * memory is taken). */
static size_t opt_count(lua_State *L, int i, const char *name) {
  lua_getfield(L, i, name);
  lua_Number v = lua_isnil(L, -1) ? 0 : luaL_checknumber(L, -1);
  lua_pop(L, 1);
  if (v < 0 || v != (lua_Number)(uint64_t)v) luaL_error(L, "vectors: %s must be a count", name);
  return (size_t)v;
}

static int l_build_index(lua_State *L) {
  zv_vectors_set_t *s = check(L);
  zv_vectors_ivf_opts_t o;
  memset(&o, 0, sizeof o);
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    o.nlist = opt_count(L, 2, "nlist");
    o.nprobe = opt_count(L, 2, "nprobe");
    o.iters = opt_count(L, 2, "iters");
    o.sample = opt_count(L, 2, "sample");
    o.seed = (uint64_t)opt_count(L, 2, "seed");
  }
  int rc = zv_vectors_set_build_index(s, &o);
  if (rc) return zv_l_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_drop_index(lua_State *L) {
  zv_vectors_set_drop_index(check(L));
  return 0;
}

static void set_count(lua_State *L, const char *name, size_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, name);
}

static int l_index_info(lua_State *L) {
  const zv_vectors_ivf_t *ix = zv_vectors_set_index(check(L));
  if (!ix) return 0;
  zv_vectors_ivf_info_t info;
  zv_vectors_ivf_info(ix, &info);
  lua_createtable(L, 0, 5);
  set_count(L, "nlist", info.nlist);
  set_count(L, "nprobe", info.nprobe);
  set_count(L, "built", info.n_built);
  set_count(L, "indexed", info.n_indexed);
  set_count(L, "stale", info.n_stale);
  return 1;
}

static int l_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)zv_vectors_set_count(check(L)));
  return 1;
}

static int l_dim(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)zv_vectors_set_dim(check(L)));
  return 1;
}

static int l_clear(lua_State *L) {
  zv_vectors_set_clear(check(L));
  return 0;
}

static int l_ptr(lua_State *L) {
  lua_pushlightuserdata(L, check(L));
  return 1;
}

static int l_free(lua_State *L) {
  handle_t *h = luaL_checkudata(L, 1, MT);
  zv_vectors_set_free(h->s);
  h->s = NULL;
  return 0;
}

static const luaL_Reg methods[] = {
  {"put", l_put},     {"remove", l_remove}, {"query", l_query}, {"count", l_count},
  {"dim", l_dim},     {"clear", l_clear},   {"ptr", l_ptr},     {"free", l_free},
  {"build_index", l_build_index}, {"drop_index", l_drop_index}, {"index_info", l_index_info},
  {NULL, NULL},
};

int luaopen_zever_vectors_core(lua_State *L);
int luaopen_zever_vectors_core(lua_State *L) {
  luaL_newmetatable(L, MT);
  lua_newtable(L);
  luaL_register(L, NULL, methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_free);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, l_new);
  lua_setfield(L, -2, "new");
  return 1;
}
