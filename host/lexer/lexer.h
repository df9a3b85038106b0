/*
 * lexer.h: the lexer of the .zen schema language: source bytes in, an array of tokens and an array
 * of diagnostics out.
 *
 * It never stops at bad input: an illegal byte or rune becomes an ILLEGAL token plus a diagnostic,
 * an unterminated string ends at the end of its line, and lexing goes on to the end of the input.
 * Positions are a byte offset, a 1-based line and a 1-based column counted in code points (an
 * invalid UTF-8 byte counts as one column). Comments are tokens too (the parser reads doc
 * comments from them); whitespace and newlines are not.
 *
 * Memory: a lexer owns two growable arrays (tokens, diagnostics) and an arena for diagnostic
 * messages:
 *
 *   zv_lexer_t
 *   +--------+      +-----+-----+-----+-- ...    tokens: one realloc per doubling
 *   | toks   |----->| tok | tok | tok |
 *   | diags  |--+   +-----+-----+-----+-- ...
 *   | arena  |  |   +------+------+-- ...        diagnostics: msg points into the arena
 *   | cache  |  +-->| diag | diag |
 *   +--------+      +------+------+-- ...
 *                   arena: chunks of message text, freed together by zv_lexer_reset/free
 *                   cache: the last message made for each of a few illegal runes, so that a
 *                          rune repeated 9,000 times costs one message, not 9,000
 *
 * A lexer can be run again on new input: the arrays and the arena's first chunk are kept, so a
 * warm lexer allocates nothing. Nothing here includes Lua; nothing takes a lock (one lexer per
 * thread).
 */
#ifndef ZV_LEXER_H
#define ZV_LEXER_H

#include <stddef.h>
#include <stdint.h>

/* Token kinds, in one table so that the enum and the names cannot drift apart. */
#define ZV_LEXER_KIND_MAP(X) \
  X(EOF, "EOF")              \
  X(IDENT, "IDENT")          \
  X(KEYWORD, "KEYWORD")      \
  X(INT, "INT")              \
  X(FLOAT, "FLOAT")          \
  X(DURATION, "DURATION")    \
  X(STRING, "STRING")        \
  X(COMMENT, "COMMENT")      \
  X(LBRACE, "{")             \
  X(RBRACE, "}")             \
  X(LPAREN, "(")             \
  X(RPAREN, ")")             \
  X(LBRACKET, "[")           \
  X(RBRACKET, "]")           \
  X(COLON, ":")              \
  X(COMMA, ",")              \
  X(ARROW, "->")             \
  X(AT, "@")                 \
  X(QUESTION, "?")           \
  X(DOT, ".")                \
  X(ILLEGAL, "ILLEGAL")

enum zv_lexer_kind {
#define ZV__X(name, text) ZV_TOK_##name,
  ZV_LEXER_KIND_MAP(ZV__X)
#undef ZV__X
  ZV_TOK_MAX
};

/*
 * The keywords: entity message enum service rpc job schedule has_many has_one belongs_to
 * many_to_many index true false. A keyword is a KEYWORD token; the parser also accepts one where
 * a name is wanted (a field may be called "index" or "message").
 */

/* One token: source bytes [off, off + len), starting at line:col. 20 bytes. */
typedef struct {
  uint32_t kind;
  uint32_t off;
  uint32_t len;
  uint32_t line;
  uint32_t col;
} zv_lexer_token_t;

#define ZV_LEXER_ERROR 0
#define ZV_LEXER_WARNING 1

/* One diagnostic: msg (msglen bytes, NUL-terminated, owned by the lexer's arena) about the
 * source bytes [off, off + len) at line:col. */
typedef struct {
  uint32_t severity;
  uint32_t off;
  uint32_t len;
  uint32_t line;
  uint32_t col;
  uint32_t msglen;
  const char *msg;
} zv_lexer_diag_t;

typedef struct zv__lexer_chunk zv__lexer_chunk_t;

/* How many illegal runes keep their message in the per-lexer cache (direct-mapped). */
#define ZV_LEXER_CACHE 16

typedef struct {
  zv_lexer_token_t *toks;
  size_t ntoks, captoks;
  zv_lexer_diag_t *diags;
  size_t ndiags, capdiags;
  zv__lexer_chunk_t *arena;  /* the current chunk; older ones chain behind it */
  struct {
    uint32_t rune;  /* 0 = empty slot; invalid bytes are cached as 0x80000000 | byte */
    uint32_t msglen;
    const char *msg;
  } cache[ZV_LEXER_CACHE];
  int err;  /* sticky: ZV_ENOMEM once an allocation failed; the output is then cut short */
} zv_lexer_t;

/* Makes an empty lexer. Allocates nothing. */
void zv_lexer_init(zv_lexer_t *lx);

/*
 * Lexes src[0..len) (need not end in NUL; may contain NULs) into lx->toks (always ending with
 * one EOF token) and lx->diags (in source order). Earlier output of lx is dropped first; its
 * buffers are reused. Returns 0, ZV_ETOOLONG when len does not fit in 32 bits (nothing is lexed),
 * or ZV_ENOMEM (what was lexed so far stays, ending with EOF when room allows). The tokens and
 * diagnostics stay valid until the next run, reset or free of lx.
 */
int zv_lexer_run(zv_lexer_t *lx, const char *src, size_t len);

/* Drops the output and the arena's extra chunks; keeps the arrays for reuse. */
void zv_lexer_reset(zv_lexer_t *lx);

/* Frees everything lx owns; lx is then empty (as after zv_lexer_init). */
void zv_lexer_free(zv_lexer_t *lx);

/* The name of a token kind ("IDENT", "{", "->"); "?" for anything else. */
const char *zv_lexer_kind_name(unsigned kind);

/*
 * Decodes the STRING token t of src (quotes dropped, escapes \" \\ \n \t \r \0 \u{hex} replaced)
 * into out, which must have room for t->len bytes: the value is never longer than its source.
 * Stores the value's length in *outlen. A bad escape, already reported by the lexer, is copied
 * as is. Allocates nothing.
 */
void zv_lexer_string_value(const char *src, const zv_lexer_token_t *t, char *out, size_t *outlen);

#endif
