/*
 * json.c: the strict reader (text -> tape) and the writer's pieces (numbers, strings, buffer).
 *
 * The reader is one loop over the input with an explicit stack of open containers (their token
 * indexes), so nesting costs no C stack. After each complete value the innermost container's
 * count grows by one and the loop expects ',' or its closing bracket. Strings are checked in
 * place (escapes, control bytes, UTF-8) and unescaped later, only when the binding needs them.
 * Numbers are scanned by the RFC grammar first; integers of up to 18 digits are accumulated
 * exactly, anything else goes to strtod (on a NUL-terminated copy: the input need not end in a
 * NUL). Nothing here raises, and nothing allocates except the tape and the output buffer.
 */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/zv.h"

static const char *const cause_texts[] = {
#define ZV__X(name, msg) msg,
  ZV_JSON_CAUSE_MAP(ZV__X)
#undef ZV__X
};

const char *zv_json_cause_text(int cause) {
  if (cause < 0 || cause >= ZV_JSON_CMAX) return "unknown error";
  return cause_texts[cause];
}

/* Bytes that end a plain run inside a string: '"', '\\', control bytes and non-ASCII. */
static const uint8_t special[256] = {
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

static int is_ws(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static int is_digit(char c) {
  return c >= '0' && c <= '9';
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The 4 hex digits at s (n bytes available): the code unit, or -1. */
static long hex4(const char *s, size_t n) {
  long v = 0;
  if (n < 4) return -1;
  for (int k = 0; k < 4; k++) {
    int h = hexval(s[k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/* The length of the valid UTF-8 sequence at s (n bytes available, s[0] >= 0x80), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  unsigned char lo = 0x80, hi = 0xbf;
  size_t len;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (n < len) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t k = 2; k < len; k++)
    if (s[k] < 0x80 || s[k] > 0xbf) return 0;
  return len;
}

static int push(zv_json_tape_t *t, zv_json_kind_t kind, size_t *idx) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    zv_json_tok_t *toks = zv_realloc(t->toks, cap * sizeof *toks);
    if (!toks) return ZV_ENOMEM;
    t->toks = toks;
    t->cap = cap;
  }
  *idx = t->n++;
  t->toks[*idx].kind = (uint8_t)kind;
  t->toks[*idx].flags = 0;
  t->toks[*idx].len = 0;
  t->toks[*idx].v.i = 0;
  return 0;
}

/*
 * Checks the string whose opening quote is at s[*i]; on success *i is past the closing quote
 * and tok describes the span. Returns a cause (0 when valid) with *i at the problem.
 */
static int scan_string(const char *s, size_t n, size_t *i, zv_json_tok_t *tok) {
  const unsigned char *u = (const unsigned char *)s;
  size_t j = *i + 1, start = j;
  uint8_t flags = 0;
  for (;;) {
    while (j < n && !special[u[j]]) j++;
    if (j >= n) {
      *i = j;
      return ZV_JSON_CEOF;
    }
    if (u[j] == '"') break;
    if (u[j] == '\\') {
      flags = ZV_JSON_ESCAPED;
      if (j + 1 >= n) {
        *i = j + 1;
        return ZV_JSON_CEOF;
      }
      switch (s[j + 1]) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        j += 2;
        continue;
      case 'u': {
        long cu = hex4(s + j + 2, n - j - 2);
        if (cu < 0) {
          *i = j;
          return ZV_JSON_CESCAPE;
        }
        if (cu >= 0xdc00 && cu <= 0xdfff) {
          *i = j;
          return ZV_JSON_CSURROGATE;
        }
        if (cu >= 0xd800 && cu <= 0xdbff) {
          long lo = (j + 7 < n && s[j + 6] == '\\' && s[j + 7] == 'u')
                      ? hex4(s + j + 8, n - j - 8) : -1;
          if (lo < 0xdc00 || lo > 0xdfff) {
            *i = j;
            return ZV_JSON_CSURROGATE;
          }
          j += 12;
        } else {
          j += 6;
        }
        continue;
      }
      default:
        *i = j;
        return ZV_JSON_CESCAPE;
      }
    }
    if (u[j] < 0x20) {
      *i = j;
      return ZV_JSON_CCONTROL;
    }
    {
      size_t len = utf8_len(u + j, n - j);
      if (!len) {
        *i = j;
        return ZV_JSON_CUTF8;
      }
      j += len;
    }
  }
  tok->flags = flags;
  tok->len = (uint32_t)(j - start);
  tok->v.off = (uint32_t)start;
  *i = j + 1;
  return 0;
}

/* Checks the number at s[*i] by the RFC grammar and converts it; *i ends past it. */
static int scan_number(const char *s, size_t n, size_t *i, zv_json_tok_t *tok) {
  size_t j = *i, start = j, digits = 0;
  int neg = 0, integral = 1;
  if (s[j] == '-') {
    neg = 1;
    j++;
  }
  if (j >= n || !is_digit(s[j])) {
    *i = start;
    return ZV_JSON_CNUMBER;
  }
  if (s[j] == '0') {
    j++;
    digits = 1;
    if (j < n && is_digit(s[j])) {
      *i = start;
      return ZV_JSON_CNUMBER;
    }
  } else {
    while (j < n && is_digit(s[j])) j++, digits++;
  }
  if (j < n && s[j] == '.') {
    integral = 0;
    j++;
    if (j >= n || !is_digit(s[j])) {
      *i = start;
      return ZV_JSON_CNUMBER;
    }
    while (j < n && is_digit(s[j])) j++;
  }
  if (j < n && (s[j] == 'e' || s[j] == 'E')) {
    integral = 0;
    j++;
    if (j < n && (s[j] == '+' || s[j] == '-')) j++;
    if (j >= n || !is_digit(s[j])) {
      *i = start;
      return ZV_JSON_CNUMBER;
    }
    while (j < n && is_digit(s[j])) j++;
  }
  /* "0x42", "1.5.2", "12abc": a number glued to more of a number-like word. */
  if (j < n && (is_digit(s[j]) || s[j] == '.' || s[j] == '+' || s[j] == '-' ||
                (s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z'))) {
    *i = start;
    return ZV_JSON_CNUMBER;
  }
  *i = j;
  if (integral && digits <= 19) {
    uint64_t v = 0;
    size_t k = start + (size_t)neg;
    int fits = 1;
    for (; k < j; k++) {
      unsigned d = (unsigned)(s[k] - '0');
      if (v > (UINT64_MAX - d) / 10) {
        fits = 0;
        break;
      }
      v = v * 10 + d;
    }
    if (fits && (neg ? v <= (uint64_t)INT64_MAX + 1 : v <= (uint64_t)INT64_MAX)) {
      tok->kind = ZV_JSON_INT;
      tok->v.i = neg ? (int64_t)(0 - v) : (int64_t)v;
      return 0;
    }
  }
  {
    char stack[64], *copy = stack;
    size_t len = j - start;
    double d;
    if (len >= sizeof stack) {
      copy = zv_alloc(len + 1);
      if (!copy) return ZV_JSON_CNOMEM;
    }
    memcpy(copy, s + start, len);
    copy[len] = '\0';
    d = strtod(copy, NULL);
    if (copy != stack) zv_free(copy);
    if (isinf(d)) {
      *i = start;
      return ZV_JSON_CBIG;
    }
    tok->kind = ZV_JSON_DOUBLE;
    tok->v.d = d;
  }
  return 0;
}

static size_t skip_ws(const char *s, size_t n, size_t i) {
  while (i < n && is_ws(s[i])) i++;
  return i;
}

#define FAIL(c, where)  \
  do {                  \
    *cause = (c);       \
    *at = (where);      \
    return ZV_EINVAL;   \
  } while (0)

#define PUSH(kind)                                     \
  do {                                                 \
    if (push(tape, (kind), &idx)) FAIL(ZV_JSON_CNOMEM, i); \
  } while (0)

int zv_json_parse(const char *s, size_t n, zv_json_tape_t *tape, int *cause, size_t *at) {
  uint32_t stack[ZV_JSON_MAX_DEPTH];
  size_t depth = 0, i, idx;
  int c;
  *cause = ZV_JSON_CNONE;
  *at = 0;
  tape->n = 0;
  if (n > ZV_JSON_MAX_INPUT) FAIL(ZV_JSON_CLENGTH, 0);
  i = skip_ws(s, n, 0);
  if (i >= n) FAIL(ZV_JSON_CEMPTY, i);

value:
  if (i >= n) FAIL(ZV_JSON_CEOF, i);
  switch (s[i]) {
  case '{':
  case '[':
    if (depth == ZV_JSON_MAX_DEPTH) FAIL(ZV_JSON_CDEPTH, i);
    PUSH(s[i] == '{' ? ZV_JSON_OBJECT : ZV_JSON_ARRAY);
    stack[depth++] = (uint32_t)idx;
    i = skip_ws(s, n, i + 1);
    if (i < n && s[i] == (tape->toks[idx].kind == ZV_JSON_OBJECT ? '}' : ']')) {
      i++;
      depth--;
      goto after_value;
    }
    if (tape->toks[idx].kind == ZV_JSON_OBJECT) goto key;
    goto value;
  case '"':
    PUSH(ZV_JSON_STRING);
    if ((c = scan_string(s, n, &i, &tape->toks[idx]))) FAIL(c, i);
    goto after_value;
  case 't':
    if (n - i < 4 || memcmp(s + i, "true", 4)) FAIL(ZV_JSON_CTOKEN, i);
    PUSH(ZV_JSON_TRUE);
    i += 4;
    goto after_literal;
  case 'f':
    if (n - i < 5 || memcmp(s + i, "false", 5)) FAIL(ZV_JSON_CTOKEN, i);
    PUSH(ZV_JSON_FALSE);
    i += 5;
    goto after_literal;
  case 'n':
    if (n - i < 4 || memcmp(s + i, "null", 4)) FAIL(ZV_JSON_CTOKEN, i);
    PUSH(ZV_JSON_NULL);
    i += 4;
    goto after_literal;
  default:
    if (s[i] == '-' || is_digit(s[i])) {
      PUSH(ZV_JSON_INT);
      if ((c = scan_number(s, n, &i, &tape->toks[idx]))) FAIL(c, i);
      goto after_value;
    }
    FAIL(ZV_JSON_CTOKEN, i);
  }

after_literal:
  /* "truex", "nullnull": a literal glued to a word. */
  if (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || is_digit(s[i])))
    FAIL(ZV_JSON_CTOKEN, i);

after_value:
  if (depth == 0) {
    i = skip_ws(s, n, i);
    if (i != n) FAIL(ZV_JSON_CTRAILING, i);
    return 0;
  }
  {
    zv_json_tok_t *parent = &tape->toks[stack[depth - 1]];
    char close = parent->kind == ZV_JSON_OBJECT ? '}' : ']';
    parent->len++;
    i = skip_ws(s, n, i);
    if (i >= n) FAIL(ZV_JSON_CEOF, i);
    if (s[i] == ',') {
      i = skip_ws(s, n, i + 1);
      if (parent->kind == ZV_JSON_OBJECT) goto key;
      goto value;
    }
    if (s[i] == close) {
      i++;
      depth--;
      goto after_value;
    }
    FAIL(ZV_JSON_CTOKEN, i);
  }

key:
  if (i >= n) FAIL(ZV_JSON_CEOF, i);
  if (s[i] != '"') FAIL(ZV_JSON_CTOKEN, i);
  PUSH(ZV_JSON_STRING);
  if ((c = scan_string(s, n, &i, &tape->toks[idx]))) FAIL(c, i);
  i = skip_ws(s, n, i);
  if (i >= n) FAIL(ZV_JSON_CEOF, i);
  if (s[i] != ':') FAIL(ZV_JSON_CTOKEN, i);
  i = skip_ws(s, n, i + 1);
  goto value;
}

void zv_json_tape_free(zv_json_tape_t *tape) {
  zv_free(tape->toks);
  tape->toks = NULL;
  tape->n = tape->cap = 0;
}

static size_t put_utf8(unsigned long cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

size_t zv_json_unescape(const char *s, size_t len, char *out) {
  size_t i = 0, o = 0;
  while (i < len) {
    char c = s[i];
    if (c != '\\') {
      out[o++] = c;
      i++;
      continue;
    }
    c = s[i + 1];
    i += 2;
    switch (c) {
    case 'b': out[o++] = '\b'; break;
    case 'f': out[o++] = '\f'; break;
    case 'n': out[o++] = '\n'; break;
    case 'r': out[o++] = '\r'; break;
    case 't': out[o++] = '\t'; break;
    case 'u': {
      unsigned long cp = (unsigned long)hex4(s + i, len - i);
      i += 4;
      if (cp >= 0xd800 && cp <= 0xdbff) {
        unsigned long lo = (unsigned long)hex4(s + i + 2, len - i - 2);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        i += 6;
      }
      o += put_utf8(cp, out + o);
      break;
    }
    default: out[o++] = c; break; /* '"', '\\', '/' */
    }
  }
  return o;
}

/* Two digits a step, written backwards from the end of a local buffer (one division by 100 per
 * pair instead of one by 10 per digit, zv__digit_pairs), then copied once. */
size_t zv_json_format_uint(uint64_t v, char *buf) {
  char tmp[24];
  char *p = tmp + sizeof tmp;
  size_t n;
  while (v >= 100) {
    unsigned d = (unsigned)(v % 100) * 2;
    v /= 100;
    *--p = zv__digit_pairs[d + 1];
    *--p = zv__digit_pairs[d];
  }
  if (v >= 10) {
    unsigned d = (unsigned)v * 2;
    *--p = zv__digit_pairs[d + 1];
    *--p = zv__digit_pairs[d];
  } else {
    *--p = (char)('0' + v);
  }
  n = (size_t)(tmp + sizeof tmp - p);
  memcpy(buf, p, n);
  return n;
}

size_t zv_json_format_int(int64_t v, char *buf) {
  if (v < 0) {
    buf[0] = '-';
    return 1 + zv_json_format_uint(0 - (uint64_t)v, buf + 1);
  }
  return zv_json_format_uint((uint64_t)v, buf);
}

size_t zv_json_format_number(double v, char *buf) {
  /* The common case first: an integer within +-2^53 (ids, counts), with no libm call. NaN
   * fails both comparisons; -0 keeps its sign below. The text is the one the general path
   * below writes for the same value (zv_json_format_int of the same int64). */
  if (v >= -9007199254740992.0 && v <= 9007199254740992.0) {
    int64_t i = (int64_t)v;
    if ((double)i == v && (i != 0 || !signbit(v))) {
      size_t n = zv_json_format_int(i, buf);
      buf[n] = '\0';
      return n;
    }
  }
  if (isnan(v) || isinf(v)) return 0;
  if (v == 0 && signbit(v)) {
    memcpy(buf, "-0", 3);
    return 2;
  }
  if (v == floor(v) && v > -9223372036854775808.0 && v < 9223372036854775808.0) {
    size_t n = zv_json_format_int((int64_t)v, buf);
    buf[n] = '\0';
    return n;
  }
  for (int prec = 15; prec <= 17; prec++) {
    int n = snprintf(buf, ZV_JSON_NUMBUF, "%.*g", prec, v);
    if (prec == 17 || strtod(buf, NULL) == v) return (size_t)n;
  }
  return 0; /* not reached */
}

void zv_json_buf_free(zv_json_buf_t *b) {
  zv_free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->err = 0;
}

char *zv_json_buf_reserve(zv_json_buf_t *b, size_t n) {
  if (b->err) return NULL;
  if (b->cap - b->len < n) {
    size_t cap = b->cap ? b->cap : 256;
    char *data;
    while (cap - b->len < n) {
      if (cap > SIZE_MAX / 2) {
        b->err = ZV_ENOMEM;
        return NULL;
      }
      cap *= 2;
    }
    data = zv_realloc(b->data, cap);
    if (!data) {
      b->err = ZV_ENOMEM;
      return NULL;
    }
    b->data = data;
    b->cap = cap;
  }
  return b->data + b->len;
}

void zv_json_buf_add(zv_json_buf_t *b, const char *s, size_t n) {
  char *p = zv_json_buf_reserve(b, n);
  if (!p) return;
  memcpy(p, s, n);
  b->len += n;
}

size_t zv_json_plain_len(const char *s, size_t len) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  /* The writer's rule (below): only '"', '\\' and control bytes are escaped. */
  while (i < len && (!special[u[i]] || u[i] >= 0x80)) i++;
  return i;
}

size_t zv_json_clean_len(const char *s, size_t len) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  /* special[] marks '"', '\\', controls and every non-ASCII byte; a non-ASCII byte must start
   * a valid UTF-8 sequence (the reader's own check, utf8_len). */
  while (i < len) {
    size_t k;
    if (!special[u[i]]) {
      i++;
      continue;
    }
    if (u[i] < 0x80) break;
    k = utf8_len(u + i, len - i);
    if (!k) break;
    i += k;
  }
  return i;
}

void zv_json_buf_add_string(zv_json_buf_t *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *u = (const unsigned char *)s;
  size_t i = zv_json_plain_len(s, n);
  if (i == n) {
    /* Nothing to escape (keys, most values): one reserve, one copy. */
    char *p = zv_json_buf_reserve(b, n + 2);
    if (!p) return;
    p[0] = '"';
    memcpy(p + 1, s, n);
    p[n + 1] = '"';
    b->len += n + 2;
    return;
  }
  zv_json_buf_addc(b, '"');
  zv_json_buf_add(b, s, i);
  while (i < n) {
    size_t run = i;
    /* Non-ASCII bytes are copied as they are: only '"', '\\' and controls are escaped. */
    while (run < n && (!special[u[run]] || u[run] >= 0x80)) run++;
    if (run > i) zv_json_buf_add(b, s + i, run - i);
    if (run >= n) break;
    {
      char esc[6] = {'\\', 0, 0, 0, 0, 0};
      size_t len = 2;
      switch (u[run]) {
      case '"': esc[1] = '"'; break;
      case '\\': esc[1] = '\\'; break;
      case '\b': esc[1] = 'b'; break;
      case '\f': esc[1] = 'f'; break;
      case '\n': esc[1] = 'n'; break;
      case '\r': esc[1] = 'r'; break;
      case '\t': esc[1] = 't'; break;
      default:
        esc[1] = 'u';
        esc[2] = '0';
        esc[3] = '0';
        esc[4] = hex[u[run] >> 4];
        esc[5] = hex[u[run] & 15];
        len = 6;
      }
      zv_json_buf_add(b, esc, len);
    }
    i = run + 1;
  }
  zv_json_buf_addc(b, '"');
}
