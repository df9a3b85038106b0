/*
 * l_ws_core.c: the zever.ws_core binding over the WebSocket frame core (ws.c). The server's
 * upgrade path is not built yet (docs/websockets.md says what is); this binding lets specs and
 * tools drive the core: golden frames in, events or close codes out.
 *
 *   core.accept(key) -> string                 Sec-WebSocket-Accept of a Sec-WebSocket-Key
 *   core.frame(opcode, payload[, fin[, rsv1[, mask]]]) -> bytes
 *                      a frame (fin default true); mask: 4 key bytes (a client's frame)
 *   core.utf8(s) -> boolean                    s is complete, valid UTF-8
 *   core.reader{max_frame, max_message, server, deflate} -> reader
 *   reader:read(bytes) -> used, event | 0, need | nil, close_code
 *      one complete frame from the front of bytes: how many bytes it took and
 *      { opcode, message, fin, rsv1, payload, close_code, reason }; 0 (and the frame's whole
 *      size when its head is complete) for an incomplete frame; nil and 1002, 1007 or 1009
 *      when the frame breaks a rule (the reader is unusable then)
 *
 * Misuse (wrong argument types, limits that are not positive integers) raises.
 */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "ws.h"

#define READER_MT "zever.ws_core.reader"

typedef struct {
  zv_ws_reader_t r;
  int failed;
} lreader_t;

static int l_accept(lua_State *L) {
  size_t len;
  const char *key = luaL_checklstring(L, 1, &len);
  char out[29];
  zv_ws_accept(key, len, out);
  lua_pushlstring(L, out, 28);
  return 1;
}

static int l_frame(lua_State *L) {
  lua_Integer op = luaL_checkinteger(L, 1);
  size_t len, mlen = 0;
  const char *payload = luaL_checklstring(L, 2, &len);
  int fin = lua_isnoneornil(L, 3) ? 1 : lua_toboolean(L, 3);
  int rsv1 = lua_toboolean(L, 4);
  const char *mask = luaL_optlstring(L, 5, NULL, &mlen);
  uint8_t head[ZV_WS_MAX_HEAD];
  size_t n;
  luaL_Buffer b;
  if (op < 0 || op > 15) return luaL_argerror(L, 1, "an opcode is 0..15");
  if (mask && mlen != 4) return luaL_argerror(L, 5, "a mask is 4 bytes");
  n = zv_ws_head(head, fin, rsv1, (int)op, len, (const uint8_t *)mask);
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, (const char *)head, n);
  if (!mask) {
    luaL_addlstring(&b, payload, len);
  } else {
    /* Masked in pieces through the buffer's own space. */
    size_t done = 0;
    while (done < len) {
      size_t k = len - done < LUAL_BUFFERSIZE ? len - done : LUAL_BUFFERSIZE;
      char *p = luaL_prepbuffer(&b);
      memcpy(p, payload + done, k);
      zv_ws_mask((uint8_t *)p, k, (const uint8_t *)mask, done);
      luaL_addsize(&b, k);
      done += k;
    }
  }
  luaL_pushresult(&b);
  return 1;
}

static int l_utf8(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  uint32_t st = 0;
  lua_pushboolean(L, zv_ws_utf8(&st, (const uint8_t *)s, len) == 0 && st == 0);
  return 1;
}

static uint64_t limit_field(lua_State *L, const char *k, uint64_t dflt) {
  lua_Number v;
  lua_getfield(L, 1, k);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return dflt;
  }
  v = lua_tonumber(L, -1);
  if (lua_type(L, -1) != LUA_TNUMBER || !(v >= 1) || v > 9e15 || v != (lua_Number)(int64_t)v)
    luaL_error(L, "ws_core.reader: %s must be an integer >= 1", k);
  lua_pop(L, 1);
  return (uint64_t)v;
}

static int l_reader(lua_State *L) {
  zv_ws_limits_t lim;
  lreader_t *r;
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lim.max_frame = limit_field(L, "max_frame", 16u << 20);
  lim.max_message = limit_field(L, "max_message", 16u << 20);
  lua_getfield(L, 1, "server");
  lim.server = lua_isnil(L, -1) ? 1 : (uint8_t)lua_toboolean(L, -1);
  lua_getfield(L, 1, "deflate");
  lim.deflate = (uint8_t)lua_toboolean(L, -1);
  lua_pop(L, 2);
  r = lua_newuserdata(L, sizeof *r);
  zv_ws_reader_init(&r->r, &lim);
  r->failed = 0;
  luaL_getmetatable(L, READER_MT);
  lua_setmetatable(L, -2);
  return 1;
}

static int r_read(lua_State *L) {
  lreader_t *r = luaL_checkudata(L, 1, READER_MT);
  size_t len;
  const char *s = luaL_checklstring(L, 2, &len);
  uint8_t *buf;
  zv_ws_event_t ev;
  uint64_t need;
  int64_t used;
  if (r->failed) return luaL_error(L, "reader:read: the reader failed already");
  /* The core unmasks in place: work on a copy (a userdata, collected with the rest). */
  buf = lua_newuserdata(L, len ? len : 1);
  memcpy(buf, s, len);
  used = zv_ws_read(&r->r, buf, len, &ev, &need);
  if (used < 0) {
    r->failed = 1;
    lua_pushnil(L);
    lua_pushinteger(L, (lua_Integer)-used);
    return 2;
  }
  if (used == 0) {
    lua_pushinteger(L, 0);
    lua_pushnumber(L, (lua_Number)need);
    return 2;
  }
  lua_pushnumber(L, (lua_Number)used);
  lua_createtable(L, 0, 7);
  lua_pushinteger(L, ev.opcode);
  lua_setfield(L, -2, "opcode");
  lua_pushinteger(L, ev.message);
  lua_setfield(L, -2, "message");
  lua_pushboolean(L, ev.fin);
  lua_setfield(L, -2, "fin");
  lua_pushboolean(L, ev.rsv1);
  lua_setfield(L, -2, "rsv1");
  lua_pushlstring(L, (const char *)ev.payload, (size_t)ev.len);
  lua_setfield(L, -2, "payload");
  if (ev.opcode == ZV_WS_CLOSE) {
    lua_pushinteger(L, ev.close_code);
    lua_setfield(L, -2, "close_code");
    lua_pushlstring(L, (const char *)ev.reason, ev.reason_len);
    lua_setfield(L, -2, "reason");
  }
  return 2;
}

int luaopen_zever_ws_core(lua_State *L);
int luaopen_zever_ws_core(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"accept", l_accept}, {"frame", l_frame}, {"utf8", l_utf8}, {"reader", l_reader},
    {NULL, NULL},
  };
  luaL_newmetatable(L, READER_MT);
  lua_newtable(L);
  lua_pushcfunction(L, r_read);
  lua_setfield(L, -2, "read");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_register(L, NULL, fns);
  return 1;
}
