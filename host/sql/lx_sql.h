/*
 * lx_sql.h: private to the zever.sql binding: the AST's opcodes and slots, the render context,
 * its primitives, and the functions one part of the binding calls in another. The binding is
 * split by phase:
 *
 *   l_sql.c          entry points: sql.render/escape_like/quote, module state, results to Lua
 *   lx_sql_expr.c    expressions and conditions: values, columns, operators, grouping terms
 *   lx_sql_query.c   statements: SELECT (joins, set operations, locks), INSERT, UPDATE, DELETE
 *
 * Every render function appends to c->b through the core builder (sql.c), whose sticky error
 * stops output after the first failure (the message goes to c->msg); values go to the bind list
 * at stack slot c->binds. The only C memory they allocate is a grouping list's dedup scratch
 * above 64 terms, mirrored in module state (st->dedup) so that a Lua error raised meanwhile (out
 * of memory in the Lua API) leaks nothing.
 *
 * The AST. Every node is an array whose slot 1 is an opcode (sql.op); this file owns the
 * statements' layout (ZV_SQL_*_SLOTS below, exported as sql.SLOT) and is its only C reader:
 *
 *   select  {SELECT, from, columns, distinct, joins, where, group, having, order, limit,
 *            offset, ctes, setops, lock, wait}   distinct: true, or a list (DISTINCT ON)
 *   insert  {INSERT, table, columns, rows, conflict_cols, action, set, returning, ctes}
 *   update  {UPDATE, table, set, where, returning, ctes}
 *   delete  {DELETE, table, where, returning, ctes}
 *   exprs   {COL, name} {VAL, v} {BIN, op, a, b} {FN, name, args} {OVER, fn, partition, order}
 *           {ALIAS, expr, name} {EXCLUDED, name} {RAW, sql, binds, nbinds} {ROLLUP, list}
 *           {CUBE, list} {NEG, expr} {EXISTS, query} {ARRAY, literal} {JSON, expr, key, text}
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
#ifndef ZV_LX_SQL_H
#define ZV_LX_SQL_H

#include <lauxlib.h>
#include <lua.h>
#include <stdarg.h>
#include <stdio.h>

#include "../core/zv.h"
#include "sql.h"

enum {
  Q_SELECT = 1, Q_INSERT, Q_UPDATE, Q_DELETE,
  E_COL = 10, E_VAL, E_BIN, E_FN, E_OVER, E_ALIAS, E_EXCLUDED, E_RAW, E_ROLLUP, E_CUBE, E_NEG,
  E_EXISTS, E_ARRAY, E_JSON,
  C_CMP = 30, C_GROUP, C_IN, C_BETWEEN, C_NULL, C_LIKE, C_EXPR
};

/*
 * The slots of each statement node, in order from slot 2 (slot 1 is the opcode): the one table
 * of the layout. C reads it as S_WHERE, I_ROWS, ...; Lua as sql.SLOT.select.where,
 * sql.SLOT.insert.rows, ... (l_sql.c exports it), so the builder never types a slot number.
 * W1COL, W1OP, W1VAL: a where list's only comparison kept in the statement's own slots (column,
 * operator, value: the builder's where(col, v) and where(col, op, v) on a query without
 * conditions, which then makes no list and no node); the where slot is then empty. It renders
 * as the list { {CMP, 0, col, op, value} } would.
 */
#define ZV_SQL_SELECT_SLOTS(X)                                                                  \
  X(S, FROM, from) X(S, COLUMNS, columns) X(S, DISTINCT, distinct) X(S, JOINS, joins)           \
  X(S, WHERE, where) X(S, GROUP, group) X(S, HAVING, having) X(S, ORDER, order)                 \
  X(S, LIMIT, limit) X(S, OFFSET, offset) X(S, CTES, ctes) X(S, SETOPS, setops)                 \
  X(S, LOCK, lock) X(S, WAIT, wait) X(S, W1COL, w1col) X(S, W1OP, w1op) X(S, W1VAL, w1val)
#define ZV_SQL_INSERT_SLOTS(X)                                                                  \
  X(I, TABLE, table) X(I, COLUMNS, columns) X(I, ROWS, rows) X(I, CONFLICT, conflict)           \
  X(I, ACTION, action) X(I, SET, set) X(I, RETURNING, returning) X(I, CTES, ctes)
#define ZV_SQL_UPDATE_SLOTS(X)                                                                  \
  X(U, TABLE, table) X(U, SET, set) X(U, WHERE, where) X(U, RETURNING, returning)               \
  X(U, CTES, ctes) X(U, W1COL, w1col) X(U, W1OP, w1op) X(U, W1VAL, w1val)
#define ZV_SQL_DELETE_SLOTS(X)                                                                  \
  X(D, TABLE, table) X(D, WHERE, where) X(D, RETURNING, returning) X(D, CTES, ctes)             \
  X(D, W1COL, w1col) X(D, W1OP, w1op) X(D, W1VAL, w1val)

#define ZV_SQL_SLOT_ENUM(kind, name, lname) kind##_##name,
enum { S_OPCODE = 1, ZV_SQL_SELECT_SLOTS(ZV_SQL_SLOT_ENUM) S_END };
enum { I_OPCODE = 1, ZV_SQL_INSERT_SLOTS(ZV_SQL_SLOT_ENUM) I_END };
enum { U_OPCODE = 1, ZV_SQL_UPDATE_SLOTS(ZV_SQL_SLOT_ENUM) U_END };
enum { D_OPCODE = 1, ZV_SQL_DELETE_SLOTS(ZV_SQL_SLOT_ENUM) D_END };
#undef ZV_SQL_SLOT_ENUM

#define MAX_DEPTH 64

typedef struct {
  zv_sql_buf_t sql;
  zv_sql_buf_t value;
  void *dedup[MAX_DEPTH + 2]; /* live dedup heap blocks, one per nesting depth */
} state_t;

typedef struct ctx_s ctx_t;
struct ctx_s {
  lua_State *L;
  state_t *st;
  zv_sql_buf_t *b;
  zv_sql_buf_t *vb;
  zv_sql_dialect_t d;
  int binds;
  uint64_t nbind;
  int depth;
  char msg[256];
  /* Renders a statement in parentheses (zv__sql_subquery): expressions reach statements
   * through this hook, so lx_sql_expr.c calls nothing of lx_sql_query.c (SQLite's Walker). */
  void (*subquery)(ctx_t *c, int idx);
};

/* Records the first error message; the builder's sticky error stops further output. */
static inline void fail(ctx_t *c, const char *fmt, ...) {
  va_list ap;
  if (c->b->err) return;
  va_start(ap, fmt);
  vsnprintf(c->msg, sizeof c->msg, fmt, ap);
  va_end(ap);
  c->b->err = ZV_EINVAL;
}

static inline void unsupported(ctx_t *c, const char *feature) {
  fail(c, "%s is not supported by %s", feature, c->d == ZV_SQL_POSTGRES ? "postgres" : "sqlite");
}

static inline int failed(const ctx_t *c) {
  return c->b->err != 0;
}

/* Pushes t[i] and returns its absolute index. */
static inline int geti(ctx_t *c, int t, int i) {
  lua_rawgeti(c->L, t, i);
  return lua_gettop(c->L);
}

/* The opcode of the table at idx, or 0 when it is not a node. */
static inline int opcode(ctx_t *c, int idx) {
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
static inline int node_op(ctx_t *c, int idx) {
  if (lua_type(c->L, idx) != LUA_TTABLE || !lua_getmetatable(c->L, idx)) return 0;
  lua_pop(c->L, 1);
  return opcode(c, idx);
}

static inline int int_at(ctx_t *c, int t, int i) {
  int v;
  lua_rawgeti(c->L, t, i);
  v = lua_type(c->L, -1) == LUA_TNUMBER ? (int)lua_tointeger(c->L, -1) : lua_toboolean(c->L, -1);
  lua_pop(c->L, 1);
  return v;
}

static inline int is_null(ctx_t *c, int idx) {
  int t = lua_type(c->L, idx);
  return t == LUA_TNIL || (t == LUA_TLIGHTUSERDATA && lua_touserdata(c->L, idx) == NULL);
}

static inline void ident_at(ctx_t *c, int idx, int alias) {
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
static inline void bind(ctx_t *c, int idx) {
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

/* lx_sql_expr.c: value and column positions, lists, ORDER BY, GROUP BY terms, conditions. */
void zv__sql_value(ctx_t *c, int idx);
void zv__sql_column(ctx_t *c, int idx, int alias);
void zv__sql_list(ctx_t *c, int list, int columns, int alias);
void zv__sql_order(ctx_t *c, int list);
void zv__sql_group_terms(ctx_t *c, int list);
void zv__sql_conds(ctx_t *c, int list);
const char *zv__sql_join_op(const char *s, size_t n);

/*
 * lx_sql_query.c: a whole statement at idx (opcode Q_*), bare or in parentheses. The parts call
 * one way: l_sql.c -> lx_sql_query.c -> lx_sql_expr.c; an expression's subquery goes through
 * c->subquery, which l_sql.c sets to zv__sql_subquery.
 */
void zv__sql_query(ctx_t *c, int idx);
void zv__sql_subquery(ctx_t *c, int idx);

#endif
