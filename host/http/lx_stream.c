/*
 * lx_stream.c: the streaming half of the zever.http request object (a part of the binding;
 * l_http.c has the rest). zever.response builds res:write, res:flush, res:finish and res:sse
 * on these:
 *
 *   req:head(status, headers[, length])   the head of a streamed response: chunked (HTTP/1.1),
 *                                         close-delimited (HTTP/1.0), or, given length, with
 *                                         Content-Length: exactly length bytes must follow
 *                                         -> true | nil, "closed"
 *   req:pending() -> bytes      queued in user space for this connection (the kernel's send
 *                               buffer is full): what back-pressure looks at
 *   req:closed() -> boolean     the client went away (or the request was cancelled)
 *   req:watch(fn[, low]) -> "closed" | "ready" | true
 *                               calls fn(false) once when the connection closes, or, with low,
 *                               fn(true) once its queued bytes fall to low; returns instead of
 *                               registering when that is so already ("closed", "ready"). One
 *                               watcher per request: a second replaces the first.
 *   req:unwatch()               forgets the watcher (a wait that ended another way)
 *   req:abort()                 closes the connection now: a streamed response that cannot
 *                               be completed (the handler failed midway) must not look complete
 *
 * The watcher runs from a loop callback (never inside req:write: a write that finds the
 * connection gone returns nil, "closed" instead), so it may resume the waiting coroutine.
 */
#include <string.h>

#include "../core/zv.h"
#include "../runtime/runtime.h"
#include "ws.h"
#include "lx_stream.h"

#define FRAMES_MT "zever.http.ws_frames"

#define STACK_HDRS ZV__HTTP_STACK_HDRS

static int push_closed(lua_State *L) {
  lua_pushnil(L);
  lua_pushliteral(L, "closed");
  return 2;
}

static int r_head(lua_State *L) {
  zv_http_str_t stack[STACK_HDRS * 2], *hdrs = stack;
  zv__http_req_t *r = zv__http_check_req(L);
  lua_Integer status = luaL_checkinteger(L, 2);
  lua_Number len = luaL_optnumber(L, 4, -1);
  size_t n;
  int rc;
  if (status < 200 || status > 999)
    return luaL_argerror(L, 2, "a final status must be within 200..999");
  if (!lua_isnoneornil(L, 4) && (!(len >= 0) || len > 9e15 || len != (lua_Number)(int64_t)len))
    return luaL_argerror(L, 4, "length must be an integer >= 0");
  if (r->cancelled) return luaL_error(L, "request cancelled: handler timeout");
  if (r->answered) return luaL_error(L, "request already answered");
  if (r->streaming) return luaL_error(L, "head: the head was already written");
  n = zv__http_get_headers(L, 3, &hdrs, stack);
  r->streaming = 1;
  if (!r->c) return push_closed(L);
  if (len >= 0) {
    rc = zv_http_write_head_len(r->c, (int)status, hdrs, n, (uint64_t)len);
    r->sized = 1;
    r->left = (uint64_t)len;
  } else {
    rc = zv_http_write_head(r->c, (int)status, hdrs, n);
  }
  if (rc == ZV_EINVAL) {
    r->streaming = r->sized = 0;
    return luaL_error(L, "head: invalid response header (name or value)");
  }
  if (rc) return push_closed(L);
  lua_pushboolean(L, 1);
  return 1;
}

static int r_pending(lua_State *L) {
  zv__http_req_t *r = zv__http_check_req(L);
  /* (an upgraded connection's bytes collected for the end of the idle pass are queued too) */
  lua_pushnumber(L, r->c ? (lua_Number)(r->c->pending + (r->c->upgraded ? r->c->head.len : 0))
                         : 0);
  return 1;
}

static int r_closed(lua_State *L) {
  zv__http_req_t *r = zv__http_check_req(L);
  lua_pushboolean(L, r->cancelled || (!r->c && !r->answered) ||
                     (r->c && (r->c->closing || r->c->shutting) && !r->answered));
  return 1;
}

static void unwatch(lua_State *L, zv__http_req_t *r) {
  if (r->watch_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, r->watch_ref);
  r->watch_ref = LUA_NOREF;
  if (r->c) r->c->want_writable = 0;
}

static int r_watch(lua_State *L) {
  zv__http_req_t *r = zv__http_check_req(L);
  lua_Number low = luaL_optnumber(L, 3, -1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  unwatch(L, r);
  if (!r->c || r->cancelled || r->c->closing || r->c->shutting) {
    lua_pushliteral(L, "closed");
    return 1;
  }
  if (low >= 0 && (lua_Number)r->c->pending <= low) {
    lua_pushliteral(L, "ready");
    return 1;
  }
  lua_pushvalue(L, 2);
  r->watch_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (low >= 0) zv_http_want_writable(r->c, low > 1e15 ? (size_t)1e15 : (size_t)low);
  lua_pushboolean(L, 1);
  return 1;
}

static int r_unwatch(lua_State *L) {
  unwatch(L, zv__http_check_req(L));
  return 0;
}

static int r_abort(lua_State *L) {
  zv__http_req_t *r = zv__http_check_req(L);
  zv_http_sconn_t *c = r->c;
  r->answered = 1;
  if (c) {
    c->data = NULL;
    r->c = NULL;
    zv_http_abort(c);
  }
  /* A coroutine waiting on the connection (a timer aborts it: a WebSocket peer that stopped
   * answering pings) learns that it is gone, as when the client closes. */
  if (r->watch_ref != LUA_NOREF) zv__http_watch_fire(L, r, 0);
  return 0;
}

/* --- WebSockets: the upgrade and the frames read from the connection ------------------------ */

/* req:upgrade(head, max_frame, max_message[, deflate]) -> frames | nil, "closed": writes head
 * (the 101 response) and hands the connection to the WebSocket reader (ws.c), returned as a
 * userdata. deflate: permessage-deflate was negotiated (RSV1 allowed on a message's first frame). */
static int r_upgrade(lua_State *L) {
  zv__http_req_t *r = zv__http_check_req(L);
  size_t len;
  const char *head = luaL_checklstring(L, 2, &len);
  lua_Number max_frame = luaL_checknumber(L, 3), max_message = luaL_checknumber(L, 4);
  zv_ws_limits_t lim;
  zv_ws_reader_t *fr;
  if (!(max_frame >= 1) || max_frame > 1e12 || !(max_message >= 1) || max_message > 1e12)
    return luaL_argerror(L, 3, "limits must be >= 1");
  if (r->cancelled) return luaL_error(L, "request cancelled: handler timeout");
  if (r->answered || r->streaming) return luaL_error(L, "upgrade: the request was answered");
  lim.max_frame = (uint64_t)max_frame;
  lim.max_message = (uint64_t)max_message;
  lim.server = 1;
  lim.deflate = (uint8_t)lua_toboolean(L, 5);
  fr = lua_newuserdata(L, sizeof *fr);
  zv_ws_reader_init(fr, &lim);
  luaL_getmetatable(L, FRAMES_MT);
  lua_setmetatable(L, -2);
  r->streaming = 1;
  if (!r->c) return push_closed(L);
  /* The buffer holds one whole frame at most (a frame's head is at most 14 bytes). */
  if (zv_http_upgrade(r->c, head, len, (size_t)lim.max_frame + ZV_WS_MAX_HEAD + 4096))
    return push_closed(L);
  return 1;
}

/* req:ws_next(frames) -> opcode, payload, fin, rsv1 (the message is compressed) | CLOSE,
 *                       payload, fin, close_code, reason | false (read more)
 *                       | nil, close code (the client broke a rule) | nil, "closed" */
static int r_ws_next(lua_State *L) {
  zv__http_req_t *r = zv__http_check_req(L);
  zv_ws_reader_t *fr = luaL_checkudata(L, 2, FRAMES_MT);
  zv_http_sconn_t *c = r->c;
  zv_ws_event_t ev;
  uint64_t need;
  int64_t used;
  if (!c || c->closing || !c->upgraded) return push_closed(L);
  used = zv_ws_read(fr, (uint8_t *)c->core.buf, c->core.len, &ev, &need);
  if (used < 0) {
    lua_pushnil(L);
    lua_pushinteger(L, (lua_Integer)-used);
    return 2;
  }
  if (used == 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_pushinteger(L, ev.opcode);
  lua_pushlstring(L, (const char *)ev.payload, (size_t)ev.len);
  lua_pushboolean(L, ev.fin);
  if (ev.opcode == ZV_WS_CLOSE) {
    lua_pushinteger(L, ev.close_code);
    lua_pushlstring(L, (const char *)ev.reason, ev.reason_len);
  } else {
    lua_pushboolean(L, ev.rsv1);
  }
  /* The strings are copies: the bytes can go. */
  zv_http_upgraded_consume(c, (size_t)used);
  return ev.opcode == ZV_WS_CLOSE ? 5 : 4;
}

/* req:ws_send(opcode, payload[, fin[, rsv1]]) -> true | nil, "closed": one unmasked frame
 * (rsv1: its payload is compressed, permessage-deflate). */
static int r_ws_send(lua_State *L) {
  zv__http_req_t *r = zv__http_check_req(L);
  lua_Integer op = luaL_checkinteger(L, 2);
  size_t len;
  const char *payload = luaL_checklstring(L, 3, &len);
  int fin = lua_isnoneornil(L, 4) ? 1 : lua_toboolean(L, 4);
  int rsv1 = lua_toboolean(L, 5);
  uint8_t head[ZV_WS_MAX_HEAD];
  size_t n;
  if (op < 0 || op > 15) return luaL_argerror(L, 2, "an opcode is 0..15");
  if (!r->c || r->c->closing || r->c->shutting || !r->c->upgraded) return push_closed(L);
  n = zv_ws_head(head, fin, rsv1, (int)op, len, NULL);
  if (len <= 4096 - ZV_WS_MAX_HEAD) {
    /* One send for a small frame: head and payload side by side on the stack. */
    uint8_t buf[4096];
    memcpy(buf, head, n);
    memcpy(buf + n, payload, len);
    if (zv_http_write(r->c, (const char *)buf, n + len)) return push_closed(L);
  } else if (zv_http_write(r->c, (const char *)head, n) || zv_http_write(r->c, payload, len)) {
    return push_closed(L);
  }
  lua_pushboolean(L, 1);
  return 1;
}

void zv__http_ws_open(lua_State *L) {
  luaL_newmetatable(L, FRAMES_MT);
  lua_pop(L, 1);
}

void zv__http_watch_fire(lua_State *L, zv__http_req_t *r, int ok) {
  int ref = r->watch_ref;
  if (ref == LUA_NOREF || !L) return;
  r->watch_ref = LUA_NOREF;
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  luaL_unref(L, LUA_REGISTRYINDEX, ref);
  lua_pushboolean(L, ok);
  zv_loop_pcall(L, 1, 0, "http stream watcher");
}

const luaL_Reg zv__http_stream_methods[] = {
  {"head", r_head},       {"pending", r_pending}, {"closed", r_closed},
  {"watch", r_watch},     {"unwatch", r_unwatch}, {"abort", r_abort},
  {"upgrade", r_upgrade}, {"ws_next", r_ws_next}, {"ws_send", r_ws_send},
  {NULL, NULL},
};
