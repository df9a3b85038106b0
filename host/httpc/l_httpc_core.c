/*
 * l_httpc_core.c: the zever.httpc_core binding, wrapped by lua/zever/httpc.lua.
 *
 *   core.new(dispatch) -> conn            (dispatch(token, ...) completes a pending operation)
 *   conn:connect(host, port, token)       each operation returns true when it is pending (the
 *   conn:tls(context, servername, token)  caller awaits token; dispatch brings the results),
 *   conn:send(bytes, token)               or false followed by its results:
 *   conn:read(token)                        connect/tls/send: true | nil, message, kind
 *                                           read: "head", status, { name, value, ... }
 *                                               | "body", bytes | "done", reusable
 *                                               | nil, message, kind
 *   conn:expect(no_body)   the next response answers HEAD/CONNECT (no body) or not
 *   conn:idle() / conn:checkout() -> usable   park in / take out of a pool
 *   conn:close()           an operation in progress is dropped (its token is not completed)
 *   core.parse(bytes, no_body, step) -> { status, minor, fields, body, keep_alive, events }
 *                                       | nil, code ("SYNTAX", "TOOLONG", "IO": truncated)
 *   core.write_head(method, target, { name, value, ... }) -> head | nil, message, "INVAL"
 *   core.kinds             the failure kinds by name (conn.h's table)
 *
 * context is zever.httpc_tls's context (tlsx.h). Kinds are names from conn.h's one table. It
 * must not call Lua while the loop is closing.
 */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "../runtime/runtime.h"
#include "conn.h"
#include "resp.h"

#define CONN_MT "zever.httpc.conn"

typedef struct {
  zv_httpc_conn_t *c; /* NULL once freed */
  zv_loop_t *loop;
  int dispatch_ref;
  int token_ref;
  int reading;        /* the pending operation is a read */
} ud_t;

/* Pushes the result of the finished operation; returns how many values. */
static int push_result(lua_State *L, ud_t *u) {
  const zv_httpc_result_t *r = zv_httpc_conn_result(u->c);
  const zv_httpc_resp_t *p;
  if (r->kind != ZV_HTTPC_K_OK) return zv_l_failure(L, r->why, zv_httpc_kind_name(r->kind));
  if (!u->reading) {
    lua_pushboolean(L, 1);
    return 1;
  }
  p = zv_httpc_conn_resp(u->c);
  switch (r->ev) {
  case ZV_HTTPC_EV_HEAD:
    lua_pushliteral(L, "head");
    lua_pushinteger(L, p->status);
    lua_createtable(L, (int)p->nfields * 2, 0);
    for (size_t i = 0; i < p->nfields; i++) {
      const zv_httpc_field_t *f = &p->fields[i];
      lua_pushlstring(L, p->head + f->name_off, f->name_len);
      lua_rawseti(L, -2, (int)i * 2 + 1);
      lua_pushlstring(L, p->head + f->val_off, f->val_len);
      lua_rawseti(L, -2, (int)i * 2 + 2);
    }
    return 3;
  case ZV_HTTPC_EV_BODY:
    lua_pushliteral(L, "body");
    lua_pushlstring(L, p->ev_p, p->ev_n);
    return 2;
  default:
    lua_pushliteral(L, "done");
    lua_pushboolean(L, p->keep_alive);
    return 2;
  }
}

static void on_notify(zv_httpc_conn_t *c, void *user) {
  ud_t *u = user;
  lua_State *L = u->loop->L;
  int ref = u->token_ref, n;
  (void)c;
  u->token_ref = LUA_NOREF;
  if (ref == LUA_NOREF || u->loop->closing || !L) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, u->dispatch_ref);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  luaL_unref(L, LUA_REGISTRYINDEX, ref);
  n = push_result(L, u);
  zv_loop_pcall(L, n + 1, 0, "http client");
}

static void on_free(zv_httpc_conn_t *c, void *user) {
  ud_t *u = user;
  (void)c;
  u->c = NULL;
}

static ud_t *check(lua_State *L) {
  ud_t *u = luaL_checkudata(L, 1, CONN_MT);
  if (!u->c) luaL_error(L, "http client: the connection is closed");
  return u;
}

static void drop_token(lua_State *L, ud_t *u) {
  if (u->token_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, u->token_ref);
  u->token_ref = LUA_NOREF;
}

/* The end of an operation's entry point: pending (pin the token) or the results now. */
static int outcome(lua_State *L, ud_t *u, int done, int token_idx) {
  if (!done) {
    drop_token(L, u);
    lua_pushvalue(L, token_idx);
    u->token_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  return 1 + push_result(L, u);
}

static int l_new(lua_State *L) {
  ud_t *u;
  int rc;
  luaL_checktype(L, 1, LUA_TFUNCTION);
  u = lua_newuserdata(L, sizeof *u);
  memset(u, 0, sizeof *u);
  u->dispatch_ref = LUA_NOREF;
  u->token_ref = LUA_NOREF;
  u->loop = zv_loop_of(L);
  luaL_getmetatable(L, CONN_MT);
  lua_setmetatable(L, -2);
  rc = zv_httpc_conn_new(u->loop, on_notify, on_free, u, &u->c);
  if (rc) return luaL_error(L, "http client: out of memory");
  lua_pushvalue(L, 1);
  u->dispatch_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 1;
}

static int c_connect(lua_State *L) {
  ud_t *u = check(L);
  size_t hl;
  const char *host = luaL_checklstring(L, 2, &hl);
  int port = (int)luaL_checkinteger(L, 3);
  luaL_checkany(L, 4);
  if (hl == 0 || hl > 253 || memchr(host, 0, hl)) return luaL_argerror(L, 2, "bad host");
  if (port < 1 || port > 65535) return luaL_argerror(L, 3, "port out of range");
  u->reading = 0;
  return outcome(L, u, zv_httpc_conn_connect(u->c, host, port), 4);
}

static int c_tls(lua_State *L) {
  ud_t *u = check(L);
  zv_httpc_tls_ud_t *t = luaL_checkudata(L, 2, ZV_HTTPC_TLS_MT);
  const char *name = luaL_checkstring(L, 3);
  luaL_checkany(L, 4);
  if (!t->vt || !t->ctx) return luaL_argerror(L, 2, "the TLS context is closed");
  u->reading = 0;
  return outcome(L, u, zv_httpc_conn_tls(u->c, t->vt, t->ctx, name), 4);
}

static int c_send(lua_State *L) {
  ud_t *u = check(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  luaL_checkany(L, 3);
  u->reading = 0;
  return outcome(L, u, zv_httpc_conn_send(u->c, p, n), 3);
}

static int c_read(lua_State *L) {
  ud_t *u = check(L);
  luaL_checkany(L, 2);
  u->reading = 1;
  return outcome(L, u, zv_httpc_conn_read(u->c), 2);
}

static int c_expect(lua_State *L) {
  ud_t *u = check(L);
  zv_httpc_conn_expect(u->c, lua_toboolean(L, 2));
  return 0;
}

static int c_idle(lua_State *L) {
  ud_t *u = check(L);
  zv_httpc_conn_idle(u->c);
  return 0;
}

static int c_checkout(lua_State *L) {
  ud_t *u = luaL_checkudata(L, 1, CONN_MT);
  lua_pushboolean(L, u->c && zv_httpc_conn_checkout(u->c));
  return 1;
}

static int c_close(lua_State *L) {
  ud_t *u = luaL_checkudata(L, 1, CONN_MT);
  drop_token(L, u);
  if (u->c) zv_httpc_conn_close(u->c); /* forgets u: on_free is not called */
  u->c = NULL;
  return 0;
}

static int c_gc(lua_State *L) {
  ud_t *u = luaL_checkudata(L, 1, CONN_MT);
  if (u->c) zv_httpc_conn_close(u->c);
  u->c = NULL;
  drop_token(L, u);
  if (u->dispatch_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, u->dispatch_ref);
  u->dispatch_ref = LUA_NOREF;
  return 0;
}

/* --- the pure core, for golden rows ------------------------------------------------------- */

static int l_parse(lua_State *L) {
  size_t n, off = 0;
  const char *s = luaL_checklstring(L, 1, &n);
  int no_body = lua_toboolean(L, 2);
  size_t step = (size_t)luaL_optinteger(L, 3, (lua_Integer)n);
  zv_httpc_resp_t *r = lua_newuserdata(L, sizeof *r); /* collected with the call's garbage */
  luaL_Buffer b;
  int events = 0, done = 0;
  if (step < 1) step = 1;
  zv_httpc_resp_init(r, no_body);
  luaL_buffinit(L, &b);
  while (!done) {
    size_t k = n - off < step ? n - off : step, used = 0;
    int ev;
    if (k == 0) {
      ev = zv_httpc_resp_feed(r, s + off, 0, &used);
      if (ev == ZV_HTTPC_EV_NONE) ev = zv_httpc_resp_eof(r);
    } else {
      ev = zv_httpc_resp_feed(r, s + off, k, &used);
    }
    off += used;
    if (ev < 0) {
      luaL_pushresult(&b);
      lua_pushnil(L);
      lua_pushstring(L, zv_errname(ev));
      return 2;
    }
    if (ev == ZV_HTTPC_EV_BODY) luaL_addlstring(&b, r->ev_p, r->ev_n);
    if (ev == ZV_HTTPC_EV_DONE) done = 1;
    if (ev != ZV_HTTPC_EV_NONE) events++;
  }
  luaL_pushresult(&b);
  lua_createtable(L, 0, 7);
  lua_insert(L, -2);
  lua_setfield(L, -2, "body");
  lua_pushinteger(L, r->status);
  lua_setfield(L, -2, "status");
  lua_pushinteger(L, r->minor);
  lua_setfield(L, -2, "minor");
  lua_pushboolean(L, r->keep_alive);
  lua_setfield(L, -2, "keep_alive");
  lua_pushinteger(L, events);
  lua_setfield(L, -2, "events");
  lua_pushinteger(L, (lua_Integer)(n - off));
  lua_setfield(L, -2, "rest");
  lua_createtable(L, (int)r->nfields * 2, 0);
  for (size_t i = 0; i < r->nfields; i++) {
    lua_pushlstring(L, r->head + r->fields[i].name_off, r->fields[i].name_len);
    lua_rawseti(L, -2, (int)i * 2 + 1);
    lua_pushlstring(L, r->head + r->fields[i].val_off, r->fields[i].val_len);
    lua_rawseti(L, -2, (int)i * 2 + 2);
  }
  lua_setfield(L, -2, "fields");
  return 1;
}

#define STACK_FIELDS 32

static int l_write_head(lua_State *L) {
  size_t ml, tl, nf, i, cap, len = 0;
  const char *m = luaL_checklstring(L, 1, &ml);
  const char *t = luaL_checklstring(L, 2, &tl);
  const char *names[STACK_FIELDS], *values[STACK_FIELDS];
  size_t nl[STACK_FIELDS], vl[STACK_FIELDS];
  char *out;
  int rc;
  luaL_checktype(L, 3, LUA_TTABLE);
  nf = lua_objlen(L, 3) / 2;
  if (nf > STACK_FIELDS) return luaL_argerror(L, 3, "too many header fields (at most 32)");
  for (i = 0; i < nf; i++) {
    lua_rawgeti(L, 3, (int)i * 2 + 1);
    lua_rawgeti(L, 3, (int)i * 2 + 2);
    if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
      return luaL_argerror(L, 3, "header names and values must be strings");
    names[i] = lua_tolstring(L, -2, &nl[i]);
    values[i] = lua_tolstring(L, -1, &vl[i]);
    lua_pop(L, 2); /* the table keeps them alive */
  }
  cap = zv_httpc_head_size(ml, tl, nl, vl, nf);
  out = lua_newuserdata(L, cap);
  rc = zv_httpc_write_head(out, cap, &len, m, ml, t, tl, names, nl, values, vl, nf);
  if (rc) return zv_l_failure(L, "a request line or header field holds a forbidden byte",
                              zv_errname(rc));
  lua_pushlstring(L, out, len);
  return 1;
}

int luaopen_zever_httpc_core(lua_State *L);
int luaopen_zever_httpc_core(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"connect", c_connect}, {"tls", c_tls},     {"send", c_send},
    {"read", c_read},       {"expect", c_expect}, {"idle", c_idle},
    {"checkout", c_checkout}, {"close", c_close}, {NULL, NULL}};
  static const luaL_Reg fns[] = {
    {"new", l_new}, {"parse", l_parse}, {"write_head", l_write_head}, {NULL, NULL}};
  zv_l_newclass(L, CONN_MT, methods, c_gc, fns);
  lua_newtable(L);
  for (int k = 0; k < ZV_HTTPC_KINDS; k++) {
    lua_pushstring(L, zv_httpc_kind_name(k));
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
  }
  lua_setfield(L, -2, "kinds");
  return 1;
}
