/*
 * lexer.c: the .zen lexer (see lexer.h): one pass over the bytes, a switch on the first byte of
 * each token, tokens appended to a geometrically grown array.
 *
 * It must not stop early, read past the input, or allocate per token: tokens and diagnostics go
 * into arrays that double, message text into an arena, and the message of an illegal rune that
 * repeats comes from a small cache. It must not include Lua.
 */
#include "lexer.h"

#include <stdio.h>
#include <string.h>

#include "../core/zv.h"
#include "../duration/duration.h"

struct zv__lexer_chunk {
  zv__lexer_chunk_t *next;  /* older chunk */
  size_t size, used;
  char data[];
};

#define ARENA_FIRST 1024

static const char *const kind_names[] = {
#define ZV__X(name, text) text,
  ZV_LEXER_KIND_MAP(ZV__X)
#undef ZV__X
};

const char *zv_lexer_kind_name(unsigned kind) {
  return kind < ZV_TOK_MAX ? kind_names[kind] : "?";
}

void zv_lexer_init(zv_lexer_t *lx) {
  memset(lx, 0, sizeof *lx);
}

void zv_lexer_reset(zv_lexer_t *lx) {
  zv__lexer_chunk_t *c = lx->arena;
  if (c) {
    zv__lexer_chunk_t *old = c->next;
    while (old) {
      zv__lexer_chunk_t *next = old->next;
      zv_free(old);
      old = next;
    }
    c->next = NULL;
    c->used = 0;
  }
  lx->ntoks = lx->ndiags = 0;
  memset(lx->cache, 0, sizeof lx->cache);
  lx->err = 0;
}

void zv_lexer_free(zv_lexer_t *lx) {
  zv_lexer_reset(lx);
  zv_free(lx->arena);
  zv_free(lx->toks);
  zv_free(lx->diags);
  zv_lexer_init(lx);
}

/* Copies n bytes of text plus a NUL into the arena; NULL (and a sticky error) when out of memory. */
static const char *arena_put(zv_lexer_t *lx, const char *s, size_t n) {
  zv__lexer_chunk_t *c = lx->arena;
  char *p;
  if (lx->err) return NULL;
  if (!c || c->size - c->used < n + 1) {
    size_t size = c ? c->size * 2 : ARENA_FIRST;
    while (size < n + 1) size *= 2;
    zv__lexer_chunk_t *nc = zv_alloc(sizeof *nc + size);
    if (!nc) {
      lx->err = ZV_ENOMEM;
      return NULL;
    }
    nc->next = c;
    nc->size = size;
    nc->used = 0;
    lx->arena = c = nc;
  }
  p = c->data + c->used;
  memcpy(p, s, n);
  p[n] = '\0';
  c->used += n + 1;
  return p;
}

static int grow(void **arr, size_t *cap, size_t want, size_t elem) {
  size_t ncap = *cap ? *cap * 2 : want;
  void *p;
  if (ncap < want) ncap = want;
  p = zv_realloc(*arr, ncap * elem);
  if (!p) return ZV_ENOMEM;
  *arr = p;
  *cap = ncap;
  return 0;
}

typedef struct {
  zv_lexer_t *lx;
  const unsigned char *s;
  size_t len;
  size_t i;        /* current byte offset */
  uint32_t line;   /* line of i */
  uint32_t col;    /* column of i */
} state_t;

/* Grows the token array (out of line: the hot path only compares two counters). */
static __attribute__((noinline)) int grow_toks(state_t *st) {
  zv_lexer_t *lx = st->lx;
  if (lx->err || grow((void **)&lx->toks, &lx->captoks, st->len / 8 + 64, sizeof *lx->toks)) {
    lx->err = ZV_ENOMEM;
    return -1;
  }
  return 0;
}

static inline void push_tok(state_t *st, unsigned kind, size_t off, uint32_t line, uint32_t col) {
  zv_lexer_t *lx = st->lx;
  zv_lexer_token_t *t;
  if (lx->ntoks == lx->captoks && grow_toks(st)) return;
  t = &lx->toks[lx->ntoks++];
  t->kind = kind;
  t->off = (uint32_t)off;
  t->len = (uint32_t)(st->i - off);
  t->line = line;
  t->col = col;
}

static void push_diag(state_t *st, unsigned sev, size_t off, size_t len, uint32_t line,
                      uint32_t col, const char *msg, size_t msglen) {
  zv_lexer_t *lx = st->lx;
  zv_lexer_diag_t *d;
  if (!msg) return;
  if (lx->ndiags == lx->capdiags) {
    if (lx->err || grow((void **)&lx->diags, &lx->capdiags, 16, sizeof *d)) {
      lx->err = ZV_ENOMEM;
      return;
    }
  }
  d = &lx->diags[lx->ndiags++];
  d->severity = sev;
  d->off = (uint32_t)off;
  d->len = (uint32_t)len;
  d->line = line;
  d->col = col;
  d->msg = msg;
  d->msglen = (uint32_t)msglen;
}

/* A diagnostic whose text is made here: copied into the arena. */
static void diag_text(state_t *st, size_t off, size_t len, uint32_t line, uint32_t col,
                      const char *text, size_t n) {
  push_diag(st, ZV_LEXER_ERROR, off, len, line, col, arena_put(st->lx, text, n), n);
}

/*
 * Decodes the UTF-8 sequence at s[0..n) (n >= 1). Returns its length and stores the rune, or
 * returns 0 when the bytes are not valid UTF-8 (overlong forms, surrogates and runes past
 * U+10FFFF are invalid).
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *rune) {
  uint32_t c = s[0];
  if (c < 0x80) {
    *rune = c;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF) {
    if (n < 2 || (s[1] & 0xC0) != 0x80) return 0;
    *rune = ((c & 0x1F) << 6) | (s[1] & 0x3F);
    return 2;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
    *rune = ((c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    if (*rune < 0x800 || (*rune >= 0xD800 && *rune <= 0xDFFF)) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
      return 0;
    *rune = ((c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
            ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    if (*rune < 0x10000 || *rune > 0x10FFFF) return 0;
    return 4;
  }
  return 0;
}

/*
 * An illegal rune (or, with n == 0, an illegal byte) at the current position: one ILLEGAL token,
 * one diagnostic. The message of a rune seen before comes from the cache.
 */
static void illegal(state_t *st, uint32_t rune, size_t n) {
  zv_lexer_t *lx = st->lx;
  size_t off = st->i;
  uint32_t key = n ? rune : (0x80000000u | st->s[off]);
  unsigned slot = (key * 2654435761u) >> 28;
  const char *msg;
  uint32_t msglen;
  if (lx->cache[slot].rune == key && lx->cache[slot].msg) {
    msg = lx->cache[slot].msg;
    msglen = lx->cache[slot].msglen;
  } else {
    char buf[64];
    int k;
    if (!n)
      k = snprintf(buf, sizeof buf, "illegal byte 0x%02X (not UTF-8)", st->s[off]);
    else if (rune == '-')
      k = snprintf(buf, sizeof buf, "illegal character \"-\" (did you mean \"->\"?)");
    else if (rune < 0x20 || rune == 0x7F || (rune >= 0x80 && rune < 0xA0))
      k = snprintf(buf, sizeof buf, "illegal character U+%04X", (unsigned)rune);
    else
      k = snprintf(buf, sizeof buf, "illegal character U+%04X \"%.*s\"", (unsigned)rune, (int)n,
                   (const char *)st->s + off);
    msg = arena_put(lx, buf, (size_t)k);
    msglen = (uint32_t)k;
    if (msg) {
      lx->cache[slot].rune = key;
      lx->cache[slot].msg = msg;
      lx->cache[slot].msglen = msglen;
    }
  }
  st->i += n ? n : 1;
  push_tok(st, ZV_TOK_ILLEGAL, off, st->line, st->col);
  push_diag(st, ZV_LEXER_ERROR, off, st->i - off, st->line, st->col, msg, msglen);
  st->col += 1;
}

/* Byte classes: bit 1 starts an identifier, bit 2 continues one. */
#define C_START 1
#define C_IDENT 2
#define L C_START | C_IDENT
#define D C_IDENT
static const unsigned char cls[256] = {
  ['0'] = D, ['1'] = D, ['2'] = D, ['3'] = D, ['4'] = D, ['5'] = D, ['6'] = D, ['7'] = D,
  ['8'] = D, ['9'] = D, ['_'] = L,
  ['a'] = L, ['b'] = L, ['c'] = L, ['d'] = L, ['e'] = L, ['f'] = L, ['g'] = L, ['h'] = L,
  ['i'] = L, ['j'] = L, ['k'] = L, ['l'] = L, ['m'] = L, ['n'] = L, ['o'] = L, ['p'] = L,
  ['q'] = L, ['r'] = L, ['s'] = L, ['t'] = L, ['u'] = L, ['v'] = L, ['w'] = L, ['x'] = L,
  ['y'] = L, ['z'] = L,
  ['A'] = L, ['B'] = L, ['C'] = L, ['D'] = L, ['E'] = L, ['F'] = L, ['G'] = L, ['H'] = L,
  ['I'] = L, ['J'] = L, ['K'] = L, ['L'] = L, ['M'] = L, ['N'] = L, ['O'] = L, ['P'] = L,
  ['Q'] = L, ['R'] = L, ['S'] = L, ['T'] = L, ['U'] = L, ['V'] = L, ['W'] = L, ['X'] = L,
  ['Y'] = L, ['Z'] = L,
};
#undef L
#undef D

static inline int is_ident_start(unsigned c) {
  return cls[c & 0xFF] & C_START;
}

static inline int is_ident(unsigned c) {
  return cls[c & 0xFF] & C_IDENT;
}

static int is_digit(unsigned c) {
  return c >= '0' && c <= '9';
}

/* The value of a lower-case hex letter; 99 for anything else. */
static unsigned hexval(unsigned h) {
  return h >= 'a' && h <= 'f' ? h - 'a' + 10 : 99;
}

static int kw(const unsigned char *p, size_t n, const char *w) {
  return memcmp(p, w, n) == 0;
}

/* Whether p[0..n) is a keyword (see lexer.h for the list). */
static int is_keyword(const unsigned char *p, size_t n) {
  switch (n) {
  case 3: return kw(p, n, "rpc") || kw(p, n, "job");
  case 4: return kw(p, n, "enum") || kw(p, n, "true");
  case 5: return kw(p, n, "index") || kw(p, n, "false");
  case 6: return kw(p, n, "entity");
  case 7: return kw(p, n, "message") || kw(p, n, "service") || kw(p, n, "has_one");
  case 8: return kw(p, n, "schedule") || kw(p, n, "has_many");
  case 10: return kw(p, n, "belongs_to");
  case 12: return kw(p, n, "many_to_many");
  default: return 0;
  }
}

/* Adds to col the code points of s[from..to): every byte that is not a continuation byte. */
static uint32_t count_cols(const unsigned char *s, size_t from, size_t to) {
  uint32_t n = 0;
  for (size_t k = from; k < to; k++) n += (s[k] & 0xC0) != 0x80;
  return n;
}

/* A number, a float or a duration: [-] digits [. digits] [e [+-] digits] [unit word]. */
static void lex_number(state_t *st) {
  const unsigned char *s = st->s;
  size_t off = st->i, i = st->i, len = st->len;
  unsigned kind = ZV_TOK_INT;
  int word = 0;
  if (s[i] == '-') i++;
  while (i < len && is_digit(s[i])) i++;
  if (i + 1 < len && s[i] == '.' && is_digit(s[i + 1])) {
    kind = ZV_TOK_FLOAT;
    i++;
    while (i < len && is_digit(s[i])) i++;
  }
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < len && (s[j] == '+' || s[j] == '-')) j++;
    if (j < len && is_digit(s[j])) {
      kind = ZV_TOK_FLOAT;
      i = j;
      while (i < len && is_digit(s[i])) i++;
    }
  }
  /* A word glued to the number makes it a duration: 30s, 1h30m, 1.5h, 2µs. */
  for (;;) {
    if (i < len && (is_ident(s[i]) || s[i] == '.')) {
      word |= !is_digit(s[i]) && s[i] != '.';
      i++;
    } else if (i + 1 < len && ((s[i] == 0xC2 && s[i + 1] == 0xB5) ||
                               (s[i] == 0xCE && s[i + 1] == 0xBC))) {
      word = 1;
      i += 2;
    } else {
      break;
    }
  }
  if (word) kind = ZV_TOK_DURATION;
  if (kind == ZV_TOK_DURATION) {
    int64_t ns;
    zv_duration_cause_t cause;
    if (zv_duration_parse((const char *)s + off, i - off, ZV_DURATION_UNITS, 1, &ns, &cause)) {
      char buf[ZV_DURATION_MSGSIZE + 64], why[ZV_DURATION_MSGSIZE];
      size_t n = i - off;
      int k;
      zv_duration_cause_text(&cause, (const char *)s + off, n, why, sizeof why);
      k = snprintf(buf, sizeof buf, "invalid duration \"%.*s\": %s", (int)(n > 64 ? 64 : n),
                   (const char *)s + off, why);
      if (k < 0) k = 0;
      if ((size_t)k >= sizeof buf) k = (int)sizeof buf - 1;
      kind = ZV_TOK_ILLEGAL;
      diag_text(st, off, n, st->line, st->col, buf, (size_t)k);
    }
  }
  st->i = i;
  push_tok(st, kind, off, st->line, st->col);
  st->col += count_cols(s, off, i);
}

/* A string "..." on one line, with escapes \" \\ \n \t \r \0 \u{hex}. */
static void lex_string(state_t *st) {
  const unsigned char *s = st->s;
  size_t off = st->i, i = st->i + 1, len = st->len;
  uint32_t line = st->line, col = st->col;
  size_t first = st->lx->ndiags;
  int closed = 0;
  while (i < len) {
    unsigned c = s[i];
    if (c == '"') {
      i++;
      closed = 1;
      break;
    }
    if (c == '\n') break;
    if (c == '\\') {
      size_t at = i;
      unsigned e = i + 1 < len ? s[i + 1] : 0;
      if (e == '"' || e == '\\' || e == 'n' || e == 't' || e == 'r' || e == '0') {
        i += 2;
        continue;
      }
      if (e == 'u' && i + 2 < len && s[i + 2] == '{') {
        size_t j = i + 3;
        uint32_t v = 0;
        int digits = 0;
        while (j < len && digits < 7) {
          unsigned h = s[j];
          unsigned d = is_digit(h) ? h - '0' : hexval(h | 0x20);
          if (d > 15) break;
          v = v * 16 + d;
          digits++;
          j++;
        }
        if (digits >= 1 && digits <= 6 && j < len && s[j] == '}' && v <= 0x10FFFF &&
            !(v >= 0xD800 && v <= 0xDFFF)) {
          i = j + 1;
          continue;
        }
        static const char msg[] = "invalid \\u{...} escape in string (want 1 to 6 hex digits of a "
                                  "rune up to 10FFFF, not a surrogate)";
        diag_text(st, at, 2, line, col + count_cols(s, off, at), msg, sizeof msg - 1);
        i += 2;
        continue;
      }
      if (e == '\n' || i + 1 >= len) {
        i++;
        continue;
      }
      char buf[64];
      uint32_t r;
      size_t n = utf8_decode(s + i + 1, len - i - 1, &r);
      if (!n) n = 1;
      int k = snprintf(buf, sizeof buf, "unknown escape \"\\%.*s\" in string", (int)n,
                       (const char *)s + i + 1);
      diag_text(st, at, 1 + n, line, col + count_cols(s, off, at), buf, (size_t)k);
      i += 1 + n;
      continue;
    }
    if (c < 0x80) {
      i++;
      continue;
    }
    uint32_t r;
    size_t n = utf8_decode(s + i, len - i, &r);
    if (!n) {
      char buf[64];
      int k = snprintf(buf, sizeof buf, "invalid UTF-8 byte 0x%02X in string", c);
      diag_text(st, i, 1, line, col + count_cols(s, off, i), buf, (size_t)k);
      n = 1;
    }
    i += n;
  }
  st->i = i;
  push_tok(st, ZV_TOK_STRING, off, line, col);
  if (!closed) {
    static const char msg[] = "unterminated string (a string ends on its line)";
    zv_lexer_t *lx = st->lx;
    diag_text(st, off, i - off, line, col, msg, sizeof msg - 1);
    /* Keep diagnostics in source order: this one goes before those found inside the string. */
    if (lx->ndiags > first + 1 && !lx->err) {
      zv_lexer_diag_t d = lx->diags[lx->ndiags - 1];
      memmove(lx->diags + first + 1, lx->diags + first, (lx->ndiags - 1 - first) * sizeof d);
      lx->diags[first] = d;
    }
  }
  st->col += count_cols(s, off, i);
}

int zv_lexer_run(zv_lexer_t *lx, const char *src, size_t len) {
  state_t st;
  const unsigned char *s = (const unsigned char *)src;
  zv_lexer_reset(lx);
  if (len > UINT32_MAX - 1) return ZV_ETOOLONG;
  st.lx = lx;
  st.s = s;
  st.len = len;
  st.i = 0;
  st.line = 1;
  st.col = 1;
  /* A UTF-8 byte order mark is skipped. */
  if (len >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF) st.i = 3;
  while (st.i < len && !lx->err) {
    unsigned c = s[st.i];
    size_t off = st.i;
    unsigned kind;
    switch (c) {
    case ' ': case '\t': case '\r': case '\f': case '\v': {
      size_t i = st.i + 1;
      while (i < len && (s[i] == ' ' || s[i] == '\t')) i++;
      st.col += (uint32_t)(i - st.i);
      st.i = i;
      continue;
    }
    case '\n':
      st.i++;
      st.line++;
      st.col = 1;
      continue;
    case '{': kind = ZV_TOK_LBRACE; goto punct;
    case '}': kind = ZV_TOK_RBRACE; goto punct;
    case '(': kind = ZV_TOK_LPAREN; goto punct;
    case ')': kind = ZV_TOK_RPAREN; goto punct;
    case '[': kind = ZV_TOK_LBRACKET; goto punct;
    case ']': kind = ZV_TOK_RBRACKET; goto punct;
    case ':': kind = ZV_TOK_COLON; goto punct;
    case ',': kind = ZV_TOK_COMMA; goto punct;
    case '@': kind = ZV_TOK_AT; goto punct;
    case '?': kind = ZV_TOK_QUESTION; goto punct;
    case '.': kind = ZV_TOK_DOT; goto punct;
    punct:
      st.i++;
      push_tok(&st, kind, off, st.line, st.col);
      st.col++;
      continue;
    case '-':
      if (st.i + 1 < len && s[st.i + 1] == '>') {
        st.i += 2;
        push_tok(&st, ZV_TOK_ARROW, off, st.line, st.col);
        st.col += 2;
      } else if (st.i + 1 < len && is_digit(s[st.i + 1])) {
        lex_number(&st);
      } else {
        illegal(&st, '-', 1);
      }
      continue;
    case '"':
      lex_string(&st);
      continue;
    case '/':
      if (st.i + 1 < len && s[st.i + 1] == '/') {
        size_t i = st.i + 2;
        const unsigned char *nl = memchr(s + i, '\n', len - i);
        st.i = nl ? (size_t)(nl - s) : len;
        if (st.i > off && s[st.i - 1] == '\r') st.i--;
        push_tok(&st, ZV_TOK_COMMENT, off, st.line, st.col);
        st.col += count_cols(s, off, st.i);
      } else {
        illegal(&st, '/', 1);
      }
      continue;
    default:
      break;
    }
    if (is_ident_start(c)) {
      size_t i = st.i + 1;
      while (i < len && is_ident(s[i])) i++;
      st.i = i;
      push_tok(&st, is_keyword(s + off, i - off) ? ZV_TOK_KEYWORD : ZV_TOK_IDENT, off, st.line,
               st.col);
      st.col += (uint32_t)(i - off);
    } else if (is_digit(c)) {
      lex_number(&st);
    } else if (c < 0x80) {
      illegal(&st, c, 1);
    } else {
      uint32_t r;
      size_t n = utf8_decode(s + st.i, len - st.i, &r);
      illegal(&st, r, n);
    }
  }
  /* The EOF token sits after the last byte. */
  {
    size_t end = st.i < len ? st.i : len;
    st.i = end;
    push_tok(&st, ZV_TOK_EOF, end, st.line, st.col);
  }
  return lx->err;
}

void zv_lexer_string_value(const char *src, const zv_lexer_token_t *t, char *out, size_t *outlen) {
  const unsigned char *s = (const unsigned char *)src + t->off;
  size_t n = t->len, i = 1, o = 0;
  if (n >= 2 && s[n - 1] == '"') n--;
  while (i < n) {
    unsigned c = s[i];
    if (c != '\\' || i + 1 >= n) {
      out[o++] = (char)c;
      i++;
      continue;
    }
    switch (s[i + 1]) {
    case '"': out[o++] = '"'; i += 2; continue;
    case '\\': out[o++] = '\\'; i += 2; continue;
    case 'n': out[o++] = '\n'; i += 2; continue;
    case 't': out[o++] = '\t'; i += 2; continue;
    case 'r': out[o++] = '\r'; i += 2; continue;
    case '0': out[o++] = '\0'; i += 2; continue;
    case 'u': {
      size_t j = i + 3;
      uint32_t v = 0;
      int digits = 0;
      if (i + 2 < n && s[i + 2] == '{') {
        while (j < n && digits < 7) {
          unsigned h = s[j] | 0x20;
          unsigned d = is_digit(s[j]) ? (unsigned)s[j] - '0' : hexval(h);
          if (d > 15) break;
          v = v * 16 + d;
          digits++;
          j++;
        }
      }
      if (digits >= 1 && digits <= 6 && j < n && s[j] == '}' && v <= 0x10FFFF &&
          !(v >= 0xD800 && v <= 0xDFFF)) {
        /* \u{X} is at least 5 bytes; its UTF-8 form is at most 4. */
        if (v < 0x80) {
          out[o++] = (char)v;
        } else if (v < 0x800) {
          out[o++] = (char)(0xC0 | (v >> 6));
          out[o++] = (char)(0x80 | (v & 0x3F));
        } else if (v < 0x10000) {
          out[o++] = (char)(0xE0 | (v >> 12));
          out[o++] = (char)(0x80 | ((v >> 6) & 0x3F));
          out[o++] = (char)(0x80 | (v & 0x3F));
        } else {
          out[o++] = (char)(0xF0 | (v >> 18));
          out[o++] = (char)(0x80 | ((v >> 12) & 0x3F));
          out[o++] = (char)(0x80 | ((v >> 6) & 0x3F));
          out[o++] = (char)(0x80 | (v & 0x3F));
        }
        i = j + 1;
        continue;
      }
      out[o++] = '\\';
      i++;
      continue;
    }
    default:
      out[o++] = '\\';
      i++;
      continue;
    }
  }
  *outlen = o;
}
