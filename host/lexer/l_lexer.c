/*
 * l_lexer.c: the zever.lexer binding: the .zen lexer (lexer.h) for the Lua parser.
 *
 *   lexer.lex(src) -> toks, diags
 *     toks: parallel arrays, one entry per token, the last one EOF:
 *       toks.n                 number of tokens
 *       toks.kind[i]           "IDENT" "KEYWORD" "INT" "FLOAT" "DURATION" "STRING" "COMMENT"
 *                              "ILLEGAL" "EOF", or the punctuation itself: "{" "->" "@" ...
 *       toks.pos[i]            1-based byte position of the first byte (src:sub(pos, pos+len-1))
 *       toks.len[i]            length in bytes
 *       toks.line[i], col[i]   1-based line and column (code points)
 *       toks.value[i]          STRING tokens only: the decoded value
 *     diags: array of { phase = "lex", severity = "error"|"warning", message, line, col, pos, len }
 *   lexer.lex(src, true) -> toks, diags
 *     the parser's form: the same arrays without the COMMENT and ILLEGAL tokens (the diagnostics
 *     still report the latter), and one more:
 *       toks.doc[i]            the doc comment of token i: the block of `//` comments on the
 *                              lines right above it (each on a line of its own, one after
 *                              another, the last one on the line before token i), each without
 *                              its "//" and one space after it, joined with "\n"
 *       toks.text[i]           IDENT and KEYWORD tokens only: the token's text (the parser
 *                              reads names from here rather than with a string.sub each time)
 *     Dropping them here costs nothing per token; in Lua it was a second pass moving every token
 *     after the first comment (19 M of the 145 M instructions of `zever check` on the
 *     200-entity bench schema).
 *     The five arrays kind, pos, len, line and col of this form are the same tables from one
 *     call to the next (up to REUSE_MAX tokens): a call overwrites what the previous one
 *     returned, and clears the entries past its own n. The parser reads them, then drops them;
 *     reusing them spares a check of 11 files 1.4 MB of arrays it would only throw away.
 *   lexer.kinds                array of the kind names, in the core's order
 *
 * Parallel arrays cost 5 array stores per token and no table per token (one table per token was
 * not measured against them yet). A non-string src raises.
 * The module keeps one lexer per Lua state so that its buffers are reused across calls; it must
 * not raise while the lexer's output is half read (nothing here is malloc'd but by that lexer,
 * which the GC owns).
 */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "../core/zv.h"
#include "lexer.h"

#define MT "zever.lexer"

typedef struct {
  zv_lexer_t lx;
  char *scratch;
  size_t cap;
} box_t;

static int box_gc(lua_State *L) {
  box_t *b = luaL_checkudata(L, 1, MT);
  zv_lexer_free(&b->lx);
  zv_free(b->scratch);
  b->scratch = NULL;
  b->cap = 0;
  return 0;
}

/* The parser's form reuses its arrays up to this many tokens (a bigger file gets new ones, and
 * the kept ones stay as they were). */
#define REUSE_MAX 65536

static const char *const ARRAYS[] = { "kind", "pos", "len", "line", "col" };

/* Stores the five arrays of n tokens in the result table at index t: new ones, or with reuse the
 * ones kept in the table at upvalue 3 ({ kind =, ..., n = a bound on the entries in use }), their
 * entries past n cleared. The kept bound never drops below an entry in use, so a call cut short
 * by an error (out of memory) still leaves the next one a correct bound to clear to: it is the
 * larger of the two counts while clearing, and n once every array is cleared (the filling that
 * follows writes entries 1..n only). */
static void set_arrays(lua_State *L, int t, int n, int reuse) {
  int cache = lua_upvalueindex(3), prev = 0;
  if (reuse) {
    lua_getfield(L, cache, "n");
    prev = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_pushinteger(L, n > prev ? n : prev);
    lua_setfield(L, cache, "n");
  }
  for (int a = 0; a < 5; a++) {
    if (reuse) {
      lua_getfield(L, cache, ARRAYS[a]);
      if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_createtable(L, n, 0);
        lua_pushvalue(L, -1);
        lua_setfield(L, cache, ARRAYS[a]);
      }
      for (int i = n + 1; i <= prev; i++) {
        lua_pushnil(L);
        lua_rawseti(L, -2, i);
      }
    } else {
      lua_createtable(L, n, 0);
    }
    lua_setfield(L, t, ARRAYS[a]);
  }
  if (reuse) {
    lua_pushinteger(L, n);
    lua_setfield(L, cache, "n");
  }
}

/* Makes room for need bytes in the scratch buffer; 0 or ZV_ENOMEM. */
static int reserve(box_t *b, size_t need) {
  if (need <= b->cap) return 0;
  char *p = zv_realloc(b->scratch, need);
  if (!p) return ZV_ENOMEM;
  b->scratch = p;
  b->cap = need;
  return 0;
}

/* Pushes the doc comment made of the COMMENT tokens among toks[first..end): each one's text after
 * "//" with one leading space dropped, joined with "\n". The text is built in the scratch
 * buffer, which has room for it (see l_lex). */
static void push_doc(lua_State *L, box_t *b, const char *src, size_t first, size_t end) {
  size_t n = 0, lines = 0;
  for (size_t i = first; i < end; i++) {
    const zv_lexer_token_t *k = &b->lx.toks[i];
    if (k->kind != ZV_TOK_COMMENT) continue;
    const char *p = src + k->off + 2;
    size_t len = k->len - 2;
    if (len > 0 && *p == ' ') {
      p++;
      len--;
    }
    if (lines++ > 0) b->scratch[n++] = '\n';
    memcpy(b->scratch + n, p, len);
    n += len;
  }
  lua_pushlstring(L, b->scratch, n);
}

static int l_lex(lua_State *L) {
  size_t len;
  const char *src = luaL_checklstring(L, 1, &len);
  int significant = lua_toboolean(L, 2);
  box_t *b = lua_touserdata(L, lua_upvalueindex(1));
  int rc = zv_lexer_run(&b->lx, src, len);
  int n, t, out = 0;
  size_t need = 0;
  if (rc == ZV_ETOOLONG) return luaL_error(L, "lex: source longer than 4 GiB");
  if (rc) return luaL_error(L, "lex: %s", zv_strerror(rc));
  n = (int)b->lx.ntoks;
  /* The scratch buffer holds one STRING value or one doc comment at a time: a value is never
   * longer than its token, and a doc comment never longer than all the comments together. */
  for (int i = 0; i < n; i++) {
    const zv_lexer_token_t *k = &b->lx.toks[i];
    if (k->kind == ZV_TOK_STRING && k->len > need) need = k->len;
  }
  if (significant) {
    size_t comments = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
      unsigned kd = b->lx.toks[i].kind;
      if (kd == ZV_TOK_COMMENT) comments += b->lx.toks[i].len;
      else if (kd != ZV_TOK_ILLEGAL) m++;
    }
    if (comments > need) need = comments;
    n = m;
  }
  if (reserve(b, need)) return luaL_error(L, "lex: out of memory");
  lua_createtable(L, 0, 10);
  t = lua_gettop(L);
  lua_pushinteger(L, n);
  lua_setfield(L, t, "n");
  set_arrays(L, t, n, significant && n <= REUSE_MAX);
  lua_createtable(L, 0, 0);
  lua_setfield(L, t, "value");
  lua_getfield(L, t, "kind");
  lua_getfield(L, t, "pos");
  lua_getfield(L, t, "len");
  lua_getfield(L, t, "line");
  lua_getfield(L, t, "col");
  lua_getfield(L, t, "value");
  if (significant) {
    lua_createtable(L, 0, 0);
    lua_pushvalue(L, -1);
    lua_setfield(L, t, "doc");
    lua_createtable(L, n, 0);
    lua_pushvalue(L, -1);
    lua_setfield(L, t, "text");
  }
  /* Stack: t, kind(t+1), pos, len, line, col, value(t+6)[, doc(t+7), text(t+8)]; names are
   * upvalue 2.
   * The doc comment block being collected (significant only): the index of its first comment,
   * whether there is one, and the line of its last comment; last_line is the line of the last
   * token kept. A comment after code on its line is no doc comment and ends the block. */
  size_t block_first = 0;
  int in_block = 0;
  uint32_t block_last = 0, last_line = 0;
  for (size_t i = 0; i < b->lx.ntoks; i++) {
    const zv_lexer_token_t *k = &b->lx.toks[i];
    if (significant) {
      if (k->kind == ZV_TOK_COMMENT) {
        if (k->line == last_line) {
          in_block = 0;
        } else {
          if (!in_block || k->line != block_last + 1) {
            in_block = 1;
            block_first = i;
          }
          block_last = k->line;
        }
        continue;
      }
      if (k->kind == ZV_TOK_ILLEGAL) continue;
    }
    int j = ++out;
    lua_rawgeti(L, lua_upvalueindex(2), (int)k->kind + 1);
    lua_rawseti(L, t + 1, j);
    lua_pushinteger(L, (lua_Integer)k->off + 1);
    lua_rawseti(L, t + 2, j);
    lua_pushinteger(L, (lua_Integer)k->len);
    lua_rawseti(L, t + 3, j);
    lua_pushinteger(L, (lua_Integer)k->line);
    lua_rawseti(L, t + 4, j);
    lua_pushinteger(L, (lua_Integer)k->col);
    lua_rawseti(L, t + 5, j);
    if (k->kind == ZV_TOK_STRING) {
      size_t vlen;
      zv_lexer_string_value(src, k, b->scratch, &vlen);
      lua_pushlstring(L, b->scratch, vlen);
      lua_rawseti(L, t + 6, j);
    }
    if (significant) {
      if (k->kind == ZV_TOK_IDENT || k->kind == ZV_TOK_KEYWORD) {
        lua_pushlstring(L, src + k->off, k->len);
        lua_rawseti(L, t + 8, j);
      }
      if (in_block) {
        if (block_last + 1 == k->line) {
          push_doc(L, b, src, block_first, i);
          lua_rawseti(L, t + 7, j);
        }
        in_block = 0;
      }
      last_line = k->line;
    }
  }
  lua_settop(L, t);
  n = (int)b->lx.ndiags;
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    const zv_lexer_diag_t *d = &b->lx.diags[i];
    lua_createtable(L, 0, 7);
    lua_pushliteral(L, "lex");
    lua_setfield(L, -2, "phase");
    if (d->severity == ZV_LEXER_WARNING) lua_pushliteral(L, "warning");
    else lua_pushliteral(L, "error");
    lua_setfield(L, -2, "severity");
    lua_pushlstring(L, d->msg, d->msglen);
    lua_setfield(L, -2, "message");
    lua_pushinteger(L, (lua_Integer)d->line);
    lua_setfield(L, -2, "line");
    lua_pushinteger(L, (lua_Integer)d->col);
    lua_setfield(L, -2, "col");
    lua_pushinteger(L, (lua_Integer)d->off + 1);
    lua_setfield(L, -2, "pos");
    lua_pushinteger(L, (lua_Integer)d->len);
    lua_setfield(L, -2, "len");
    lua_rawseti(L, -2, i + 1);
  }
  /* The output can be big (a 5 MB file): drop it now rather than at the next call. */
  if (b->lx.captoks > 65536) {
    zv_free(b->lx.toks);
    b->lx.toks = NULL;
    b->lx.captoks = 0;
  }
  /* So can the scratch buffer: a doc comment can be as long as all of a file's comments. */
  if (b->cap > 65536) {
    zv_free(b->scratch);
    b->scratch = NULL;
    b->cap = 0;
  }
  zv_lexer_reset(&b->lx);
  return 2;
}

int luaopen_zever_lexer(lua_State *L);
int luaopen_zever_lexer(lua_State *L) {
  lua_newtable(L);
  box_t *b = lua_newuserdata(L, sizeof *b);
  zv_lexer_init(&b->lx);
  b->scratch = NULL;
  b->cap = 0;
  if (luaL_newmetatable(L, MT)) {
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  lua_createtable(L, ZV_TOK_MAX, 0);
  for (int i = 0; i < ZV_TOK_MAX; i++) {
    lua_pushstring(L, zv_lexer_kind_name((unsigned)i));
    lua_rawseti(L, -2, i + 1);
  }
  /* The names are both an upvalue of lex and the module's kinds array. */
  lua_pushvalue(L, -1);
  lua_setfield(L, -4, "kinds");
  lua_newtable(L); /* the arrays the parser's form reuses (set_arrays) */
  lua_pushcclosure(L, l_lex, 3);
  lua_setfield(L, -2, "lex");
  return 1;
}
