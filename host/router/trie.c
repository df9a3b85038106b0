/*
 * trie.c: the router's trie: registration (validation, conflict checks, insertion) and the
 * allocation-free, method-aware search with backtracking.
 *
 * The trie is a trie of path segments. A node stands for a position after some segments; its
 * static children are keyed by the whole next segment, and it may also have one parameter child
 * and one splat child. For the routes
 *
 *   GET /users   GET /users/:id   GET /users/:id/posts   POST /files/upload   GET /dir/
 *
 * and a GET route with the splat *path after "/files/", it looks like this ([GET] = a node with a
 * handler for GET):
 *
 *   (root)
 *    |- "users" [GET]
 *    |   `- :id [GET]
 *    |       `- "posts" [GET]
 *    |- "files"
 *    |   |- "upload" [POST]
 *    |   `- *path [GET]
 *    `- "dir"
 *        `- "" [GET]          (a trailing '/' is one more, empty, segment)
 *
 * A node keeps its static edges in an array of { first 8 bytes as a word, length, child }: most
 * segments compare in one word and one length, and the child's own bytes are read only for
 * segments longer than 8. Above INLINE_EDGES edges the node also gets an open-addressing hash of
 * (word, length) to edge position. Each node keeps a method mask and an id per method index.
 * Parameter and splat nodes keep their name and a copy of the pattern that created them, so that
 * a conflict can name both routes.
 *
 * The search is a depth-first walk of a tree, so it visits each node at most once: a lookup costs
 * O(nodes) at worst and O(segments) in practice. It loops where only one way on exists and
 * recurses only at a node with a parameter or splat child, so its depth is at most the number of
 * segments of the longest pattern (ZV_ROUTER_MAX_PATTERN / 2).
 *
 * Nothing here may allocate during a match or call into Lua.
 */
#include "trie.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/zv.h"

enum { KIND_STATIC, KIND_PARAM, KIND_SPLAT };

/* Edges a node scans in a row; more get a hash index. */
#define INLINE_EDGES 8

typedef struct node node_t;

typedef struct {
  uint64_t head; /* the segment's first 8 bytes, zero-padded, as a little-endian word */
  size_t len;
  node_t *child;
} edge_t;

struct node {
  uint32_t mask;   /* methods with a handler here */
  uint8_t nids;    /* entries in ids: the highest method index with a handler, plus one */
  uint8_t kind;
  uint32_t nedges;
  edge_t *edges;
  uint32_t *slots; /* above INLINE_EDGES edges: 2^bits slots of edge position + 1, or 0 */
  unsigned bits;
  node_t *param;
  node_t *splat;
  int *ids;        /* ids[i] for method index i; valid where mask has bit i */
  char *bytes;     /* static: the segment; param/splat: the name */
  size_t len;
  char *origin;    /* param/splat: the pattern that created the node (NUL-terminated) */
};

typedef struct {
  int method;
  int id;
  char *pattern; /* NUL-terminated copy */
  size_t len;
} route_t;

struct zv_router {
  node_t *root;
  route_t *routes;
  size_t nroutes, caproutes;
  int nmethods;
  uint8_t order[ZV_ROUTER_MAX_METHODS]; /* method indices sorted by name, for Allow */
  uint8_t mlens[ZV_ROUTER_MAX_METHODS];
  char mnames[ZV_ROUTER_MAX_METHODS][ZV_ROUTER_MAX_METHOD_LEN + 1];
};

static const char *const standard[ZV_ROUTER_STANDARD_METHODS] = {
  "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
};

#define BIT(i) ((uint32_t)1 << (i))

/* --- segments ----------------------------------------------------------------------------- */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LITTLE 1
#else
#define LITTLE 0
#endif

/*
 * The word of a segment s[0..len): its first min(len, 8) bytes, zero-padded, byte i in bits
 * 8i..8i+7. left bytes are readable from s on (left >= len), back bytes before s. With 8 bytes
 * readable ahead it is one load; near the end of the path, one load that ends at the path's end.
 */
static inline uint64_t head_of(const char *s, size_t len, size_t left, size_t back) {
  uint64_t w = 0;
  if (LITTLE && left >= 8) {
    memcpy(&w, s, 8);
  } else if (LITTLE && left + back >= 8 && left > 0) {
    memcpy(&w, s + left - 8, 8);
    w >>= 8 * (8 - left);
  } else {
    for (size_t i = 0; i < len && i < 8; i++) w |= (uint64_t)(unsigned char)s[i] << (8 * i);
    return w;
  }
  return len >= 8 ? w : w & ((1ull << (8 * len)) - 1);
}

/*
 * Where the segment that starts at pos ends: the next '/' or the end of the path. Segments are
 * short, so this scans 8 bytes a word rather than call memchr; the last few bytes of a path are
 * one load that ends at the path's end.
 */
static inline size_t segment_end(const char *path, size_t len, size_t pos) {
  const uint64_t ones = 0x0101010101010101ull, slashes = ones * '/';
  uint64_t w;
  if (LITTLE) {
    while (len - pos >= 8) {
      memcpy(&w, path + pos, 8);
      w ^= slashes;
      w = (w - ones) & ~w & (ones << 7); /* the lowest set byte marks the first '/' */
      if (w) return pos + ((unsigned)__builtin_ctzll(w) >> 3);
      pos += 8;
    }
    if (pos < len && len >= 8) {
      memcpy(&w, path + len - 8, 8);
      w >>= 8 * (8 - (len - pos)); /* byte 0 is path[pos]; the zeros shifted in are not '/' */
      w ^= slashes;
      w = (w - ones) & ~w & (ones << 7);
      return w ? pos + ((unsigned)__builtin_ctzll(w) >> 3) : len;
    }
  }
  while (pos < len && path[pos] != '/') pos++;
  return pos;
}

static inline uint32_t hash_of(uint64_t head, size_t len, unsigned bits) {
  uint64_t h = (head + (uint64_t)len) * 0x9e3779b97f4a7c15ull; /* the high bits mix them all */
  return (uint32_t)(h >> (64 - bits));
}

/* --- nodes -------------------------------------------------------------------------------- */

static node_t *node_new(int kind, const char *bytes, size_t len) {
  node_t *n = zv_alloc(sizeof *n);
  if (!n) return NULL;
  memset(n, 0, sizeof *n);
  n->kind = (uint8_t)kind;
  if (len) {
    n->bytes = zv_alloc(len);
    if (!n->bytes) {
      zv_free(n);
      return NULL;
    }
    memcpy(n->bytes, bytes, len);
    n->len = len;
  }
  return n;
}

static void node_free(node_t *n) {
  if (!n) return;
  for (uint32_t i = 0; i < n->nedges; i++) node_free(n->edges[i].child);
  node_free(n->param);
  node_free(n->splat);
  zv_free(n->edges);
  zv_free(n->slots);
  zv_free(n->ids);
  zv_free(n->bytes);
  zv_free(n->origin);
  zv_free(n);
}

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* Whether a[8..len) equals b[8..len), for len > 8: a word at a time, then bytes. Inline and
 * call-free on purpose: a memcmp call inside the edge search makes the compiler spill the
 * search's registers around every probe. */
static ALWAYS_INLINE int same_tail(const char *a, const char *b, size_t len) {
  size_t i = 8;
  for (; i + 8 <= len; i += 8) {
    uint64_t x, y;
    memcpy(&x, a + i, 8);
    memcpy(&y, b + i, 8);
    if (x != y) return 0;
  }
  for (; i < len; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

/* The static child of n for segment s[0..len) whose word is head (see next_segment); or NULL. */
static ALWAYS_INLINE const node_t *find_edge(const node_t *n, uint64_t head, const char *s,
                                             size_t len) {
  const edge_t *e = n->edges;
  if (n->slots) {
    uint32_t mask = (1u << n->bits) - 1;
    for (uint32_t h = hash_of(head, len, n->bits);; h = (h + 1) & mask) {
      uint32_t k = n->slots[h];
      if (!k) return NULL;
      const edge_t *x = &e[k - 1];
      if (x->head == head && x->len == len && (len <= 8 || same_tail(s, x->child->bytes, len)))
        return x->child;
    }
  }
  for (uint32_t i = 0; i < n->nedges; i++)
    if (e[i].head == head && e[i].len == len &&
        (len <= 8 || same_tail(s, e[i].child->bytes, len)))
      return e[i].child;
  return NULL;
}

/*
 * The segment that starts at pos: returns its length and sets *head to its word (as head_of
 * computes it). One 8-byte load finds both the '/' and the word for segments of up to 8 bytes,
 * which is nearly all of them; near the end of the path the load ends at the path's end.
 */
static ALWAYS_INLINE size_t next_segment(const char *path, size_t len, size_t pos,
                                         uint64_t *head) {
  const uint64_t ones = 0x0101010101010101ull, slashes = ones * '/';
  size_t left = len - pos;
  if (LITTLE && len >= 8 && left > 0) {
    uint64_t w, x;
    if (left >= 8) {
      memcpy(&w, path + pos, 8);
    } else {
      memcpy(&w, path + len - 8, 8);
      w >>= 8 * (8 - left); /* byte 0 is path[pos]; the zeros shifted in are not '/' */
    }
    x = w ^ slashes;
    x = (x - ones) & ~x & (ones << 7); /* the lowest set byte marks the first '/' */
    if (x) {
      size_t k = (unsigned)__builtin_ctzll(x) >> 3;
      *head = k ? w & (~0ull >> (64 - 8 * k)) : 0;
      return k;
    }
    *head = w;
    if (left <= 8) return left;
    return segment_end(path, len, pos + 8) - pos;
  }
  size_t end = segment_end(path, len, pos);
  *head = head_of(path + pos, end - pos, left, pos);
  return end - pos;
}

/* Builds a hash index of the first count edges of n, with at least twice as many slots. */
static uint32_t *index_edges(const node_t *n, uint32_t count, unsigned *bits_out) {
  unsigned bits = 4;
  while ((1u << bits) < 2 * count) bits++;
  uint32_t *slots = zv_alloc(sizeof *slots << bits);
  if (!slots) return NULL;
  memset(slots, 0, sizeof *slots << bits);
  for (uint32_t i = 0; i < count; i++) {
    uint32_t h = hash_of(n->edges[i].head, n->edges[i].len, bits);
    while (slots[h]) h = (h + 1) & ((1u << bits) - 1);
    slots[h] = i + 1;
  }
  *bits_out = bits;
  return slots;
}

/* Adds child (a static node) as n's edge for its segment. Returns 0 or ZV_ENOMEM (n unchanged). */
static int add_edge(node_t *n, node_t *child) {
  uint32_t k = n->nedges + 1;
  edge_t *edges = zv_realloc(n->edges, k * sizeof *edges);
  if (!edges) return ZV_ENOMEM;
  n->edges = edges;
  edges[k - 1] = (edge_t){head_of(child->bytes, child->len, 0, 0), child->len, child};
  if (k > INLINE_EDGES) {
    if (n->slots && (1u << n->bits) >= 2 * k) {
      uint32_t h = hash_of(edges[k - 1].head, edges[k - 1].len, n->bits);
      while (n->slots[h]) h = (h + 1) & ((1u << n->bits) - 1);
      n->slots[h] = k;
    } else {
      /* Grow: a fresh index at half load at most. */
      unsigned bits;
      uint32_t *slots = index_edges(n, k, &bits);
      if (!slots) return ZV_ENOMEM;
      zv_free(n->slots);
      n->slots = slots;
      n->bits = bits;
    }
  }
  n->nedges = k;
  return 0;
}

/* --- methods ------------------------------------------------------------------------------ */

static int is_tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 1;
  return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* The standard methods by length and bytes first: this runs once per request. */
static ALWAYS_INLINE int method_index(const zv_router_t *r, const char *m, size_t n) {
  switch (n) {
  case 3:
    if (m[0] == 'G' && m[1] == 'E' && m[2] == 'T') return ZV_ROUTER_GET;
    if (m[0] == 'P' && m[1] == 'U' && m[2] == 'T') return ZV_ROUTER_PUT;
    break;
  case 4:
    if (!memcmp(m, "HEAD", 4)) return ZV_ROUTER_HEAD;
    if (!memcmp(m, "POST", 4)) return ZV_ROUTER_POST;
    break;
  case 5:
    if (!memcmp(m, "PATCH", 5)) return ZV_ROUTER_PATCH;
    break;
  case 6:
    if (!memcmp(m, "DELETE", 6)) return ZV_ROUTER_DELETE;
    break;
  case 7:
    if (!memcmp(m, "OPTIONS", 7)) return ZV_ROUTER_OPTIONS;
    break;
  default:
    break;
  }
  for (int i = ZV_ROUTER_STANDARD_METHODS; i < r->nmethods; i++)
    if (r->mlens[i] == n && !memcmp(r->mnames[i], m, n)) return i;
  return -1;
}

int zv_router_method_index(const zv_router_t *r, const char *m, size_t n) {
  return method_index(r, m, n);
}

const char *zv_router_method_name(const zv_router_t *r, int i, size_t *len) {
  if (i < 0 || i >= r->nmethods) return NULL;
  if (len) *len = r->mlens[i];
  return r->mnames[i];
}

static int name_cmp(const zv_router_t *r, int a, int b) {
  size_t la = r->mlens[a], lb = r->mlens[b];
  int c = memcmp(r->mnames[a], r->mnames[b], la < lb ? la : lb);
  return c ? c : (la > lb) - (la < lb);
}

/* Adds a method name (a valid token, not yet known, room left); keeps order sorted. */
static int method_add(zv_router_t *r, const char *m, size_t n) {
  int i = r->nmethods++, j;
  memcpy(r->mnames[i], m, n);
  r->mnames[i][n] = '\0';
  r->mlens[i] = (uint8_t)n;
  for (j = i; j > 0 && name_cmp(r, r->order[j - 1], i) > 0; j--) r->order[j] = r->order[j - 1];
  r->order[j] = (uint8_t)i;
  return i;
}

/* --- router ------------------------------------------------------------------------------- */

int zv_router_new(zv_router_t **out) {
  zv_router_t *r = zv_alloc(sizeof *r);
  *out = NULL;
  if (!r) return ZV_ENOMEM;
  memset(r, 0, sizeof *r);
  r->root = node_new(KIND_STATIC, NULL, 0);
  if (!r->root) {
    zv_free(r);
    return ZV_ENOMEM;
  }
  for (int i = 0; i < ZV_ROUTER_STANDARD_METHODS; i++)
    method_add(r, standard[i], strlen(standard[i]));
  *out = r;
  return 0;
}

void zv_router_free(zv_router_t *r) {
  if (!r) return;
  node_free(r->root);
  for (size_t i = 0; i < r->nroutes; i++) zv_free(r->routes[i].pattern);
  zv_free(r->routes);
  zv_free(r);
}

size_t zv_router_count(const zv_router_t *r) {
  return r->nroutes;
}

int zv_router_route(const zv_router_t *r, size_t i, int *method, const char **pattern,
                    size_t *plen, int *id) {
  if (i >= r->nroutes) return ZV_ERANGE;
  if (method) *method = r->routes[i].method;
  if (pattern) *pattern = r->routes[i].pattern;
  if (plen) *plen = r->routes[i].len;
  if (id) *id = r->routes[i].id;
  return 0;
}


/* --- registration ------------------------------------------------------------------------- */

/* printf into the caller's err buffer (which may be NULL); returns rc for tail calls. */
__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t cap, int rc,
                                                      const char *fmt, ...) {
  va_list ap;
  if (err && cap) {
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static int is_name_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

#define PAT (int)plen, p

/* Checks a pattern's syntax before anything in the trie changes. */
static int validate(const char *p, size_t plen, char *err, size_t cap) {
  const char *names[ZV_ROUTER_MAX_PARAMS];
  size_t lens[ZV_ROUTER_MAX_PARAMS];
  int nparams = 0;
  if (plen > ZV_ROUTER_MAX_PATTERN)
    return fail(err, cap, ZV_ERANGE, "route pattern is longer than %d bytes",
                ZV_ROUTER_MAX_PATTERN);
  if (plen == 0 || p[0] != '/')
    return fail(err, cap, ZV_ESYNTAX, "route \"%.*s\": a pattern starts with '/'", PAT);
  for (size_t k = 0; k < plen; k++) {
    unsigned char c = (unsigned char)p[k];
    if (c <= 0x20 || c == 0x7f)
      return fail(err, cap, ZV_ESYNTAX,
                  "route \"%.*s\": byte 0x%02x at offset %zu is not allowed in a pattern", PAT, c,
                  k);
    if (c == '?' || c == '#')
      return fail(err, cap, ZV_ESYNTAX,
                  "route \"%.*s\": '%c' is not allowed in a pattern (it is not part of a path)",
                  PAT, c);
  }
  for (size_t pos = 1, end; pos <= plen; pos = end + 1) {
    end = segment_end(p, plen, pos);
    if (end == pos || (p[pos] != ':' && p[pos] != '*')) continue;
    char sigil = p[pos];
    const char *name = p + pos + 1;
    size_t nlen = end - pos - 1;
    const char *what = sigil == ':' ? "parameter" : "splat";
    if (nlen == 0)
      return fail(err, cap, ZV_ESYNTAX, "route \"%.*s\": empty %s name", PAT, what);
    for (size_t k = 0; k < nlen; k++)
      if (!is_name_byte((unsigned char)name[k]))
        return fail(err, cap, ZV_ESYNTAX,
                    "route \"%.*s\": %s name \"%.*s\" may only hold letters, digits and '_'",
                    PAT, what, (int)nlen, name);
    if (sigil == '*' && end < plen)
      return fail(err, cap, ZV_ESYNTAX, "route \"%.*s\": splat *%.*s must be the last segment",
                  PAT, (int)nlen, name);
    if (nparams == ZV_ROUTER_MAX_PARAMS)
      return fail(err, cap, ZV_ERANGE, "route \"%.*s\": more than %d parameters", PAT,
                  ZV_ROUTER_MAX_PARAMS);
    for (int k = 0; k < nparams; k++)
      if (lens[k] == nlen && !memcmp(names[k], name, nlen))
        return fail(err, cap, ZV_ESYNTAX, "route \"%.*s\": parameter name \"%.*s\" appears twice",
                    PAT, (int)nlen, name);
    names[nparams] = name;
    lens[nparams++] = nlen;
  }
  return 0;
}

/* Finds or creates the static child of n for segment s[0..len). */
static int insert_static(node_t *n, const char *s, size_t len, node_t **out) {
  node_t *c = (node_t *)find_edge(n, head_of(s, len, len, 0), s, len);
  if (!c) {
    if (!(c = node_new(KIND_STATIC, s, len))) return ZV_ENOMEM;
    if (add_edge(n, c)) {
      node_free(c);
      return ZV_ENOMEM;
    }
  }
  *out = c;
  return 0;
}

/* Finds or creates the parameter or splat child of n named name[0..nlen). */
static int insert_var(node_t *n, int kind, const char *name, size_t nlen, const char *p,
                      size_t plen, node_t **out, char *err, size_t cap) {
  node_t **slot = kind == KIND_PARAM ? &n->param : &n->splat;
  char sigil = kind == KIND_PARAM ? ':' : '*';
  node_t *v = *slot;
  if (v) {
    if (v->len != nlen || memcmp(v->bytes, name, nlen))
      return fail(err, cap, ZV_ECONFLICT,
                  "route \"%.*s\" conflicts with \"%s\": %s %c%.*s vs %c%.*s", PAT, v->origin,
                  kind == KIND_PARAM ? "parameter" : "splat", sigil, (int)nlen, name, sigil,
                  (int)v->len, v->bytes);
    *out = v;
    return 0;
  }
  v = node_new(kind, name, nlen);
  if (!v || !(v->origin = zv_alloc(plen + 1))) {
    node_free(v);
    return fail(err, cap, ZV_ENOMEM, "out of memory");
  }
  memcpy(v->origin, p, plen);
  v->origin[plen] = '\0';
  *slot = v;
  *out = v;
  return 0;
}

/* Gives n a handler id for method i (not yet set). Returns 0 or ZV_ENOMEM (n unchanged). */
static int set_handler(node_t *n, int i, int id) {
  if (i >= n->nids) {
    int *ids = zv_realloc(n->ids, (size_t)(i + 1) * sizeof *ids);
    if (!ids) return ZV_ENOMEM;
    for (int k = n->nids; k < i; k++) ids[k] = 0;
    n->ids = ids;
    n->nids = (uint8_t)(i + 1);
  }
  n->ids[i] = id;
  n->mask |= BIT(i);
  return 0;
}

int zv_router_add(zv_router_t *r, const char *method, size_t mlen, const char *p, size_t plen,
                  int id, char *err, size_t cap) {
  int rc, mi;
  node_t *n = r->root;
  char *copy;
  if (err && cap) err[0] = '\0';
  if (mlen == 0 || mlen > ZV_ROUTER_MAX_METHOD_LEN)
    return fail(err, cap, ZV_EINVAL,
                "method \"%.*s%s\" is not an HTTP method token (1 to %d bytes)",
                mlen ? ZV_ROUTER_MAX_METHOD_LEN : 0, method, mlen ? "..." : "",
                ZV_ROUTER_MAX_METHOD_LEN);
  for (size_t k = 0; k < mlen; k++)
    if (!is_tchar((unsigned char)method[k]))
      return fail(err, cap, ZV_EINVAL, "method \"%.*s\" is not an HTTP method token", (int)mlen,
                  method);
  mi = method_index(r, method, mlen);
  if (mi < 0 && r->nmethods == ZV_ROUTER_MAX_METHODS)
    return fail(err, cap, ZV_EINVAL, "method \"%.*s\": a router knows at most %d methods",
                (int)mlen, method, ZV_ROUTER_MAX_METHODS);
  if ((rc = validate(p, plen, err, cap))) return rc;
  /* Everything that can fail for lack of memory before the handler goes in, goes first. */
  if (r->nroutes == r->caproutes) {
    size_t ncap = r->caproutes ? 2 * r->caproutes : 16;
    route_t *routes = zv_realloc(r->routes, ncap * sizeof *routes);
    if (!routes) return fail(err, cap, ZV_ENOMEM, "out of memory");
    r->routes = routes;
    r->caproutes = ncap;
  }
  /*
   * Walk and grow. A conflict can only show at a node that existed before this call, and every
   * node below a created one is created too: so a conflict never leaves a new node behind, and
   * an out-of-memory failure leaves only handler-less nodes, which no match can see.
   */
  for (size_t pos = 1, end; pos <= plen; pos = end + 1) {
    end = segment_end(p, plen, pos);
    if (end > pos && (p[pos] == ':' || p[pos] == '*'))
      rc = insert_var(n, p[pos] == ':' ? KIND_PARAM : KIND_SPLAT, p + pos + 1, end - pos - 1, p,
                      plen, &n, err, cap);
    else
      rc = insert_static(n, p + pos, end - pos, &n);
    if (rc == ZV_ENOMEM) return fail(err, cap, ZV_ENOMEM, "out of memory");
    if (rc) return rc;
  }
  if (mi >= 0 && (n->mask & BIT(mi)))
    return fail(err, cap, ZV_ECONFLICT, "route %.*s \"%.*s\" is already registered (id %d)",
                (int)mlen, method, PAT, n->ids[mi]);
  if (!(copy = zv_alloc(plen + 1))) return fail(err, cap, ZV_ENOMEM, "out of memory");
  memcpy(copy, p, plen);
  copy[plen] = '\0';
  if (mi < 0) mi = method_add(r, method, mlen);
  if (set_handler(n, mi, id)) {
    /* The method stays known: harmless, and a later add of it will need it anyway. */
    zv_free(copy);
    return fail(err, cap, ZV_ENOMEM, "out of memory");
  }
  r->routes[r->nroutes++] = (route_t){mi, id, copy, plen};
  return 0;
}

/* --- matching ----------------------------------------------------------------------------- */

typedef struct {
  const char *path;
  size_t len;
  uint32_t want;  /* a node with any of these methods is a hit */
  uint32_t seen;  /* methods of every node the path reached */
  const node_t *hit;
  int nparams;
  zv_router_param_t *params;
} search_t;

static inline int terminal(search_t *s, const node_t *n) {
  if (!n->mask) return 0;
  s->seen |= n->mask;
  if (!(n->mask & s->want)) return 0;
  s->hit = n;
  return 1;
}

static inline void push(search_t *s, const node_t *v, size_t off, size_t len) {
  zv_router_param_t *p = &s->params[s->nparams++];
  p->name = v->bytes;
  p->name_len = v->len;
  p->off = off;
  p->len = len;
}

/*
 * The segment that starts at pos is next below n. Returns 1 when a route below n takes the
 * method. It loops instead of recursing where there is only one way on; where it recurses, a
 * failed branch gives back the parameters it pushed.
 */
static int visit(search_t *s, const node_t *n, size_t pos) {
  /* Locals: stores into s->params could alias s->path and s->len for the compiler. */
  const char *const path = s->path;
  const size_t len = s->len;
  for (;;) {
    uint64_t head;
    size_t end = pos + next_segment(path, len, pos, &head);
    int last = end == len;
    const node_t *c = n->nedges ? find_edge(n, head, path + pos, end - pos) : NULL;
    if (!n->param && !n->splat) {
      if (!c) return 0;
      if (last) return terminal(s, c);
      n = c;
      pos = end + 1;
      continue;
    }
    int saved = s->nparams;
    if (c && (last ? terminal(s, c) : visit(s, c, end + 1))) return 1;
    s->nparams = saved;
    if (n->param && end > pos && saved < ZV_ROUTER_MAX_PARAMS) {
      push(s, n->param, pos, end - pos);
      if (last) {
        if (terminal(s, n->param)) return 1;
      } else if (!n->splat) {
        n = n->param;
        pos = end + 1;
        continue;
      } else if (visit(s, n->param, end + 1)) {
        return 1;
      }
      s->nparams = saved;
    }
    if (n->splat && saved < ZV_ROUTER_MAX_PARAMS) {
      push(s, n->splat, pos, len - pos);
      if (terminal(s, n->splat)) return 1;
      s->nparams = saved;
    }
    return 0;
  }
}

/* Runs the search; the params land in m->params. */
static int search(const zv_router_t *r, uint32_t want, const char *path, size_t plen,
                  zv_router_match_t *m, search_t *s) {
  s->path = path;
  s->len = plen;
  s->want = want;
  s->seen = 0;
  s->hit = NULL;
  s->nparams = 0;
  s->params = m->params;
  if (plen == 0 || path[0] != '/') return 0;
  return visit(s, r->root, 1);
}

static uint32_t want_of(int mi) {
  if (mi < 0) return 0;
  return mi == ZV_ROUTER_HEAD ? BIT(ZV_ROUTER_HEAD) | BIT(ZV_ROUTER_GET) : BIT(mi);
}

static uint32_t fold(uint32_t mask) {
  if (!mask) return 0;
  if (mask & BIT(ZV_ROUTER_GET)) mask |= BIT(ZV_ROUTER_HEAD);
  return mask | BIT(ZV_ROUTER_OPTIONS);
}

/*
 * The trailing-slash twin of a missed path: is it a hit (or an automatic OPTIONS)? Sets m to a
 * redirect and returns 1 if so. A twin that starts with "//" or "/\" is never offered: browsers
 * read it as another host.
 */
static __attribute__((noinline)) int twin(const zv_router_t *r, int mi, const char *path,
                                          size_t plen, zv_router_match_t *m) {
  char buf[ZV_ROUTER_MAX_REDIRECT + 1];
  const char *t = path;
  size_t tlen;
  search_t s;
  if (plen == 0 || plen > ZV_ROUTER_MAX_REDIRECT) return 0;
  if (path[plen - 1] == '/') {
    if (plen == 1) return 0;
    tlen = plen - 1;
    m->slash = -1;
  } else {
    memcpy(buf, path, plen);
    buf[plen] = '/';
    t = buf;
    tlen = plen + 1;
    m->slash = 1;
  }
  if (tlen >= 2 && (t[1] == '/' || t[1] == '\\')) return 0;
  if (!search(r, want_of(mi), t, tlen, m, &s) && !(mi == ZV_ROUTER_OPTIONS && s.seen)) return 0;
  m->kind = ZV_ROUTER_REDIRECT;
  m->status = mi == ZV_ROUTER_GET || mi == ZV_ROUTER_HEAD ? 301 : 308;
  m->nparams = 0;
  return 1;
}

int zv_router_match(const zv_router_t *r, const char *method, size_t mlen, const char *path,
                    size_t plen, zv_router_match_t *m) {
  int mi = method_index(r, method, mlen);
  search_t s;
  m->id = 0;
  m->slash = 0;
  m->allow = 0;
  if (search(r, want_of(mi), path, plen, m, &s)) {
    const node_t *h = s.hit;
    int use = (h->mask & BIT(mi)) ? mi : ZV_ROUTER_GET;
    m->kind = ZV_ROUTER_FOUND;
    m->status = 200;
    m->id = h->ids[use];
    m->nparams = s.nparams;
    return m->kind;
  }
  m->nparams = 0;
  if (s.seen) {
    m->allow = fold(s.seen);
    m->kind = mi == ZV_ROUTER_OPTIONS ? ZV_ROUTER_AUTO_OPTIONS : ZV_ROUTER_NOT_ALLOWED;
    m->status = mi == ZV_ROUTER_OPTIONS ? 204 : 405;
    return m->kind;
  }
  if (twin(r, mi, path, plen, m)) return m->kind;
  m->slash = 0;
  m->kind = ZV_ROUTER_NOT_FOUND;
  m->status = 404;
  return m->kind;
}

uint32_t zv_router_allowed(const zv_router_t *r, const char *path, size_t plen) {
  zv_router_match_t m;
  search_t s;
  search(r, 0, path, plen, &m, &s);
  return fold(s.seen);
}

size_t zv_router_allow_string(const zv_router_t *r, uint32_t mask, char *buf, size_t cap) {
  size_t n = 0;
  /* Writes what fits and counts the rest, as snprintf does. */
#define PUT(c)                        \
  do {                                \
    if (n + 1 < cap) buf[n] = (c);    \
    n++;                              \
  } while (0)
  for (int k = 0; k < r->nmethods; k++) {
    int i = r->order[k];
    if (!(mask & BIT(i))) continue;
    if (n) {
      PUT(',');
      PUT(' ');
    }
    for (size_t j = 0; j < r->mlens[i]; j++) PUT(r->mnames[i][j]);
  }
#undef PUT
  if (cap) buf[n < cap ? n : cap - 1] = '\0';
  return n;
}

size_t zv_router_location(const zv_router_match_t *m, const char *path, size_t plen, char *buf,
                          size_t cap) {
  size_t n = m->slash < 0 && plen ? plen - 1 : plen, full = n + (m->slash > 0);
  if (!cap) return full;
  size_t k = n < cap - 1 ? n : cap - 1;
  memcpy(buf, path, k);
  if (m->slash > 0 && k < cap - 1) buf[k++] = '/';
  buf[k] = '\0';
  return full;
}
