/*
 * l_sys.c: the zever.sys binding: facts about the host process for the CLI and the runtime.
 *
 *   sys.version            -> "0.1.0"
 *   sys.home()             -> the folder of the Lua tree (see zv_sys_home); in a bundle,
 *                             which has none, the folder holding the bundle file
 *   sys.exe()              -> absolute path of the running binary
 *   sys.now()              -> monotonic seconds (a number with nanosecond resolution)
 *   sys.wall()             -> wall-clock seconds since the Unix epoch (CLOCK_REALTIME)
 *   sys.E                  -> { NOMEM = -1, INVAL = -2, ... }: the core's error codes by name,
 *                             built from ZV_ERRNO_MAP (host/core/zv.h), so Lua never types one
 *   sys.strerror(code)     -> the core's message of a code ("input too long")
 *   sys.listdir(path)      -> sorted array of entry names without "." and ".." | nil, message
 *   sys.isdir(path)        -> boolean
 *   sys.mtime(path)        -> modification time in seconds (nanosecond resolution) | nil, message
 *   sys.isatty(fd)         -> boolean
 *   sys.getpid()           -> integer
 *   sys.exit_closes()      -> boolean: whether the end of this process would close the Lua state
 *                             (lua_close, running every __gc) rather than exit at once
 *                             (runtime/exit.c); false in a state that loaded nothing but
 *                             memory-only modules and used neither io.popen nor finalizers
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/runtime.h"
#include "bundle.h"
#include "sys.h"

static int l_home(lua_State *L) {
  char buf[4096];
  int rc;
  if (zv_bundle_self()) { /* a bundle has no tree: the folder holding the bundle file */
    char *slash;
    rc = zv_sys_exe(buf, sizeof buf);
    if (rc == 0 && (slash = strrchr(buf, '/')) != NULL) *(slash == buf ? slash + 1 : slash) = '\0';
  } else {
    rc = zv_sys_home(buf, sizeof buf);
  }
  if (rc) return luaL_error(L, "cannot find the zever home: %s", zv_strerror(rc));
  lua_pushstring(L, buf);
  return 1;
}

static int l_exe(lua_State *L) {
  char buf[4096];
  int rc = zv_sys_exe(buf, sizeof buf);
  if (rc) return luaL_error(L, "cannot read /proc/self/exe: %s", zv_strerror(rc));
  lua_pushstring(L, buf);
  return 1;
}

static int l_now(lua_State *L) {
  lua_pushnumber(L, (lua_Number)zv_sys_now_ns() / 1e9);
  return 1;
}

static int l_wall(lua_State *L) {
  lua_pushnumber(L, (lua_Number)zv_sys_wall());
  return 1;
}

static int l_strerror(lua_State *L) {
  lua_pushstring(L, zv_strerror((int)luaL_checkinteger(L, 1)));
  return 1;
}

/*
 * Sorts the array of n strings at the top of the stack by strcmp, in place: an insertion sort
 * (folders of commands and migrations hold tens of names; table.sort with a C comparator called
 * through Lua cost ~100 K instructions for 20 names at every `zever --help`).
 */
static void sort_names(lua_State *L, int n) {
  for (int i = 2; i <= n; i++) {
    int j = i - 1;
    lua_rawgeti(L, -1, i);
    while (j >= 1) {
      lua_rawgeti(L, -2, j);
      if (strcmp(lua_tostring(L, -1), lua_tostring(L, -2)) <= 0) {
        lua_pop(L, 1);
        break;
      }
      lua_rawseti(L, -3, j + 1);
      j--;
    }
    lua_rawseti(L, -2, j + 1);
  }
}

static int l_listdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  DIR *dir = opendir(path);
  struct dirent *e;
  int n = 0;
  if (!dir) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_newtable(L);
  /* Nothing below raises while dir is open: lua_pushstring only fails on memory exhaustion. */
  while ((e = readdir(dir)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    lua_pushstring(L, e->d_name);
    lua_rawseti(L, -2, ++n);
  }
  closedir(dir);
  sort_names(L, n);
  return 1;
}

static int l_isdir(lua_State *L) {
  struct stat st;
  lua_pushboolean(L, stat(luaL_checkstring(L, 1), &st) == 0 && S_ISDIR(st.st_mode));
  return 1;
}

static int l_mtime(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat st;
  if (stat(path, &st) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_pushnumber(L, (lua_Number)st.st_mtim.tv_sec + (lua_Number)st.st_mtim.tv_nsec * 1e-9);
  return 1;
}

static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

static int l_getpid(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)getpid());
  return 1;
}

static int l_exit_closes(lua_State *L) {
  lua_pushboolean(L, zv_runtime_must_close(L));
  return 1;
}

static const luaL_Reg funcs[] = {
  {"home", l_home},     {"exe", l_exe},       {"now", l_now},       {"listdir", l_listdir},
  {"isdir", l_isdir},   {"isatty", l_isatty}, {"getpid", l_getpid}, {"wall", l_wall},
  {"strerror", l_strerror}, {"mtime", l_mtime}, {"exit_closes", l_exit_closes},
  {NULL, NULL},
};

int luaopen_zever_sys(lua_State *L);
int luaopen_zever_sys(lua_State *L) {
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  lua_pushliteral(L, ZV_VERSION);
  lua_setfield(L, -2, "version");
  lua_newtable(L);
#define ZV__X(name, msg)             \
  lua_pushinteger(L, ZV_E##name);    \
  lua_setfield(L, -2, #name);
  ZV_ERRNO_MAP(ZV__X)
#undef ZV__X
  lua_setfield(L, -2, "E");
  return 1;
}
