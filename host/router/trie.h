/*
 * trie.h: the HTTP router's core: a trie of route patterns, one edge per path segment, with
 * per-method route ids.
 *
 * It must stay free of Lua and libuv: the binding (l_router.c), the benchmark and the fuzz target
 * all drive it directly. It does not decode, normalise or split the path on '?': the caller hands
 * it the raw, still percent-encoded path without the query string.
 *
 * Patterns. A pattern starts with '/'. A segment (the bytes between two '/') is one of
 *
 *   static   /users        bytes compared as they are (so write them percent-encoded)
 *   :name    /users/:id    one non-empty segment; stops at the next '/'
 *   *name    a splat: the rest of the path, '/' included, possibly empty; last segment only
 *
 * ':' and '*' are special only as the first byte of a segment ("/v1/a:b" is static). Names are
 * letters, digits and '_'. At every level a static child is tried first, then the parameter,
 * then the splat, with backtracking: when a static branch fails deeper down, the parameter branch
 * is tried, then the splat. The search is method-aware: the first route in that order that has a
 * handler for the request's method wins (HEAD also accepts a GET handler).
 *
 * Results. A hit fills the route id and the parameters as (offset, length) spans of the path.
 * A path that some route matches, but not for this method, gives NOT_ALLOWED (405) with the
 * allowed methods, or OPTIONS (an automatic 204) when the method is OPTIONS. A path that no route
 * takes, whose trailing-slash twin (one '/' added or removed at the end) would be a hit, gives
 * REDIRECT (301 for GET and HEAD, 308 otherwise). Anything else is NOT_FOUND (404).
 *
 * Ownership and threads. zv_router_add copies what it keeps. zv_router_match allocates nothing,
 * writes only into the caller's zv_router_match_t, and may run on many threads at once as long
 * as nobody calls zv_router_add or zv_router_free meanwhile. Parameter names in a match point
 * into the router and live as long as it does.
 */
#ifndef ZV_ROUTER_TRIE_H
#define ZV_ROUTER_TRIE_H

#include <stddef.h>
#include <stdint.h>

#include "router_ffi.h"

/* Distinct methods a router knows: the 7 standard ones and up to 25 other tokens. */
#define ZV_ROUTER_MAX_METHODS 32
/* The longest method token, and the longest pattern, in bytes. */
#define ZV_ROUTER_MAX_METHOD_LEN 32
#define ZV_ROUTER_MAX_PATTERN 2048
/* Paths longer than this get no trailing-slash redirect (the twin is built on the stack). */
#define ZV_ROUTER_MAX_REDIRECT 4096
/* Room for any Allow string: every method name plus ", " separators, and a NUL. */
#define ZV_ROUTER_ALLOW_CAP (ZV_ROUTER_MAX_METHODS * (ZV_ROUTER_MAX_METHOD_LEN + 2) + 1)

/* The standard methods have fixed indices; bit i of an allow mask is method index i. */
enum {
  ZV_ROUTER_GET = 0,
  ZV_ROUTER_HEAD,
  ZV_ROUTER_POST,
  ZV_ROUTER_PUT,
  ZV_ROUTER_PATCH,
  ZV_ROUTER_DELETE,
  ZV_ROUTER_OPTIONS,
  ZV_ROUTER_STANDARD_METHODS
};

typedef enum {
  ZV_ROUTER_FOUND = 0,   /* status 200: id and params are set */
  ZV_ROUTER_NOT_FOUND,   /* status 404 */
  ZV_ROUTER_NOT_ALLOWED, /* status 405: allow is set */
  ZV_ROUTER_AUTO_OPTIONS, /* status 204: an OPTIONS request with no OPTIONS route; allow is set */
  ZV_ROUTER_REDIRECT     /* status 301 or 308: slash says how to build the location */
} zv_router_kind_t;

typedef struct {
  const char *name; /* owned by the router, not NUL-terminated */
  size_t name_len;
  size_t off; /* the value is path[off .. off + len), still percent-encoded */
  size_t len;
} zv_router_param_t;

typedef struct {
  int kind;     /* a zv_router_kind_t */
  int status;   /* 200, 404, 405, 204, 301 or 308 */
  int id;       /* FOUND: the id given to zv_router_add */
  int nparams;  /* FOUND: how many params are set, in pattern order */
  int slash;    /* REDIRECT: +1 = the path plus a '/', -1 = the path minus its last '/' */
  uint32_t allow; /* NOT_ALLOWED, AUTO_OPTIONS: method mask, HEAD (with GET) and OPTIONS added */
  zv_router_param_t params[ZV_ROUTER_MAX_PARAMS];
} zv_router_match_t;

typedef struct zv_router zv_router_t;

/* Creates an empty router in *out. Returns 0 or ZV_ENOMEM. Free it with zv_router_free. */
int zv_router_new(zv_router_t **out);

/* Frees the router and everything it owns. NULL does nothing. */
void zv_router_free(zv_router_t *r);

/*
 * Registers pattern for method with the caller's id. Copies method and pattern. On failure
 * writes a NUL-terminated message into err (cut to errcap; err may be NULL) and returns
 *
 *   ZV_EINVAL    a method that is not an HTTP token, or too many distinct methods
 *   ZV_ESYNTAX   a malformed pattern: no leading '/', an empty or invalid name, a splat that is
 *                not last, the same name twice, a control byte, '?' or '#'
 *   ZV_ERANGE    more than ZV_ROUTER_MAX_PARAMS parameters, or a pattern above the length cap
 *   ZV_ECONFLICT a different parameter or splat name at a position another route already names,
 *                or the same method and pattern twice; the message names both patterns
 *   ZV_ENOMEM    out of memory
 *
 * A failed add leaves the router as it was, as far as matching can tell (it may have split a
 * node in two, which changes nothing a match sees). Method names are case-sensitive.
 */
int zv_router_add(zv_router_t *r, const char *method, size_t mlen, const char *pattern,
                  size_t plen, int id, char *err, size_t errcap);

/*
 * Matches method and path and fills *m; allocates nothing. The path is raw: no decoding, no
 * query string. A method the router has never seen can still get NOT_ALLOWED or AUTO_OPTIONS.
 * Returns m->kind.
 */
int zv_router_match(const zv_router_t *r, const char *method, size_t mlen, const char *path,
                    size_t plen, zv_router_match_t *m);

/* The union of the methods that some route accepts for path (HEAD and OPTIONS added), or 0. */
uint32_t zv_router_allowed(const zv_router_t *r, const char *path, size_t plen);

/*
 * Writes the methods of mask as an Allow header value, sorted by name ("DELETE, GET, HEAD,
 * OPTIONS") into buf with a NUL when cap > 0. Returns the length the full string has; a return
 * >= cap means it was cut. ZV_ROUTER_ALLOW_CAP bytes always suffice.
 */
size_t zv_router_allow_string(const zv_router_t *r, uint32_t mask, char *buf, size_t cap);

/*
 * Writes the redirect location of a REDIRECT match for path into buf (NUL-terminated when
 * cap > 0); the caller appends the query string. Returns the full length, as snprintf does.
 */
size_t zv_router_location(const zv_router_match_t *m, const char *path, size_t plen, char *buf,
                          size_t cap);

/* The index of a method name (0..ZV_ROUTER_MAX_METHODS-1), or -1 when the router has none. */
int zv_router_method_index(const zv_router_t *r, const char *method, size_t mlen);

/* The name of method index i (not NUL-terminated: see *len), or NULL when there is none. */
const char *zv_router_method_name(const zv_router_t *r, int i, size_t *len);

/* How many routes (method + pattern pairs) are registered. */
size_t zv_router_count(const zv_router_t *r);

/*
 * Route i in registration order: its method index, pattern (NUL-terminated, owned by the router)
 * and id. Returns 0, or ZV_ERANGE when i >= zv_router_count(r).
 */
int zv_router_route(const zv_router_t *r, size_t i, int *method, const char **pattern,
                    size_t *plen, int *id);

#endif
