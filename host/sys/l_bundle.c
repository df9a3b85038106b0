/*
 * l_bundle.c: the zever.bundle binding: the payload of the running bundle (sys/bundle.h), for
 * zever.assets and the CLI, and the codec pieces `zever bundle` writes one with.
 *
 *   bundle.active          -> true when the host runs from a bundle
 *   bundle.read(name)      -> the file's bytes | nil (no such file); raises on a damaged file
 *   bundle.load(name)      -> the file's chunk | nil, message (as loadfile)
 *   bundle.list(prefix)    -> sorted array of the names that start with prefix
 *   bundle.has(name)       -> true when the payload has a file of that exact name (a binary
 *                             search of the index: no copy, no hash; zever.assets.module)
 *   bundle.info()          -> { hash = "16 hex digits", files = n, host_size = n, size = n }
 *   bundle.verify()        -> true | nil, message (every file and the host against its hash)
 *   bundle.hash(s[, raw])  -> zv_bundle_hash of s: 16 hex digits, or 8 bytes little-endian
 *   bundle.u32(n), bundle.u64(n) -> n as 4 or 8 bytes little-endian
 *   bundle.root([dir])     -> the app folder the payload's app/ stands for, process-wide (every
 *                             worker's state sees what the first one set) | nil when unset
 *   bundle.MAGIC           -> "ZVBUNDL1"
 *
 * Outside a bundle, read/load/list find nothing and info/verify return nil.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "bundle.h"

static const zv_bundle_entry_t *lookup(lua_State *L, const zv_bundle_t **b) {
  size_t len;
  const char *name = luaL_checklstring(L, 1, &len);
  *b = zv_bundle_self();
  return *b ? zv_bundle_find(*b, name, len) : NULL;
}

static int damaged(lua_State *L, const zv_bundle_entry_t *e) {
  return luaL_error(L, "this bundle is damaged: %.*s does not match its hash (rebuild it with "
                    "zever bundle)", (int)e->name_len, e->name);
}

static int l_read(lua_State *L) {
  const zv_bundle_t *b;
  const zv_bundle_entry_t *e = lookup(L, &b);
  if (!e) return 0;
  if (zv_bundle_check(b, e) != 0) return damaged(L, e);
  lua_pushlstring(L, (const char *)zv_bundle_data(b, e), (size_t)e->size);
  return 1;
}

static int l_has(lua_State *L) {
  size_t len;
  const char *name = luaL_checklstring(L, 1, &len);
  const zv_bundle_t *b = zv_bundle_self();
  lua_pushboolean(L, b && zv_bundle_find(b, name, len) != NULL);
  return 1;
}

static int l_load(lua_State *L) {
  const zv_bundle_t *b;
  const zv_bundle_entry_t *e = lookup(L, &b);
  char chunk[300];
  if (!e) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot open %s in the bundle", lua_tostring(L, 1));
    return 2;
  }
  if (zv_bundle_check(b, e) != 0) return damaged(L, e);
  snprintf(chunk, sizeof chunk, "=%.*s", (int)e->name_len, e->name);
  if (luaL_loadbuffer(L, (const char *)zv_bundle_data(b, e), (size_t)e->size, chunk) != 0) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

static int l_list(lua_State *L) {
  size_t plen;
  const char *prefix = luaL_optlstring(L, 1, "", &plen);
  const zv_bundle_t *b = zv_bundle_self();
  uint32_t i;
  int n = 0;
  lua_newtable(L);
  if (!b) return 1;
  for (i = 0; i < b->count; i++) {
    const zv_bundle_entry_t *e = &b->entries[i];
    if (e->name_len >= plen && memcmp(e->name, prefix, plen) == 0) {
      lua_pushlstring(L, e->name, e->name_len);
      lua_rawseti(L, -2, ++n);
    }
  }
  return 1;
}

static void push_hex(lua_State *L, uint64_t h) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
  lua_pushstring(L, hex);
}

static int l_info(lua_State *L) {
  const zv_bundle_t *b = zv_bundle_self();
  if (!b) return 0;
  lua_createtable(L, 0, 4);
  push_hex(L, b->content_hash);
  lua_setfield(L, -2, "hash");
  lua_pushnumber(L, (lua_Number)b->count);
  lua_setfield(L, -2, "files");
  lua_pushnumber(L, (lua_Number)b->host_len);
  lua_setfield(L, -2, "host_size");
  lua_pushnumber(L, (lua_Number)b->map_len);
  lua_setfield(L, -2, "size");
  return 1;
}

static int l_verify(lua_State *L) {
  const zv_bundle_t *b = zv_bundle_self();
  const zv_bundle_entry_t *bad;
  if (!b) return 0;
  if (zv_bundle_verify(b, &bad) == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushnil(L);
  if (bad) {
    char msg[400];
    snprintf(msg, sizeof msg, "this bundle is damaged: %.*s does not match its hash",
             (int)bad->name_len, bad->name);
    lua_pushstring(L, msg);
  } else
    lua_pushliteral(L, "this bundle is damaged: the host does not match its hash");
  return 2;
}

static void push_le(lua_State *L, uint64_t v, int bytes) {
  unsigned char out[8];
  int i;
  for (i = 0; i < bytes; i++) out[i] = (unsigned char)(v >> (8 * i));
  lua_pushlstring(L, (const char *)out, (size_t)bytes);
}

static int l_hash(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  uint64_t h = zv_bundle_hash(s, n);
  if (lua_toboolean(L, 2)) push_le(L, h, 8);
  else push_hex(L, h);
  return 1;
}

static uint64_t check_count(lua_State *L, int i, double max) {
  lua_Number n = luaL_checknumber(L, i);
  if (n < 0 || n > max || n != (lua_Number)(uint64_t)n)
    luaL_argerror(L, i, "want a whole number in range");
  return (uint64_t)n;
}

static int l_u32(lua_State *L) {
  push_le(L, check_count(L, 1, 4294967295.0), 4);
  return 1;
}

static int l_u64(lua_State *L) {
  push_le(L, check_count(L, 1, 9007199254740992.0), 8);
  return 1;
}

static pthread_mutex_t root_mu = PTHREAD_MUTEX_INITIALIZER;
static char root[4096];

static int l_root(lua_State *L) {
  size_t n;
  const char *dir = luaL_optlstring(L, 1, NULL, &n);
  if (dir && n >= sizeof root) return luaL_argerror(L, 1, "path too long");
  pthread_mutex_lock(&root_mu);
  if (dir) memcpy(root, dir, n + 1);
  if (root[0]) lua_pushstring(L, root);
  else lua_pushnil(L);
  pthread_mutex_unlock(&root_mu);
  return 1;
}

int luaopen_zever_bundle(lua_State *L);
int luaopen_zever_bundle(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"read", l_read}, {"load", l_load}, {"list", l_list}, {"has", l_has}, {"info", l_info},
    {"verify", l_verify}, {"hash", l_hash}, {"u32", l_u32}, {"u64", l_u64}, {"root", l_root},
    {NULL, NULL},
  };
  lua_createtable(L, 0, 11);
  luaL_register(L, NULL, fns);
  lua_pushboolean(L, zv_bundle_self() != NULL);
  lua_setfield(L, -2, "active");
  lua_pushliteral(L, ZV_BUNDLE_MAGIC);
  lua_setfield(L, -2, "MAGIC");
  return 1;
}
