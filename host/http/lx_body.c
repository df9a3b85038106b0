/*
 * lx_body.c: reading a request body piece by piece (a part of the zever.http binding; the
 * request object is lx_request.c's). zever.stream builds req:read and req:body_reader on these,
 * and zever.app buffers the streamed body of a route that did not ask for streaming:
 *
 *   req:body_read(max) -> chunk | false | nil[, code]
 *       chunk: up to max bytes of the body, taken (the server reads more as room frees);
 *       false: nothing is there yet: the server reads on (sending "100 Continue" first when the
 *       client asked for it) and calls the request's watcher (req:watch) once bytes, the end or
 *       a failure came; nil: the body ended; nil, code: "closed" (the client went away, or the
 *       request was answered), "too_large" (413), "timeout" (408), "invalid" (400)
 *   req:body_buffer() -> true | false | nil, code
 *       a streamed body is collected whole after all (under max_body_bytes): true when it is
 *       complete (req:body() has it), false to wait as above
 *   req:streamed() -> boolean   the body is streamed (the request came at the end of its head)
 *
 * A body that was buffered whole (the usual case) reads the same way, from the buffer.
 *
 * It must not keep a pointer into the connection's buffer across calls (taking bytes moves the
 * rest down), and must not raise while the connection is in a half-updated state.
 */
#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "lx_stream.h"
#include "server.h"

#define READ_DEFAULT (64u << 10)

static int push_code(lua_State *L, const char *code) {
  lua_pushnil(L);
  lua_pushstring(L, code);
  return 2;
}

/* The code of a failed body (the parser's status). */
static int push_failed(lua_State *L, zv_http_sconn_t *c) {
  switch (c->core.status) {
  case 413: return push_code(L, "too_large");
  case 408: return push_code(L, "timeout");
  default: return push_code(L, "invalid");
  }
}

static zv_http_sconn_t *body_conn(zv__http_req_t *r) {
  zv_http_sconn_t *c = r->c;
  if (r->cancelled || r->answered || !c || c->closing) return NULL;
  return c;
}

static int r_body_read(lua_State *L) {
  zv__http_req_t *r = zv__http_check_req(L);
  lua_Number max = luaL_optnumber(L, 2, READ_DEFAULT);
  zv_http_sconn_t *c = body_conn(r);
  size_t n;
  if (!(max >= 1) || max > 1e15) return luaL_argerror(L, 2, "max must be a number >= 1");
  if (!c) return push_code(L, "closed");
  if (c->core.state == ZV_HTTP_ERROR) return push_failed(L, c);
  if (!c->core.streamed || c->core.buffer_all) {
    /* A buffered body: from where the last read stopped. */
    if (c->core.streamed && c->core.state != ZV_HTTP_DONE) goto wait;
    if (r->body_pos >= c->core.body_len) {
      lua_pushnil(L);
      return 1;
    }
    n = c->core.body_len - (size_t)r->body_pos;
    if ((lua_Number)n > max) n = (size_t)max;
    lua_pushlstring(L, c->core.buf + c->core.body_off + r->body_pos, n);
    r->body_pos += n;
    return 1;
  }
  if (c->core.body_len) {
    n = c->core.body_len;
    if ((lua_Number)n > max) n = (size_t)max;
    lua_pushlstring(L, c->core.buf + c->core.body_off, n);
    zv_http_body_take(c, n);
    return 1;
  }
  if (c->core.state == ZV_HTTP_DONE || !c->body_streaming) {
    lua_pushnil(L);
    return 1;
  }
wait:
  if (zv_http_body_want(c)) return push_code(L, "closed");
  lua_pushboolean(L, 0);
  return 1;
}

static int r_body_buffer(lua_State *L) {
  zv__http_req_t *r = zv__http_check_req(L);
  zv_http_sconn_t *c = body_conn(r);
  if (!c) return push_code(L, "closed");
  if (c->core.state == ZV_HTTP_ERROR) return push_failed(L, c);
  if (!c->core.streamed || c->core.state == ZV_HTTP_DONE) {
    c->core.buffer_all = 1;
    lua_pushboolean(L, 1);
    return 1;
  }
  if (c->core.body_taken) return luaL_error(L, "body_buffer: the body was read in part already");
  if (zv_http_body_buffer_all(c)) {
    c->core.status = 413;
    return push_code(L, "too_large");
  }
  if (zv_http_body_want(c)) return push_code(L, "closed");
  lua_pushboolean(L, 0);
  return 1;
}

static int r_streamed(lua_State *L) {
  zv__http_req_t *r = zv__http_check_req(L);
  lua_pushboolean(L, r->c && r->c->core.streamed && !r->c->core.buffer_all);
  return 1;
}

const luaL_Reg zv__http_body_methods[] = {
  {"body_read", r_body_read}, {"body_buffer", r_body_buffer}, {"streamed", r_streamed},
  {NULL, NULL},
};
