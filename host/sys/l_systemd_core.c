/*
 * l_systemd_core.c: the zever.systemd_core binding (systemd.h), wrapped by lua/zever/systemd.lua.
 *
 *   core.notify(path, msg)        -> true | nil, message     one datagram to NOTIFY_SOCKET's path
 *   core.is_stream(fd, value)     -> boolean                 fd is JOURNAL_STREAM's stream
 *   core.arrive(generation, n)    -> boolean                 true for the n-th arrival
 *   core.getpid()                 -> the process id (the same in every worker thread)
 *   core.monotonic_usec()         -> CLOCK_MONOTONIC in microseconds (MONOTONIC_USEC=)
 *   core.reap()                   -> how many ended children it waited for (PID 1's duty)
 *   core.forward(signum)          -> true | false: signum sent to every other process (PID 1)
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "systemd.h"

static int l_notify(lua_State *L) {
  size_t len;
  const char *path = luaL_checkstring(L, 1);
  const char *msg = luaL_checklstring(L, 2, &len);
  int err_no, rc = zv_systemd_notify(path, msg, len, &err_no);
  if (rc == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushnil(L);
  if (rc == ZV_EINVAL)
    lua_pushliteral(L, "NOTIFY_SOCKET must be an absolute path or an @abstract name");
  else
    lua_pushfstring(L, "sending to NOTIFY_SOCKET: %s", strerror(err_no));
  return 2;
}

static int l_is_stream(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 1);
  lua_pushboolean(L, zv_systemd_is_stream(fd, luaL_optstring(L, 2, NULL)));
  return 1;
}

static int l_arrive(lua_State *L) {
  lua_Number gen = luaL_checknumber(L, 1);
  int n = (int)luaL_checkinteger(L, 2);
  lua_pushboolean(L, zv_systemd_arrive((uint64_t)gen, n));
  return 1;
}

static int l_getpid(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)getpid());
  return 1;
}

static int l_monotonic_usec(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec * 1e6 + (lua_Number)(ts.tv_nsec / 1000));
  return 1;
}

static int l_reap(lua_State *L) {
  lua_pushinteger(L, zv_systemd_reap());
  return 1;
}

static int l_forward(lua_State *L) {
  lua_pushboolean(L, zv_systemd_forward((int)luaL_checkinteger(L, 1)) == 0);
  return 1;
}

int luaopen_zever_systemd_core(lua_State *L);
int luaopen_zever_systemd_core(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"notify", l_notify}, {"is_stream", l_is_stream}, {"arrive", l_arrive},
    {"getpid", l_getpid}, {"monotonic_usec", l_monotonic_usec},
    {"reap", l_reap}, {"forward", l_forward}, {NULL, NULL},
  };
  lua_createtable(L, 0, 5);
  luaL_register(L, NULL, fns);
  return 1;
}
