/*
 * cache.c: the byte-budgeted, LRU-evicting table of cache.h over the shared striped table of
 * core/stripes.h, and its process-wide registry.
 *
 * It must not include Lua or libuv headers, must not allocate on reads, must never hold two
 * stripe locks at once, and frees entries only after dropping the stripe lock. Lock order:
 * evict or sweep lock -> one stripe lock.
 */
#include "cache.h"

#include <string.h>

#include "../core/registry.h"
#include "../core/spin.h"
#include "../core/stripes.h"
#include "../core/zv.h"

#define WRITE_SWEEP_EVERY 64
#define WRITE_SWEEP_STEPS 16

typedef struct entry {
  zv_stripe_node_t n;     /* chain, LRU links, hash, used_ns (last read or write), klen, vlen */
  uint64_t expires_ns;    /* 0: never */
  int type;
  char data[];            /* key, then value */
} entry_t;

#define VLEN(e) ((e)->n.aux)
#define KEY_OFF offsetof(entry_t, data)

struct zv_cache_s {
  zv_stripes_t stripes;
  size_t max_bytes;
  size_t bytes;           /* atomic */
  uint64_t evictions;     /* atomic */
  uint64_t expired;       /* atomic */
  zv_spin_t evict;
  zv_stripe_cursor_t sweep;
};

/* cache.h promises 64 stripes: the shared table has that many. */
typedef char stripes_match[ZV_CACHE_STRIPES == ZV_STRIPES ? 1 : -1];

static const zv_stripe_kind_t kind = {offsetof(entry_t, expires_ns), NULL, 0};

size_t zv_cache_overhead(void) {
  return sizeof(entry_t);
}

uint64_t zv_cache_clock(void) {
  return zv_stripe_clock();
}

static inline size_t entry_size(size_t klen, size_t vlen) {
  return sizeof(entry_t) + klen + vlen;
}

int zv_cache_new(size_t max_bytes, zv_cache_t **out) {
  if (max_bytes == 0) return ZV_EINVAL;
  zv_cache_t *c = zv_alloc(sizeof *c);
  if (!c) return ZV_ENOMEM;
  memset(c, 0, sizeof *c);
  if (zv_stripes_init(&c->stripes)) {
    zv_cache_free(c);
    return ZV_ENOMEM;
  }
  c->max_bytes = max_bytes;
  *out = c;
  return 0;
}

static void free_entry(zv_stripe_node_t *n) {
  zv_free(n);
}

void zv_cache_free(zv_cache_t *c) {
  if (!c) return;
  zv_stripes_free(&c->stripes, free_entry);
  zv_free(c);
}

/* --- one stripe (its lock held) ------------------------------------------------------------- */

static inline entry_t *find(zv_stripe_t *s, uint64_t h, const char *key, size_t klen) {
  return (entry_t *)zv_stripe_find(s, h, key, klen, KEY_OFF);
}

static inline void touch(zv_stripe_t *s, entry_t *e, uint64_t now) {
  if (now > e->n.used_ns) e->n.used_ns = now;
  zv_stripe_touch(s, &e->n);
}

static inline int expired(const entry_t *e, uint64_t now) {
  return e->expires_ns && now >= e->expires_ns;
}

static inline void uncharge(zv_cache_t *c, entry_t *e) {
  __atomic_sub_fetch(&c->bytes, entry_size(e->n.klen, VLEN(e)), __ATOMIC_RELAXED);
  zv_free(e);
}

static void drop(void *ctx, zv_stripe_node_t *n) {
  uncharge(ctx, (entry_t *)n);
}

/* Uncharges an expired entry found by a read and counts it. */
static void expire(zv_cache_t *c, entry_t *e) {
  uncharge(c, e);
  __atomic_add_fetch(&c->expired, 1, __ATOMIC_RELAXED);
}

/* --- budget --------------------------------------------------------------------------------- */

/* Evicts least recently used entries across stripes until the charged bytes fit the budget. */
static void evict(zv_cache_t *c) {
  zv_spin_lock(&c->evict);
  while (__atomic_load_n(&c->bytes, __ATOMIC_RELAXED) > c->max_bytes) {
    int victim = zv_stripes_oldest(&c->stripes, &kind, 0, 0);
    if (victim < 0) break; /* only reservations in flight: they land over budget, briefly */
    entry_t *e = (entry_t *)zv_stripes_pop_oldest(&c->stripes, &kind, victim);
    if (e) {
      uncharge(c, e);
      __atomic_add_fetch(&c->evictions, 1, __ATOMIC_RELAXED);
    }
  }
  zv_spin_unlock(&c->evict);
}

/* Charges size bytes, evicting first when they would not fit. */
static void reserve(zv_cache_t *c, size_t size) {
  if (__atomic_add_fetch(&c->bytes, size, __ATOMIC_RELAXED) > c->max_bytes) evict(c);
}

/* --- operations ----------------------------------------------------------------------------- */

/* Finds key's live entry, lock held; an expired one is unlinked into *gone (uncharge it). */
static inline entry_t *find_live(zv_stripe_t *s, uint64_t h, const char *key, size_t klen,
                                 uint64_t now, entry_t **gone) {
  entry_t *e = find(s, h, key, klen);
  *gone = NULL;
  if (e && expired(e, now)) {
    zv_stripe_unlink(s, &e->n);
    *gone = e;
    return NULL;
  }
  return e;
}

int zv_cache_get(zv_cache_t *c, const char *key, size_t klen, uint64_t now_ns, char *buf,
                 size_t cap, size_t *len, int *type) {
  if (klen > ZV_CACHE_MAX_KEY) return ZV_ENOTFOUND;
  if (!now_ns) now_ns = zv_cache_clock();
  uint64_t h = zv_hash64(key, klen);
  zv_stripe_t *s = zv_stripes_at(&c->stripes, h);
  entry_t *gone;
  zv_spin_lock(&s->lock);
  entry_t *e = find_live(s, h, key, klen, now_ns, &gone);
  if (!e) {
    zv_spin_unlock(&s->lock);
    if (gone) expire(c, gone);
    return ZV_ENOTFOUND;
  }
  touch(s, e, now_ns);
  *len = VLEN(e);
  *type = e->type;
  if (VLEN(e) > cap) {
    zv_spin_unlock(&s->lock);
    return ZV_ERANGE;
  }
  memcpy(buf, e->data + e->n.klen, VLEN(e));
  zv_spin_unlock(&s->lock);
  return 0;
}

static void after_write(zv_cache_t *c, zv_stripe_t *s, uint64_t now_ns) {
  if (__atomic_add_fetch(&s->writes, 1, __ATOMIC_RELAXED) % WRITE_SWEEP_EVERY == 0) {
    int more;
    zv_cache_sweep(c, now_ns, WRITE_SWEEP_STEPS, &more);
  }
}

/* A new entry, not linked yet; its bytes are not charged yet. NULL when malloc fails. */
static inline entry_t *new_entry(uint64_t h, const char *key, size_t klen, int type,
                                 const char *value, size_t vlen, uint64_t ttl_ns,
                                 uint64_t now_ns) {
  entry_t *e = zv_alloc(entry_size(klen, vlen));
  if (!e) return NULL;
  e->n.hash = h;
  e->n.used_ns = now_ns;
  e->n.klen = (uint32_t)klen;
  VLEN(e) = (uint32_t)vlen;
  e->expires_ns = ttl_ns ? now_ns + ttl_ns : 0;
  e->type = type;
  memcpy(e->data, key, klen);
  if (vlen) memcpy(e->data + klen, value, vlen);
  return e;
}

int zv_cache_set(zv_cache_t *c, const char *key, size_t klen, int type, const char *value,
                 size_t vlen, uint64_t ttl_ns, uint64_t now_ns, int mode) {
  size_t size = entry_size(klen, vlen);
  if (klen > ZV_CACHE_MAX_KEY || vlen > UINT32_MAX || size > c->max_bytes) return ZV_ETOOLONG;
  if (!now_ns) now_ns = zv_cache_clock();
  entry_t *e = new_entry(zv_hash64(key, klen), key, klen, type, value, vlen, ttl_ns, now_ns);
  if (!e) return ZV_ENOMEM;
  reserve(c, size);
  zv_stripe_t *s = zv_stripes_at(&c->stripes, e->n.hash);
  zv_spin_lock(&s->lock);
  entry_t *old = find(s, e->n.hash, key, klen);
  if (old && mode == ZV_CACHE_ADD && !expired(old, now_ns)) {
    zv_spin_unlock(&s->lock);
    uncharge(c, e);
    return ZV_ECONFLICT;
  }
  if (old) zv_stripe_unlink(s, &old->n);
  zv_stripe_insert(s, &e->n);
  zv_stripe_grow(s);
  zv_spin_unlock(&s->lock);
  if (old) uncharge(c, old);
  after_write(c, s, now_ns);
  return 0;
}

int zv_cache_delete(zv_cache_t *c, const char *key, size_t klen, uint64_t now_ns, int *existed) {
  if (!now_ns) now_ns = zv_cache_clock();
  *existed = 0;
  if (klen > ZV_CACHE_MAX_KEY) return 0;
  uint64_t h = zv_hash64(key, klen);
  zv_stripe_t *s = zv_stripes_at(&c->stripes, h);
  zv_spin_lock(&s->lock);
  entry_t *e = find(s, h, key, klen);
  if (e) {
    *existed = !expired(e, now_ns);
    zv_stripe_unlink(s, &e->n);
  }
  zv_spin_unlock(&s->lock);
  if (e) uncharge(c, e);
  return 0;
}

int zv_cache_exists(zv_cache_t *c, const char *key, size_t klen, uint64_t now_ns, int *exists) {
  if (!now_ns) now_ns = zv_cache_clock();
  *exists = 0;
  if (klen > ZV_CACHE_MAX_KEY) return 0;
  uint64_t h = zv_hash64(key, klen);
  zv_stripe_t *s = zv_stripes_at(&c->stripes, h);
  entry_t *gone;
  zv_spin_lock(&s->lock);
  entry_t *e = find_live(s, h, key, klen, now_ns, &gone);
  *exists = e != NULL;
  zv_spin_unlock(&s->lock);
  if (gone) expire(c, gone);
  return 0;
}

/* Adds n to a live number entry; returns 1 when done, ZV_EINVAL if it is not a number. */
static int incr_locked(entry_t *e, double n, double *out) {
  double v;
  if (e->type != ZV_CACHE_NUMBER || VLEN(e) != sizeof v) return ZV_EINVAL;
  memcpy(&v, e->data + e->n.klen, sizeof v);
  v += n;
  memcpy(e->data + e->n.klen, &v, sizeof v);
  *out = v;
  return 1;
}

/*
 * zv_cache_incr on a missing key: builds the entry unlocked, then looks again in case another
 * thread created it meanwhile. Kept apart so that the hit path stays short.
 */
static __attribute__((noinline)) int incr_create(zv_cache_t *c, zv_stripe_t *s, uint64_t h,
                                                const char *key, size_t klen, double n,
                                                uint64_t ttl_ns, uint64_t now_ns, double *out) {
  size_t size = entry_size(klen, sizeof(double));
  entry_t *gone;
  int rc = 0;
  if (size > c->max_bytes) return ZV_ETOOLONG;
  entry_t *fresh = new_entry(h, key, klen, ZV_CACHE_NUMBER, (const char *)&n, sizeof n, ttl_ns,
                             now_ns);
  if (!fresh) return ZV_ENOMEM;
  reserve(c, size);
  zv_spin_lock(&s->lock);
  entry_t *e = find_live(s, h, key, klen, now_ns, &gone);
  if (e) {
    rc = incr_locked(e, n, out);
    if (rc == 1) touch(s, e, now_ns);
  } else {
    zv_stripe_insert(s, &fresh->n);
    zv_stripe_grow(s);
    *out = n;
  }
  zv_spin_unlock(&s->lock);
  if (gone) uncharge(c, gone);
  if (e) {
    uncharge(c, fresh);
    return rc < 0 ? rc : 0;
  }
  after_write(c, s, now_ns);
  return 0;
}

int zv_cache_incr(zv_cache_t *c, const char *key, size_t klen, double n, uint64_t ttl_ns,
                  uint64_t now_ns, double *out) {
  if (klen > ZV_CACHE_MAX_KEY) return ZV_ETOOLONG;
  if (!now_ns) now_ns = zv_cache_clock();
  uint64_t h = zv_hash64(key, klen);
  zv_stripe_t *s = zv_stripes_at(&c->stripes, h);
  entry_t *gone;
  int rc = 0;
  zv_spin_lock(&s->lock);
  entry_t *e = find_live(s, h, key, klen, now_ns, &gone);
  if (e) {
    rc = incr_locked(e, n, out);
    if (rc == 1) touch(s, e, now_ns);
  }
  zv_spin_unlock(&s->lock);
  if (gone) uncharge(c, gone);
  if (e) return rc < 0 ? rc : 0;
  return incr_create(c, s, h, key, klen, n, ttl_ns, now_ns, out);
}

size_t zv_cache_sweep(zv_cache_t *c, uint64_t now_ns, size_t max_steps, int *more) {
  if (!now_ns) now_ns = zv_cache_clock();
  size_t removed =
      zv_stripes_sweep(&c->stripes, &c->sweep, &kind, now_ns, max_steps, more, drop, c);
  if (removed) __atomic_add_fetch(&c->expired, removed, __ATOMIC_RELAXED);
  return removed;
}

void zv_cache_clear(zv_cache_t *c) {
  zv_stripes_clear(&c->stripes, drop, c);
}

void zv_cache_stats(zv_cache_t *c, zv_cache_stats_t *out) {
  out->entries = zv_stripes_count(&c->stripes, NULL);
  out->bytes = __atomic_load_n(&c->bytes, __ATOMIC_RELAXED);
  out->max_bytes = c->max_bytes;
  out->evictions = __atomic_load_n(&c->evictions, __ATOMIC_RELAXED);
  out->expired = __atomic_load_n(&c->expired, __ATOMIC_RELAXED);
}

/* --- the registry: one cache per name, shared by every worker thread ------------------------- */

static zv_registry_t caches = ZV_REGISTRY_INIT;

static int cache_same(void *obj, const void *arg) {
  return ((zv_cache_t *)obj)->max_bytes == *(const size_t *)arg ? 0 : ZV_ECONFLICT;
}

static int cache_create(const void *arg, void **obj) {
  return zv_cache_new(*(const size_t *)arg, (zv_cache_t **)obj);
}

int zv_cache_open(const char *name, size_t max_bytes, zv_cache_t **out) {
  if (max_bytes == 0) return ZV_EINVAL;
  return zv_registry_open(&caches, name, cache_same, cache_create, &max_bytes, (void **)out);
}

void zv_cache_release(zv_cache_t *c) {
  if (zv_registry_release(&caches, c)) zv_cache_free(c);
}
