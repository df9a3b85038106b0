/*
 * router_fuzz.c: libFuzzer target for the router core (host/router/trie.c).
 *
 * Each input is used twice:
 *   1. as "METHOD PATH" (split at the first space; no space: GET and the whole input) against a
 *      fixed, realistic table built once, checking the invariants of every result kind;
 *   2. as up to 64 lines "METHOD PATTERN" registered in a fresh router (most fail, which is the
 *      point), each pattern then matched as a path, and the router freed.
 *
 * Invariants: parameter spans lie inside the path and their names are non-empty; a hit's id is
 * one the table registered; 405 and automatic OPTIONS always allow OPTIONS; a redirect's twin
 * matches and never starts with "//"; a failed add leaves a message; an added all-static pattern
 * matches itself with its own id. It must not crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "router/trie.h"

static const char *const table[][2] = {
  {"GET", "/"},
  {"GET", "/users"},
  {"POST", "/users"},
  {"GET", "/users/:id"},
  {"PUT", "/users/:id"},
  {"DELETE", "/users/:id"},
  {"GET", "/users/new"},
  {"GET", "/users/:id/posts/:post"},
  {"GET", "/users/new/posts/latest"},
  {"GET", "/files/*path"},
  {"GET", "/files/special"},
  {"POST", "/files/upload"},
  {"OPTIONS", "/cors"},
  {"HEAD", "/ping"},
  {"GET", "/ping"},
  {"GET", "/dir/"},
  {"PROPFIND", "/dav/*res"},
  {"GET", "/repos/:owner/:repo/git/refs/*ref"},
  {"GET", "/repos/:owner/:repo/stargazers"},
  {"GET", "/repos/:owner/:repo/stats/contributors"},
  {"GET", "/v1/items:batchGet"},
  {"GET", "/a/:b/:c/:d/:e/:f/:g/:h/:i/:j/:k/:l/:m/:n/:o/:p/*q"},
};

#define NTABLE (sizeof table / sizeof table[0])

static zv_router_t *fixed;

static void die(const char *what) {
  fprintf(stderr, "router_fuzz: invariant broken: %s\n", what);
  abort();
}

static void check_match(const zv_router_t *r, const char *method, size_t mlen, const char *path,
                        size_t plen, int maxid) {
  zv_router_match_t m;
  char allow[ZV_ROUTER_ALLOW_CAP], loc[ZV_ROUTER_MAX_REDIRECT + 2];
  int kind = zv_router_match(r, method, mlen, path, plen, &m);
  if (kind != m.kind) die("return value is not m->kind");
  switch (kind) {
  case ZV_ROUTER_FOUND:
    if (m.status != 200 || m.nparams < 0 || m.nparams > ZV_ROUTER_MAX_PARAMS) die("found");
    if (maxid >= 0 && (m.id < 0 || m.id > maxid)) die("id out of range");
    for (int i = 0; i < m.nparams; i++) {
      const zv_router_param_t *p = &m.params[i];
      if (p->off > plen || p->len > plen - p->off) die("param span outside the path");
      if (!p->name || p->name_len == 0) die("param without a name");
      if (memchr(path + p->off, '/', p->len) && i != m.nparams - 1) die("'/' in a parameter");
    }
    break;
  case ZV_ROUTER_NOT_ALLOWED:
  case ZV_ROUTER_AUTO_OPTIONS: {
    if (!(m.allow & (1u << ZV_ROUTER_OPTIONS))) die("allow without OPTIONS");
    size_t n = zv_router_allow_string(r, m.allow, allow, sizeof allow);
    if (n >= sizeof allow || strlen(allow) != n) die("allow string");
    if (zv_router_allowed(r, path, plen) != m.allow) die("allowed() disagrees with match()");
    break;
  }
  case ZV_ROUTER_REDIRECT: {
    zv_router_match_t t;
    size_t n = zv_router_location(&m, path, plen, loc, sizeof loc);
    if (m.status != 301 && m.status != 308) die("redirect status");
    if (n >= sizeof loc || n != plen + (size_t)m.slash) die("location length");
    if (n >= 2 && (loc[1] == '/' || loc[1] == '\\')) die("open redirect");
    int tk = zv_router_match(r, method, mlen, loc, n, &t);
    if (tk != ZV_ROUTER_FOUND && tk != ZV_ROUTER_AUTO_OPTIONS) die("redirect to a miss");
    break;
  }
  case ZV_ROUTER_NOT_FOUND:
    if (m.status != 404) die("404");
    break;
  default:
    die("unknown kind");
  }
}

static void setup(void) {
  char err[512];
  if (zv_router_new(&fixed)) abort();
  for (size_t i = 0; i < NTABLE; i++)
    if (zv_router_add(fixed, table[i][0], strlen(table[i][0]), table[i][1], strlen(table[i][1]),
                      (int)i, err, sizeof err)) {
      fprintf(stderr, "router_fuzz: %s\n", err);
      abort();
    }
}

static int is_static(const char *p, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    if (p[i] == '/' && (p[i + 1] == ':' || p[i + 1] == '*')) return 0;
  return 1;
}

static void registration(const uint8_t *data, size_t size) {
  zv_router_t *r;
  char err[2 * ZV_ROUTER_MAX_PATTERN + 256];
  const char *s = (const char *)data, *end = s + size;
  int lines = 0;
  if (zv_router_new(&r)) return;
  while (s < end && lines < 64) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    const char *e = nl ? nl : end;
    const char *sp = memchr(s, ' ', (size_t)(e - s));
    lines++;
    if (sp) {
      size_t mlen = (size_t)(sp - s), plen = (size_t)(e - sp - 1);
      int rc = zv_router_add(r, s, mlen, sp + 1, plen, lines, err, sizeof err);
      if (rc && (rc > 0 || err[0] == '\0')) die("failed add without a message");
      if (rc == 0 && is_static(sp + 1, plen)) {
        zv_router_match_t m;
        if (zv_router_match(r, s, mlen, sp + 1, plen, &m) != ZV_ROUTER_FOUND || m.id != lines)
          die("a static route does not match itself");
      }
      check_match(r, s, mlen, sp + 1, plen, -1);
    }
    s = e + 1;
  }
  zv_router_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  const char *sp = memchr(s, ' ', size);
  if (!fixed) setup();
  if (sp)
    check_match(fixed, s, (size_t)(sp - s), sp + 1, size - (size_t)(sp - s) - 1, (int)NTABLE - 1);
  else
    check_match(fixed, "GET", 3, s, size, (int)NTABLE - 1);
  registration(data, size);
  return 0;
}
