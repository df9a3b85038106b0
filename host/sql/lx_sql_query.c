/*
 * lx_sql_query.c: part of the zever.sql binding (lx_sql.h): renders whole statements of a query
 * AST (SELECT with joins, set operations and locks; INSERT with ON CONFLICT; UPDATE; DELETE;
 * their WITH and RETURNING), and subqueries in parentheses. Expressions and conditions inside
 * them are lx_sql_expr.c's.
 *
 * It must never copy a value into SQL text, and refuses what the dialect lacks (FOR UPDATE,
 * SKIP LOCKED, DISTINCT ON, ordered union members on sqlite) with a message rather than
 * rendering it.
 */
#include "lx_sql.h"

/* Subqueries in parentheses, with a depth bound against cyclic ASTs. */
void zv__sql_subquery(ctx_t *c, int idx) {
  zv_sql_appendc(c->b, '(');
  zv__sql_query(c, idx);
  zv_sql_appendc(c->b, ')');
}

/* " WHERE ..." when the list at slot i is non-empty. */
/* The conditions of slot (where, having); w1 > 0: the slot of the inline comparison (W1COL,
 * lx_sql.h) that stands for the list when the slot holds none. */
static void clause_conds(ctx_t *c, int q, int slot, int w1, const char *kw, size_t kwlen) {
  lua_State *L = c->L;
  int top = lua_gettop(L), list = geti(c, q, slot);
  if (lua_type(L, list) == LUA_TTABLE && lua_objlen(L, list) > 0) {
    zv_sql_append(c->b, kw, kwlen);
    zv__sql_conds(c, list);
  } else if (w1 > 0) {
    lua_rawgeti(L, q, w1);
    if (!lua_isnil(L, -1)) {
      lua_createtable(L, 1, 0);
      lua_createtable(L, 5, 0);
      lua_pushinteger(L, C_CMP);
      lua_rawseti(L, -2, 1);
      lua_pushinteger(L, 0);
      lua_rawseti(L, -2, 2);
      for (int i = 0; i < 3; i++) {
        lua_rawgeti(L, q, w1 + i);
        lua_rawseti(L, -2, 3 + i);
      }
      lua_rawseti(L, -2, 1);
      zv_sql_append(c->b, kw, kwlen);
      zv__sql_conds(c, lua_gettop(L));
    }
  }
  lua_settop(L, top);
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
      zv__sql_list(c, cols, 1, 0);
      zv_sql_appendc(c->b, ')');
    }
    zv_sql_lit(c->b, " AS ");
    zv__sql_subquery(c, geti(c, e, 2));
    lua_settop(c->L, top + 1);
  }
  zv_sql_appendc(c->b, ' ');
  lua_settop(c->L, top);
}

static void render_returning(ctx_t *c, int q, int slot) {
  int top = lua_gettop(c->L), list = geti(c, q, slot);
  if (lua_type(c->L, list) == LUA_TTABLE && lua_objlen(c->L, list) > 0) {
    zv_sql_lit(c->b, " RETURNING ");
    zv__sql_list(c, list, 1, 1);
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
    zv__sql_value(c, geti(c, list, i + 1));
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
    if (lua_type(c->L, tbl) == LUA_TSTRING) ident_at(c, tbl, 1); else zv__sql_value(c, tbl);
    if (kind != 5) {
      int lhs = geti(c, j, 3), op = geti(c, j, 4), rhs = geti(c, j, 5);
      size_t n2;
      const char *s = lua_type(c->L, op) == LUA_TSTRING ? lua_tolstring(c->L, op, &n2) : NULL;
      const char *sym = s ? zv__sql_join_op(s, n2) : NULL;
      if (!sym) {
        fail(c, "bad join operator");
        break;
      }
      zv_sql_lit(c->b, " ON ");
      zv__sql_column(c, lhs, 0);
      zv_sql_append(c->b, sym, strlen(sym));
      zv__sql_column(c, rhs, 0);
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
  v = geti(c, q, S_DISTINCT);
  if (lua_type(c->L, v) == LUA_TTABLE) {
    /* DISTINCT ON (...): PostgreSQL only; SQLite has no equivalent that keeps the row. */
    if (c->d == ZV_SQL_SQLITE) {
      unsupported(c, "distinct_on");
    } else if (lua_objlen(c->L, v) == 0) {
      fail(c, "distinct_on needs at least one column");
    } else {
      zv_sql_lit(c->b, "DISTINCT ON (");
      zv__sql_list(c, v, 1, 0);
      zv_sql_lit(c->b, ") ");
    }
  } else if (lua_toboolean(c->L, v)) {
    zv_sql_lit(c->b, "DISTINCT ");
  }
  v = geti(c, q, S_COLUMNS);
  if (lua_type(c->L, v) == LUA_TTABLE && lua_objlen(c->L, v) > 0) zv__sql_list(c, v, 1, 1);
  else zv_sql_appendc(c->b, '*');
  v = geti(c, q, S_FROM);
  if (!lua_isnil(c->L, v)) {
    zv_sql_lit(c->b, " FROM ");
    if (lua_type(c->L, v) == LUA_TSTRING) ident_at(c, v, 1); else zv__sql_value(c, v);
  }
  v = geti(c, q, S_JOINS);
  if (lua_type(c->L, v) == LUA_TTABLE) render_joins(c, v);
  clause_conds(c, q, S_WHERE, S_W1COL, " WHERE ", 7);
  if (has_items(c, q, S_GROUP)) {
    zv_sql_lit(c->b, " GROUP BY ");
    zv__sql_group_terms(c, geti(c, q, S_GROUP));
  }
  clause_conds(c, q, S_HAVING, 0, " HAVING ", 8);
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
      if (inner) zv__sql_subquery(c, m); else render_select_core(c, m);
      lua_settop(c->L, top + 1);
    }
  }
  if (has_items(c, q, S_ORDER)) {
    zv_sql_lit(c->b, " ORDER BY ");
    zv__sql_order(c, geti(c, q, S_ORDER));
  }
  if (has_value(c, q, S_LIMIT)) {
    /* true is first()'s LIMIT 1, a constant of the builder's (never a user's value: limit()
     * takes integers), written out: SQLite then runs no bound-LIMIT opcodes for it. */
    lua_rawgeti(c->L, q, S_LIMIT);
    if (lua_type(c->L, -1) == LUA_TBOOLEAN) {
      lua_pop(c->L, 1);
      zv_sql_lit(c->b, " LIMIT 1");
    } else {
      lua_pop(c->L, 1);
      zv_sql_lit(c->b, " LIMIT ");
      bind(c, geti(c, q, S_LIMIT));
    }
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
    zv__sql_list(c, cols, 1, 0);
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
        zv__sql_value(c, geti(c, row, k));
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
      zv__sql_list(c, target, 1, 0);
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
  clause_conds(c, q, U_WHERE, U_W1COL, " WHERE ", 7);
  render_returning(c, q, U_RETURNING);
  lua_settop(c->L, top);
}

static void render_delete(ctx_t *c, int q) {
  int top = lua_gettop(c->L);
  render_ctes(c, q, D_CTES);
  zv_sql_lit(c->b, "DELETE FROM ");
  ident_at(c, geti(c, q, D_TABLE), 1);
  clause_conds(c, q, D_WHERE, D_W1COL, " WHERE ", 7);
  render_returning(c, q, D_RETURNING);
  lua_settop(c->L, top);
}

void zv__sql_query(ctx_t *c, int q) {
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
