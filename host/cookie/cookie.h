/*
 * cookie.h: the Cookie request header (RFC 6265 section 4.2 / 5.4), split into name=value
 * pairs without allocating. It must stay free of Lua and libuv headers.
 *
 *   "a=1; b=\"two\";  c=x=y"  ->  (a, 1) (b, two) (c, x=y)
 *
 * The parser is lenient where browsers are (spaces around ";" and "=", DQUOTEs around a value,
 * "=" inside a value, bytes >= 0x80) and drops a pair it cannot trust instead of failing the
 * header: a pair without "=", a name that is not an RFC 7230 token, a value with a control
 * byte (CTL), a DQUOTE inside it or a lone DQUOTE at one end. Nothing a client sends can make
 * it fail, read past the input or allocate.
 */
#ifndef ZV_COOKIE_H
#define ZV_COOKIE_H

#include <stddef.h>

#include "cookie_ffi.h"

/* One pair: spans into the header (no copy); the value without its surrounding DQUOTEs. */
typedef struct {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
} zv_cookie_pair_t;

/*
 * The next valid pair of s[0..len) at or after *pos: fills *out, advances *pos past it and
 * returns 1; returns 0 at the end (with *pos == len). Start with *pos = 0. Never allocates.
 */
int zv_cookie_next(const char *s, size_t len, size_t *pos, zv_cookie_pair_t *out);

/*
 * zv_cookie_find (declared in cookie_ffi.h, which the FFI reads too): the value of the first valid
 * pair of s[0..len) named name[0..nlen), the one zv_cookie_next would give first: sets *vpos and
 * *vlen to its span in s (without surrounding DQUOTEs) and returns 1; returns 0 when there is
 * none (always, for a name that is not a token). Never allocates.
 */

/* 1 when s[0..len) is a non-empty RFC 7230 token (the shape of a cookie name), else 0. */
int zv_cookie_is_token(const char *s, size_t len);

/*
 * 1 when s[0..len) is a valid cookie value for Set-Cookie (RFC 6265 cookie-value: cookie-octets,
 * optionally inside one pair of DQUOTEs), else 0. An empty value is valid.
 */
int zv_cookie_is_value(const char *s, size_t len);

#endif
