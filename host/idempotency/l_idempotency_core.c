/*
 * l_idempotency_core.c: the zever.idempotency_core binding (the memory adapter wraps it; its
 * begin and complete go through LuaJIT's FFI to idem.h when the host exports the core).
 *
 *   core.open(name, max_keys, max_bytes)  -> handle | nil, message, code
 *   handle:begin(key, fp, ttl_ns, pending_ns[, now_ns])
 *       -> "reserved", token | "replay", raw, type | "pending" | "mismatch"
 *        | nil, message, code                       ("TOOLONG": key over 256 bytes, or too big)
 *   handle:complete(key, token, raw, type[, now_ns]) -> true | nil, message, code
 *       ("NOTFOUND": no live reservation with that token; "CONFLICT": already complete)
 *   handle:forget(key[, token[, now_ns]]) -> existed       (token 0 or nil: whoever holds it)
 *   handle:sweep(max_steps[, now_ns])     -> removed, more
 *   handle:clear()
 *   handle:stats() -> { entries, pending, bytes, max_keys, max_bytes, evictions, expired }
 *   handle:ptr()                          -> lightuserdata (the zv_idem_t *, for the FFI)
 *   handle:release()                      -> drops this state's reference (also done by __gc)
 *   core.clock(), core.OVERHEAD, core.MAX_KEY
 *   core.fingerprint(s1, s2, ...)         -> 32 hex digits (zv_idem_fingerprint of the parts)
 *
 * raw is a string; type is the caller's tag, stored and returned as is. Tokens are numbers
 * (exact below 2^53). Using a released handle raises. A replayed result larger than the stack
 * buffer is read into a userdata the collector owns, so nothing leaks if the push raises.
 */
#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "idem.h"

#define MT "zever.idempotency_core"
#define STACK_RESULT 512
#define MAX_PARTS 16

static zv_idem_t *check(lua_State *L) {
  return zv_l_checkhandle(L, MT, "idempotency");
}

ZV_L_STORE_METHODS(zv_idem, MT, "idempotency")

static int l_open(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  lua_Number keys = luaL_checknumber(L, 2);
  lua_Number bytes = luaL_checknumber(L, 3);
  void **slot = zv_l_newhandle(L, MT);
  zv_idem_t *t;
  int rc = zv_idem_open(name, keys >= 1 ? (size_t)keys : 0, bytes >= 1 ? (size_t)bytes : 0, &t);
  if (rc) return zv_l_fail(L, rc);
  *slot = t;
  return 1;
}

static int push_begin(lua_State *L, const zv_idem_begin_t *r, const char *buf) {
  switch (r->status) {
  case ZV_IDEM_RESERVED:
    lua_pushliteral(L, "reserved");
    lua_pushnumber(L, (lua_Number)r->token);
    return 2;
  case ZV_IDEM_REPLAY:
    lua_pushliteral(L, "replay");
    lua_pushlstring(L, buf, r->len);
    lua_pushinteger(L, r->type);
    return 3;
  case ZV_IDEM_PENDING:
    lua_pushliteral(L, "pending");
    return 1;
  default:
    lua_pushliteral(L, "mismatch");
    return 1;
  }
}

static int l_begin(lua_State *L) {
  zv_idem_t *t = check(L);
  size_t klen, flen;
  const char *key = luaL_checklstring(L, 2, &klen);
  const char *fp = luaL_checklstring(L, 3, &flen);
  uint64_t ttl = zv_l_opt_u64(L, 4), pending = zv_l_opt_u64(L, 5), now = zv_l_opt_u64(L, 6);
  char stack[STACK_RESULT];
  zv_idem_begin_t r;
  int rc = zv_idem_begin(t, key, klen, fp, flen, ttl, pending, now, stack, sizeof stack, &r);
  while (rc == ZV_ERANGE) {
    char *big = lua_newuserdata(L, r.len);
    rc = zv_idem_begin(t, key, klen, fp, flen, ttl, pending, now, big, r.len, &r);
    if (rc == 0) return push_begin(L, &r, big);
    lua_pop(L, 1);
  }
  if (rc) return zv_l_fail(L, rc);
  return push_begin(L, &r, stack);
}

static int l_complete(lua_State *L) {
  zv_idem_t *t = check(L);
  size_t klen, rlen;
  const char *key = luaL_checklstring(L, 2, &klen);
  uint64_t token = zv_l_opt_u64(L, 3);
  const char *raw = luaL_checklstring(L, 4, &rlen);
  int type = (int)luaL_optinteger(L, 5, 0);
  int rc = zv_idem_complete(t, key, klen, token, type, raw, rlen, zv_l_opt_u64(L, 6));
  if (rc) return zv_l_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_forget(lua_State *L) {
  zv_idem_t *t = check(L);
  size_t klen;
  const char *key = luaL_checklstring(L, 2, &klen);
  int existed;
  zv_idem_forget(t, key, klen, zv_l_opt_u64(L, 3), zv_l_opt_u64(L, 4), &existed);
  lua_pushboolean(L, existed);
  return 1;
}

static int l_clear(lua_State *L) {
  zv_idem_clear(check(L));
  return 0;
}

static int l_stats(lua_State *L) {
  zv_idem_stats_t st;
  zv_idem_stats(check(L), &st);
  lua_createtable(L, 0, 7);
  zv_l_setnumber(L, "entries", (double)st.entries);
  zv_l_setnumber(L, "pending", (double)st.pending);
  zv_l_setnumber(L, "bytes", (double)st.bytes);
  zv_l_setnumber(L, "max_keys", (double)st.max_keys);
  zv_l_setnumber(L, "max_bytes", (double)st.max_bytes);
  zv_l_setnumber(L, "evictions", (double)st.evictions);
  zv_l_setnumber(L, "expired", (double)st.expired);
  return 1;
}

static int l_fingerprint(lua_State *L) {
  const char *parts[MAX_PARTS];
  size_t lens[MAX_PARTS];
  int n = lua_gettop(L);
  char out[33];
  if (n > MAX_PARTS) return luaL_error(L, "fingerprint: at most %d parts", MAX_PARTS);
  for (int i = 0; i < n; i++) parts[i] = luaL_checklstring(L, i + 1, &lens[i]);
  zv_idem_fingerprint(parts, lens, (size_t)n, out);
  lua_pushlstring(L, out, 32);
  return 1;
}

static const luaL_Reg methods[] = {
  {"begin", l_begin}, {"complete", l_complete}, {"forget", l_forget}, {"sweep", l_sweep},
  {"clear", l_clear}, {"stats", l_stats},       {"ptr", l_ptr},       {"release", l_release},
  {NULL, NULL},
};

static const luaL_Reg funcs[] = {
  {"open", l_open},
  {"clock", l_clock},
  {"fingerprint", l_fingerprint},
  {NULL, NULL},
};

int luaopen_zever_idempotency_core(lua_State *L);
int luaopen_zever_idempotency_core(lua_State *L) {
  zv_l_newclass(L, MT, methods, l_release, funcs);
  lua_pushinteger(L, (lua_Integer)zv_idem_overhead());
  lua_setfield(L, -2, "OVERHEAD");
  lua_pushinteger(L, ZV_IDEM_MAX_KEY);
  lua_setfield(L, -2, "MAX_KEY");
  return 1;
}
