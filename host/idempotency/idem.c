/*
 * idem.c: the bounded table of idem.h (reservations and completed results of idempotency keys)
 * over the shared striped table of core/stripes.h, its process-wide registry, and the request
 * fingerprint hash.
 *
 * It must not include Lua or libuv headers, must not allocate on a hit (replay, pending,
 * mismatch), must never hold two stripe locks at once, and frees entries only after dropping
 * the stripe lock. Lock order: admit -> sweep -> one stripe.
 */
#include "idem.h"

#include <sched.h>
#include <string.h>

#include "../core/registry.h"
#include "../core/spin.h"
#include "../core/stripes.h"
#include "../core/zv.h"

#define ADMIT_SWEEP_EVERY 64
#define ADMIT_SWEEP_STEPS 16

enum { PENDING = 0, COMPLETE = 1 };

typedef struct entry {
  zv_stripe_node_t n;     /* chain, LRU links, hash (zv_hash), used_ns (last begin or
                             complete), klen, flen */
  char *result;           /* COMPLETE: rlen bytes, its own allocation (NULL when rlen is 0) */
  size_t rlen;
  uint64_t token;
  uint64_t expires_ns;    /* 0: never */
  uint64_t ttl_ns;        /* the completed result's lifetime, from begin */
  int state;
  int rtype;
  char data[];            /* key, then fingerprint */
} entry_t;

#define FLEN(e) ((e)->n.aux)

/*
 * A stripe's flagged count is its PENDING entries. The bounds, read by every call, keep a line
 * of their own apart from the counters that every admission and complete writes.
 */
struct zv_idem_s {
  zv_stripes_t stripes;
  size_t max_keys;
  size_t max_bytes;
  char gap[64];
  size_t used;            /* atomic: slots reserved */
  size_t bytes;           /* atomic: charged bytes */
  uint64_t tokens;        /* atomic: the last token handed out */
  uint64_t evictions;     /* atomic */
  uint64_t expired;       /* atomic */
  unsigned admissions;    /* atomic */
  zv_spin_t admit;
  zv_stripe_cursor_t sweep;
};

/* idem.h promises 64 stripes: the shared table has that many. */
typedef char stripes_match[ZV_IDEM_STRIPES == ZV_STRIPES ? 1 : -1];

static void unlinked(zv_stripe_t *s, zv_stripe_node_t *n) {
  if (((entry_t *)n)->state == PENDING) s->flagged--;
}

static const zv_stripe_kind_t kind = {offsetof(entry_t, expires_ns), unlinked, 0};

size_t zv_idem_overhead(void) {
  return sizeof(entry_t);
}

uint64_t zv_idem_clock(void) {
  return zv_stripe_clock();
}

static inline size_t entry_size(size_t klen, size_t flen) {
  return sizeof(entry_t) + klen + flen;
}

static inline size_t charged(const entry_t *e) {
  return entry_size(e->n.klen, FLEN(e)) + e->rlen;
}

int zv_idem_new(size_t max_keys, size_t max_bytes, zv_idem_t **out) {
  if (max_keys == 0 || max_bytes == 0) return ZV_EINVAL;
  zv_idem_t *t = zv_alloc(sizeof *t);
  if (!t) return ZV_ENOMEM;
  memset(t, 0, sizeof *t);
  if (zv_stripes_init(&t->stripes)) {
    zv_idem_free(t);
    return ZV_ENOMEM;
  }
  t->max_keys = max_keys;
  t->max_bytes = max_bytes;
  *out = t;
  return 0;
}

static void free_entry(zv_stripe_node_t *n) {
  zv_free(((entry_t *)n)->result);
  zv_free(n);
}

void zv_idem_free(zv_idem_t *t) {
  if (!t) return;
  zv_stripes_free(&t->stripes, free_entry);
  zv_free(t);
}

/* --- one stripe (its lock held) ------------------------------------------------------------- */

static inline entry_t *find(zv_stripe_t *s, uint32_t h, const char *key, size_t klen) {
  return (entry_t *)zv_stripe_find(s, h, key, klen, offsetof(entry_t, data));
}

static inline void touch(zv_stripe_t *s, entry_t *e, uint64_t now) {
  if (now > e->n.used_ns) e->n.used_ns = now;
  zv_stripe_touch(s, &e->n);
}

static inline int expired(const entry_t *e, uint64_t now) {
  return e->expires_ns && now >= e->expires_ns;
}

/* Unlinks e from its chain and the LRU list; the caller calls drop() after unlocking. */
static void unlink_entry(zv_stripe_t *s, entry_t *e) {
  zv_stripe_unlink(s, &e->n);
  unlinked(s, &e->n);
}

/* Frees an unlinked entry and gives back its slot and bytes. */
static void drop(zv_idem_t *t, entry_t *e) {
  __atomic_sub_fetch(&t->bytes, charged(e), __ATOMIC_RELAXED);
  __atomic_sub_fetch(&t->used, 1, __ATOMIC_RELAXED);
  zv_free(e->result);
  zv_free(e);
}

static void drop_node(void *ctx, zv_stripe_node_t *n) {
  drop(ctx, (entry_t *)n);
}

static void drop_expired(zv_idem_t *t, entry_t *e) {
  drop(t, e);
  __atomic_add_fetch(&t->expired, 1, __ATOMIC_RELAXED);
}

/* --- bounds --------------------------------------------------------------------------------- */

/* Evicts one entry: an expired LRU tail if any, else the oldest tail. 0 when the table is empty. */
static int evict_one(zv_idem_t *t, uint64_t now) {
  int victim = zv_stripes_oldest(&t->stripes, &kind, now, 1);
  if (victim < 0) return 0;
  entry_t *e = (entry_t *)zv_stripes_pop_oldest(&t->stripes, &kind, victim);
  if (e) {
    int was_expired = expired(e, now);
    drop(t, e);
    __atomic_add_fetch(was_expired ? &t->expired : &t->evictions, 1, __ATOMIC_RELAXED);
  }
  return 1;
}

/*
 * Charges size bytes and, when slot is 1, one key slot, evicting until they fit: an expired
 * LRU tail first, else the least recently used entry. (Expired entries elsewhere are left to
 * the sweeps: a sweep per eviction measured 3x slower under churn.) The key count is kept
 * exactly; bytes may overshoot briefly by charges whose entries are in flight (not yet
 * linked, so not evictable).
 */
static void admit(zv_idem_t *t, size_t size, int slot, uint64_t now) {
  zv_spin_lock(&t->admit);
  for (;;) {
    int keys_full = slot && __atomic_load_n(&t->used, __ATOMIC_RELAXED) >= t->max_keys;
    int bytes_full = __atomic_load_n(&t->bytes, __ATOMIC_RELAXED) + size > t->max_bytes;
    if (!keys_full && !bytes_full) break;
    if (evict_one(t, now)) continue;
    if (!keys_full) break;
    /* Every slot is a reservation whose insert is in flight: let it land, then look again. */
    zv_spin_unlock(&t->admit);
    sched_yield();
    zv_spin_lock(&t->admit);
  }
  if (slot) __atomic_add_fetch(&t->used, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&t->bytes, size, __ATOMIC_RELAXED);
  zv_spin_unlock(&t->admit);
}

/* --- operations ----------------------------------------------------------------------------- */

/* What a begin that finds the live entry e answers; copies a replay's result into buf. */
static int answer(zv_stripe_t *s, entry_t *e, const char *fp, size_t flen, uint64_t now, char *buf,
                  size_t cap, zv_idem_begin_t *r) {
  touch(s, e, now);
  r->token = 0;
  if (FLEN(e) != flen || memcmp(e->data + e->n.klen, fp, flen) != 0) {
    r->status = ZV_IDEM_MISMATCH;
    return 0;
  }
  if (e->state == PENDING) {
    r->status = ZV_IDEM_PENDING;
    return 0;
  }
  r->status = ZV_IDEM_REPLAY;
  r->type = e->rtype;
  r->len = e->rlen;
  if (e->rlen > cap) return ZV_ERANGE;
  if (e->rlen) memcpy(buf, e->result, e->rlen);
  return 0;
}

/* Finds key's live entry; an expired one is unlinked into *gone (the caller drops it). */
static entry_t *find_live(zv_stripe_t *s, uint32_t h, const char *key, size_t klen, uint64_t now,
                          entry_t **gone) {
  entry_t *e = find(s, h, key, klen);
  if (e && expired(e, now)) {
    unlink_entry(s, e);
    *gone = e;
    return NULL;
  }
  return e;
}

int zv_idem_begin(zv_idem_t *t, const char *key, size_t klen, const char *fp, size_t flen,
                  uint64_t ttl_ns, uint64_t pending_ns, uint64_t now_ns, char *buf, size_t cap,
                  zv_idem_begin_t *r) {
  if (klen > ZV_IDEM_MAX_KEY) return ZV_ETOOLONG;
  size_t size = entry_size(klen, flen);
  if (flen > UINT32_MAX || size > t->max_bytes) return ZV_ETOOLONG;
  if (!now_ns) now_ns = zv_idem_clock();
  uint32_t h = zv_hash(key, klen);
  zv_stripe_t *s = zv_stripes_at(&t->stripes, h);
  entry_t *gone = NULL;
  int rc;

  zv_spin_lock(&s->lock);
  entry_t *e = find_live(s, h, key, klen, now_ns, &gone);
  if (e) rc = answer(s, e, fp, flen, now_ns, buf, cap, r);
  zv_spin_unlock(&s->lock);
  if (gone) drop_expired(t, gone);
  if (e) return rc;

  /* Absent: build the entry and take its slot with no stripe lock held, then look again. */
  entry_t *fresh = zv_alloc(size);
  if (!fresh) return ZV_ENOMEM;
  memset(fresh, 0, sizeof *fresh);
  fresh->n.hash = h;
  fresh->n.klen = (uint32_t)klen;
  FLEN(fresh) = (uint32_t)flen;
  fresh->state = PENDING;
  fresh->ttl_ns = ttl_ns;
  fresh->n.used_ns = now_ns;
  fresh->expires_ns = pending_ns ? now_ns + pending_ns : 0;
  memcpy(fresh->data, key, klen);
  if (flen) memcpy(fresh->data + klen, fp, flen);
  admit(t, size, 1, now_ns);

  gone = NULL;
  zv_spin_lock(&s->lock);
  e = find_live(s, h, key, klen, now_ns, &gone);
  if (e) {
    rc = answer(s, e, fp, flen, now_ns, buf, cap, r);
  } else {
    fresh->token = __atomic_add_fetch(&t->tokens, 1, __ATOMIC_RELAXED);
    zv_stripe_insert(s, &fresh->n);
    s->flagged++; /* PENDING */
    zv_stripe_grow(s);
    r->status = ZV_IDEM_RESERVED;
    r->token = fresh->token;
    r->len = 0;
    r->type = 0;
    rc = 0;
  }
  zv_spin_unlock(&s->lock);
  if (gone) drop_expired(t, gone);
  if (e) {
    drop(t, fresh); /* another thread reserved it meanwhile: give the slot back */
    return rc;
  }
  if (__atomic_add_fetch(&t->admissions, 1, __ATOMIC_RELAXED) % ADMIT_SWEEP_EVERY == 0) {
    int more;
    zv_idem_sweep(t, now_ns, ADMIT_SWEEP_STEPS, &more);
  }
  return 0;
}

int zv_idem_complete(zv_idem_t *t, const char *key, size_t klen, uint64_t token, int type,
                     const char *result, size_t rlen, uint64_t now_ns) {
  if (klen > ZV_IDEM_MAX_KEY) return ZV_ENOTFOUND;
  if (entry_size(klen, 0) + rlen > t->max_bytes) return ZV_ETOOLONG;
  if (!now_ns) now_ns = zv_idem_clock();
  char *copy = NULL;
  if (rlen) {
    if (!(copy = zv_alloc(rlen))) return ZV_ENOMEM;
    memcpy(copy, result, rlen);
  }
  admit(t, rlen, 0, now_ns);

  uint32_t h = zv_hash(key, klen);
  zv_stripe_t *s = zv_stripes_at(&t->stripes, h);
  entry_t *gone = NULL;
  int rc;
  zv_spin_lock(&s->lock);
  entry_t *e = find_live(s, h, key, klen, now_ns, &gone);
  if (!e || (token && e->token != token)) {
    rc = ZV_ENOTFOUND;
  } else if (e->state == COMPLETE) {
    rc = ZV_ECONFLICT;
  } else if (charged(e) + rlen > t->max_bytes) {
    rc = ZV_ETOOLONG;
  } else {
    e->result = copy;
    e->rlen = rlen;
    e->rtype = type;
    e->state = COMPLETE;
    e->expires_ns = e->ttl_ns ? now_ns + e->ttl_ns : 0;
    s->flagged--;
    touch(s, e, now_ns);
    copy = NULL;
    rc = 0;
  }
  zv_spin_unlock(&s->lock);
  if (gone) drop_expired(t, gone);
  if (rc) {
    __atomic_sub_fetch(&t->bytes, rlen, __ATOMIC_RELAXED);
    zv_free(copy);
  }
  return rc;
}

int zv_idem_forget(zv_idem_t *t, const char *key, size_t klen, uint64_t token, uint64_t now_ns,
                   int *existed) {
  *existed = 0;
  if (klen > ZV_IDEM_MAX_KEY) return 0;
  if (!now_ns) now_ns = zv_idem_clock();
  uint32_t h = zv_hash(key, klen);
  zv_stripe_t *s = zv_stripes_at(&t->stripes, h);
  zv_spin_lock(&s->lock);
  entry_t *e = find(s, h, key, klen);
  if (e && token && e->token != token) e = NULL;
  if (e) {
    *existed = !expired(e, now_ns);
    unlink_entry(s, e);
  }
  zv_spin_unlock(&s->lock);
  if (e) drop(t, e);
  return 0;
}

size_t zv_idem_sweep(zv_idem_t *t, uint64_t now_ns, size_t max_steps, int *more) {
  if (!now_ns) now_ns = zv_idem_clock();
  size_t removed =
      zv_stripes_sweep(&t->stripes, &t->sweep, &kind, now_ns, max_steps, more, drop_node, t);
  if (removed) __atomic_add_fetch(&t->expired, removed, __ATOMIC_RELAXED);
  return removed;
}

void zv_idem_clear(zv_idem_t *t) {
  zv_stripes_clear(&t->stripes, drop_node, t);
}

void zv_idem_stats(zv_idem_t *t, zv_idem_stats_t *out) {
  out->entries = zv_stripes_count(&t->stripes, &out->pending);
  out->bytes = __atomic_load_n(&t->bytes, __ATOMIC_RELAXED);
  out->max_keys = t->max_keys;
  out->max_bytes = t->max_bytes;
  out->evictions = __atomic_load_n(&t->evictions, __ATOMIC_RELAXED);
  out->expired = __atomic_load_n(&t->expired, __ATOMIC_RELAXED);
}

/* --- the fingerprint ------------------------------------------------------------------------ */

static inline uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

static inline void mix(uint64_t *a, uint64_t *b, uint64_t w) {
  *a = rotl((*a ^ w) * 0x9e3779b97f4a7c15ull, 29);
  *b = rotl(*b + (w ^ 0xc2b2ae3d27d4eb4full), 31) * 0x165667b19e3779f9ull;
}

void zv_idem_fingerprint(const char *const *parts, const size_t *lens, size_t n, char out[33]) {
  static const char hex[] = "0123456789abcdef";
  uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull;
  for (size_t i = 0; i < n; i++) {
    const unsigned char *p = (const unsigned char *)parts[i];
    size_t len = lens[i], j = 0;
    mix(&a, &b, (uint64_t)len ^ ((uint64_t)i << 56));
    for (; j + 8 <= len; j += 8) {
      uint64_t w;
      memcpy(&w, p + j, 8);
      mix(&a, &b, w);
    }
    if (j < len) {
      uint64_t w = 0;
      memcpy(&w, p + j, len - j);
      mix(&a, &b, w ^ ((uint64_t)(len - j) << 59));
    }
  }
  a = fmix(a ^ rotl(b, 17));
  b = fmix(b ^ a);
  for (int k = 0; k < 16; k++) {
    out[k] = hex[(a >> (60 - 4 * k)) & 15];
    out[16 + k] = hex[(b >> (60 - 4 * k)) & 15];
  }
  out[32] = '\0';
}

/* --- the registry: one table per name, shared by every worker thread ------------------------- */

static zv_registry_t tables = ZV_REGISTRY_INIT;

typedef struct {
  size_t max_keys, max_bytes;
} idem_opts_t;

static int idem_same(void *obj, const void *arg) {
  const zv_idem_t *t = obj;
  const idem_opts_t *o = arg;
  return t->max_keys == o->max_keys && t->max_bytes == o->max_bytes ? 0 : ZV_ECONFLICT;
}

static int idem_create(const void *arg, void **obj) {
  const idem_opts_t *o = arg;
  return zv_idem_new(o->max_keys, o->max_bytes, (zv_idem_t **)obj);
}

int zv_idem_open(const char *name, size_t max_keys, size_t max_bytes, zv_idem_t **out) {
  idem_opts_t o = {max_keys, max_bytes};
  if (max_keys == 0 || max_bytes == 0) return ZV_EINVAL;
  return zv_registry_open(&tables, name, idem_same, idem_create, &o, (void **)out);
}

void zv_idem_release(zv_idem_t *t) {
  if (zv_registry_release(&tables, t)) zv_idem_free(t);
}
