/*
 * cookie.c: the Cookie header parser and the Set-Cookie value checks (cookie.h). It works on
 * spans of the caller's buffer and never allocates or writes outside its out-parameters.
 */
#include "cookie.h"

#include <string.h>

/*
 * Byte classes, one table lookup a byte (the scans of a request's Cookie header are on its hot
 * path): TCHAR, RFC 7230 tchar ("!#$%&'*+-.^_`|~", DIGIT, ALPHA); BAD, a byte a received value
 * may not hold (CTL, DEL, DQUOTE). Bytes >= 0x80 are neither.
 */
enum { TCHAR = 1, BAD = 2 };
static const unsigned char classes[256] = {
  2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
  0, 1, 2, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0,
  0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1,
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 2,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static int is_tchar(unsigned char c) { return classes[c] & TCHAR; }

/* RFC 6265 cookie-octet: %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E. */
static int is_octet(unsigned char c) {
  return c == 0x21 || (c >= 0x23 && c <= 0x2B) || (c >= 0x2D && c <= 0x3A) ||
         (c >= 0x3C && c <= 0x5B) || (c >= 0x5D && c <= 0x7E);
}

static int is_ws(unsigned char c) { return c == ' ' || c == '\t'; }

int zv_cookie_is_token(const char *s, size_t len) {
  if (len == 0) return 0;
  for (size_t i = 0; i < len; i++)
    if (!is_tchar((unsigned char)s[i])) return 0;
  return 1;
}

int zv_cookie_is_value(const char *s, size_t len) {
  if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
    s++;
    len -= 2;
  }
  for (size_t i = 0; i < len; i++)
    if (!is_octet((unsigned char)s[i])) return 0;
  return 1;
}

/*
 * A received value is kept when it has no CTL, no DQUOTE inside and no ";" (which cannot occur
 * here); bytes >= 0x80, spaces, commas and backslashes inside are accepted, as browsers send
 * them. Surrounding DQUOTEs are removed.
 */
static int take_value(const char *v, size_t n, zv_cookie_pair_t *out) {
  if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
    v++;
    n -= 2;
  }
  for (size_t i = 0; i < n; i++)
    if (classes[(unsigned char)v[i]] & BAD) return 0;
  out->value = v;
  out->value_len = n;
  return 1;
}

int zv_cookie_next(const char *s, size_t len, size_t *pos, zv_cookie_pair_t *out) {
  size_t i = *pos;
  while (i < len) {
    size_t start = i, end, eq, a, b;
    while (i < len && s[i] != ';') i++;
    end = i;
    if (i < len) i++; /* past the ';' */
    /* Trim the pair. */
    a = start;
    b = end;
    while (a < b && is_ws((unsigned char)s[a])) a++;
    while (b > a && is_ws((unsigned char)s[b - 1])) b--;
    for (eq = a; eq < b && s[eq] != '='; eq++) {}
    if (eq == b) continue; /* no '=': not a pair */
    {
      size_t ne = eq, vs = eq + 1;
      while (ne > a && is_ws((unsigned char)s[ne - 1])) ne--;
      while (vs < b && is_ws((unsigned char)s[vs])) vs++;
      if (!zv_cookie_is_token(s + a, ne - a)) continue;
      if (!take_value(s + vs, b - vs, out)) continue;
      out->name = s + a;
      out->name_len = ne - a;
    }
    *pos = i;
    return 1;
  }
  *pos = len;
  return 0;
}

/*
 * The same answer as calling zv_cookie_next until a pair named name comes, with less work: a
 * pair is split at its first ';' and '=' with memchr, and only a pair whose trimmed name has
 * name's bytes is checked further (its value as take_value does; its name is a token exactly
 * when name is one, checked once at the end of the search instead of per pair).
 */
int zv_cookie_find(const char *s, size_t len, const char *name, size_t nlen, size_t *vpos,
                   size_t *vlen) {
  size_t i = 0;
  while (i < len) {
    const char *semi = memchr(s + i, ';', len - i);
    size_t end = semi ? (size_t)(semi - s) : len, a = i, b = end, ne, vs;
    const char *eq;
    zv_cookie_pair_t p;
    i = semi ? end + 1 : len;
    while (a < b && is_ws((unsigned char)s[a])) a++;
    if (b - a <= nlen || memcmp(s + a, name, nlen) != 0) continue;
    while (b > a && is_ws((unsigned char)s[b - 1])) b--;
    eq = memchr(s + a, '=', b - a);
    if (eq == NULL) continue;
    ne = (size_t)(eq - s);
    vs = ne + 1;
    while (ne > a && is_ws((unsigned char)s[ne - 1])) ne--;
    if (ne - a != nlen) continue;
    while (vs < b && is_ws((unsigned char)s[vs])) vs++;
    if (!take_value(s + vs, b - vs, &p)) continue;
    if (!zv_cookie_is_token(name, nlen)) return 0;
    *vpos = (size_t)(p.value - s);
    *vlen = p.value_len;
    return 1;
  }
  return 0;
}
