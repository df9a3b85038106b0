/*
 * redis_url.h: parses redis://[[user]:password@]host[:port][/db] into its parts.
 *
 * No Lua, no libuv, no hiredis: the binding (l_redis_core.c), specs and benchmarks share it.
 * It never copies the password into an error: callers build messages from host and port only.
 */
#ifndef ZV_REDIS_URL_H
#define ZV_REDIS_URL_H

#include <stddef.h>

#define ZV_REDIS_HOST_MAX 256
#define ZV_REDIS_SECRET_MAX 256

typedef struct {
  char host[ZV_REDIS_HOST_MAX];       /* "127.0.0.1", "::1" (brackets removed), "localhost" */
  char username[ZV_REDIS_SECRET_MAX]; /* "" unless the URL names an ACL user */
  char password[ZV_REDIS_SECRET_MAX]; /* "" when none; percent-decoded */
  int port;                           /* 1..65535; 6379 when absent */
  int db;                             /* 0..(2^31-1); 0 when absent */
} zv_redis_url_t;

/*
 * Parses the n bytes at s. On success fills *out and returns 0. On failure returns ZV_ESYNTAX
 * (or ZV_ERANGE for a port or db out of range, ZV_ETOOLONG for an overlong part) and sets
 * *why to a static sentence that names the bad part without quoting it. Allocates nothing.
 * "rediss://" (TLS) fails with ZV_EINVAL: the Debian hiredis 0.14 has no TLS.
 */
int zv_redis_url_parse(const char *s, size_t n, zv_redis_url_t *out, const char **why);

#endif
