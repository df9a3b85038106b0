/*
 * lx_static.c: http.listen's `static` option (a part of the zever.http binding):
 *
 *   static = { { prefix = "/assets", root = "/abs/public", index = "index.html" | nil,
 *                max_age = seconds | nil, immutable = bool, precompressed = bool,
 *                payload = "app/public" | nil }, ... }
 *
 * With payload (a bundled host: zever.app sets it when the bundle carries the root's files),
 * the mount serves the bundle's files under that folder and never the disk's (root is then
 * only named in messages); the mount holds a read-only descriptor of the bundle file, which
 * stream_static.c sendfile(2)s large bodies from.
 *
 * zever.app's app:static validates and resolves the arguments; this file checks them again (a
 * malformed table raises) and builds the zv_static_t that stream.c serves from. It raises only
 * while it holds no memory (the message is copied to the stack first).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/runtime.h"
#include "lx_static.h"

typedef struct {
  const char *prefix, *root, *index, *payload;
  int64_t max_age;
  int immutable, precompressed;
} mount_opts_t;

static const char *str_field(lua_State *L, int t, const char *k, int required) {
  const char *s;
  lua_getfield(L, t, k);
  if (lua_isnil(L, -1) && !required) {
    lua_pop(L, 1);
    return NULL;
  }
  if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "http.listen: static.%s must be a string", k);
  s = lua_tostring(L, -1);
  lua_pop(L, 1); /* the option table keeps the string alive */
  return s;
}

static void read_mount(lua_State *L, int t, mount_opts_t *o) {
  if (lua_type(L, t) != LUA_TTABLE) luaL_error(L, "http.listen: static must be a list of tables");
  o->prefix = str_field(L, t, "prefix", 1);
  o->root = str_field(L, t, "root", 1);
  o->index = str_field(L, t, "index", 0);
  o->payload = str_field(L, t, "payload", 0);
  if (o->payload && !zv__bundle_active())
    luaL_error(L, "http.listen: static.payload needs a bundled host");
  lua_getfield(L, t, "max_age");
  if (lua_isnil(L, -1)) {
    o->max_age = -1;
  } else {
    lua_Number n = lua_tonumber(L, -1);
    if (lua_type(L, -1) != LUA_TNUMBER || !(n >= 0) || n > 1e10 || n != (lua_Number)(int64_t)n)
      luaL_error(L, "http.listen: static.max_age must be a whole number of seconds >= 0");
    o->max_age = (int64_t)n;
  }
  lua_pop(L, 1);
  lua_getfield(L, t, "immutable");
  o->immutable = lua_toboolean(L, -1);
  lua_getfield(L, t, "precompressed");
  o->precompressed = lua_toboolean(L, -1);
  lua_pop(L, 2);
}

zv_static_t *zv__http_statics_new(lua_State *L, int idx) {
  mount_opts_t opts[ZV_STATIC_MAX_MOUNTS];
  zv_static_t *s;
  char msg[256];
  int n;
  if (lua_isnoneornil(L, idx)) return NULL;
  lua_getfield(L, idx, "static");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return NULL;
  }
  if (lua_type(L, -1) != LUA_TTABLE) luaL_error(L, "http.listen: static must be a list of tables");
  n = (int)lua_objlen(L, -1);
  if (n > ZV_STATIC_MAX_MOUNTS)
    luaL_error(L, "http.listen: at most %d static mounts", ZV_STATIC_MAX_MOUNTS);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, -1, i + 1);
    read_mount(L, lua_gettop(L), &opts[i]);
    lua_pop(L, 1);
  }
  /* From here on nothing raises while s is held. */
  s = zv_alloc(sizeof *s);
  if (!s) luaL_error(L, "http.listen: out of memory");
  s->n = 0;
  for (int i = 0; i < n; i++) {
    const char *why = NULL;
    int rc;
    if (opts[i].payload) {
      int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
      rc = fd < 0 ? ZV_EIO
                  : zv_static_add_payload(s, opts[i].prefix, opts[i].root, opts[i].payload, fd,
                                          opts[i].index, opts[i].max_age, opts[i].immutable,
                                          opts[i].precompressed, &why);
    } else {
      rc = zv_static_add(s, opts[i].prefix, opts[i].root, opts[i].index, opts[i].max_age,
                         opts[i].immutable, opts[i].precompressed, &why);
    }
    if (rc) {
      snprintf(msg, sizeof msg, "http.listen: static mount %s (%s): %s", opts[i].prefix,
               opts[i].root, why ? why : zv_strerror(rc));
      zv__http_statics_free(s);
      luaL_error(L, "%s", msg);
    }
  }
  lua_pop(L, 1);
  return s;
}

void zv__http_statics_free(const zv_static_t *s) {
  if (!s) return;
  zv_static_free((zv_static_t *)s);
  zv_free((void *)s);
}
