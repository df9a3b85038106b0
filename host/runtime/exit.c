/*
 * exit.c: how the CLI's process ends (main.c): with lua_close, or with exit() alone when
 * closing the state could do nothing but give memory back to a process that is ending.
 *
 * lua_close frees every object one by one and runs every __gc: 139-186 K instructions for
 * `zever version` or `--help`, 12.8 M for `zever check` of a 200-entity schema. exit() already
 * flushes and closes every stdio stream (C99 7.20.4.3), which is all that the io library's
 * files ask of their __gc, and the kernel takes back the memory and the descriptors. What it
 * cannot do is what some finalizers do besides: checkpoint and close a SQLite database (its
 * -wal and -shm files), say goodbye to PostgreSQL, Redis or an SMTP server, send TLS
 * close_notify, join worker threads, close an event loop's handles, wait for an io.popen
 * child (pclose). So the state is closed whenever any of that may be pending:
 *
 *   - a C module of host/ was required that is not in MEMORY_ONLY below (a module added later
 *     is closed until someone checks its finalizers and lists it);
 *   - the state has an event loop (runtime.h: zv_loop_of);
 *   - io.popen was called, ffi.gc set a finalizer or newproxy made a userdata that may have one
 *     (zv_runtime_track_exit wraps the three: the ffi module's gc once it loads);
 *   - the binary is built with AddressSanitizer (make asan: its leak check needs the close),
 *     or ZEVER_LUA_CLOSE=1 asks for it (valgrind's leak check, a comparison).
 *
 * It must not decide by command name: what a command or a script loaded is what counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#define ZV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZV_ASAN 1
#endif
#endif

/* Registry key set once io.popen has run in the state, or ffi.gc has set a finalizer. */
static char mark_key;

/*
 * The C modules (package.preload names without "zever.") whose finalizers only free memory of
 * this process (parsers, codecs, process-wide tables of the memory adapters): none of them
 * writes to a file, a socket or a thread when collected.
 */
static const char *const MEMORY_ONLY[] = {
  "breaker_core", "bundle", "cache_core", "compress", "cookie_core", "cron", "crypto_core",
  "duration_core", "flag_core", "idempotency_core", "json_core", "lexer", "limiter_core",
  "lock_core", "metrics_core", "mime_core", "multipart", "password_core", "queue_core",
  "router", "secrets_core", "sql", "sys", "systemd_core", "text", "vectors_core", NULL,
};

static void mark(lua_State *L) {
  lua_pushlightuserdata(L, &mark_key);
  lua_pushboolean(L, 1);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

/* Calls upvalue 1 with the arguments; returns what it returns. */
static int call_original(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* newproxy(true): a userdata whose metatable may get a __gc of the script's own. */
static int newproxy_tracked(lua_State *L) {
  mark(L);
  return call_original(L);
}

/* io.popen: the mark, then the original (upvalue 1). */
static int popen_tracked(lua_State *L) {
  mark(L);
  return call_original(L);
}

/* ffi.gc(cdata, finalizer): the mark when a finalizer is set, then the original. */
static int ffi_gc_tracked(lua_State *L) {
  if (!lua_isnoneornil(L, 2)) mark(L);
  return call_original(L);
}

/* package.preload.ffi: the original loader (upvalue 1), then ffi.gc wrapped. */
static int ffi_loader_tracked(lua_State *L) {
  call_original(L);
  lua_settop(L, 1);
  if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "gc");
    lua_pushcclosure(L, ffi_gc_tracked, 1);
    lua_setfield(L, 1, "gc");
  }
  return 1;
}

/* t[name] = f with the old t[name] as f's upvalue (t on the stack's top). */
static void wrap(lua_State *L, const char *name, lua_CFunction f) {
  lua_getfield(L, -1, name);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_pushcclosure(L, f, 1);
  lua_setfield(L, -2, name);
}

void zv_runtime_track_exit(lua_State *L) {
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  wrap(L, "newproxy", newproxy_tracked);
  lua_pop(L, 1);
  lua_getglobal(L, "io");
  wrap(L, "popen", popen_tracked);
  lua_pop(L, 1);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  wrap(L, "ffi", ffi_loader_tracked);
  lua_pop(L, 2);
}

static int memory_only(const char *name) {
  if (strncmp(name, "zever.", 6) != 0) return 1; /* LuaJIT's own: ffi (its gc is tracked), jit.* */
  name += 6;
  if (strncmp(name, "cdef.", 5) == 0) return 1; /* FFI declarations */
  for (int i = 0; MEMORY_ONLY[i]; i++) {
    if (strcmp(name, MEMORY_ONLY[i]) == 0) return 1;
  }
  return 0;
}

int zv_runtime_must_close(lua_State *L) {
  int must = 0;
  const char *force = getenv("ZEVER_LUA_CLOSE");
#ifdef ZV_ASAN
  return 1;
#endif
  if (force && force[0] && strcmp(force, "0") != 0) return 1;
  if (zv__loop_exists(L)) return 1;
  lua_pushlightuserdata(L, &mark_key);
  lua_rawget(L, LUA_REGISTRYINDEX);
  must = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (must) return 1;
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_getfield(L, -2, "loaded");
  if (!lua_istable(L, -1) || !lua_istable(L, -2)) {
    lua_pop(L, 3);
    return 1;
  }
  lua_pushnil(L);
  while (!must && lua_next(L, -3) != 0) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) continue;
    lua_pushvalue(L, -1);
    lua_rawget(L, -3); /* loaded[name] */
    if (!lua_isnil(L, -1) && !memory_only(lua_tostring(L, -2))) must = 1;
    lua_pop(L, 1);
  }
  lua_settop(L, lua_gettop(L) - (must ? 4 : 3));
  return must;
}

void zv_runtime_end(lua_State *L, int code) {
  fflush(stdout);
  if (zv_runtime_must_close(L)) lua_close(L);
  exit(code); /* flushes and closes every stdio stream; the kernel takes the rest */
}
