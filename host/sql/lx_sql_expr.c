/*
 * lx_sql_expr.c: part of the zever.sql binding (lx_sql.h): renders the expression and condition
 * nodes of a query AST, read from Lua tables, into the builder: columns as quoted identifiers,
 * values as placeholders with the value appended to the bind list, operators checked against
 * fixed tables and the dialect. Statements (and so subqueries) are lx_sql_query.c's.
 *
 * It must never copy a value into SQL text, and must not recurse without the depth bound
 * (MAX_DEPTH): a cyclic AST fails with a message instead of overflowing the C stack.
 */
#include <strings.h>

#include "lx_sql.h"

static void render_node(ctx_t *c, int idx, int op);

/* A value position: nodes render, anything else is bound. */
void zv__sql_value(ctx_t *c, int idx) {
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
void zv__sql_column(ctx_t *c, int idx, int alias) {
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
void zv__sql_list(ctx_t *c, int list, int columns, int alias) {
  int n, top = lua_gettop(c->L);
  if (lua_type(c->L, list) != LUA_TTABLE) {
    fail(c, "expected a list, got %s", luaL_typename(c->L, list));
    return;
  }
  n = (int)lua_objlen(c->L, list);
  for (int i = 1; i <= n && !failed(c); i++) {
    int v = geti(c, list, i);
    if (i > 1) zv_sql_lit(c->b, ", ");
    if (columns) zv__sql_column(c, v, alias); else zv__sql_value(c, v);
    lua_settop(c->L, top);
  }
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
  /* PostgreSQL's array and jsonb operators: containment, overlap, key existence. */
  {"@>", " @> ", ZV_SQL_POSTGRES},   {"<@", " <@ ", ZV_SQL_POSTGRES},
  {"&&", " && ", ZV_SQL_POSTGRES},   {"?", " ? ", ZV_SQL_POSTGRES},
  {"?|", " ?| ", ZV_SQL_POSTGRES},   {"?&", " ?& ", ZV_SQL_POSTGRES},
};

/*
 * The key-existence operators are spelled with '?', which the postgres adapter reads as a
 * placeholder in text that has no $n; their right side must therefore bind a value (then the
 * text has $n and the adapter leaves '?' alone).
 */
static int is_question_op(const char *in) {
  return in[0] == '?';
}

/* The index of op in cmp_ops, or the table size. The symbolic ones are checked first, bytewise. */
static size_t find_cmp(const char *s, size_t n) {
  if (n == 1) {
    switch (s[0]) {
    case '=': return 0;
    case '<': return 4;
    case '>': return 6;
    case '?': break;
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

/* The SQL of a join's comparison (the symbolic operators, spelled exactly), or NULL. */
const char *zv__sql_join_op(const char *s, size_t n) {
  for (size_t k = 0; k < 8; k++)
    if (strlen(cmp_ops[k].in) == n && !memcmp(cmp_ops[k].in, s, n)) return cmp_ops[k].out;
  return NULL;
}

void zv__sql_order(ctx_t *c, int list) {
  int n, top = lua_gettop(c->L);
  if (lua_type(c->L, list) != LUA_TTABLE) {
    fail(c, "order must be a list");
    return;
  }
  n = (int)lua_objlen(c->L, list);
  for (int i = 1; i + 1 <= n && !failed(c); i += 2) {
    int e = geti(c, list, i);
    if (i > 1) zv_sql_lit(c->b, ", ");
    zv__sql_column(c, e, 0);
    if (int_at(c, list, i + 1)) zv_sql_lit(c->b, " DESC"); else zv_sql_lit(c->b, " ASC");
    lua_settop(c->L, top);
  }
}

/*
 * Grouping terms with duplicates removed: identical rendered text appears once. A term that
 * binds values is always kept (with "?" two different values render alike).
 */
void zv__sql_group_terms(ctx_t *c, int list) {
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
        zv__sql_group_terms(c, inner);
        c->depth--;
        zv_sql_appendc(c->b, ')');
      }
    } else {
      zv__sql_column(c, v, 0);
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
  zv__sql_value(c, fn);
  zv_sql_lit(c->b, " OVER (");
  if (!lua_isnil(c->L, part) && lua_objlen(c->L, part) > 0) {
    zv_sql_lit(c->b, "PARTITION BY ");
    zv__sql_list(c, part, 1, 0);
    any = 1;
  }
  if (!lua_isnil(c->L, ord) && lua_objlen(c->L, ord) > 0) {
    if (any) zv_sql_appendc(c->b, ' ');
    zv_sql_lit(c->b, "ORDER BY ");
    zv__sql_order(c, ord);
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

/*
 * expr -> key, expr ->> key (the text): a string key is an object member, an integer an array
 * index. The key is bound and cast, so that the operator is picked without guessing the type
 * of an untyped parameter (PostgreSQL has -> for text and for integer). SQLite (3.38+) has the
 * same operators on its JSON text and the same CAST syntax.
 */
static void render_json(ctx_t *c, int idx) {
  lua_State *L = c->L;
  int e = geti(c, idx, 2), key = geti(c, idx, 3), text = int_at(c, idx, 4);
  int kt = lua_type(L, key);
  if (kt != LUA_TSTRING && kt != LUA_TNUMBER) {
    fail(c, "a JSON key must be a string or an integer, got %s", luaL_typename(L, key));
    return;
  }
  zv_sql_appendc(c->b, '(');
  if (lua_type(L, e) == LUA_TSTRING) zv__sql_column(c, e, 0); else zv__sql_value(c, e);
  zv_sql_appends(c->b, text ? " ->> CAST(" : " -> CAST(");
  bind(c, key);
  zv_sql_appends(c->b, kt == LUA_TSTRING ? " AS TEXT))" : " AS INTEGER))");
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
    c->subquery(c, idx);
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
    zv__sql_value(c, a);
    zv_sql_append(c->b, sym, strlen(sym));
    zv__sql_value(c, b);
    zv_sql_appendc(c->b, ')');
    break;
  }
  case E_NEG:
    zv_sql_lit(c->b, "(-");
    zv__sql_value(c, geti(c, idx, 2));
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
      zv__sql_list(c, args, 0, 0);
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
    if (lua_type(L, e) == LUA_TSTRING) zv__sql_column(c, e, 0); else zv__sql_value(c, e);
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
    c->subquery(c, geti(c, idx, 2));
    break;
  case E_ARRAY: {
    /* An array is bound as PostgreSQL's array literal text ({1,2}, {"a","b"}), which the server
     * casts to the type the context wants (an untyped parameter). */
    int lit = geti(c, idx, 2);
    if (c->d == ZV_SQL_SQLITE) unsupported(c, "db.array");
    else if (lua_type(L, lit) != LUA_TSTRING) fail(c, "db.array: bad node");
    else bind(c, lit);
    break;
  }
  case E_JSON:
    render_json(c, idx);
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
  zv__sql_column(c, lhs, 0);
  if (is_null(c, rhs)) {
    const char *out = cmp_ops[i].out;
    if (!strcmp(out, " = ") || !strcmp(out, " IS ")) zv_sql_lit(c->b, " IS NULL");
    else if (!strcmp(out, " <> ") || !strcmp(out, " IS NOT ")) zv_sql_lit(c->b, " IS NOT NULL");
    else fail(c, "NULL cannot be compared with '%s'", cmp_ops[i].in);
    return;
  }
  zv_sql_append(c->b, cmp_ops[i].out, strlen(cmp_ops[i].out));
  if (is_question_op(cmp_ops[i].in)) {
    uint64_t before = c->nbind;
    zv__sql_value(c, rhs);
    if (!failed(c) && c->nbind == before)
      fail(c, "'%s' needs a bound value on its right (not a column or raw SQL)", cmp_ops[i].in);
    return;
  }
  zv__sql_value(c, rhs);
}

static void render_in(ctx_t *c, int idx) {
  lua_State *L = c->L;
  int lhs = geti(c, idx, 3), list = geti(c, idx, 4), neg = int_at(c, idx, 5);
  int op = node_op(c, list);
  if (op == Q_SELECT) {
    zv__sql_column(c, lhs, 0);
    zv_sql_appends(c->b, neg ? " NOT IN " : " IN ");
    c->subquery(c, list);
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
  zv__sql_column(c, lhs, 0);
  zv_sql_appends(c->b, neg ? " NOT IN (" : " IN (");
  zv__sql_list(c, list, 0, 0);
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
  zv__sql_column(c, lhs, 0);
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
    zv__sql_conds(c, list);
    zv_sql_appendc(c->b, ')');
    break;
  }
  case C_IN:
    render_in(c, idx);
    break;
  case C_BETWEEN:
    zv__sql_column(c, geti(c, idx, 3), 0);
    zv_sql_appends(c->b, int_at(c, idx, 6) ? " NOT BETWEEN " : " BETWEEN ");
    zv__sql_value(c, geti(c, idx, 4));
    zv_sql_lit(c->b, " AND ");
    zv__sql_value(c, geti(c, idx, 5));
    break;
  case C_NULL:
    zv__sql_column(c, geti(c, idx, 3), 0);
    zv_sql_appends(c->b, int_at(c, idx, 4) ? " IS NOT NULL" : " IS NULL");
    break;
  case C_LIKE:
    render_like(c, idx);
    break;
  case C_EXPR:
    zv__sql_value(c, geti(c, idx, 3));
    break;
  default:
    fail(c, "unknown condition node %d", op);
  }
  c->depth--;
  lua_settop(L, top);
}

void zv__sql_conds(ctx_t *c, int list) {
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
