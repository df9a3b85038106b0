/*
 * l_queue_core.c: the zever.queue_core binding (adapters.queue.memory wraps it).
 *
 *   core.open(name)                         -> handle        one process-wide queue per name
 *   handle:push(topic, payload, type, headers|nil, delay_ns, enqueued_ns[, now_ns])
 *                                           -> id | nil, message, code
 *   handle:pop(topic, visibility_ns[, now_ns])
 *                                           -> id, lease, attempt, type, enqueued_ns, payload,
 *                                              headers|nil  | nil (nothing visible)
 *   handle:ack(id, lease)                   -> boolean (false: not the current lease)
 *   handle:nack(id, lease, requeue, delay_ns[, now_ns]) -> boolean
 *   handle:len(topic)                       -> n
 *   handle:ptr()                            -> lightuserdata (the zv_queue_t *, for the FFI pop)
 *   handle:release()                        drops this state's reference (also done by __gc)
 *   core.clock()                            -> monotonic ns
 *
 * payload and headers are strings (the adapter encodes); type is the adapter's tag. Ids and
 * lease tokens are counters, exact as Lua numbers below 2^53. Using a released handle raises.
 * A message larger than the stack buffer is read into a userdata that the collector owns, so
 * nothing leaks if a push of the result raises.
 */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "queue.h"

#define MT "zever.queue_core"
#define STACK_MSG 1024

static zv_queue_t *check(lua_State *L) {
  return zv_l_checkhandle(L, MT, "queue");
}

static uint64_t check_u64(lua_State *L, int i) {
  lua_Number n = luaL_checknumber(L, i);
  return n > 0 ? (uint64_t)n : 0;
}

static int l_open(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  void **slot = zv_l_newhandle(L, MT);
  zv_queue_t *q;
  int rc = zv_queue_open(name, &q);
  if (rc) return zv_l_fail(L, rc);
  *slot = q;
  return 1;
}

static int l_push(lua_State *L) {
  zv_queue_t *q = check(L);
  size_t tlen, plen, hlen = 0;
  const char *topic = luaL_checklstring(L, 2, &tlen);
  const char *payload = luaL_checklstring(L, 3, &plen);
  int type = (int)luaL_checkinteger(L, 4);
  const char *headers = lua_isnoneornil(L, 5) ? NULL : luaL_checklstring(L, 5, &hlen);
  uint64_t id;
  int rc = zv_queue_push(q, topic, tlen, type, payload, plen, headers, hlen, zv_l_opt_u64(L, 6),
                         zv_l_opt_u64(L, 7), zv_l_opt_u64(L, 8), &id);
  if (rc) return zv_l_fail(L, rc);
  lua_pushnumber(L, (lua_Number)id);
  return 1;
}

static int push_msg(lua_State *L, const zv_queue_msg_t *m, const char *data) {
  lua_pushnumber(L, (lua_Number)m->id);
  lua_pushnumber(L, (lua_Number)m->lease);
  lua_pushnumber(L, (lua_Number)m->attempt);
  lua_pushinteger(L, m->type);
  lua_pushnumber(L, (lua_Number)m->enqueued_ns);
  lua_pushlstring(L, data, m->payload_len);
  if (m->headers_len) lua_pushlstring(L, data + m->payload_len, m->headers_len);
  else lua_pushnil(L);
  return 7;
}

static int l_pop(lua_State *L) {
  zv_queue_t *q = check(L);
  size_t tlen;
  const char *topic = luaL_checklstring(L, 2, &tlen);
  uint64_t vis = check_u64(L, 3), now = zv_l_opt_u64(L, 4);
  char stack[STACK_MSG];
  zv_queue_msg_t m;
  int rc = zv_queue_pop(q, topic, tlen, vis, now, stack, sizeof stack, &m);
  while (rc == ZV_ERANGE) {
    size_t need = m.payload_len + m.headers_len;
    char *big = lua_newuserdata(L, need);
    rc = zv_queue_pop(q, topic, tlen, vis, now, big, need, &m);
    if (rc == 0) return push_msg(L, &m, big);
    lua_pop(L, 1);
  }
  if (rc) {
    lua_pushnil(L);
    return 1;
  }
  return push_msg(L, &m, stack);
}

static int l_ptr(lua_State *L) {
  lua_pushlightuserdata(L, check(L));
  return 1;
}

static int l_ack(lua_State *L) {
  zv_queue_t *q = check(L);
  lua_pushboolean(L, zv_queue_ack(q, check_u64(L, 2), check_u64(L, 3)) == 0);
  return 1;
}

static int l_nack(lua_State *L) {
  zv_queue_t *q = check(L);
  int rc = zv_queue_nack(q, check_u64(L, 2), check_u64(L, 3), lua_toboolean(L, 4),
                         zv_l_opt_u64(L, 5), zv_l_opt_u64(L, 6));
  lua_pushboolean(L, rc == 0);
  return 1;
}

static int l_len(lua_State *L) {
  zv_queue_t *q = check(L);
  size_t tlen, n;
  const char *topic = luaL_checklstring(L, 2, &tlen);
  zv_queue_len(q, topic, tlen, &n);
  lua_pushnumber(L, (lua_Number)n);
  return 1;
}

static int l_release(lua_State *L) {
  void **slot = luaL_checkudata(L, 1, MT);
  if (*slot) zv_queue_release(*slot);
  *slot = NULL;
  return 0;
}

static int l_clock(lua_State *L) {
  lua_pushnumber(L, (lua_Number)zv_queue_clock());
  return 1;
}

static const luaL_Reg methods[] = {
  {"push", l_push}, {"pop", l_pop}, {"ack", l_ack}, {"nack", l_nack},
  {"len", l_len},   {"ptr", l_ptr},   {"release", l_release}, {NULL, NULL},
};

static const luaL_Reg funcs[] = {
  {"open", l_open},
  {"clock", l_clock},
  {NULL, NULL},
};

int luaopen_zever_queue_core(lua_State *L);
int luaopen_zever_queue_core(lua_State *L) {
  zv_l_newclass(L, MT, methods, l_release, funcs);
  lua_pushinteger(L, ZV_QUEUE_MAX_TOPIC);
  lua_setfield(L, -2, "MAX_TOPIC");
  return 1;
}
