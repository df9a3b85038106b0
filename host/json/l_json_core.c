/*
 * l_json_core.c: the zever.json_core binding (zever.json wraps it).
 *
 *   core.encode(v[, general]) -> string        raises on what JSON cannot hold; general = true
 *                         skips the fast paths (an object written in its first pass; specs
 *                         compare the two)
 *   core.decode(s)        -> value | nil, cause, byte offset (0-based)
 *   core.array_mt         the metatable that marks a table as a JSON array (even when empty)
 *   core.null             JSON null: the light userdata NULL (the same value as cjson.null)
 *   core.object_mt        the metatable that marks a table as a JSON object (even when empty)
 *   core.hooks            { int64 = fn(hi, lo) -> int64_t cdata, int64_text = fn(cdata) -> s|nil }
 *                         set by zever.json (the binding cannot make or read cdata itself)
 *
 * Decoding parses the whole text onto the tape first (json.c: nothing raises meanwhile), then
 * builds the values: objects as tables, arrays as tables with array_mt, null as the light
 * userdata NULL (json.null, the same value as cjson.null), integers within +-2^53 as numbers,
 * other int64 integers as int64_t cdata, other numbers as doubles.
 *
 * Encoding walks the value into the module's buffer: a table is an array when its metatable is
 * array_mt, or when it is not object_mt and every key is a positive integer (holes become null;
 * an array sparser than half full above 10 entries raises, as cjson does); an empty table with
 * neither metatable is {}. Integral numbers are written as integers, others with the shortest
 * exact form; int64_t/uint64_t cdata as integers.
 *
 * The tape, the buffer and the unescape scratch belong to the module state (one per Lua state)
 * and are kept for the next call, so a Lua error raised midway leaks nothing; above a cap they
 * are released after the call.
 */
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <string.h>

#include "../core/zv.h"
#include "json.h"

#define STATE_MT "zever.json_core.state"
#define KEEP_TOKENS 65536
#define KEEP_BYTES (1u << 20)
#define LUA_TCDATA_ 10 /* LuaJIT's type tag of cdata (lj_obj.h): lua.h has no name for it */

typedef struct {
  zv_json_tape_t tape;
  zv_json_buf_t buf;
  char *scratch;
  size_t scap;
  int general; /* encode(v, true): no fast path (specs compare the two) */
} state_t;

/* The closures' upvalues. */
#define UV_STATE lua_upvalueindex(1)
#define UV_ARRAY lua_upvalueindex(2)
#define UV_OBJECT lua_upvalueindex(3)
#define UV_HOOKS lua_upvalueindex(4)

static int state_gc(lua_State *L) {
  state_t *st = luaL_checkudata(L, 1, STATE_MT);
  zv_json_tape_free(&st->tape);
  zv_json_buf_free(&st->buf);
  zv_free(st->scratch);
  st->scratch = NULL;
  st->scap = 0;
  return 0;
}

/* --- encode ------------------------------------------------------------------------------ */

static void enc_value(lua_State *L, state_t *st, int idx, int depth);

static void enc_number(lua_State *L, state_t *st, double d) {
  char *p = zv_json_buf_reserve(&st->buf, ZV_JSON_NUMBUF);
  size_t n;
  if (!p) luaL_error(L, "json.encode: out of memory");
  n = zv_json_format_number(d, p);
  if (!n) luaL_error(L, "json.encode: cannot encode %s (JSON has no NaN or Infinity)",
                     isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
  st->buf.len += n;
}

static void enc_cdata(lua_State *L, state_t *st, int idx) {
  const char *s;
  size_t n;
  lua_getfield(L, UV_HOOKS, "int64_text");
  lua_pushvalue(L, idx);
  lua_call(L, 1, 1);
  s = lua_tolstring(L, -1, &n);
  if (!s) luaL_error(L, "json.encode: cannot encode cdata (only int64_t and uint64_t)");
  zv_json_buf_add(&st->buf, s, n);
  lua_pop(L, 1);
}

/* The array length of the table at idx, or -1 when it is an object. */
static double array_length(lua_State *L, int idx) {
  double max = 0, count = 0;
  if (lua_getmetatable(L, idx)) {
    int array = lua_rawequal(L, -1, UV_ARRAY), object = lua_rawequal(L, -1, UV_OBJECT);
    lua_pop(L, 1);
    if (array) return (double)lua_objlen(L, idx);
    if (object) return -1;
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    double k;
    if (lua_type(L, -2) != LUA_TNUMBER || (k = lua_tonumber(L, -2)) < 1 || k != floor(k) ||
        k > 2147483647.0) {
      lua_pop(L, 2);
      return -1;
    }
    if (k > max) max = k;
    count++;
    lua_pop(L, 1);
  }
  if (count == 0) return -1; /* {}: a table with no mark is an object */
  if (max > count * 2 && max > 10)
    luaL_error(L, "json.encode: cannot encode a sparse array (%d keys up to %d); mark it "
                  "json.object or fill the holes with json.null", (int)count, (int)max);
  return max;
}

/* Writes a table as an object whose first pair (a string key) lua_next has pushed: the fast
 * path for a table without a metatable, which array_length would call an object after the same
 * first lua_next. Numbers and strings are written here, other values through enc_value; the
 * pairs come in the same order and are written the same way as by enc_table's object loop. */
static void enc_object_from(lua_State *L, state_t *st, int idx, int depth) {
  zv_json_buf_addc(&st->buf, '{');
  for (int first = 1;; first = 0) {
    size_t n;
    const char *s;
    if (!first) zv_json_buf_addc(&st->buf, ',');
    if (lua_type(L, -2) == LUA_TSTRING) {
      s = lua_tolstring(L, -2, &n);
      zv_json_buf_add_string(&st->buf, s, n);
    } else if (lua_type(L, -2) == LUA_TNUMBER) {
      zv_json_buf_addc(&st->buf, '"');
      enc_number(L, st, lua_tonumber(L, -2));
      zv_json_buf_addc(&st->buf, '"');
    } else {
      luaL_error(L, "json.encode: cannot encode a table key of type %s", luaL_typename(L, -2));
    }
    zv_json_buf_addc(&st->buf, ':');
    switch (lua_type(L, -1)) {
    case LUA_TNUMBER:
      enc_number(L, st, lua_tonumber(L, -1));
      break;
    case LUA_TSTRING:
      s = lua_tolstring(L, -1, &n);
      zv_json_buf_add_string(&st->buf, s, n);
      break;
    default:
      enc_value(L, st, lua_gettop(L), depth + 1);
    }
    lua_pop(L, 1);
    if (!lua_next(L, idx)) break;
  }
  zv_json_buf_addc(&st->buf, '}');
}

static void enc_table(lua_State *L, state_t *st, int idx, int depth) {
  double n;
  if (depth >= ZV_JSON_MAX_DEPTH) luaL_error(L, "json.encode: nested too deep (a cycle?)");
  luaL_checkstack(L, 4, "json.encode: nested too deep");
  if (!st->general && !lua_getmetatable(L, idx)) {
    /* No metatable: a first key that is a string makes it an object (array_length's rule),
     * written in this one pass; no pair at all is {}; a number key needs the full check. */
    lua_pushnil(L);
    if (!lua_next(L, idx)) {
      zv_json_buf_add(&st->buf, "{}", 2);
      return;
    }
    if (lua_type(L, -2) == LUA_TSTRING) {
      enc_object_from(L, st, idx, depth);
      return;
    }
    lua_pop(L, 2);
  } else if (!st->general) {
    lua_pop(L, 1);
  }
  n = array_length(L, idx);
  if (n >= 0) {
    zv_json_buf_addc(&st->buf, '[');
    for (int i = 1; i <= (int)n; i++) {
      if (i > 1) zv_json_buf_addc(&st->buf, ',');
      lua_rawgeti(L, idx, i);
      enc_value(L, st, lua_gettop(L), depth + 1);
      lua_pop(L, 1);
    }
    zv_json_buf_addc(&st->buf, ']');
    return;
  }
  zv_json_buf_addc(&st->buf, '{');
  {
    int first = 1;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      int kt = lua_type(L, -2);
      if (!first) zv_json_buf_addc(&st->buf, ',');
      first = 0;
      if (kt == LUA_TSTRING) {
        size_t kn;
        const char *k = lua_tolstring(L, -2, &kn);
        zv_json_buf_add_string(&st->buf, k, kn);
      } else if (kt == LUA_TNUMBER) {
        zv_json_buf_addc(&st->buf, '"');
        enc_number(L, st, lua_tonumber(L, -2));
        zv_json_buf_addc(&st->buf, '"');
      } else {
        luaL_error(L, "json.encode: cannot encode a table key of type %s", luaL_typename(L, -2));
      }
      zv_json_buf_addc(&st->buf, ':');
      enc_value(L, st, lua_gettop(L), depth + 1);
      lua_pop(L, 1);
    }
  }
  zv_json_buf_addc(&st->buf, '}');
}

static void enc_value(lua_State *L, state_t *st, int idx, int depth) {
  switch (lua_type(L, idx)) {
  case LUA_TNIL:
    zv_json_buf_add(&st->buf, "null", 4);
    break;
  case LUA_TBOOLEAN:
    if (lua_toboolean(L, idx)) {
      zv_json_buf_add(&st->buf, "true", 4);
    } else {
      zv_json_buf_add(&st->buf, "false", 5);
    }
    break;
  case LUA_TNUMBER:
    enc_number(L, st, lua_tonumber(L, idx));
    break;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    zv_json_buf_add_string(&st->buf, s, n);
    break;
  }
  case LUA_TTABLE:
    enc_table(L, st, idx, depth);
    break;
  case LUA_TLIGHTUSERDATA:
    if (lua_touserdata(L, idx) == NULL) {
      zv_json_buf_add(&st->buf, "null", 4);
      break;
    }
    luaL_error(L, "json.encode: cannot encode a lightuserdata");
    break;
  case LUA_TCDATA_:
    enc_cdata(L, st, idx);
    break;
  default:
    luaL_error(L, "json.encode: cannot encode a %s", luaL_typename(L, idx));
  }
}

static int l_encode(lua_State *L) {
  state_t *st = lua_touserdata(L, UV_STATE);
  luaL_checkany(L, 1);
  st->general = lua_toboolean(L, 2);
  lua_settop(L, 1);
  st->buf.len = 0;
  st->buf.err = 0;
  enc_value(L, st, 1, 0);
  if (st->buf.err) return luaL_error(L, "json.encode: out of memory");
  lua_pushlstring(L, st->buf.data, st->buf.len);
  if (st->buf.cap > KEEP_BYTES) zv_json_buf_free(&st->buf);
  return 1;
}

/* --- decode ------------------------------------------------------------------------------ */

#define EXACT ((int64_t)1 << 53) /* integers up to 2^53 in magnitude are exact doubles */

static void push_string(lua_State *L, state_t *st, const char *s, const zv_json_tok_t *t) {
  size_t n;
  if (!(t->flags & ZV_JSON_ESCAPED)) {
    lua_pushlstring(L, s + t->v.off, t->len);
    return;
  }
  if (st->scap < t->len) {
    char *p = zv_realloc(st->scratch, t->len);
    if (!p) luaL_error(L, "json.decode: out of memory");
    st->scratch = p;
    st->scap = t->len;
  }
  n = zv_json_unescape(s + t->v.off, t->len, st->scratch);
  lua_pushlstring(L, st->scratch, n);
}

/* Pushes the value that starts at token *k and moves *k past it. */
static void build(lua_State *L, state_t *st, const char *s, size_t *k) {
  const zv_json_tok_t *t = &st->tape.toks[(*k)++];
  switch (t->kind) {
  case ZV_JSON_NULL:
    lua_pushlightuserdata(L, NULL);
    break;
  case ZV_JSON_FALSE:
    lua_pushboolean(L, 0);
    break;
  case ZV_JSON_TRUE:
    lua_pushboolean(L, 1);
    break;
  case ZV_JSON_INT:
    if (t->v.i >= -EXACT && t->v.i <= EXACT) {
      lua_pushnumber(L, (lua_Number)t->v.i);
    } else {
      uint64_t u = (uint64_t)t->v.i;
      lua_getfield(L, UV_HOOKS, "int64");
      lua_pushnumber(L, (lua_Number)(int32_t)(uint32_t)(u >> 32));
      lua_pushnumber(L, (lua_Number)(uint32_t)u);
      lua_call(L, 2, 1);
    }
    break;
  case ZV_JSON_DOUBLE:
    lua_pushnumber(L, t->v.d);
    break;
  case ZV_JSON_STRING:
    push_string(L, st, s, t);
    break;
  case ZV_JSON_ARRAY: {
    uint32_t n = t->len;
    luaL_checkstack(L, 4, "json.decode: nested too deep");
    lua_createtable(L, (int)n, 0);
    for (uint32_t i = 1; i <= n; i++) {
      build(L, st, s, k);
      lua_rawseti(L, -2, (int)i);
    }
    lua_pushvalue(L, UV_ARRAY);
    lua_setmetatable(L, -2);
    break;
  }
  case ZV_JSON_OBJECT: {
    uint32_t n = t->len;
    luaL_checkstack(L, 4, "json.decode: nested too deep");
    lua_createtable(L, 0, (int)n);
    for (uint32_t i = 0; i < n; i++) {
      push_string(L, st, s, &st->tape.toks[(*k)++]);
      build(L, st, s, k);
      lua_rawset(L, -3);
    }
    break;
  }
  }
}

static int l_decode(lua_State *L) {
  state_t *st = lua_touserdata(L, UV_STATE);
  size_t n, at, k = 0;
  const char *s = luaL_checklstring(L, 1, &n);
  int cause, rc = zv_json_parse(s, n, &st->tape, &cause, &at);
  if (rc) {
    if (st->tape.cap > KEEP_TOKENS) zv_json_tape_free(&st->tape);
    lua_pushnil(L);
    lua_pushstring(L, zv_json_cause_text(cause));
    lua_pushinteger(L, (lua_Integer)at);
    return 3;
  }
  build(L, st, s, &k);
  if (st->tape.cap > KEEP_TOKENS) zv_json_tape_free(&st->tape);
  if (st->scap > KEEP_BYTES) {
    zv_free(st->scratch);
    st->scratch = NULL;
    st->scap = 0;
  }
  return 1;
}

int luaopen_zever_json_core(lua_State *L);
int luaopen_zever_json_core(lua_State *L) {
  state_t *st;
  lua_newtable(L); /* the module */
  st = lua_newuserdata(L, sizeof *st);
  memset(st, 0, sizeof *st);
  if (luaL_newmetatable(L, STATE_MT)) {
    lua_pushcfunction(L, state_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  /* stack: module, state */
  lua_newtable(L);
  lua_pushliteral(L, "array");
  lua_setfield(L, -2, "__name");
  lua_newtable(L);
  lua_pushliteral(L, "object");
  lua_setfield(L, -2, "__name");
  lua_newtable(L);
  /* stack: module, state, array_mt, object_mt, hooks */
  lua_pushvalue(L, -3);
  lua_setfield(L, -6, "array_mt");
  lua_pushvalue(L, -2);
  lua_setfield(L, -6, "object_mt");
  lua_pushvalue(L, -1);
  lua_setfield(L, -6, "hooks");
  for (int f = 0; f < 2; f++) {
    lua_pushvalue(L, -4);
    lua_pushvalue(L, -4);
    lua_pushvalue(L, -4);
    lua_pushvalue(L, -4);
    lua_pushcclosure(L, f == 0 ? l_encode : l_decode, 4);
    lua_setfield(L, -6, f == 0 ? "encode" : "decode");
  }
  lua_pop(L, 4);
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  return 1;
}
