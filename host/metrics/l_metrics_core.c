/*
 * l_metrics_core.c: the zever.metrics_core binding (lua/adapters/metrics/prometheus.lua wraps
 * it; the per-event path there is LuaJIT's FFI to metrics_ffi.h, not this file).
 *
 *   core.open(name[, max_cells])   -> handle | nil, message, code   (one registry per name)
 *   handle:family(name, help, kind, labels, bounds) -> id | nil, message, code
 *       kind "counter" | "gauge" | "histogram"; labels an array of names; bounds an array
 *   handle:series(family, values)  -> first cell | nil, message, code
 *   handle:bounds(family)          -> lightuserdata (const double *), nb
 *   handle:claim()                 -> slot, lightuserdata (double *cells) | nil, message, code
 *   handle:unclaim(slot)
 *   handle:value(cell)             -> the merged value
 *   handle:render(format)          -> text ("prometheus" | "openmetrics"; no "# EOF")
 *   handle:release()               -> drops this state's reference (also done by __gc)
 *   core.add(cells, cell, v)       the classic-API increment (bench/metrics_lua_bench.lua
 *                                  compares it with the FFI path zever.metrics takes)
 *   core.observe(cells, cell, bounds, nb, v)   the same for a histogram
 *
 * Codes are zv_errname names ("INVAL", "CONFLICT", "TOOLONG", "RANGE", "NOMEM"). Using a
 * released handle raises. The rendered text lives in a buffer the handle owns until the next
 * render or release, so pushing it (which may raise on OOM) leaks nothing.
 */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "metrics.h"

#define MT "zever.metrics_core"

typedef struct {
  zv_metrics_t *m;
  char *text; /* the last render */
} handle_t;

static handle_t *check(lua_State *L) {
  handle_t *h = luaL_checkudata(L, 1, MT);
  if (!h->m) luaL_error(L, "metrics: the handle was released");
  return h;
}

static int l_release(lua_State *L) {
  handle_t *h = luaL_checkudata(L, 1, MT);
  if (h->m) zv_metrics_release(h->m);
  zv_free(h->text);
  h->m = NULL;
  h->text = NULL;
  return 0;
}

static int l_open(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  lua_Number cells = luaL_optnumber(L, 2, 65536);
  handle_t *h = lua_newuserdata(L, sizeof *h);
  h->m = NULL;
  h->text = NULL;
  luaL_getmetatable(L, MT);
  lua_setmetatable(L, -2);
  if (!(cells >= 1 && cells <= 1 << 28)) return zv_l_fail(L, ZV_EINVAL);
  int rc = zv_metrics_open(name, (size_t)cells, &h->m);
  if (rc) return zv_l_fail(L, rc);
  return 1;
}

static const char *const KINDS[] = {"counter", "gauge", "histogram", NULL};

static int l_family(lua_State *L) {
  handle_t *h = check(L);
  const char *name = luaL_checkstring(L, 2);
  const char *help = luaL_optstring(L, 3, "");
  int kind = luaL_checkoption(L, 4, NULL, KINDS);
  luaL_checktype(L, 5, LUA_TTABLE);
  const char *labels[ZV_METRICS_MAX_LABELS];
  size_t nl = lua_objlen(L, 5);
  if (nl > ZV_METRICS_MAX_LABELS) return zv_l_fail(L, ZV_ETOOLONG);
  for (size_t i = 0; i < nl; i++) {
    lua_rawgeti(L, 5, (int)i + 1);
    labels[i] = lua_tostring(L, -1); /* kept alive by the table */
    lua_pop(L, 1);
    if (!labels[i]) return luaL_error(L, "metrics: label names must be strings");
  }
  double bounds[ZV_METRICS_MAX_BOUNDS];
  size_t nb = 0;
  if (!lua_isnoneornil(L, 6)) {
    luaL_checktype(L, 6, LUA_TTABLE);
    nb = lua_objlen(L, 6);
    if (nb > ZV_METRICS_MAX_BOUNDS) return zv_l_fail(L, ZV_ETOOLONG);
    for (size_t i = 0; i < nb; i++) {
      lua_rawgeti(L, 6, (int)i + 1);
      bounds[i] = lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
  }
  int32_t id;
  int rc = zv_metrics_family(h->m, name, help, kind, labels, nl, bounds, nb, &id);
  if (rc) return zv_l_fail(L, rc);
  lua_pushinteger(L, id);
  return 1;
}

static int l_series(lua_State *L) {
  handle_t *h = check(L);
  int32_t family = (int32_t)luaL_checkinteger(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  const char *values[ZV_METRICS_MAX_LABELS];
  size_t lens[ZV_METRICS_MAX_LABELS];
  size_t n = lua_objlen(L, 3);
  if (n > ZV_METRICS_MAX_LABELS) return zv_l_fail(L, ZV_EINVAL);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 3, (int)i + 1);
    if (lua_type(L, -1) != LUA_TSTRING) return luaL_error(L, "metrics: label values must be strings");
    values[i] = lua_tolstring(L, -1, &lens[i]);
    lua_pop(L, 1);
  }
  int32_t cell;
  int rc = zv_metrics_series(h->m, family, values, lens, n, &cell);
  if (rc) return zv_l_fail(L, rc);
  lua_pushinteger(L, cell);
  return 1;
}

static int l_bounds(lua_State *L) {
  handle_t *h = check(L);
  int32_t nb;
  const double *b = zv_metrics_bounds(h->m, (int32_t)luaL_checkinteger(L, 2), &nb);
  lua_pushlightuserdata(L, (void *)b);
  lua_pushinteger(L, nb);
  return 2;
}

static int l_claim(lua_State *L) {
  handle_t *h = check(L);
  double *cells;
  int slot = zv_metrics_claim(h->m, &cells);
  if (slot < 0) return zv_l_fail(L, slot);
  lua_pushinteger(L, slot);
  lua_pushlightuserdata(L, cells);
  return 2;
}

static int l_unclaim(lua_State *L) {
  handle_t *h = check(L);
  zv_metrics_unclaim(h->m, (int)luaL_checkinteger(L, 2));
  return 0;
}

static int l_value(lua_State *L) {
  handle_t *h = check(L);
  lua_pushnumber(L, zv_metrics_value(h->m, (int32_t)luaL_checkinteger(L, 2)));
  return 1;
}

static const char *const FORMATS[] = {"prometheus", "openmetrics", NULL};

static int l_render(lua_State *L) {
  handle_t *h = check(L);
  int fmt = luaL_checkoption(L, 2, "prometheus", FORMATS);
  zv_free(h->text);
  h->text = NULL;
  size_t len;
  int rc = zv_metrics_render(h->m, fmt, &h->text, &len);
  if (rc) return zv_l_fail(L, rc);
  lua_pushlstring(L, h->text, len);
  return 1;
}

static const luaL_Reg methods[] = {
  {"family", l_family},   {"series", l_series}, {"bounds", l_bounds}, {"claim", l_claim},
  {"unclaim", l_unclaim}, {"value", l_value},   {"render", l_render}, {"release", l_release},
  {NULL, NULL},
};

static int l_add(lua_State *L) {
  luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
  zv_metrics_add(lua_touserdata(L, 1), (int32_t)luaL_checkinteger(L, 2), luaL_checknumber(L, 3));
  return 0;
}

static int l_observe(lua_State *L) {
  luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
  luaL_checktype(L, 3, LUA_TLIGHTUSERDATA);
  zv_metrics_observe(lua_touserdata(L, 1), (int32_t)luaL_checkinteger(L, 2), lua_touserdata(L, 3),
                     (int32_t)luaL_checkinteger(L, 4), luaL_checknumber(L, 5));
  return 0;
}

static const luaL_Reg funcs[] = {
  {"open", l_open},
  {"add", l_add},
  {"observe", l_observe},
  {NULL, NULL},
};

int luaopen_zever_metrics_core(lua_State *L);
int luaopen_zever_metrics_core(lua_State *L) {
  zv_l_newclass(L, MT, methods, l_release, funcs);
  lua_pushinteger(L, ZV_METRICS_MAX_LABELS);
  lua_setfield(L, -2, "MAX_LABELS");
  return 1;
}
