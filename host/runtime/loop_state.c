/*
 * loop_state.c: the event loop of a Lua state (one zv_loop_t per state, kept in the registry),
 * the protected call that loop callbacks go through, and the failure reporter of the state's
 * coroutine pool (runtime.h). zever.loop, zever.http, zever.redis,
 * zever.smtp and zever.threads all reach the loop through here (runtime.h).
 *
 * It must not raise while it holds memory: the loop lives in a userdata the state owns.
 */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "runtime.h"

static char loop_key;

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static int loop_gc(lua_State *L) {
  zv_loop_t *loop = lua_touserdata(L, 1);
  if (loop->uv.data == loop) {
    zv_loop_close(loop);
    loop->uv.data = NULL;
  }
  return 0;
}

int zv__loop_exists(lua_State *L) {
  int exists;
  lua_pushlightuserdata(L, &loop_key);
  lua_rawget(L, LUA_REGISTRYINDEX);
  exists = !lua_isnil(L, -1);
  lua_pop(L, 1);
  return exists;
}

zv_loop_t *zv_loop_of(lua_State *L) {
  zv_loop_t *loop;
  lua_pushlightuserdata(L, &loop_key);
  lua_rawget(L, LUA_REGISTRYINDEX);
  loop = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (loop) return loop;
  loop = lua_newuserdata(L, sizeof *loop);
  memset(loop, 0, sizeof *loop);
  if (zv_loop_init(loop)) {
    lua_pop(L, 1);
    luaL_error(L, "cannot create an event loop");
    return NULL;
  }
  lua_newtable(L);
  lua_pushcfunction(L, loop_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_pushlightuserdata(L, &loop_key);
  lua_pushvalue(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  lua_pushcfunction(L, traceback);
  loop->tb_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return loop;
}

int zv_loop_pcall(lua_State *L, int nargs, int nresults, const char *what) {
  zv_loop_t *loop = zv_loop_of(L);
  int base = lua_gettop(L) - nargs;
  int rc;
  lua_rawgeti(L, LUA_REGISTRYINDEX, loop->tb_ref);
  lua_insert(L, base);
  rc = lua_pcall(L, nargs, nresults, base);
  if (rc) {
    fprintf(stderr, "zever: %s: %s\n", what, lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
    fflush(stderr);
    lua_pop(L, 1);
  }
  lua_remove(L, base);
  return rc;
}


void zv_co_report(lua_State *L, lua_State *co, const char *what) {
  int top = lua_gettop(L);
  const char *msg = lua_tostring(co, -1);
  lua_getfield(L, LUA_GLOBALSINDEX, "debug");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "traceback");
    lua_pushthread(co);
    lua_xmove(co, L, 1);
    lua_pushstring(L, msg ? msg : "(error object is not a string)");
    if (!lua_pcall(L, 2, 1, 0) && lua_isstring(L, -1)) msg = lua_tostring(L, -1);
  }
  fprintf(stderr, "zever: %s: %s\n", what, msg ? msg : "?");
  fflush(stderr);
  lua_settop(L, top);
}

void zv_token_complete(zv_loop_t *loop, lua_State *L, int nargs, const char *what) {
  int t = lua_gettop(L) - nargs;
  lua_State *co = lua_tothread(L, t);
  if (co) {
    int rc;
    if (co == L || lua_status(co) != LUA_YIELD) {
      fprintf(stderr, "zever: %s: cannot resume a coroutine that does not wait\n", what);
      fflush(stderr);
      lua_settop(L, t - 1);
      return;
    }
    /* co stays anchored at t on L's stack while it runs. */
    lua_xmove(L, co, nargs);
    rc = lua_resume(co, nargs);
    zv_co_done(loop, L, co, LUA_NOREF, rc, what);
  } else if (lua_type(L, t) == LUA_TTABLE) {
    for (int i = nargs; i >= 1; i--) lua_rawseti(L, t, i);
    lua_pushliteral(L, "done");
    lua_pushboolean(L, 1);
    lua_rawset(L, t);
  } else {
    fprintf(stderr, "zever: %s: a token is a coroutine or a box, got a %s\n", what,
            luaL_typename(L, t));
    fflush(stderr);
  }
  lua_settop(L, t - 1);
}
