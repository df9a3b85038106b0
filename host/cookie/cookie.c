/*
 * cookie.c: the Cookie header parser and the Set-Cookie value checks (cookie.h). It works on
 * spans of the caller's buffer and never allocates or writes outside its out-parameters.
 */
#include "cookie.h"

/* RFC 7230 tchar: "!#$%&'*+-.^_`|~", DIGIT, ALPHA. */
static int is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 1;
  switch (c) {
  case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
  case '.': case '^': case '_': case '`': case '|': case '~':
    return 1;
  default:
    return 0;
  }
}

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
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)v[i];
    if (c < 0x20 || c == 0x7f || c == '"') return 0;
  }
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
