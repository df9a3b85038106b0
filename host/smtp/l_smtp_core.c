/*
 * l_smtp_core.c: the zever.smtp_core binding, wrapped by lua/adapters/mailer/smtp.lua.
 *
 *   core.client{ host=, port=, encryption = "none"|"starttls"|"tls", username=, password=,
 *                helo=, ca_file=, verify = true, timeout = 10 }, dispatch
 *                                 -> client | nil, message, "invalid" (connects on the first send)
 *   client:send(token, from, { rcpt, ... }, data) -> true | nil, message, kind
 *   client:close()
 *   client:info()                 -> connected, connects
 *   core.parse_reply(bytes)       -> code, text, lines, consumed | false (incomplete)
 *                                    | nil, message, kind ("syntax" or "too long")
 *   core.dot_stuff(data)          -> the DATA payload (dot-stuffed, CRLF.CRLF at the end)
 *
 * Failures are nil, message, kind, as every binding reports them (host/runtime/lbind.h).
 * A send ends with dispatch(token, true) or dispatch(token, nil, message, kind) (kind
 * "unavailable" or "rejected"), called from the loop or from close(). It must not call Lua
 * while the loop is closing, nor keep the password anywhere Lua can read it back.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "../runtime/runtime.h"
#include "conn.h"
#include "smtp.h"

#define CLIENT_MT "zever.smtp.client"
#define STACK_RCPTS 16

typedef struct {
  zv_smtp_conn_t *c;  /* NULL once closed */
  zv_loop_t *loop;
  lua_State *cur;     /* set while close() runs: the dispatch goes there */
  int in_send;        /* inside zv_smtp_conn_send: a failure found at once is returned */
  int sync_kind;
  char sync_why[600];
  int gc;
  int dispatch_ref;
} client_t;

static const char *kind_name(int kind) {
  return kind == ZV_SMTP_REJECTED ? "rejected" : "unavailable";
}

static void on_done(zv_smtp_conn_t *c, int kind, const char *why, void *data) {
  client_t *a = zv_smtp_conn_user(c);
  int ref = (int)(intptr_t)data;
  lua_State *L;
  if (!a) return;
  if (a->in_send) { /* send() returns it: the caller has not waited yet */
    a->sync_kind = kind;
    snprintf(a->sync_why, sizeof a->sync_why, "%s", why ? why : "failed");
    return;
  }
  L = a->cur ? a->cur : (lua_State *)a->loop->L;
  if (a->gc || a->loop->closing || !L) {
    if (L && !a->loop->closing) luaL_unref(L, LUA_REGISTRYINDEX, ref);
    return;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, a->dispatch_ref);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  luaL_unref(L, LUA_REGISTRYINDEX, ref);
  if (kind == ZV_SMTP_OK) {
    lua_pushboolean(L, 1);
    zv_loop_pcall(L, 2, 0, "smtp send");
  } else {
    lua_pushnil(L);
    lua_pushstring(L, why ? why : "failed");
    lua_pushstring(L, kind_name(kind));
    zv_loop_pcall(L, 4, 0, "smtp send");
  }
}

static void on_free(zv_smtp_conn_t *c) {
  client_t *a = zv_smtp_conn_user(c);
  if (a) a->c = NULL;
}

static const char *opt_str(lua_State *L, int t, const char *k, const char *def) {
  const char *v = def;
  lua_getfield(L, t, k);
  if (lua_type(L, -1) == LUA_TSTRING) v = lua_tostring(L, -1);
  else if (!lua_isnil(L, -1)) luaL_error(L, "smtp: %s must be a string", k);
  lua_pop(L, 1); /* the table keeps the string alive */
  return v;
}

static int l_client(lua_State *L) {
  static const char *const encs[] = {"none", "starttls", "tls", NULL};
  zv_smtp_opts_t o;
  client_t *a;
  char why[300] = "";
  const char *enc;
  int rc, e;
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  memset(&o, 0, sizeof o);
  o.host = opt_str(L, 1, "host", "localhost");
  lua_getfield(L, 1, "port");
  o.port = (int)luaL_optinteger(L, -1, 587);
  lua_pop(L, 1);
  if (o.port < 1 || o.port > 65535) return luaL_error(L, "smtp: port out of range");
  enc = opt_str(L, 1, "encryption", "starttls");
  for (e = 0; encs[e] && strcmp(encs[e], enc); e++) {}
  if (!encs[e]) return luaL_error(L, "smtp: encryption must be none, starttls or tls");
  o.encryption = e == 0 ? ZV_SMTP_PLAIN : e == 1 ? ZV_SMTP_STARTTLS : ZV_SMTP_IMPLICIT_TLS;
  o.username = opt_str(L, 1, "username", NULL);
  o.password = opt_str(L, 1, "password", "");
  o.helo = opt_str(L, 1, "helo", "localhost");
  o.ca_file = opt_str(L, 1, "ca_file", NULL);
  lua_getfield(L, 1, "verify");
  o.verify = lua_isnil(L, -1) ? 1 : lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, 1, "timeout");
  o.timeout = luaL_optnumber(L, -1, 10);
  lua_pop(L, 1);
  if (strlen(o.host) > 253 || strlen(o.helo) > 250 || strpbrk(o.helo, "\r\n "))
    return luaL_error(L, "smtp: bad host or helo");
  a = lua_newuserdata(L, sizeof *a);
  memset(a, 0, sizeof *a);
  a->dispatch_ref = LUA_NOREF;
  a->loop = zv_loop_of(L);
  luaL_getmetatable(L, CLIENT_MT);
  lua_setmetatable(L, -2);
  rc = zv_smtp_conn_new(a->loop, &o, on_done, on_free, a, &a->c, why, sizeof why);
  if (rc == ZV_ENOMEM) return luaL_error(L, "smtp: out of memory");
  if (rc) return zv_l_failure(L, why, "invalid");
  lua_pushvalue(L, 2);
  a->dispatch_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 1;
}

/* An envelope address goes between <> on a command line: no CR, LF, NUL or '>'. */
static int envelope_ok(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] == '\r' || p[i] == '\n' || p[i] == '\0' || p[i] == '>') return 0;
  return 1;
}

static client_t *check_client(lua_State *L) { return luaL_checkudata(L, 1, CLIENT_MT); }

static int l_send(lua_State *L) {
  client_t *a = check_client(L);
  const char *srcpt[STACK_RCPTS], **rcpts = srcpt;
  size_t slens[STACK_RCPTS], *lens = slens, from_len, data_len, n;
  const char *from = luaL_checklstring(L, 3, &from_len);
  const char *data;
  int ref, rc;
  luaL_checktype(L, 4, LUA_TTABLE);
  data = luaL_checklstring(L, 5, &data_len);
  n = lua_objlen(L, 4);
  if (n == 0) return luaL_error(L, "smtp: no recipient");
  if (n > STACK_RCPTS) {
    rcpts = lua_newuserdata(L, n * (sizeof *rcpts + sizeof *lens));
    lens = (size_t *)(void *)(rcpts + n);
  }
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 4, (int)i + 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      return luaL_error(L, "smtp: recipient %d is not a string", (int)i + 1);
    rcpts[i] = lua_tolstring(L, -1, &lens[i]);
    if (!envelope_ok(rcpts[i], lens[i]))
      return luaL_error(L, "smtp: recipient %d contains a forbidden byte", (int)i + 1);
    lua_pop(L, 1); /* the table keeps the string alive */
  }
  if (!envelope_ok(from, from_len)) return luaL_error(L, "smtp: from contains a forbidden byte");
  if (!a->c) return zv_l_failure(L, "the client is closed", "closed");
  lua_pushvalue(L, 2);
  ref = luaL_ref(L, LUA_REGISTRYINDEX);
  a->in_send = 1;
  a->sync_kind = -1;
  rc = zv_smtp_conn_send(a->c, from, from_len, rcpts, lens, n, data, data_len,
                         (void *)(intptr_t)ref);
  a->in_send = 0;
  if (!rc && a->sync_kind >= 0) { /* it ended already (a dead kept connection, say) */
    luaL_unref(L, LUA_REGISTRYINDEX, ref);
    return zv_l_failure(L, a->sync_why,
                        a->sync_kind == ZV_SMTP_OK ? "unavailable" : kind_name(a->sync_kind));
  }
  if (rc) {
    luaL_unref(L, LUA_REGISTRYINDEX, ref);
    return zv_l_failure(L, rc == ZV_EINVAL ? "a send is already in progress" :
                        rc == ZV_ENOMEM ? "out of memory" : "cannot start a connection",
                        rc == ZV_EINVAL ? "misuse" : "unavailable");
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int l_close(lua_State *L) {
  client_t *a = check_client(L);
  if (a->c) {
    lua_State *prev = a->cur;
    a->cur = L;
    zv_smtp_conn_close(a->c);
    a->cur = prev;
  }
  return 0;
}

static int l_gc(lua_State *L) {
  client_t *a = check_client(L);
  a->gc = 1;
  if (a->c) {
    zv_smtp_conn_set_user(a->c, NULL);
    zv_smtp_conn_close(a->c);
    a->c = NULL;
  }
  luaL_unref(L, LUA_REGISTRYINDEX, a->dispatch_ref);
  return 0;
}

static int l_info(lua_State *L) {
  client_t *a = check_client(L);
  lua_pushboolean(L, a->c && zv_smtp_conn_connected(a->c));
  lua_pushnumber(L, a->c ? (lua_Number)zv_smtp_conn_connects(a->c) : 0);
  return 2;
}

static int l_parse_reply(lua_State *L) {
  size_t n;
  const char *p = luaL_checklstring(L, 1, &n);
  zv_smtp_reply_t r;
  int rc = zv_smtp_reply_parse(p, n, &r);
  if (rc == 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (rc < 0)
    return rc == ZV_ETOOLONG ? zv_l_failure(L, "the reply is too long", "too long")
                             : zv_l_failure(L, "a malformed reply", "syntax");
  lua_pushinteger(L, r.code);
  lua_pushlstring(L, r.text, r.text_len);
  lua_pushinteger(L, r.lines);
  lua_pushinteger(L, (lua_Integer)r.consumed);
  return 4;
}

static int l_dot_stuff(lua_State *L) {
  size_t n;
  const char *p = luaL_checklstring(L, 1, &n);
  zv_smtp_buf_t b = {0};
  zv_smtp_dot_stuff(&b, p, n);
  if (b.err) {
    zv_smtp_buf_free(&b);
    return luaL_error(L, "smtp: out of memory");
  }
  lua_pushlstring(L, b.p, b.len); /* may raise: memory errors are LuaJIT's panic anyway */
  zv_smtp_buf_free(&b);
  return 1;
}

int luaopen_zever_smtp_core(lua_State *L);
int luaopen_zever_smtp_core(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"send", l_send}, {"close", l_close}, {"info", l_info}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {
    {"client", l_client}, {"parse_reply", l_parse_reply}, {"dot_stuff", l_dot_stuff},
    {NULL, NULL}};
  luaL_newmetatable(L, CLIENT_MT);
  lua_pushcfunction(L, l_gc);
  lua_setfield(L, -2, "__gc");
  lua_newtable(L);
  luaL_register(L, NULL, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  return 1;
}
