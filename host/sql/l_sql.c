/*
 * l_sql.c: the zever.sql binding: walks a query AST made of Lua tables and renders it, through
 * the core builder (sql.c), into SQL text plus a list of bind values, for sqlite or postgres.
 *
 *   sql.render(ast, dialect)  -> sql, binds         | nil, message (unsupported feature, bad AST)
 *   sql.escape_like(s)        -> s with \ % _ escaped by a backslash
 *   sql.quote(ident)          -> the quoted identifier ("users"."id")
 *   sql.null                  -> the NULL sentinel (a light userdata, NULL)
 *   sql.op                    -> the opcode table shared with lua/zever/db/expr.lua
 *   sql.SLOT                  -> the statements' slots by name: SLOT.select.where == 6, ...
 *                                (lx_sql.h's ZV_SQL_*_SLOTS; lua/zever/db/query.lua builds by it)
 *   sql.check_slots(kind, t)  raises unless every name = slot of t is SLOT[kind]'s (the Lua
 *                                builder keeps the slots as literals, which LuaJIT folds, and
 *                                checks them with this when it loads)
 *
 * It must never copy a value into SQL text: values are appended to the bind list and stand in
 * the text as placeholders. A grouping list above 64 terms puts its dedup scratch on the heap;
 * the block is mirrored in module state (state_t.dedup), so that if Lua raises meanwhile (out
 * of memory) the next render or the module's __gc frees it: nothing leaks.
 *
 * This file holds the entry points and module state; the rendering is split by phase into
 * lx_sql_expr.c (expressions, conditions) and lx_sql_query.c (statements), which share the
 * private header lx_sql.h (the AST's layout is described there).
 */
#include "lx_sql.h"

static int parse_dialect(lua_State *L, int idx, zv_sql_dialect_t *d) {
  size_t n;
  const char *s = luaL_optlstring(L, idx, "sqlite", &n);
  if (!strcmp(s, "sqlite")) *d = ZV_SQL_SQLITE;
  else if (!strcmp(s, "postgres") || !strcmp(s, "postgresql")) *d = ZV_SQL_POSTGRES;
  else return 0;
  return 1;
}

/* Frees dedup blocks left behind by a render that Lua unwound. */
static void free_dedup(state_t *st) {
  for (size_t i = 0; i < ZV_ARRAY_SIZE(st->dedup); i++) {
    zv_free(st->dedup[i]);
    st->dedup[i] = NULL;
  }
}

static int l_render(lua_State *L) {
  state_t *st = lua_touserdata(L, lua_upvalueindex(1));
  ctx_t c;
  free_dedup(st);
  luaL_checktype(L, 1, LUA_TTABLE);
  if (!parse_dialect(L, 2, &c.d))
    return luaL_error(L, "bad argument #2 to 'render' (unknown dialect '%s')", lua_tostring(L, 2));
  lua_settop(L, 2);
  lua_createtable(L, 8, 0);
  c.L = L;
  c.st = st;
  c.b = &st->sql;
  c.vb = &st->value;
  c.binds = 3;
  c.nbind = 0;
  c.depth = 0;
  c.msg[0] = '\0';
  c.subquery = zv__sql_subquery;
  zv_sql_buf_reset(c.b);
  zv__sql_query(&c, 1);
  if (c.b->err) {
    lua_pushnil(L);
    if (c.msg[0]) lua_pushstring(L, c.msg);
    else lua_pushfstring(L, "render: %s", zv_strerror(c.b->err));
    return 2;
  }
  lua_pushlstring(L, c.b->data, c.b->len);
  lua_pushvalue(L, 3);
  return 2;
}

static int l_escape_like(lua_State *L) {
  state_t *st = lua_touserdata(L, lua_upvalueindex(1));
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  zv_sql_buf_reset(&st->value);
  zv_sql_escape_like(&st->value, s, n);
  if (st->value.err) return luaL_error(L, "escape_like: %s", zv_strerror(st->value.err));
  lua_pushlstring(L, st->value.data ? st->value.data : "", st->value.len);
  return 1;
}

static int l_quote(lua_State *L) {
  state_t *st = lua_touserdata(L, lua_upvalueindex(1));
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  zv_sql_buf_reset(&st->value);
  zv_sql_ident(&st->value, s, n);
  if (st->value.err) return luaL_error(L, "bad identifier");
  lua_pushlstring(L, st->value.data, st->value.len);
  return 1;
}

static int l_gc(lua_State *L) {
  state_t *st = lua_touserdata(L, 1);
  free_dedup(st);
  zv_sql_buf_free(&st->sql);
  zv_sql_buf_free(&st->value);
  return 0;
}

static const struct {
  const char *name;
  int value;
} opcodes[] = {
  {"SELECT", Q_SELECT}, {"INSERT", Q_INSERT}, {"UPDATE", Q_UPDATE}, {"DELETE", Q_DELETE},
  {"COL", E_COL}, {"VAL", E_VAL}, {"BIN", E_BIN}, {"FN", E_FN}, {"OVER", E_OVER},
  {"ALIAS", E_ALIAS}, {"EXCLUDED", E_EXCLUDED}, {"RAW", E_RAW}, {"ROLLUP", E_ROLLUP},
  {"CUBE", E_CUBE}, {"NEG", E_NEG}, {"EXISTS", E_EXISTS}, {"ARRAY", E_ARRAY},
  {"JSON", E_JSON}, {"CMP", C_CMP}, {"GROUP", C_GROUP},
  {"IN", C_IN}, {"BETWEEN", C_BETWEEN}, {"NULL", C_NULL}, {"LIKE", C_LIKE}, {"EXPR", C_EXPR},
};

/* sql.check_slots(kind, t): the upvalue is sql.SLOT. */
static int l_check_slots(lua_State *L) {
  const char *kind = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_getfield(L, lua_upvalueindex(1), kind);
  if (!lua_istable(L, -1)) return luaL_error(L, "sql.check_slots: no statement kind '%s'", kind);
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    lua_pushvalue(L, -2);
    lua_rawget(L, 3);
    if (!lua_isnumber(L, -1) || !lua_isnumber(L, -2) ||
        lua_tointeger(L, -1) != lua_tointeger(L, -2)) {
      return luaL_error(L, "sql: the %s slot '%s' is %s here but %s in zever.sql (lx_sql.h)",
                        kind, lua_tostring(L, -3) ? lua_tostring(L, -3) : "?",
                        lua_tostring(L, -2) ? lua_tostring(L, -2) : "nil",
                        lua_tostring(L, -1) ? lua_tostring(L, -1) : "nil");
    }
    lua_pop(L, 2);
  }
  return 0;
}

int luaopen_zever_sql(lua_State *L);
int luaopen_zever_sql(lua_State *L) {
  static const luaL_Reg funcs[] = {
    {"render", l_render}, {"escape_like", l_escape_like}, {"quote", l_quote}, {NULL, NULL}};
  state_t *st;
  lua_newtable(L);
  st = lua_newuserdata(L, sizeof *st);
  zv_sql_buf_init(&st->sql);
  zv_sql_buf_init(&st->value);
  memset(st->dedup, 0, sizeof st->dedup);
  lua_newtable(L);
  lua_pushcfunction(L, l_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  for (const luaL_Reg *f = funcs; f->name; f++) {
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, f->func, 1);
    lua_setfield(L, -3, f->name);
  }
  lua_pop(L, 1);
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  lua_newtable(L);
  for (size_t i = 0; i < ZV_ARRAY_SIZE(opcodes); i++) {
    lua_pushinteger(L, opcodes[i].value);
    lua_setfield(L, -2, opcodes[i].name);
  }
  lua_setfield(L, -2, "op");
  lua_createtable(L, 0, 4);
#define ZV_SQL_SLOT_FIELD(kind, name, lname) \
  lua_pushinteger(L, kind##_##name);         \
  lua_setfield(L, -2, #lname);
  lua_createtable(L, 0, S_END - 2);
  ZV_SQL_SELECT_SLOTS(ZV_SQL_SLOT_FIELD)
  lua_setfield(L, -2, "select");
  lua_createtable(L, 0, I_END - 2);
  ZV_SQL_INSERT_SLOTS(ZV_SQL_SLOT_FIELD)
  lua_setfield(L, -2, "insert");
  lua_createtable(L, 0, U_END - 2);
  ZV_SQL_UPDATE_SLOTS(ZV_SQL_SLOT_FIELD)
  lua_setfield(L, -2, "update");
  lua_createtable(L, 0, D_END - 2);
  ZV_SQL_DELETE_SLOTS(ZV_SQL_SLOT_FIELD)
  lua_setfield(L, -2, "delete");
#undef ZV_SQL_SLOT_FIELD
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, l_check_slots, 1);
  lua_setfield(L, -3, "check_slots");
  lua_setfield(L, -2, "SLOT");
  return 1;
}
