/*
 * lx_request.c: the zever.http request object (see l_http.c for its methods): reading the
 * request (header, headers, body, version, remote_addr) and answering it (respond, write_head,
 * write, finish, the FFI's zv_http_respond_ffi and zv_http_header_ffi), and the finalizer of an unanswered request.
 *
 * It must not keep a pointer to a connection past the request's answer or the connection's
 * close (zv__http_detach clears both sides), and must not raise while holding memory: the
 * header arrays it reads live on the C stack or in a userdata.
 */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "lx_http.h"
#include "lx_stream.h"
#include "server.h"

/* --- the request object --------------------------------------------------------------------- */

/* A request has one of two metatables (upvalues 1 and 2 of every method): the plain one, or
 * the guarded one with __gc that on_request gives to a request left unanswered. */
zv__http_req_t *zv__http_check_req(lua_State *L) {
  lreq_t *r = lua_touserdata(L, 1);
  if (!r || !lua_getmetatable(L, 1) ||
      (!lua_rawequal(L, -1, lua_upvalueindex(1)) && !lua_rawequal(L, -1, lua_upvalueindex(2))))
    luaL_typerror(L, 1, REQ_MT);
  lua_pop(L, 1);
  return r;
}

/* The connection of a request that can still be read; NULL when the client went away. */
static zv_http_sconn_t *readable(lua_State *L, lreq_t *r) {
  if (r->cancelled) return NULL; /* as if the client went away: the error path may still log */
  if (r->answered) luaL_error(L, "request already answered");
  return r->c;
}

void zv__http_detach(lreq_t *r) {
  r->answered = 1;
  if (r->c) r->c->data = NULL;
  r->c = NULL;
}

static int push_closed(lua_State *L) {
  lua_pushnil(L);
  lua_pushliteral(L, "closed");
  return 2;
}

static int r_header(lua_State *L) {
  lreq_t *r = zv__http_check_req(L);
  size_t len;
  const char *name = luaL_checklstring(L, 2, &len);
  zv_http_sconn_t *c = readable(L, r);
  uint32_t from = 0;
  int i, n = 0;
  luaL_Buffer b;
  if (!c) return 0;
  const zv_http_conn_t *core = &c->core;
  while ((i = zv_http_conn_header(core, name, len, &from)) >= 0) {
    const zv_http_header_t *h = &core->headers[i];
    if (n == 0) {
      lua_pushlstring(L, core->buf + h->value_off, h->value_len);
    } else {
      if (n == 1) {
        luaL_buffinit(L, &b);
        luaL_addvalue(&b); /* the first value, on top of the stack */
      }
      luaL_addlstring(&b, ", ", 2);
      luaL_addlstring(&b, core->buf + h->value_off, h->value_len);
    }
    n++;
  }
  if (n == 0) return 0;
  if (n > 1) luaL_pushresult(&b);
  return 1;
}

/* req:header for LuaJIT's FFI: http_ffi.h says what it does. */
int zv_http_header_ffi(void *req, const char *name, size_t len, const char **value,
                       size_t *vlen) {
  lreq_t *r = req;
  const zv_http_conn_t *core;
  uint32_t from = 0;
  int i;
  if (!r || r->cancelled || r->answered || !r->c || !name) return -1;
  core = &r->c->core;
  i = zv_http_conn_header(core, name, len, &from);
  if (i < 0) return 0;
  if (zv_http_conn_header(core, name, len, &from) >= 0) return -1;
  *value = core->buf + core->headers[i].value_off;
  *vlen = core->headers[i].value_len;
  return 1;
}

static int r_headers(lua_State *L) {
  lreq_t *r = zv__http_check_req(L);
  zv_http_sconn_t *c = readable(L, r);
  char small[64];
  lua_newtable(L);
  if (!c) return 1;
  const zv_http_conn_t *core = &c->core;
  for (uint32_t i = 0; i < core->nheaders; i++) {
    const zv_http_header_t *h = &core->headers[i];
    const char *name = core->buf + h->name_off;
    if (h->name_len <= sizeof small) {
      for (uint32_t k = 0; k < h->name_len; k++)
        small[k] = (char)((name[k] >= 'A' && name[k] <= 'Z') ? name[k] + 32 : name[k]);
      lua_pushlstring(L, small, h->name_len);
    } else {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (uint32_t k = 0; k < h->name_len; k++)
        luaL_addchar(&b, (char)((name[k] >= 'A' && name[k] <= 'Z') ? name[k] + 32 : name[k]));
      luaL_pushresult(&b);
    }
    lua_pushvalue(L, -1);
    lua_rawget(L, -3);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_pushlstring(L, core->buf + h->value_off, h->value_len);
    } else {
      lua_pushliteral(L, ", ");
      lua_pushlstring(L, core->buf + h->value_off, h->value_len);
      lua_concat(L, 3);
    }
    lua_rawset(L, -3);
  }
  return 1;
}

static int r_body(lua_State *L) {
  lreq_t *r = zv__http_check_req(L);
  zv_http_sconn_t *c = readable(L, r);
  if (c && c->core.streamed && (!c->core.buffer_all || c->core.state != ZV_HTTP_DONE))
    return luaL_error(L, "req:body(): this request's body is streamed (a stream_body route): "
                      "read it with req:read() or req:body_reader() (docs/streaming.md)");
  if (!c || c->core.body_len == 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  lua_pushlstring(L, c->core.buf + c->core.body_off, c->core.body_len);
  return 1;
}

static int r_version(lua_State *L) {
  lreq_t *r = zv__http_check_req(L);
  zv_http_sconn_t *c = readable(L, r);
  if (!c) return 0;
  lua_pushstring(L, c->core.parser.http_minor == 0 ? "1.0" : "1.1");
  return 1;
}

static int r_remote_addr(lua_State *L) {
  lreq_t *r = zv__http_check_req(L);
  char ip[64];
  int port;
  if (!r->c || zv_http_peer(r->c, ip, sizeof ip, &port)) return 0;
  lua_pushstring(L, ip);
  lua_pushinteger(L, port);
  return 2;
}

static int r_answered(lua_State *L) {
  lreq_t *r = zv__http_check_req(L);
  lua_pushboolean(L, r->answered);
  return 1;
}

static int r_timeout(lua_State *L) {
  lreq_t *r = zv__http_check_req(L);
  lua_Number secs = luaL_checknumber(L, 2);
  uint64_t ms;
  lserver_t *ls;
  if (!(secs >= 0) || secs > 1e9) return luaL_argerror(L, 2, "seconds must be >= 0");
  if (!r->c || r->answered) return 0;
  ms = secs > 0 ? (uint64_t)(secs * 1000.0 + 0.5) : 0;
  /* 0 means "the server's" in the core: a request with no limit gets the largest one. */
  r->c->handler_ms = secs > 0 ? (ms ? ms : 1) : UINT64_MAX / 4;
  ls = ZV_CONTAINER_OF(r->c->srv, lserver_t, srv);
  __atomic_store_n(&ls->wd.limit_ms, secs > 0 ? (ms ? ms : 1) : 0, __ATOMIC_RELAXED);
  return 0;
}

/* Reads the flat header array at index idx into hdrs (2 strings per header): lx_stream.h. */
size_t zv__http_get_headers(lua_State *L, int idx, zv_http_str_t **hdrs, zv_http_str_t *stack) {
  size_t n;
  if (lua_isnoneornil(L, idx)) return 0;
  luaL_checktype(L, idx, LUA_TTABLE);
  n = lua_objlen(L, idx);
  if (n % 2) luaL_argerror(L, idx, "headers must be a flat array of name, value pairs");
  if (n > STACK_HDRS * 2) *hdrs = lua_newuserdata(L, n * sizeof **hdrs);
  else *hdrs = stack;
  luaL_checkstack(L, (int)n, "too many headers");
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, idx, (int)i + 1);
    /* lua_tolstring takes strings and numbers (converted in place) and is NULL for the rest. */
    (*hdrs)[i].p = lua_tolstring(L, -1, &(*hdrs)[i].n);
    if (!(*hdrs)[i].p)
      luaL_argerror(L, idx, lua_pushfstring(L, "header item %d is a %s, not a string",
                                            (int)i + 1, luaL_typename(L, -1)));
  }
  return n / 2;
}

/* A final status: 1xx are interim responses (the server sends 100 Continue itself); one sent
 * as an answer would be taken for the answer to the next pipelined request. */
static int check_status(lua_State *L, int idx) {
  lua_Integer status = luaL_checkinteger(L, idx);
  if (status < 200 || status > 999)
    luaL_argerror(L, idx, "a final status must be within 200..999 (1xx are interim responses)");
  return (int)status;
}

static lreq_t *unanswered(lua_State *L) {
  lreq_t *r = zv__http_check_req(L);
  if (r->cancelled) luaL_error(L, "request cancelled: handler timeout");
  if (r->answered) luaL_error(L, "request already answered");
  return r;
}

static int r_respond(lua_State *L) {
  zv_http_str_t stack[STACK_HDRS * 2], *hdrs;
  lreq_t *r = unanswered(L);
  int status = check_status(L, 2);
  size_t len, n;
  const char *body = luaL_optlstring(L, 3, "", &len);
  int rc;
  if (r->streaming) return luaL_error(L, "respond: the response was started with write_head");
  n = zv__http_get_headers(L, 4, &hdrs, stack);
  if (!r->c) {
    r->answered = 1;
    return push_closed(L);
  }
  rc = zv_http_respond(r->c, status, hdrs, n, body, len);
  if (rc == ZV_EINVAL) return luaL_error(L, "respond: invalid response header (name or value)");
  zv__http_detach(r);
  if (rc) return push_closed(L);
  lua_pushboolean(L, 1);
  return 1;
}

/* req:respond for LuaJIT's FFI: http_ffi.h says what it does. */
int zv_http_respond_ffi(void *req, int status, const char *body, size_t len,
                        const zv_http_str_t *hdrs, size_t nhdrs) {
  lreq_t *r = req;
  int rc;
  if (!r || r->answered || r->streaming || status < 200 || status > 999) return -1;
  if (!r->c) {
    r->answered = 1;
    return 1;
  }
  rc = zv_http_respond(r->c, status, hdrs, nhdrs, body ? body : "", body ? len : 0);
  if (rc == ZV_EINVAL) return -1;
  zv__http_detach(r);
  return rc ? 1 : 0;
}

static int r_write_head(lua_State *L) {
  zv_http_str_t stack[STACK_HDRS * 2], *hdrs;
  lreq_t *r = unanswered(L);
  int status = check_status(L, 2);
  size_t n;
  int rc;
  if (r->streaming) return luaL_error(L, "write_head: the head was already written");
  n = zv__http_get_headers(L, 3, &hdrs, stack);
  r->streaming = 1;
  if (!r->c) return push_closed(L);
  rc = zv_http_write_head(r->c, status, hdrs, n);
  if (rc == ZV_EINVAL) {
    r->streaming = 0;
    return luaL_error(L, "write_head: invalid response header (name or value)");
  }
  if (rc) return push_closed(L);
  lua_pushboolean(L, 1);
  return 1;
}

static int r_write(lua_State *L) {
  lreq_t *r = unanswered(L);
  size_t len;
  const char *chunk = luaL_checklstring(L, 2, &len);
  if (!r->streaming) return luaL_error(L, "write: call write_head first");
  if (r->sized) {
    if (len > r->left)
      return luaL_error(L, "write: %d bytes more than the Content-Length of the head",
                        (int)(len - r->left));
    r->left -= len;
  }
  if (!r->c || zv_http_write(r->c, chunk, len)) return push_closed(L);
  lua_pushboolean(L, 1);
  return 1;
}

static int r_finish(lua_State *L) {
  lreq_t *r = unanswered(L);
  int rc;
  if (!r->streaming) return luaL_error(L, "finish: call write_head first");
  if (r->sized && r->left && r->c) {
    /* Fewer bytes than the head promised: the client must not take it for complete. */
    zv_http_sconn_t *c = r->c;
    zv__http_detach(r);
    zv_http_abort(c);
    return luaL_error(L, "finish: %d bytes short of the Content-Length of the head "
                      "(the connection was closed)", (int)(r->left > 0x7fffffff ? 0x7fffffff
                                                                            : r->left));
  }
  rc = r->c ? zv_http_finish(r->c) : ZV_EIO;
  zv__http_detach(r);
  if (rc) return push_closed(L);
  lua_pushboolean(L, 1);
  return 1;
}

/* Answers 500 for a request that cannot be answered by the application any more. */
void zv__http_answer_internal(zv_http_sconn_t *c) {
  static const zv_http_str_t hdrs[2] = {{"Content-Type", 12}, {"application/json", 16}};
  const char *body = zv_http_error_body(500);
  if (c->resp == ZV_HTTP_RESP_STREAM) zv_http_abort(c);
  else if (c->resp == ZV_HTTP_RESP_NONE) zv_http_respond(c, 500, hdrs, 1, body, strlen(body));
}

int zv__http_req_gc(lua_State *L) {
  lreq_t *r = lua_touserdata(L, 1);
  zv_http_sconn_t *c = r->c;
  if (!c) return 0;
  zv__http_detach(r);
  fprintf(stderr, "zever: http: a request was collected without a complete response\n");
  zv__http_answer_internal(c);
  return 0;
}

int zv__http_req_tostring(lua_State *L) {
  lreq_t *r = zv__http_check_req(L);
  lua_pushfstring(L, "zever.http.request (%s)",
                  r->answered ? "answered" : r->c ? "open" : "closed");
  return 1;
}


const luaL_Reg zv__http_req_methods[] = {
  {"header", r_header},         {"headers", r_headers},     {"body", r_body},
  {"version", r_version},       {"remote_addr", r_remote_addr},
  {"respond", r_respond},       {"write_head", r_write_head}, {"write", r_write},
  {"finish", r_finish},         {"answered", r_answered},   {"timeout", r_timeout},
  {NULL, NULL},
};
