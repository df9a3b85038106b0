/*
 * redis_url.c: the redis:// URL parser (see redis_url.h). It reads the input once, left to
 * right, and writes only into the caller's struct; it must not allocate or keep pointers into
 * the input, and its messages must not contain any part of the URL (the password lives there).
 */
#include <string.h>

#include "../core/zv.h"
#include "redis_url.h"

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Copies s[0..n) into dst (cap bytes) percent-decoding it; 0, ZV_ESYNTAX or ZV_ETOOLONG. */
static int decode(char *dst, size_t cap, const char *s, size_t n) {
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%') {
      int hi, lo;
      if (i + 2 >= n) return ZV_ESYNTAX;
      hi = hexval(s[i + 1]);
      lo = hexval(s[i + 2]);
      if (hi < 0 || lo < 0) return ZV_ESYNTAX;
      c = (char)(hi * 16 + lo);
      i += 2;
    }
    if (c == '\0') return ZV_ESYNTAX;
    if (j + 1 >= cap) return ZV_ETOOLONG;
    dst[j++] = c;
  }
  dst[j] = '\0';
  return 0;
}

/* Reads the decimal number s[0..n) into *v; 0, ZV_ESYNTAX or ZV_ERANGE above max. */
static int number(const char *s, size_t n, long max, int *v) {
  long x = 0;
  if (n == 0) return ZV_ESYNTAX;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return ZV_ESYNTAX;
    x = x * 10 + (s[i] - '0');
    if (x > max) return ZV_ERANGE;
  }
  *v = (int)x;
  return 0;
}

static int fail(const char **why, const char *msg, int rc) {
  *why = msg;
  return rc;
}

int zv_redis_url_parse(const char *s, size_t n, zv_redis_url_t *out, const char **why) {
  const char *p, *end = s + n, *at = NULL, *host, *hend, *port = NULL, *slash;
  size_t hn;
  int rc;
  memset(out, 0, sizeof *out);
  out->port = 6379;
  *why = NULL;
  if (n >= 9 && !memcmp(s, "rediss://", 9))
    return fail(why, "rediss:// (TLS) is not supported by this build", ZV_EINVAL);
  if (n < 8 || memcmp(s, "redis://", 8)) return fail(why, "the scheme must be redis://", ZV_ESYNTAX);
  p = s + 8;
  for (const char *q = p; q < end; q++) {
    if (*q == '/' || *q == '?' || *q == '#') break;
    if (*q == '@') at = q;
  }
  if (at) {
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (!colon) return fail(why, "the userinfo must be [user]:password", ZV_ESYNTAX);
    rc = decode(out->username, sizeof out->username, p, (size_t)(colon - p));
    if (rc) return fail(why, "the user name is malformed or too long", rc);
    rc = decode(out->password, sizeof out->password, colon + 1, (size_t)(at - colon - 1));
    if (rc) return fail(why, "the password is malformed or too long", rc);
    p = at + 1;
  }
  slash = p;
  while (slash < end && *slash != '/') slash++;
  if (p < slash && *p == '[') {
    host = p + 1;
    hend = memchr(host, ']', (size_t)(slash - host));
    if (!hend) return fail(why, "an IPv6 host needs a closing ]", ZV_ESYNTAX);
    if (hend + 1 < slash) {
      if (hend[1] != ':') return fail(why, "junk after the IPv6 host", ZV_ESYNTAX);
      port = hend + 2;
    }
  } else {
    host = p;
    hend = memchr(p, ':', (size_t)(slash - p));
    if (hend) port = hend + 1;
    else hend = slash;
  }
  hn = (size_t)(hend - host);
  if (hn == 0) return fail(why, "the host is missing", ZV_ESYNTAX);
  if (hn >= sizeof out->host) return fail(why, "the host is too long", ZV_ETOOLONG);
  for (size_t i = 0; i < hn; i++) {
    char c = host[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '-' || c == '_' || c == ':'))
      return fail(why, "the host has a character that is not allowed", ZV_ESYNTAX);
  }
  memcpy(out->host, host, hn);
  out->host[hn] = '\0';
  if (port) {
    rc = number(port, (size_t)(slash - port), 65535, &out->port);
    if (rc || out->port == 0) return fail(why, "the port must be 1..65535", rc ? rc : ZV_ERANGE);
  }
  if (slash < end) {
    const char *db = slash + 1;
    if (db < end) {
      rc = number(db, (size_t)(end - db), 2147483647L, &out->db);
      if (rc) return fail(why, "the database must be a number", rc);
    }
  }
  return 0;
}
