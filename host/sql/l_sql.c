/*
 * l_sql.c: the zever.sql binding: walks a query AST made of Lua tables and renders it, through
 * the core builder (sql.c), into SQL text plus a list of bind values, for sqlite or postgres.
 *
 *   sql.render(ast, dialect)  -> sql, binds         | nil, message (unsupported feature, bad AST)
 *   sql.escape_like(s)        -> s with \ % _ escaped by a backslash
 *   sql.quote(ident)          -> the quoted identifier ("users"."id")
 *   sql.null                  -> the NULL sentinel (a light userdata, NULL)
 *   sql.op                    -> the opcode table shared with lua/zever/db/expr.lua
 *
 * It must never copy a value into SQL text: values are appended to the bind list and stand in
 * the text as placeholders. A grouping list above 64 terms puts its dedup scratch on the heap;
 * the block is mirrored in module state (state_t.dedup), so that if Lua raises meanwhile (out
 * of memory) the next render or the module's __gc frees it: nothing leaks.
 *
 * The AST. Every node is an array whose slot 1 is an opcode (sql.op); the Lua builder owns the
 * layout, and this file is its only reader:
 *
 *   select  {SELECT, from, columns, distinct, joins, where, group, having, order, limit,
 *            offset, ctes, setops, lock, wait}
 *   insert  {INSERT, table, columns, rows, conflict_cols, action, set, returning, ctes}
 *   update  {UPDATE, table, set, where, returning, ctes}
 *   delete  {DELETE, table, where, returning, ctes}
 *   exprs   {COL, name} {VAL, v} {BIN, op, a, b} {FN, name, args} {OVER, fn, partition, order}
 *           {ALIAS, expr, name} {EXCLUDED, name} {RAW, sql, binds, nbinds} {ROLLUP, list}
 *           {CUBE, list} {NEG, expr} {EXISTS, query}
 *   conds   {CMP, conj, lhs, op, rhs} {GROUP, conj, list, negated} {IN, conj, lhs, list|q, neg}
 *           {BETWEEN, conj, lhs, a, b, neg} {NULL, conj, lhs, neg} {LIKE, conj, lhs, s, mode,
 *           neg} {EXPR, conj, expr}          conj: 0 = AND, 1 = OR (joins it to the previous one)
 *   lists   joins: {kind, table, lhs, op, rhs}; order: flat {expr, desc, expr, desc, ...};
 *           set: flat {col, value, ...}; ctes: {name, query, columns, recursive};
 *           setops: flat {kind, query, ...}; rows: list of lists aligned with columns
 *
 * Strings are identifiers in column positions (select lists, left of a comparison, group/order
 * by, returning, join columns) and bound values everywhere else.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include "../core/zv.h"
#include "sql.h"

enum {
  Q_SELECT = 1, Q_INSERT, Q_UPDATE, Q_DELETE,
  E_COL = 10, E_VAL, E_BIN, E_FN, E_OVER, E_ALIAS, E_EXCLUDED, E_RAW, E_ROLLUP, E_CUBE, E_NEG,
  E_EXISTS,
  C_CMP = 30, C_GROUP, C_IN, C_BETWEEN, C_NULL, C_LIKE, C_EXPR
};

enum {
  S_FROM = 2, S_COLUMNS, S_DISTINCT, S_JOINS, S_WHERE, S_GROUP, S_HAVING, S_ORDER, S_LIMIT,
  S_OFFSET, S_CTES, S_SETOPS, S_LOCK, S_WAIT
};
enum { I_TABLE = 2, I_COLUMNS, I_ROWS, I_CONFLICT, I_ACTION, I_SET, I_RETURNING, I_CTES };
enum { U_TABLE = 2, U_SET, U_WHERE, U_RETURNING, U_CTES };
enum { D_TABLE = 2, D_WHERE, D_RETURNING, D_CTES };

#define MAX_DEPTH 64

typedef struct {
  zv_sql_buf_t sql;
  zv_sql_buf_t value;
  void *dedup[MAX_DEPTH + 2]; /* live dedup heap blocks, one per nesting depth */
} state_t;

typedef struct {
  lua_State *L;
  state_t *st;
  zv_sql_buf_t *b;
  zv_sql_buf_t *vb;
  zv_sql_dialect_t d;
  int binds;
  uint64_t nbind;
  int depth;
  char msg[256];
} ctx_t;

static const char *const dialect_names[] = {"sqlite", "postgres"};

/* Records the first error message; the builder's sticky error stops further output. */
static void fail(ctx_t *c, const char *fmt, ...) {
  va_list ap;
  if (c->b->err) return;
  va_start(ap, fmt);
  vsnprintf(c->msg, sizeof c->msg, fmt, ap);
  va_end(ap);
  c->b->err = ZV_EINVAL;
}

static void unsupported(ctx_t *c, const char *feature) {
  fail(c, "%s is not supported by %s", feature, dialect_names[c->d]);
}

static int failed(const ctx_t *c) {
  return c->b->err != 0;
}

/* Pushes t[i] and returns its absolute index. */
static int geti(ctx_t *c, int t, int i) {
  lua_rawgeti(c->L, t, i);
  return lua_gettop(c->L);
}

/* The opcode of the table at idx, or 0 when it is not a node. */
static int opcode(ctx_t *c, int idx) {
  int op;
  if (lua_type(c->L, idx) != LUA_TTABLE) return 0;
  lua_rawgeti(c->L, idx, 1);
  op = lua_type(c->L, -1) == LUA_TNUMBER ? (int)lua_tointeger(c->L, -1) : 0;
  lua_pop(c->L, 1);
  return op;
}

/*
 * The opcode of a node in a value or column position, where plain lists of values also occur:
 * there, only tables with a metatable (the builder's nodes and queries) are nodes.
 */
static int node_op(ctx_t *c, int idx) {
  if (lua_type(c->L, idx) != LUA_TTABLE || !lua_getmetatable(c->L, idx)) return 0;
  lua_pop(c->L, 1);
  return opcode(c, idx);
}

static int int_at(ctx_t *c, int t, int i) {
  int v;
  lua_rawgeti(c->L, t, i);
  v = lua_type(c->L, -1) == LUA_TNUMBER ? (int)lua_tointeger(c->L, -1) : lua_toboolean(c->L, -1);
  lua_pop(c->L, 1);
  return v;
}

static int is_null(ctx_t *c, int idx) {
  int t = lua_type(c->L, idx);
  return t == LUA_TNIL || (t == LUA_TLIGHTUSERDATA && lua_touserdata(c->L, idx) == NULL);
}

static void ident_at(ctx_t *c, int idx, int alias) {
  size_t n;
  const char *s;
  if (lua_type(c->L, idx) != LUA_TSTRING) {
    fail(c, "an identifier must be a string, got %s", luaL_typename(c->L, idx));
    return;
  }
  s = lua_tolstring(c->L, idx, &n);
  if (alias) zv_sql_ident_alias(c->b, s, n); else zv_sql_ident(c->b, s, n);
  if (c->b->err == ZV_EINVAL && !c->msg[0]) snprintf(c->msg, sizeof c->msg, "bad identifier");
}

/* Appends a placeholder and the value at idx to the bind list (nil becomes sql.null). */
static void bind(ctx_t *c, int idx) {
  int t = lua_type(c->L, idx);
  if (failed(c)) return;
  if (t == LUA_TTABLE || t == LUA_TFUNCTION || t == LUA_TTHREAD || t == LUA_TUSERDATA) {
    fail(c, "a %s cannot be bound as a value", luaL_typename(c->L, idx));
    return;
  }
  if (t == LUA_TNIL) lua_pushlightuserdata(c->L, NULL); else lua_pushvalue(c->L, idx);
  lua_rawseti(c->L, c->binds, (int)++c->nbind);
  zv_sql_placeholder(c->b, c->d, c->nbind);
}

static void render_query(ctx_t *c, int idx);
static void render_node(ctx_t *c, int idx, int op);
static void render_conds(ctx_t *c, int list);

/* A value position: nodes render, anything else is bound. */
static void render_value(ctx_t *c, int idx) {
  int op = node_op(c, idx);
  if (op) {
    render_node(c, idx, op);
  } else if (lua_type(c->L, idx) == LUA_TTABLE) {
    fail(c, "a table is not a value here (use db.col, db.raw or a query)");
  } else {
    bind(c, idx);
  }
}

/* A column position: a string is an identifier, a node renders. */
static void render_column(ctx_t *c, int idx, int alias) {
  int op;
  if (lua_type(c->L, idx) == LUA_TSTRING) {
    ident_at(c, idx, alias);
    return;
  }
  op = node_op(c, idx);
  if (!op) {
    fail(c, "a column must be a string or an expression, got %s", luaL_typename(c->L, idx));
    return;
  }
  render_node(c, idx, op);
}

/* Renders list items separated by ", ": columns (identifiers) or values. */
static void render_list(ctx_t *c, int list, int columns, int alias) {
  int n, top = lua_gettop(c->L);
  if (lua_type(c->L, list) != LUA_TTABLE) {
    fail(c, "expected a list, got %s", luaL_typename(c->L, list));
    return;
  }
  n = (int)lua_objlen(c->L, list);
  for (int i = 1; i <= n && !failed(c); i++) {
    int v = geti(c, list, i);
    if (i > 1) zv_sql_lit(c->b, ", ");
    if (columns) render_column(c, v, alias); else render_value(c, v);
    lua_settop(c->L, top);
  }
}

/* Subqueries in parentheses, with a depth bound against cyclic ASTs. */
static void render_subquery(ctx_t *c, int idx) {
  zv_sql_appendc(c->b, '(');
  render_query(c, idx);
  zv_sql_appendc(c->b, ')');
}

static const struct {
  const char *in;
  const char *out;
  signed char only; /* -1 both dialects, else the one dialect that has it */
} cmp_ops[] = {
  {"=", " = ", -1},          {"==", " = ", -1},         {"<>", " <> ", -1},
  {"!=", " <> ", -1},        {"<", " < ", -1},          {"<=", " <= ", -1},
  {">", " > ", -1},          {">=", " >= ", -1},        {"like", " LIKE ", -1},
  {"not like", " NOT LIKE ", -1}, {"ilike", " ILIKE ", ZV_SQL_POSTGRES},
  {"not ilike", " NOT ILIKE ", ZV_SQL_POSTGRES}, {"glob", " GLOB ", ZV_SQL_SQLITE},
  {"is", " IS ", -1},        {"is not", " IS NOT ", -1},
  {"is distinct from", " IS DISTINCT FROM ", -1},
  {"is not distinct from", " IS NOT DISTINCT FROM ", -1},
};

/* The index of op in cmp_ops, or the table size. The symbolic ones are checked first, bytewise. */
static size_t find_cmp(const char *s, size_t n) {
  if (n == 1) {
    switch (s[0]) {
    case '=': return 0;
    case '<': return 4;
    case '>': return 6;
    default: return ZV_ARRAY_SIZE(cmp_ops);
    }
  }
  for (size_t i = 1; i < ZV_ARRAY_SIZE(cmp_ops); i++)
    if (strlen(cmp_ops[i].in) == n && !strncasecmp(cmp_ops[i].in, s, n)) return i;
  return ZV_ARRAY_SIZE(cmp_ops);
}

static const char *arith_op(const char *s, size_t n) {
  static const char *const ops[] = {" + ", " - ", " * ", " / ", " % ", " || "};
  static const char *const in[] = {"+", "-", "*", "/", "%", "||"};
  for (size_t i = 0; i < ZV_ARRAY_SIZE(ops); i++)
    if (strlen(in[i]) == n && !memcmp(in[i], s, n)) return ops[i];
  return NULL;
}

static void render_order(ctx_t *c, int list) {
  int n, top = lua_gettop(c->L);
  if (lua_type(c->L, list) != LUA_TTABLE) {
    fail(c, "order must be a list");
    return;
  }
  n = (int)lua_objlen(c->L, list);
  for (int i = 1; i + 1 <= n && !failed(c); i += 2) {
    int e = geti(c, list, i);
    if (i > 1) zv_sql_lit(c->b, ", ");
    render_column(c, e, 0);
    if (int_at(c, list, i + 1)) zv_sql_lit(c->b, " DESC"); else zv_sql_lit(c->b, " ASC");
    lua_settop(c->L, top);
  }
}

/*
 * Grouping terms with duplicates removed: identical rendered text appears once. A term that
 * binds values is always kept (with "?" two different values render alike).
 */
static void render_group_terms(ctx_t *c, int list) {
  zv_sql_dedup_t dd;
  int n, kept = 0, top = lua_gettop(c->L);
  if (lua_type(c->L, list) != LUA_TTABLE) {
    fail(c, "group_by expects a list");
    return;
  }
  if (c->depth > MAX_DEPTH) {
    fail(c, "grouping terms nested deeper than %d levels (a cycle?)", MAX_DEPTH);
    return;
  }
  n = (int)lua_objlen(c->L, list);
  zv_sql_dedup_begin(&dd, c->b);
  dd.keep = &c->st->dedup[c->depth];
  for (int i = 1; i <= n && !failed(c); i++) {
    int v = geti(c, list, i), op = node_op(c, v);
    size_t undo = c->b->len, start;
    uint64_t nb = c->nbind;
    if (kept) zv_sql_lit(c->b, ", ");
    start = c->b->len;
    if (op == E_ROLLUP || op == E_CUBE) {
      if (c->d == ZV_SQL_SQLITE) {
        unsupported(c, op == E_ROLLUP ? "rollup" : "cube");
      } else {
        int inner = geti(c, v, 2);
        if (op == E_ROLLUP) zv_sql_lit(c->b, "ROLLUP ("); else zv_sql_lit(c->b, "CUBE (");
        c->depth++;
        render_group_terms(c, inner);
        c->depth--;
        zv_sql_appendc(c->b, ')');
      }
    } else {
      render_column(c, v, 0);
    }
    if (c->nbind != nb || zv_sql_dedup_term(&dd, undo, start)) kept++;
    lua_settop(c->L, top);
  }
  zv_sql_dedup_end(&dd);
  if (!failed(c) && kept == 0) fail(c, "group_by needs at least one term");
}

static void render_over(ctx_t *c, int idx) {
  int top = lua_gettop(c->L), fn = geti(c, idx, 2), part = geti(c, idx, 3), ord = geti(c, idx, 4);
  int any = 0;
  render_value(c, fn);
  zv_sql_lit(c->b, " OVER (");
  if (!lua_isnil(c->L, part) && lua_objlen(c->L, part) > 0) {
    zv_sql_lit(c->b, "PARTITION BY ");
    render_list(c, part, 1, 0);
    any = 1;
  }
  if (!lua_isnil(c->L, ord) && lua_objlen(c->L, ord) > 0) {
    if (any) zv_sql_appendc(c->b, ' ');
    zv_sql_lit(c->b, "ORDER BY ");
    render_order(c, ord);
  }
  zv_sql_appendc(c->b, ')');
  lua_settop(c->L, top);
}

static void render_raw(ctx_t *c, int idx) {
  int top = lua_gettop(c->L), s = geti(c, idx, 2), list = geti(c, idx, 3);
  int nvals = int_at(c, idx, 4);
  size_t len, count;
  const char *text;
  uint64_t next = c->nbind + 1;
  if (lua_type(c->L, s) != LUA_TSTRING) {
    fail(c, "db.raw needs a string");
    return;
  }
  text = lua_tolstring(c->L, s, &len);
  zv_sql_raw(c->b, c->d, text, len, &next, &count);
  if (c->b->err == ZV_ESYNTAX) {
    c->b->err = 0;
    fail(c, "db.raw: unterminated quote or NUL byte in SQL fragment");
  }
  if (failed(c)) return;
  if ((int)count != nvals) {
    fail(c, "db.raw: %d placeholders but %d values", (int)count, nvals);
    return;
  }
  for (int i = 1; i <= nvals; i++) {
    int v = geti(c, list, i);
    if (lua_type(c->L, v) == LUA_TTABLE) {
      fail(c, "db.raw: value %d is a table", i);
      return;
    }
    lua_pushvalue(c->L, v);
    if (lua_isnil(c->L, -1)) {
      lua_pop(c->L, 1);
      lua_pushlightuserdata(c->L, NULL);
    }
    lua_rawseti(c->L, c->binds, (int)++c->nbind);
    lua_settop(c->L, top + 2);
  }
  lua_settop(c->L, top);
}

static void render_node(ctx_t *c, int idx, int op) {
  lua_State *L = c->L;
  int top = lua_gettop(L);
  size_t n;
  const char *s;
  if (++c->depth > MAX_DEPTH) {
    fail(c, "expression nested deeper than %d levels (a cycle?)", MAX_DEPTH);
    c->depth--;
    return;
  }
  if (!lua_checkstack(L, 16)) {
    fail(c, "Lua stack exhausted");
    c->depth--;
    return;
  }
  switch (op) {
  case Q_SELECT:
  case Q_INSERT:
  case Q_UPDATE:
  case Q_DELETE:
    render_subquery(c, idx);
    break;
  case E_COL:
    ident_at(c, geti(c, idx, 2), 0);
    break;
  case E_VAL:
    bind(c, geti(c, idx, 2));
    break;
  case E_BIN: {
    int o = geti(c, idx, 2), a = geti(c, idx, 3), b = geti(c, idx, 4);
    const char *text = lua_type(L, o) == LUA_TSTRING ? lua_tolstring(L, o, &n) : NULL;
    const char *sym = text ? arith_op(text, n) : NULL;
    if (!sym) {
      fail(c, "unknown arithmetic operator");
      break;
    }
    zv_sql_appendc(c->b, '(');
    render_value(c, a);
    zv_sql_append(c->b, sym, strlen(sym));
    render_value(c, b);
    zv_sql_appendc(c->b, ')');
    break;
  }
  case E_NEG:
    zv_sql_lit(c->b, "(-");
    render_value(c, geti(c, idx, 2));
    zv_sql_appendc(c->b, ')');
    break;
  case E_FN: {
    int name = geti(c, idx, 2), args = geti(c, idx, 3);
    s = lua_type(L, name) == LUA_TSTRING ? lua_tolstring(L, name, &n) : NULL;
    if (!s || !zv_sql_is_name(s, n)) {
      fail(c, "bad function name");
      break;
    }
    zv_sql_append(c->b, s, n);
    zv_sql_appendc(c->b, '(');
    if (lua_type(L, args) == LUA_TTABLE && lua_objlen(L, args) > 0)
      render_list(c, args, 0, 0);
    else if (n == 5 && !strncasecmp(s, "count", 5))
      zv_sql_appendc(c->b, '*');
    zv_sql_appendc(c->b, ')');
    break;
  }
  case E_OVER:
    render_over(c, idx);
    break;
  case E_ALIAS: {
    int e = geti(c, idx, 2);
    if (lua_type(L, e) == LUA_TSTRING) render_column(c, e, 0); else render_value(c, e);
    zv_sql_lit(c->b, " AS ");
    ident_at(c, geti(c, idx, 3), 0);
    break;
  }
  case E_EXCLUDED:
    zv_sql_lit(c->b, "excluded.");
    ident_at(c, geti(c, idx, 2), 0);
    break;
  case E_RAW:
    render_raw(c, idx);
    break;
  case E_ROLLUP:
  case E_CUBE:
    fail(c, "%s can only appear in group_by", op == E_ROLLUP ? "rollup" : "cube");
    break;
  case E_EXISTS:
    zv_sql_lit(c->b, "EXISTS ");
    render_subquery(c, geti(c, idx, 2));
    break;
  default:
    fail(c, "unknown expression node %d", op);
  }
  c->depth--;
  lua_settop(L, top);
}

static void render_cmp(ctx_t *c, int idx) {
  lua_State *L = c->L;
  int lhs = geti(c, idx, 3), o = geti(c, idx, 4), rhs = geti(c, idx, 5);
  size_t n, i;
  const char *s = lua_type(L, o) == LUA_TSTRING ? lua_tolstring(L, o, &n) : NULL;
  if (!s) {
    fail(c, "comparison operator must be a string");
    return;
  }
  i = find_cmp(s, n);
  if (i == ZV_ARRAY_SIZE(cmp_ops)) {
    fail(c, "unknown comparison operator '%.32s'", s);
    return;
  }
  if (cmp_ops[i].only >= 0 && cmp_ops[i].only != (int)c->d) {
    unsupported(c, cmp_ops[i].in);
    return;
  }
  render_column(c, lhs, 0);
  if (is_null(c, rhs)) {
    const char *out = cmp_ops[i].out;
    if (!strcmp(out, " = ") || !strcmp(out, " IS ")) zv_sql_lit(c->b, " IS NULL");
    else if (!strcmp(out, " <> ") || !strcmp(out, " IS NOT ")) zv_sql_lit(c->b, " IS NOT NULL");
    else fail(c, "NULL cannot be compared with '%s'", cmp_ops[i].in);
    return;
  }
  zv_sql_append(c->b, cmp_ops[i].out, strlen(cmp_ops[i].out));
  render_value(c, rhs);
}

static void render_in(ctx_t *c, int idx) {
  lua_State *L = c->L;
  int lhs = geti(c, idx, 3), list = geti(c, idx, 4), neg = int_at(c, idx, 5);
  int op = node_op(c, list);
  if (op == Q_SELECT) {
    render_column(c, lhs, 0);
    zv_sql_appends(c->b, neg ? " NOT IN " : " IN ");
    render_subquery(c, list);
    return;
  }
  if (op || lua_type(L, list) != LUA_TTABLE) {
    fail(c, "where_in expects a list or a select query");
    return;
  }
  if (lua_objlen(L, list) == 0) {
    /* An empty list matches nothing (NOT IN: everything); "IN ()" is not valid everywhere. */
    zv_sql_appends(c->b, neg ? "1 = 1" : "1 = 0");
    return;
  }
  render_column(c, lhs, 0);
  zv_sql_appends(c->b, neg ? " NOT IN (" : " IN (");
  render_list(c, list, 0, 0);
  zv_sql_appendc(c->b, ')');
}

static void render_like(ctx_t *c, int idx) {
  lua_State *L = c->L;
  int lhs = geti(c, idx, 3), v = geti(c, idx, 4), mode = int_at(c, idx, 5);
  int neg = int_at(c, idx, 6);
  size_t n;
  const char *s;
  if (lua_type(L, v) != LUA_TSTRING && lua_type(L, v) != LUA_TNUMBER) {
    fail(c, "a LIKE helper needs a string, got %s", luaL_typename(L, v));
    return;
  }
  s = lua_tolstring(L, v, &n);
  zv_sql_buf_reset(c->vb);
  if (mode != 2) zv_sql_appendc(c->vb, '%');
  zv_sql_escape_like(c->vb, s, n);
  if (mode != 3) zv_sql_appendc(c->vb, '%');
  if (c->vb->err) {
    fail(c, "LIKE value: %s", zv_strerror(c->vb->err));
    return;
  }
  render_column(c, lhs, 0);
  zv_sql_appends(c->b, neg ? " NOT LIKE " : " LIKE ");
  lua_pushlstring(L, c->vb->data, c->vb->len);
  bind(c, lua_gettop(L));
  zv_sql_lit(c->b, " ESCAPE '\\'");
}

static void render_cond(ctx_t *c, int idx, int op) {
  lua_State *L = c->L;
  int top = lua_gettop(L);
  if (++c->depth > MAX_DEPTH) {
    fail(c, "conditions nested deeper than %d levels (a cycle?)", MAX_DEPTH);
    c->depth--;
    return;
  }
  if (!lua_checkstack(L, 16)) {
    fail(c, "Lua stack exhausted");
    c->depth--;
    return;
  }
  switch (op) {
  case C_CMP:
    render_cmp(c, idx);
    break;
  case C_GROUP: {
    int list = geti(c, idx, 3);
    if (int_at(c, idx, 4)) zv_sql_lit(c->b, "NOT ");
    if (lua_type(L, list) != LUA_TTABLE || lua_objlen(L, list) == 0) {
      fail(c, "empty condition group");
      break;
    }
    zv_sql_appendc(c->b, '(');
    render_conds(c, list);
    zv_sql_appendc(c->b, ')');
    break;
  }
  case C_IN:
    render_in(c, idx);
    break;
  case C_BETWEEN:
    render_column(c, geti(c, idx, 3), 0);
    zv_sql_appends(c->b, int_at(c, idx, 6) ? " NOT BETWEEN " : " BETWEEN ");
    render_value(c, geti(c, idx, 4));
    zv_sql_lit(c->b, " AND ");
    render_value(c, geti(c, idx, 5));
    break;
  case C_NULL:
    render_column(c, geti(c, idx, 3), 0);
    zv_sql_appends(c->b, int_at(c, idx, 4) ? " IS NOT NULL" : " IS NULL");
    break;
  case C_LIKE:
    render_like(c, idx);
    break;
  case C_EXPR:
    render_value(c, geti(c, idx, 3));
    break;
  default:
    fail(c, "unknown condition node %d", op);
  }
  c->depth--;
  lua_settop(L, top);
}

static void render_conds(ctx_t *c, int list) {
  int n = (int)lua_objlen(c->L, list), top = lua_gettop(c->L);
  for (int i = 1; i <= n && !failed(c); i++) {
    int v = geti(c, list, i), op = opcode(c, v);
    if (op < C_CMP) {
      fail(c, "condition %d is not a condition node", i);
      break;
    }
    if (i > 1) {
      if (int_at(c, v, 2)) zv_sql_lit(c->b, " OR "); else zv_sql_lit(c->b, " AND ");
    }
    render_cond(c, v, op);
    lua_settop(c->L, top);
  }
}

/* " WHERE ..." when the list at slot i is non-empty. */
static void clause_conds(ctx_t *c, int q, int slot, const char *kw, size_t kwlen) {
  int top = lua_gettop(c->L), list = geti(c, q, slot);
  if (lua_type(c->L, list) == LUA_TTABLE && lua_objlen(c->L, list) > 0) {
    zv_sql_append(c->b, kw, kwlen);
    render_conds(c, list);
  }
  lua_settop(c->L, top);
}

static void render_ctes(ctx_t *c, int q, int slot) {
  int top = lua_gettop(c->L), list = geti(c, q, slot), n, rec = 0;
  if (lua_type(c->L, list) != LUA_TTABLE || (n = (int)lua_objlen(c->L, list)) == 0) {
    lua_settop(c->L, top);
    return;
  }
  for (int i = 1; i <= n; i++) {
    int e = geti(c, list, i);
    if (lua_type(c->L, e) == LUA_TTABLE && int_at(c, e, 4)) rec = 1;
    lua_settop(c->L, top + 1);
  }
  zv_sql_appends(c->b, rec ? "WITH RECURSIVE " : "WITH ");
  for (int i = 1; i <= n && !failed(c); i++) {
    int e = geti(c, list, i), cols;
    if (lua_type(c->L, e) != LUA_TTABLE) {
      fail(c, "bad CTE entry");
      break;
    }
    if (i > 1) zv_sql_lit(c->b, ", ");
    ident_at(c, geti(c, e, 1), 0);
    cols = geti(c, e, 3);
    if (lua_type(c->L, cols) == LUA_TTABLE && lua_objlen(c->L, cols) > 0) {
      zv_sql_lit(c->b, " (");
      render_list(c, cols, 1, 0);
      zv_sql_appendc(c->b, ')');
    }
    zv_sql_lit(c->b, " AS ");
    render_subquery(c, geti(c, e, 2));
    lua_settop(c->L, top + 1);
  }
  zv_sql_appendc(c->b, ' ');
  lua_settop(c->L, top);
}

static void render_returning(ctx_t *c, int q, int slot) {
  int top = lua_gettop(c->L), list = geti(c, q, slot);
  if (lua_type(c->L, list) == LUA_TTABLE && lua_objlen(c->L, list) > 0) {
    zv_sql_lit(c->b, " RETURNING ");
    render_list(c, list, 1, 1);
  }
  lua_settop(c->L, top);
}

/* Flat {col, value, col, value} as "col" = value, ... */
static void render_set(ctx_t *c, int list) {
  int n, top = lua_gettop(c->L);
  if (lua_type(c->L, list) != LUA_TTABLE || (n = (int)lua_objlen(c->L, list)) < 2) {
    fail(c, "set needs at least one column");
    return;
  }
  for (int i = 1; i + 1 <= n && !failed(c); i += 2) {
    if (i > 1) zv_sql_lit(c->b, ", ");
    ident_at(c, geti(c, list, i), 0);
    zv_sql_lit(c->b, " = ");
    render_value(c, geti(c, list, i + 1));
    lua_settop(c->L, top);
  }
}

static const char *const join_kw[] = {NULL, " JOIN ", " LEFT JOIN ", " RIGHT JOIN ",
                                      " FULL JOIN ", " CROSS JOIN "};

static void render_joins(ctx_t *c, int list) {
  int n = (int)lua_objlen(c->L, list), top = lua_gettop(c->L);
  for (int i = 1; i <= n && !failed(c); i++) {
    int j = geti(c, list, i), kind = int_at(c, j, 1), tbl;
    if (kind < 1 || kind > 5) {
      fail(c, "bad join kind");
      break;
    }
    zv_sql_append(c->b, join_kw[kind], strlen(join_kw[kind]));
    tbl = geti(c, j, 2);
    if (lua_type(c->L, tbl) == LUA_TSTRING) ident_at(c, tbl, 1); else render_value(c, tbl);
    if (kind != 5) {
      int lhs = geti(c, j, 3), op = geti(c, j, 4), rhs = geti(c, j, 5);
      size_t k, n2;
      const char *s = lua_type(c->L, op) == LUA_TSTRING ? lua_tolstring(c->L, op, &n2) : NULL;
      for (k = 0; s && k < 8; k++)
        if (strlen(cmp_ops[k].in) == n2 && !memcmp(cmp_ops[k].in, s, n2)) break;
      if (!s || k == 8) {
        fail(c, "bad join operator");
        break;
      }
      zv_sql_lit(c->b, " ON ");
      render_column(c, lhs, 0);
      zv_sql_append(c->b, cmp_ops[k].out, strlen(cmp_ops[k].out));
      render_column(c, rhs, 0);
    }
    lua_settop(c->L, top);
  }
}

static int has_items(ctx_t *c, int q, int slot) {
  int r;
  lua_rawgeti(c->L, q, slot);
  r = lua_type(c->L, -1) == LUA_TTABLE && lua_objlen(c->L, -1) > 0;
  lua_pop(c->L, 1);
  return r;
}

static int has_value(ctx_t *c, int q, int slot) {
  int r;
  lua_rawgeti(c->L, q, slot);
  r = !lua_isnil(c->L, -1) && !(lua_type(c->L, -1) == LUA_TBOOLEAN && !lua_toboolean(c->L, -1));
  lua_pop(c->L, 1);
  return r;
}

/* SELECT ... FROM ... JOIN ... WHERE ... GROUP BY ... HAVING ... (no order/limit/lock). */
static void render_select_core(ctx_t *c, int q) {
  int top = lua_gettop(c->L), v;
  zv_sql_lit(c->b, "SELECT ");
  if (int_at(c, q, S_DISTINCT)) zv_sql_lit(c->b, "DISTINCT ");
  v = geti(c, q, S_COLUMNS);
  if (lua_type(c->L, v) == LUA_TTABLE && lua_objlen(c->L, v) > 0) render_list(c, v, 1, 1);
  else zv_sql_appendc(c->b, '*');
  v = geti(c, q, S_FROM);
  if (!lua_isnil(c->L, v)) {
    zv_sql_lit(c->b, " FROM ");
    if (lua_type(c->L, v) == LUA_TSTRING) ident_at(c, v, 1); else render_value(c, v);
  }
  v = geti(c, q, S_JOINS);
  if (lua_type(c->L, v) == LUA_TTABLE) render_joins(c, v);
  clause_conds(c, q, S_WHERE, " WHERE ", 7);
  if (has_items(c, q, S_GROUP)) {
    zv_sql_lit(c->b, " GROUP BY ");
    render_group_terms(c, geti(c, q, S_GROUP));
  }
  clause_conds(c, q, S_HAVING, " HAVING ", 8);
  lua_settop(c->L, top);
}

static void render_select(ctx_t *c, int q) {
  int top = lua_gettop(c->L), ops, lock;
  render_ctes(c, q, S_CTES);
  render_select_core(c, q);
  ops = geti(c, q, S_SETOPS);
  if (lua_type(c->L, ops) == LUA_TTABLE) {
    static const char *const kw[] = {NULL, " UNION ", " UNION ALL ", " INTERSECT ", " EXCEPT "};
    int n = (int)lua_objlen(c->L, ops);
    for (int i = 1; i + 1 <= n && !failed(c); i += 2) {
      int kind = int_at(c, ops, i), m = geti(c, ops, i + 1), inner;
      if (kind < 1 || kind > 4 || opcode(c, m) != Q_SELECT) {
        fail(c, "bad set operation");
        break;
      }
      zv_sql_append(c->b, kw[kind], strlen(kw[kind]));
      inner = has_items(c, m, S_ORDER) || has_value(c, m, S_LIMIT) || has_value(c, m, S_OFFSET);
      if (has_items(c, m, S_SETOPS) || has_items(c, m, S_CTES)) inner = 1;
      if (inner && c->d == ZV_SQL_SQLITE) {
        unsupported(c, "order_by, limit, offset, with or a nested set operation in a union member");
        break;
      }
      if (inner) render_subquery(c, m); else render_select_core(c, m);
      lua_settop(c->L, top + 1);
    }
  }
  if (has_items(c, q, S_ORDER)) {
    zv_sql_lit(c->b, " ORDER BY ");
    render_order(c, geti(c, q, S_ORDER));
  }
  if (has_value(c, q, S_LIMIT)) {
    zv_sql_lit(c->b, " LIMIT ");
    bind(c, geti(c, q, S_LIMIT));
  }
  if (has_value(c, q, S_OFFSET)) {
    /* SQLite's grammar has no OFFSET without LIMIT; LIMIT -1 means "no limit" there. */
    if (!has_value(c, q, S_LIMIT) && c->d == ZV_SQL_SQLITE) zv_sql_lit(c->b, " LIMIT -1");
    zv_sql_lit(c->b, " OFFSET ");
    bind(c, geti(c, q, S_OFFSET));
  }
  lock = int_at(c, q, S_LOCK);
  if (lock) {
    if (c->d == ZV_SQL_SQLITE) {
      unsupported(c, lock == 2 ? "for_share" : "for_update");
    } else {
      zv_sql_appends(c->b, lock == 2 ? " FOR SHARE" : " FOR UPDATE");
    }
  }
  switch (int_at(c, q, S_WAIT)) {
  case 0:
    break;
  case 1:
    if (c->d == ZV_SQL_SQLITE) unsupported(c, "skip_locked");
    else if (!lock) fail(c, "skip_locked needs for_update or for_share");
    else zv_sql_lit(c->b, " SKIP LOCKED");
    break;
  default:
    if (c->d == ZV_SQL_SQLITE) unsupported(c, "nowait");
    else if (!lock) fail(c, "nowait needs for_update or for_share");
    else zv_sql_lit(c->b, " NOWAIT");
  }
  lua_settop(c->L, top);
}

static void render_insert(ctx_t *c, int q) {
  lua_State *L = c->L;
  int top = lua_gettop(L), cols, rows, ncols, nrows, action;
  render_ctes(c, q, I_CTES);
  zv_sql_lit(c->b, "INSERT INTO ");
  ident_at(c, geti(c, q, I_TABLE), 1);
  cols = geti(c, q, I_COLUMNS);
  rows = geti(c, q, I_ROWS);
  ncols = lua_type(L, cols) == LUA_TTABLE ? (int)lua_objlen(L, cols) : 0;
  nrows = lua_type(L, rows) == LUA_TTABLE ? (int)lua_objlen(L, rows) : 0;
  if (nrows == 0) {
    fail(c, "insert needs values");
  } else if (ncols == 0) {
    if (nrows > 1) fail(c, "insert of several rows needs columns");
    zv_sql_lit(c->b, " DEFAULT VALUES");
  } else {
    zv_sql_lit(c->b, " (");
    render_list(c, cols, 1, 0);
    zv_sql_lit(c->b, ") VALUES ");
    for (int r = 1; r <= nrows && !failed(c); r++) {
      int row = geti(c, rows, r);
      if (lua_type(L, row) != LUA_TTABLE) {
        fail(c, "insert row %d is not a list", r);
        break;
      }
      if (r > 1) zv_sql_lit(c->b, ", ");
      zv_sql_appendc(c->b, '(');
      for (int k = 1; k <= ncols && !failed(c); k++) {
        if (k > 1) zv_sql_lit(c->b, ", ");
        render_value(c, geti(c, row, k));
        lua_settop(L, row);
      }
      zv_sql_appendc(c->b, ')');
      lua_settop(L, rows);
    }
  }
  action = int_at(c, q, I_ACTION);
  if (action) {
    int target = geti(c, q, I_CONFLICT);
    int has_target = lua_type(L, target) == LUA_TTABLE && lua_objlen(L, target) > 0;
    zv_sql_lit(c->b, " ON CONFLICT");
    if (has_target) {
      zv_sql_lit(c->b, " (");
      render_list(c, target, 1, 0);
      zv_sql_appendc(c->b, ')');
    }
    if (action == 1) {
      zv_sql_lit(c->b, " DO NOTHING");
    } else {
      if (!has_target) fail(c, "on_conflict():do_update needs conflict columns");
      zv_sql_lit(c->b, " DO UPDATE SET ");
      render_set(c, geti(c, q, I_SET));
    }
  }
  render_returning(c, q, I_RETURNING);
  lua_settop(L, top);
}

static void render_update(ctx_t *c, int q) {
  int top = lua_gettop(c->L);
  render_ctes(c, q, U_CTES);
  zv_sql_lit(c->b, "UPDATE ");
  ident_at(c, geti(c, q, U_TABLE), 1);
  zv_sql_lit(c->b, " SET ");
  render_set(c, geti(c, q, U_SET));
  clause_conds(c, q, U_WHERE, " WHERE ", 7);
  render_returning(c, q, U_RETURNING);
  lua_settop(c->L, top);
}

static void render_delete(ctx_t *c, int q) {
  int top = lua_gettop(c->L);
  render_ctes(c, q, D_CTES);
  zv_sql_lit(c->b, "DELETE FROM ");
  ident_at(c, geti(c, q, D_TABLE), 1);
  clause_conds(c, q, D_WHERE, " WHERE ", 7);
  render_returning(c, q, D_RETURNING);
  lua_settop(c->L, top);
}

static void render_query(ctx_t *c, int q) {
  if (++c->depth > MAX_DEPTH) {
    fail(c, "queries nested deeper than %d levels (a cycle?)", MAX_DEPTH);
    c->depth--;
    return;
  }
  if (!lua_checkstack(c->L, 32)) {
    fail(c, "Lua stack exhausted");
    c->depth--;
    return;
  }
  switch (opcode(c, q)) {
  case Q_SELECT:
    render_select(c, q);
    break;
  case Q_INSERT:
    render_insert(c, q);
    break;
  case Q_UPDATE:
    render_update(c, q);
    break;
  case Q_DELETE:
    render_delete(c, q);
    break;
  default:
    fail(c, "not a query");
  }
  c->depth--;
}

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
  zv_sql_buf_reset(c.b);
  render_query(&c, 1);
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
  {"CUBE", E_CUBE}, {"NEG", E_NEG}, {"EXISTS", E_EXISTS}, {"CMP", C_CMP}, {"GROUP", C_GROUP},
  {"IN", C_IN}, {"BETWEEN", C_BETWEEN}, {"NULL", C_NULL}, {"LIKE", C_LIKE}, {"EXPR", C_EXPR},
};

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
  return 1;
}
