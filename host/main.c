/*
 * main.c: the zever binary. It creates a Lua state (runtime/state.c: every C module of host/ in
 * package.preload as zever.<name>, package.path at the zever home) and hands argv to the
 * Lua dispatcher in cmd/zever/init.lua, whose main(args) returns the exit code. A bundle (a host
 * with a payload appended: sys/bundle.h) takes that tree from its payload instead.
 *
 * It must not grow logic of its own: commands, flags and messages belong to cmd/zever/; how the
 * process ends (with or without lua_close) belongs to runtime/exit.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/zv.h"
#include "runtime/runtime.h"
#include "sys/bundle.h"
#include "sys/sys.h"

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) msg = luaL_typename(L, 1);
  lua_getglobal(L, "debug");
  lua_getfield(L, -1, "traceback");
  lua_pushstring(L, msg);
  lua_pushinteger(L, 2);
  lua_call(L, 2, 1);
  return 1;
}

/* Runs require("cmd.zever").main(args); returns its integer result, or 1 after an error. */
static int run(lua_State *L, int argc, char **argv) {
  int status, code;
  lua_pushcfunction(L, traceback);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "cmd.zever");
  status = lua_pcall(L, 1, 1, 1);
  if (status == 0) {
    lua_getfield(L, -1, "main");
    lua_remove(L, -2);
    lua_createtable(L, argc, 0);
    for (int i = 1; i < argc; i++) {
      lua_pushstring(L, argv[i]);
      lua_rawseti(L, -2, i);
    }
    status = lua_pcall(L, 1, 1, 1);
  }
  if (status != 0) {
    fprintf(stderr, "zever: %s\n", lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
    return 1;
  }
  code = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : 0;
  return code;
}

int main(int argc, char **argv) {
  char home[4096];
  const char *why = NULL;
  lua_State *L;
  /* A bundle (sys/bundle.h) carries its Lua tree; a damaged one is refused before any use. */
  int rc = zv_bundle_self_open(&why);
  if (rc != 0 && rc != ZV_ENOTFOUND) {
    fprintf(stderr, "zever: this bundle is damaged (%s); rebuild it with zever bundle\n",
            why ? why : zv_strerror(rc));
    return 1;
  }
  rc = zv_bundle_self() ? 0 : zv_sys_home(home, sizeof home);
  if (rc) {
    fprintf(stderr, "zever: cannot find the Lua tree (set ZEVER_HOME): %s\n", zv_strerror(rc));
    return 1;
  }
  L = zv_runtime_newstate();
  if (!L) {
    fprintf(stderr, "zever: cannot create a Lua state\n");
    return 1;
  }
  zv_runtime_track_exit(L);
  /* Start-up (the dispatcher, the command's file) runs without the collector: it allocates
   * little and collecting it cost ~100 K instructions a start. The dispatcher restarts it
   * before the command runs (cmd/zever/init.lua). */
  lua_gc(L, LUA_GCSTOP, 0);
  rc = run(L, argc, argv);
  zv_runtime_end(L, rc); /* lua_close only where a finalizer may matter: runtime/exit.c */
  return rc;
}
