/*
 * json.h: a strict RFC 8259 JSON reader and the pieces of a writer (numbers and strings).
 *
 * The reader checks the whole text and, in the same pass, writes a tape: one token per value,
 * in document order, that a binding walks to build its own values. It accepts exactly the
 * grammar of RFC 8259 in UTF-8: no NaN, Infinity, hexadecimal, leading zeros, leading '+',
 * "1." or ".5"; no unescaped control bytes in strings; no lone surrogates in \u escapes; no
 * malformed UTF-8; nothing but whitespace after the value. A number too large for a double is
 * an error (never inf). It must not know any Lua.
 *
 * The tape of [1, {"a": "x\n"}, true]:
 *
 *   ARRAY count=3 | INT 1 | OBJECT count=1 | STRING "a" | STRING "x\n" (escaped) | TRUE
 *
 * A container token holds the number of its elements (members for an object, each a key
 * STRING then a value); strings are (offset, length) spans of the input between the quotes, and
 * carry ZV_JSON_ESCAPED when zv_json_unescape must run on them. Integers that fit an int64 are
 * INT; every other number is DOUBLE.
 */
#ifndef ZV_JSON_H
#define ZV_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "json_ffi.h"

/* Containers nest at most this deep (an attacker's [[[[...]]]] must not exhaust a stack). */
#define ZV_JSON_MAX_DEPTH 1000
/* Inputs are at most this long: spans are 32-bit. */
#define ZV_JSON_MAX_INPUT 0xffffffffu
/* zv_json_format_number needs this much room. */
#define ZV_JSON_NUMBUF 32

typedef enum {
  ZV_JSON_NULL,
  ZV_JSON_FALSE,
  ZV_JSON_TRUE,
  ZV_JSON_INT,
  ZV_JSON_DOUBLE,
  ZV_JSON_STRING,
  ZV_JSON_ARRAY,
  ZV_JSON_OBJECT
} zv_json_kind_t;

#define ZV_JSON_ESCAPED 1u

typedef struct {
  uint8_t kind;  /* zv_json_kind_t */
  uint8_t flags; /* ZV_JSON_ESCAPED on a string that has backslashes */
  uint32_t len;  /* STRING: bytes between the quotes; ARRAY/OBJECT: element count */
  union {
    int64_t i;    /* INT */
    double d;     /* DOUBLE */
    uint32_t off; /* STRING: offset of the first byte after the opening quote */
  } v;
} zv_json_tok_t;

/* A growable tape. Zero it before the first use; zv_json_tape_free releases it. */
typedef struct {
  zv_json_tok_t *toks;
  size_t n;   /* tokens of the last parse */
  size_t cap; /* tokens allocated */
} zv_json_tape_t;

/* Why a text was rejected: the cause names, in one table. */
#define ZV_JSON_CAUSE_MAP(X)                                  \
  X(NONE, "no error")                                         \
  X(EMPTY, "empty input")                                     \
  X(TOKEN, "unexpected character")                            \
  X(NUMBER, "invalid number")                                 \
  X(BIG, "number too large")                                  \
  X(CONTROL, "unescaped control character in string")        \
  X(ESCAPE, "invalid escape in string")                       \
  X(SURROGATE, "unpaired surrogate in \\u escape")            \
  X(UTF8, "invalid UTF-8")                                    \
  X(EOF, "unexpected end of input")                           \
  X(TRAILING, "unexpected data after the value")              \
  X(DEPTH, "nested too deep")                                 \
  X(LENGTH, "input too long")                                 \
  X(NOMEM, "out of memory")

typedef enum {
#define ZV__X(name, msg) ZV_JSON_C##name,
  ZV_JSON_CAUSE_MAP(ZV__X)
#undef ZV__X
  ZV_JSON_CMAX
} zv_json_cause_t;

/* The message of a cause ("invalid number"). */
const char *zv_json_cause_text(int cause);

/*
 * Parses s[0..n) onto tape (its tokens are replaced; it grows with zv_realloc and keeps its
 * memory for the next call). Returns 0, ZV_EINVAL with *cause and *at (the byte offset of the
 * problem) set, or ZV_ENOMEM. Reads exactly n bytes: s need not end with a NUL.
 */
int zv_json_parse(const char *s, size_t n, zv_json_tape_t *tape, int *cause, size_t *at);

void zv_json_tape_free(zv_json_tape_t *tape);

/*
 * Writes the value of an escaped string span (as the tape gives it, already checked by
 * zv_json_parse) into out, which has room for at least len bytes: an unescaped string is never
 * longer than its escaped form. Returns the length written.
 */
size_t zv_json_unescape(const char *s, size_t len, char *out);

/* zv_json_format_number(v, buf) (json_ffi.h) writes v as a JSON number into buf
 * (ZV_JSON_NUMBUF bytes), NUL-terminated, and returns the length: an integral value below 2^63
 * in magnitude as an integer ("9007199254740993" is never "9.007199254741e+15"), any other the
 * shortest "%.*g" of 15 to 17 digits that reads back to v. Returns 0 for NaN and the
 * infinities, which JSON cannot hold. */

/* Writes v in decimal into buf (at least 21 bytes), not terminated; returns the length. */
size_t zv_json_format_int(int64_t v, char *buf);
size_t zv_json_format_uint(uint64_t v, char *buf);

/*
 * A growable output buffer with a sticky error: after a failed allocation appends do nothing
 * and err stays ZV_ENOMEM (SQLite's StrAccum). Zero it before use; keep it between calls and
 * free it with zv_json_buf_free.
 */
typedef struct {
  char *data;
  size_t len;
  size_t cap;
  int err;
} zv_json_buf_t;

void zv_json_buf_free(zv_json_buf_t *b);
/* Makes room for n more bytes: returns the place to write them, or NULL (err is set). */
char *zv_json_buf_reserve(zv_json_buf_t *b, size_t n);
void zv_json_buf_add(zv_json_buf_t *b, const char *s, size_t n);
/* Appends s[0..n) as a JSON string: quotes, and escapes for '"', '\\' and bytes below 0x20. */
void zv_json_buf_add_string(zv_json_buf_t *b, const char *s, size_t n);

static inline void zv_json_buf_addc(zv_json_buf_t *b, char c) {
  if (b->len < b->cap) {
    b->data[b->len++] = c;
  } else {
    zv_json_buf_add(b, &c, 1);
  }
}

#endif
