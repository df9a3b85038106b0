/*
 * l_redis_core.c: the zever.redis_core binding, wrapped by lua/zever/redis.lua.
 *
 *   core.parse_url(url)          -> {host=, port=, db=, username=, password=} | nil, why
 *   core.async(url, timeout, backoff_min, backoff_max, dispatch, error_mt)
 *                                -> aclient | nil, why     (connects in the background)
 *   aclient:send(token, ...)     -> true | nil, code, message
 *   aclient:send_many(token, cmds) -> true | nil, code, message
 *   aclient:close()
 *   aclient:info()               -> connected, pending, connects, last_error
 *   core.sync(url, timeout)      -> sclient | nil, why     (does not connect yet)
 *   sclient:connect()            -> true | nil, code, message
 *   sclient:call(...)            -> reply | nil, code, message
 *   sclient:call_many(cmds)      -> {reply...} | nil, code, message
 *   sclient:close()
 *
 * Async replies arrive through dispatch(token, value) or dispatch(token, nil, code, message),
 * called from the loop (or from close()); for send_many the value is the array of replies.
 *
 * Reply mapping: status and bulk -> string, integer -> number (a decimal string beyond +-2^53),
 * nil -> nil (lightuserdata NULL inside arrays: redis.null, the same value as cjson.null), array
 * -> table, error -> nil, "redis", text at the top level and {code="redis", message=text} with
 * error_mt inside arrays. Messages about connections name host:port and never the password.
 *
 * It must not raise while it holds a hiredis reply (conversion only pushes values; an out of
 * memory there is LuaJIT's panic anyway) nor call Lua while the loop is closing.
 */
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "../runtime/runtime.h"
#include "client.h"
#include "redis_url.h"
#include "sync.h"

#define ACLIENT_MT "zever.redis.async"
#define SCLIENT_MT "zever.redis.sync"
#define STACK_ARGS 32
#define MAX_DEPTH 64

typedef struct {
  zv_redis_client_t *c;  /* NULL once closed */
  zv_loop_t *loop;
  lua_State *cur;        /* set while close() runs outside the loop: replies go there */
  int gc;                /* inside __gc: forget the tokens, call nothing */
  int dispatch_ref;
  int errmt_ref;
} aclient_t;

typedef struct {
  zv_redis_sync_t s;
  int closed;
  int errmt_ref;
} sclient_t;

/* A send_many in flight: the replies gather in a table until the last one. */
typedef struct {
  int token_ref;
  int results_ref;
  int n, next;
  int failure;
} batch_t;

/* --- replies -> Lua ------------------------------------------------------------------------- */

static void push_error_table(lua_State *L, const char *msg, size_t len, int errmt_ref) {
  lua_createtable(L, 0, 2);
  lua_pushliteral(L, "redis");
  lua_setfield(L, -2, "code");
  lua_pushlstring(L, msg, len);
  lua_setfield(L, -2, "message");
  lua_rawgeti(L, LUA_REGISTRYINDEX, errmt_ref);
  lua_setmetatable(L, -2);
}

/* Pushes one value for r (inside an array: nested = 1). */
static void push_reply(lua_State *L, const redisReply *r, int nested, int depth, int errmt_ref) {
  switch (r->type) {
  case REDIS_REPLY_STRING:
  case REDIS_REPLY_STATUS:
    lua_pushlstring(L, r->str, r->len);
    break;
  case REDIS_REPLY_INTEGER:
    if (r->integer <= (1LL << 53) && r->integer >= -(1LL << 53)) {
      lua_pushnumber(L, (lua_Number)r->integer);
    } else {
      char buf[32];
      int n = snprintf(buf, sizeof buf, "%lld", (long long)r->integer);
      lua_pushlstring(L, buf, (size_t)n);
    }
    break;
  case REDIS_REPLY_NIL:
    if (nested) lua_pushlightuserdata(L, NULL);
    else lua_pushnil(L);
    break;
  case REDIS_REPLY_ERROR:
    push_error_table(L, r->str, r->len, errmt_ref);
    break;
  case REDIS_REPLY_ARRAY:
    if (depth >= MAX_DEPTH || !lua_checkstack(L, 4)) {
      push_error_table(L, "reply nested too deeply", 23, errmt_ref);
      break;
    }
    lua_createtable(L, (int)r->elements, 0);
    for (size_t i = 0; i < r->elements; i++) {
      push_reply(L, r->element[i], 1, depth + 1, errmt_ref);
      lua_rawseti(L, -2, (int)i + 1);
    }
    break;
  default:
    lua_pushnil(L);
    break;
  }
}

/* Pushes the results of a top-level reply: value, or nil, "redis", message. Returns the count. */
static int push_top(lua_State *L, const redisReply *r, int errmt_ref) {
  if (r->type == REDIS_REPLY_ERROR) {
    lua_pushnil(L);
    lua_pushliteral(L, "redis");
    lua_pushlstring(L, r->str, r->len);
    return 3;
  }
  push_reply(L, r, 0, 0, errmt_ref);
  return 1;
}

static int push_conn_error(lua_State *L, const char *code, const zv_redis_url_t *u,
                           const char *why) {
  lua_pushnil(L);
  lua_pushstring(L, code);
  if (strchr(u->host, ':')) lua_pushfstring(L, "[%s]:%d: %s", u->host, u->port, why);
  else lua_pushfstring(L, "%s:%d: %s", u->host, u->port, why);
  return 3;
}

/* --- arguments ------------------------------------------------------------------------------ */

/*
 * Reads the strings (numbers are converted in place) at stack slots [from, from + argc) into
 * argv/lens. Raises on another type before anything is allocated.
 */
static void read_args(lua_State *L, int from, int argc, const char **argv, size_t *lens) {
  for (int i = 0; i < argc; i++) {
    int t = lua_type(L, from + i);
    if (t != LUA_TSTRING && t != LUA_TNUMBER)
      luaL_error(L, "redis: argument %d is a %s, not a string or number", i + 1,
                 luaL_typename(L, from + i));
    argv[i] = lua_tolstring(L, from + i, &lens[i]);
  }
}

/* Pushes the elements of the command table at index t; returns their count. */
static int push_command(lua_State *L, int t, int which) {
  int argc;
  if (lua_type(L, t) != LUA_TTABLE)
    luaL_error(L, "redis: command %d is a %s, not a table", which, luaL_typename(L, t));
  argc = (int)lua_objlen(L, t);
  if (argc == 0) luaL_error(L, "redis: command %d is empty", which);
  luaL_checkstack(L, argc + 4, "redis: too many arguments");
  for (int i = 1; i <= argc; i++) lua_rawgeti(L, t, i);
  return argc;
}

/* --- the async client ----------------------------------------------------------------------- */

static lua_State *dispatch_state(aclient_t *a) {
  if (!a || a->gc || a->loop->closing) return NULL;
  return a->cur ? a->cur : (lua_State *)a->loop->L;
}

static void on_reply(zv_redis_client_t *c, void *reply, int failure, void *data) {
  aclient_t *a = c->user;
  lua_State *L = dispatch_state(a);
  uintptr_t tag = (uintptr_t)data;
  if (tag & 1) { /* one command: data is (token_ref << 1) | 1 */
    int ref = (int)(tag >> 1);
    int n;
    if (!L) {
      if (a && a->gc && a->cur) luaL_unref(a->cur, LUA_REGISTRYINDEX, ref);
      return;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, a->dispatch_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    luaL_unref(L, LUA_REGISTRYINDEX, ref);
    if (failure == ZV_REDIS_OK) {
      n = push_top(L, reply, a->errmt_ref);
    } else if (failure == ZV_REDIS_CLOSED) {
      n = push_conn_error(L, "closed", &c->url, "the client is closed");
    } else {
      n = push_conn_error(L, "unavailable", &c->url, zv_redis_client_error(c));
    }
    zv_loop_pcall(L, 1 + n, 0, "redis reply");
    return;
  }
  {
    batch_t *b = data;
    int last = ++b->next == b->n;
    if (L) {
      if (failure == ZV_REDIS_OK && !b->failure) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, b->results_ref);
        push_reply(L, reply, 1, 0, a->errmt_ref);
        lua_rawseti(L, -2, b->next);
        lua_pop(L, 1);
      } else if (!b->failure) {
        b->failure = failure;
      }
      if (last) {
        int n;
        lua_rawgeti(L, LUA_REGISTRYINDEX, a->dispatch_ref);
        lua_rawgeti(L, LUA_REGISTRYINDEX, b->token_ref);
        if (b->failure == ZV_REDIS_OK) {
          lua_rawgeti(L, LUA_REGISTRYINDEX, b->results_ref);
          n = 1;
        } else if (b->failure == ZV_REDIS_CLOSED) {
          n = push_conn_error(L, "closed", &c->url, "the client is closed");
        } else {
          n = push_conn_error(L, "unavailable", &c->url, zv_redis_client_error(c));
        }
        luaL_unref(L, LUA_REGISTRYINDEX, b->token_ref);
        luaL_unref(L, LUA_REGISTRYINDEX, b->results_ref);
        zv_free(b);
        zv_loop_pcall(L, 1 + n, 0, "redis reply");
      }
    } else if (last) {
      if (a && a->gc && a->cur) {
        luaL_unref(a->cur, LUA_REGISTRYINDEX, b->token_ref);
        luaL_unref(a->cur, LUA_REGISTRYINDEX, b->results_ref);
      }
      zv_free(b);
    }
  }
}

static void on_free(zv_redis_client_t *c) {
  aclient_t *a = c->user;
  if (a) a->c = NULL;
}

static int check_url(lua_State *L, int index, zv_redis_url_t *u) {
  size_t n;
  const char *s = luaL_checklstring(L, index, &n);
  const char *why;
  if (zv_redis_url_parse(s, n, u, &why)) {
    lua_pushnil(L);
    lua_pushfstring(L, "invalid redis url: %s", why);
    return 0;
  }
  return 1;
}

static int l_async(lua_State *L) {
  zv_redis_url_t u;
  zv_redis_opts_t o;
  aclient_t *a;
  int rc;
  if (!check_url(L, 1, &u)) return 2;
  o.timeout = luaL_optnumber(L, 2, 5);
  o.backoff_min = luaL_optnumber(L, 3, 0.05);
  o.backoff_max = luaL_optnumber(L, 4, 2);
  luaL_checktype(L, 5, LUA_TFUNCTION);
  luaL_checktype(L, 6, LUA_TTABLE);
  a = lua_newuserdata(L, sizeof *a);
  memset(a, 0, sizeof *a);
  a->loop = zv_loop_of(L);
  lua_pushvalue(L, 5);
  a->dispatch_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushvalue(L, 6);
  a->errmt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  luaL_getmetatable(L, ACLIENT_MT);
  lua_setmetatable(L, -2);
  rc = zv_redis_client_new(a->loop, &u, &o, on_reply, on_free, a, &a->c);
  memset(&u, 0, sizeof u);
  if (rc) return luaL_error(L, "redis: out of memory");
  return 1;
}

static aclient_t *check_aclient(lua_State *L) {
  return luaL_checkudata(L, 1, ACLIENT_MT);
}

static int send_failed(lua_State *L, aclient_t *a, int rc) {
  if (rc == ZV_EINVAL || !a->c) {
    lua_pushnil(L);
    lua_pushliteral(L, "closed");
    lua_pushliteral(L, "the client is closed");
    return 3;
  }
  return push_conn_error(L, "unavailable", &a->c->url, zv_redis_client_error(a->c));
}

static int a_send(lua_State *L) {
  aclient_t *a = check_aclient(L);
  const char *sargv[STACK_ARGS], **argv = sargv;
  size_t slens[STACK_ARGS], *lens = slens;
  int argc = lua_gettop(L) - 2, ref, rc;
  if (argc < 1) return luaL_error(L, "redis: a command needs a name");
  if (argc > STACK_ARGS) {
    argv = lua_newuserdata(L, (size_t)argc * (sizeof *argv + sizeof *lens));
    lens = (size_t *)(void *)(argv + argc);
    lua_insert(L, 2); /* below the token: the arguments stay at 4.. */
  }
  read_args(L, lua_gettop(L) - argc + 1, argc, argv, lens);
  if (!a->c) return send_failed(L, a, ZV_EINVAL);
  lua_pushvalue(L, argc > STACK_ARGS ? 3 : 2);
  ref = luaL_ref(L, LUA_REGISTRYINDEX);
  rc = zv_redis_client_send(a->c, argc, argv, lens, (void *)(((uintptr_t)ref << 1) | 1));
  if (rc) {
    luaL_unref(L, LUA_REGISTRYINDEX, ref);
    return send_failed(L, a, rc);
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int a_send_many(lua_State *L) {
  aclient_t *a = check_aclient(L);
  const char *sargv[STACK_ARGS], **argv;
  size_t slens[STACK_ARGS], *lens;
  int n, sent = 0;
  batch_t *b;
  luaL_checktype(L, 3, LUA_TTABLE);
  n = (int)lua_objlen(L, 3);
  if (n == 0) return luaL_error(L, "redis: call_many wants at least one command");
  if (!a->c) return send_failed(L, a, ZV_EINVAL);
  if (!a->c->ac) return send_failed(L, a, ZV_EIO);
  /* Check every command first, so that nothing is sent when one of them raises. */
  for (int i = 1; i <= n; i++) {
    int argc, top = lua_gettop(L);
    lua_rawgeti(L, 3, i);
    argc = push_command(L, top + 1, i);
    for (int k = 0; k < argc; k++) {
      int t = lua_type(L, top + 2 + k);
      if (t != LUA_TSTRING && t != LUA_TNUMBER)
        return luaL_error(L, "redis: command %d, argument %d is a %s, not a string or number", i,
                          k + 1, luaL_typename(L, top + 2 + k));
    }
    lua_settop(L, top);
  }
  b = zv_alloc(sizeof *b);
  if (!b) return luaL_error(L, "redis: out of memory");
  b->n = n;
  b->next = 0;
  b->failure = ZV_REDIS_OK;
  lua_pushvalue(L, 2);
  b->token_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* may raise only on OOM: accepted */
  lua_createtable(L, n, 0);
  b->results_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  for (int i = 1; i <= n; i++) {
    int argc, top = lua_gettop(L), rc;
    lua_rawgeti(L, 3, i);
    argc = (int)lua_objlen(L, top + 1);
    for (int k = 1; k <= argc; k++) lua_rawgeti(L, top + 1, k);
    argv = sargv;
    lens = slens;
    if (argc > STACK_ARGS) {
      argv = lua_newuserdata(L, (size_t)argc * (sizeof *argv + sizeof *lens));
      lens = (size_t *)(void *)(argv + argc);
    }
    for (int k = 0; k < argc; k++) argv[k] = lua_tolstring(L, top + 2 + k, &lens[k]);
    rc = zv_redis_client_send(a->c, argc, argv, lens, b);
    lua_settop(L, top);
    if (rc) {
      /* Only an out-of-memory in hiredis gets here after the first send succeeded. */
      if (sent == 0) {
        luaL_unref(L, LUA_REGISTRYINDEX, b->token_ref);
        luaL_unref(L, LUA_REGISTRYINDEX, b->results_ref);
        zv_free(b);
        return send_failed(L, a, rc);
      }
      b->failure = ZV_REDIS_UNAVAILABLE;
      b->n = sent;
      break;
    }
    sent++;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int a_close(lua_State *L) {
  aclient_t *a = check_aclient(L);
  if (a->c) {
    a->cur = L;
    zv_redis_client_close(a->c);
    a->cur = NULL;
  }
  return 0;
}

static int a_gc(lua_State *L) {
  aclient_t *a = lua_touserdata(L, 1);
  if (a->c) {
    a->gc = 1;
    a->cur = L;
    a->c->user = NULL;
    zv_redis_client_close(a->c);
    a->c = NULL;
  }
  return 0;
}

static int a_info(lua_State *L) {
  aclient_t *a = check_aclient(L);
  if (!a->c) {
    lua_pushboolean(L, 0);
    lua_pushinteger(L, 0);
    lua_pushinteger(L, 0);
    lua_pushliteral(L, "the client is closed");
    return 4;
  }
  lua_pushboolean(L, a->c->connected);
  lua_pushinteger(L, a->c->pending);
  lua_pushnumber(L, (lua_Number)a->c->connects);
  lua_pushstring(L, a->c->err[0] ? a->c->err : NULL);
  return 4;
}

/* --- the sync client ------------------------------------------------------------------------ */

static sclient_t *check_sclient(lua_State *L) {
  return luaL_checkudata(L, 1, SCLIENT_MT);
}

static int l_sync(lua_State *L) {
  zv_redis_url_t u;
  sclient_t *s;
  if (!check_url(L, 1, &u)) return 2;
  luaL_checktype(L, 3, LUA_TTABLE);
  s = lua_newuserdata(L, sizeof *s);
  memset(s, 0, sizeof *s);
  s->s.url = u;
  s->s.timeout = luaL_optnumber(L, 2, 5);
  memset(&u, 0, sizeof u);
  lua_pushvalue(L, 3);
  s->errmt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  luaL_getmetatable(L, SCLIENT_MT);
  lua_setmetatable(L, -2);
  return 1;
}

static int s_unavailable(lua_State *L, sclient_t *s) {
  if (s->closed) {
    lua_pushnil(L);
    lua_pushliteral(L, "closed");
    lua_pushliteral(L, "the client is closed");
    return 3;
  }
  return push_conn_error(L, "unavailable", &s->s.url, s->s.err);
}

static int s_connect(lua_State *L) {
  sclient_t *s = check_sclient(L);
  if (s->closed || zv_redis_sync_connect(&s->s)) return s_unavailable(L, s);
  lua_pushboolean(L, 1);
  return 1;
}

static int s_call(lua_State *L) {
  sclient_t *s = check_sclient(L);
  const char *sargv[STACK_ARGS], **argv = sargv;
  size_t slens[STACK_ARGS], *lens = slens;
  int argc = lua_gettop(L) - 1, n;
  void *reply;
  if (argc < 1) return luaL_error(L, "redis: a command needs a name");
  if (argc > STACK_ARGS) {
    argv = lua_newuserdata(L, (size_t)argc * (sizeof *argv + sizeof *lens));
    lens = (size_t *)(void *)(argv + argc);
    lua_insert(L, 2);
  }
  read_args(L, lua_gettop(L) - argc + 1, argc, argv, lens);
  if (s->closed || zv_redis_sync_connect(&s->s)) return s_unavailable(L, s);
  if (zv_redis_sync_append(&s->s, argc, argv, lens)) return luaL_error(L, "redis: out of memory");
  if (zv_redis_sync_read(&s->s, &reply)) return s_unavailable(L, s);
  n = push_top(L, reply, s->errmt_ref);
  zv_redis_sync_free_reply(reply);
  return n;
}

static int s_call_many(lua_State *L) {
  sclient_t *s = check_sclient(L);
  const char *sargv[STACK_ARGS], **argv;
  size_t slens[STACK_ARGS], *lens;
  int n, results;
  luaL_checktype(L, 2, LUA_TTABLE);
  n = (int)lua_objlen(L, 2);
  if (n == 0) return luaL_error(L, "redis: call_many wants at least one command");
  if (s->closed || zv_redis_sync_connect(&s->s)) return s_unavailable(L, s);
  for (int i = 1; i <= n; i++) {
    int argc, top = lua_gettop(L);
    lua_rawgeti(L, 2, i);
    argc = push_command(L, top + 1, i);
    argv = sargv;
    lens = slens;
    if (argc > STACK_ARGS) {
      argv = lua_newuserdata(L, (size_t)argc * (sizeof *argv + sizeof *lens));
      lens = (size_t *)(void *)(argv + argc);
    }
    /* A bad argument raises before anything is written: the buffer is dropped on reconnect. */
    for (int k = 0; k < argc; k++) {
      int t = lua_type(L, top + 2 + k);
      if (t != LUA_TSTRING && t != LUA_TNUMBER) {
        zv_redis_sync_close(&s->s);
        return luaL_error(L, "redis: command %d, argument %d is a %s, not a string or number", i,
                          k + 1, luaL_typename(L, top + 2 + k));
      }
      argv[k] = lua_tolstring(L, top + 2 + k, &lens[k]);
    }
    if (zv_redis_sync_append(&s->s, argc, argv, lens)) {
      zv_redis_sync_close(&s->s);
      return luaL_error(L, "redis: out of memory");
    }
    lua_settop(L, top);
  }
  lua_createtable(L, n, 0);
  results = lua_gettop(L);
  for (int i = 1; i <= n; i++) {
    void *reply;
    if (zv_redis_sync_read(&s->s, &reply)) return s_unavailable(L, s);
    push_reply(L, reply, 1, 0, s->errmt_ref);
    zv_redis_sync_free_reply(reply);
    lua_rawseti(L, results, i);
  }
  return 1;
}

static int s_close(lua_State *L) {
  sclient_t *s = check_sclient(L);
  zv_redis_sync_close(&s->s);
  s->closed = 1;
  return 0;
}

static int s_gc(lua_State *L) {
  sclient_t *s = lua_touserdata(L, 1);
  zv_redis_sync_close(&s->s);
  memset(&s->s.url, 0, sizeof s->s.url);
  return 0;
}

/* --- module --------------------------------------------------------------------------------- */

static int l_parse_url(lua_State *L) {
  zv_redis_url_t u;
  if (!check_url(L, 1, &u)) return 2;
  lua_createtable(L, 0, 5);
  lua_pushstring(L, u.host);
  lua_setfield(L, -2, "host");
  lua_pushinteger(L, u.port);
  lua_setfield(L, -2, "port");
  lua_pushinteger(L, u.db);
  lua_setfield(L, -2, "db");
  lua_pushstring(L, u.username);
  lua_setfield(L, -2, "username");
  lua_pushstring(L, u.password);
  lua_setfield(L, -2, "password");
  memset(&u, 0, sizeof u);
  return 1;
}

int luaopen_zever_redis_core(lua_State *L);
int luaopen_zever_redis_core(lua_State *L) {
  static const luaL_Reg amethods[] = {
    {"send", a_send}, {"send_many", a_send_many}, {"close", a_close}, {"info", a_info},
    {NULL, NULL},
  };
  static const luaL_Reg smethods[] = {
    {"connect", s_connect}, {"call", s_call}, {"call_many", s_call_many}, {"close", s_close},
    {NULL, NULL},
  };
  static const luaL_Reg funcs[] = {
    {"parse_url", l_parse_url}, {"async", l_async}, {"sync", l_sync}, {NULL, NULL},
  };
  zv_l_newmeta(L, ACLIENT_MT, amethods, a_gc);
  zv_l_newmeta(L, SCLIENT_MT, smethods, s_gc);
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  return 1;
}
