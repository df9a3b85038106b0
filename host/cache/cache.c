/*
 * cache.c: the striped, byte-budgeted, LRU-evicting table of cache.h and its process-wide
 * registry.
 *
 * It must not include Lua or libuv headers, must not allocate on reads, must never hold two
 * stripe locks at once, and frees entries only after dropping the stripe lock. Lock order:
 * evict or sweep lock -> one stripe lock.
 */
#include "cache.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "../core/registry.h"
#include "../core/spin.h"
#include "../core/zv.h"

#define INITIAL_BUCKETS 8
#define WRITE_SWEEP_EVERY 64
#define WRITE_SWEEP_STEPS 16

typedef struct entry {
  struct entry *next;     /* hash chain */
  struct entry *newer;    /* LRU list of the stripe */
  struct entry *older;
  uint64_t hash;
  uint64_t expires_ns;    /* 0: never */
  uint64_t used_ns;       /* last read or write: the LRU age across stripes */
  uint32_t klen;
  uint32_t vlen;
  int type;
  char data[];            /* key, then value */
} entry_t;

typedef union {
  struct {
    zv_spin_t lock;
    size_t mask;
    size_t count;
    unsigned writes;
    entry_t **buckets;
    entry_t *newest;
    entry_t *oldest;
  } s;
  char pad[128];
} stripe_t;

struct zv_cache_s {
  stripe_t stripes[ZV_CACHE_STRIPES];
  size_t max_bytes;
  size_t bytes;           /* atomic */
  uint64_t evictions;     /* atomic */
  uint64_t expired;       /* atomic */
  zv_spin_t evict;
  zv_spin_t sweep;
  unsigned sweep_stripe;  /* under the sweep lock */
  size_t sweep_bucket;
};

size_t zv_cache_overhead(void) {
  return sizeof(entry_t);
}

uint64_t zv_cache_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
}

static inline size_t entry_size(size_t klen, size_t vlen) {
  return sizeof(entry_t) + klen + vlen;
}

int zv_cache_new(size_t max_bytes, zv_cache_t **out) {
  if (max_bytes == 0) return ZV_EINVAL;
  zv_cache_t *c = zv_alloc(sizeof *c);
  if (!c) return ZV_ENOMEM;
  memset(c, 0, sizeof *c);
  for (int i = 0; i < ZV_CACHE_STRIPES; i++) {
    stripe_t *s = &c->stripes[i];
    s->s.buckets = zv_alloc(INITIAL_BUCKETS * sizeof *s->s.buckets);
    if (!s->s.buckets) {
      zv_cache_free(c);
      return ZV_ENOMEM;
    }
    memset(s->s.buckets, 0, INITIAL_BUCKETS * sizeof *s->s.buckets);
    s->s.mask = INITIAL_BUCKETS - 1;
  }
  c->max_bytes = max_bytes;
  *out = c;
  return 0;
}

static void free_entries(zv_cache_t *c) {
  for (int i = 0; i < ZV_CACHE_STRIPES; i++) {
    stripe_t *s = &c->stripes[i];
    for (entry_t *e = s->s.newest, *next; e; e = next) {
      next = e->older;
      zv_free(e);
    }
  }
}

void zv_cache_free(zv_cache_t *c) {
  if (!c) return;
  free_entries(c);
  for (int i = 0; i < ZV_CACHE_STRIPES; i++) zv_free(c->stripes[i].s.buckets);
  zv_free(c);
}

/* --- one stripe (its lock held) ------------------------------------------------------------- */

static inline entry_t *find(stripe_t *s, uint64_t h, const char *key, size_t klen) {
  for (entry_t *e = s->s.buckets[(h >> 6) & s->s.mask]; e; e = e->next)
    if (e->hash == h && e->klen == klen && memcmp(e->data, key, klen) == 0) return e;
  return NULL;
}

static inline void lru_unlink(stripe_t *s, entry_t *e) {
  if (e->newer) e->newer->older = e->older;
  else s->s.newest = e->older;
  if (e->older) e->older->newer = e->newer;
  else s->s.oldest = e->newer;
}

static inline void lru_push(stripe_t *s, entry_t *e) {
  e->newer = NULL;
  e->older = s->s.newest;
  if (s->s.newest) s->s.newest->newer = e;
  else s->s.oldest = e;
  s->s.newest = e;
}

static inline void touch(stripe_t *s, entry_t *e, uint64_t now) {
  if (now > e->used_ns) e->used_ns = now;
  if (s->s.newest == e) return;
  lru_unlink(s, e);
  lru_push(s, e);
}

static inline int expired(const entry_t *e, uint64_t now) {
  return e->expires_ns && now >= e->expires_ns;
}

/* Unlinks e; the caller frees it after unlocking and calls uncharge(). */
static void unlink_entry(stripe_t *s, entry_t *e) {
  entry_t **pp = &s->s.buckets[(e->hash >> 6) & s->s.mask];
  while (*pp != e) pp = &(*pp)->next;
  *pp = e->next;
  lru_unlink(s, e);
  s->s.count--;
}

static void insert(stripe_t *s, entry_t *e) {
  entry_t **slot = &s->s.buckets[(e->hash >> 6) & s->s.mask];
  e->next = *slot;
  *slot = e;
  lru_push(s, e);
  s->s.count++;
}

static void maybe_grow(stripe_t *s) {
  size_t n = s->s.mask + 1;
  if (s->s.count <= n) return;
  entry_t **nb = zv_alloc(2 * n * sizeof *nb);
  if (!nb) return;
  memset(nb, 0, 2 * n * sizeof *nb);
  size_t mask = 2 * n - 1;
  for (size_t i = 0; i < n; i++) {
    for (entry_t *e = s->s.buckets[i], *next; e; e = next) {
      next = e->next;
      entry_t **slot = &nb[(e->hash >> 6) & mask];
      e->next = *slot;
      *slot = e;
    }
  }
  zv_free(s->s.buckets);
  s->s.buckets = nb;
  s->s.mask = mask;
}

static inline void uncharge(zv_cache_t *c, entry_t *e) {
  __atomic_sub_fetch(&c->bytes, entry_size(e->klen, e->vlen), __ATOMIC_RELAXED);
  zv_free(e);
}

/* --- budget --------------------------------------------------------------------------------- */

/* Evicts least recently used entries across stripes until the charged bytes fit the budget. */
static void evict(zv_cache_t *c) {
  zv_spin_lock(&c->evict);
  while (__atomic_load_n(&c->bytes, __ATOMIC_RELAXED) > c->max_bytes) {
    int victim = -1;
    uint64_t oldest = UINT64_MAX;
    for (int i = 0; i < ZV_CACHE_STRIPES; i++) {
      stripe_t *s = &c->stripes[i];
      zv_spin_lock(&s->s.lock);
      if (s->s.oldest && s->s.oldest->used_ns <= oldest) {
        oldest = s->s.oldest->used_ns;
        victim = i;
      }
      zv_spin_unlock(&s->s.lock);
    }
    if (victim < 0) break; /* only reservations in flight: they land over budget, briefly */
    stripe_t *s = &c->stripes[victim];
    entry_t *e;
    zv_spin_lock(&s->s.lock);
    e = s->s.oldest;
    if (e) unlink_entry(s, e);
    zv_spin_unlock(&s->s.lock);
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

#define STRIPE(c, h) (&(c)->stripes[(h) & (ZV_CACHE_STRIPES - 1)])

int zv_cache_get(zv_cache_t *c, const char *key, size_t klen, uint64_t now_ns, char *buf,
                 size_t cap, size_t *len, int *type) {
  if (klen > ZV_CACHE_MAX_KEY) return ZV_ENOTFOUND;
  if (!now_ns) now_ns = zv_cache_clock();
  uint64_t h = zv_fnv1a(key, klen);
  stripe_t *s = STRIPE(c, h);
  zv_spin_lock(&s->s.lock);
  entry_t *e = find(s, h, key, klen);
  if (e && expired(e, now_ns)) {
    unlink_entry(s, e);
    zv_spin_unlock(&s->s.lock);
    uncharge(c, e);
    __atomic_add_fetch(&c->expired, 1, __ATOMIC_RELAXED);
    return ZV_ENOTFOUND;
  }
  if (!e) {
    zv_spin_unlock(&s->s.lock);
    return ZV_ENOTFOUND;
  }
  touch(s, e, now_ns);
  *len = e->vlen;
  *type = e->type;
  if (e->vlen > cap) {
    zv_spin_unlock(&s->s.lock);
    return ZV_ERANGE;
  }
  memcpy(buf, e->data + e->klen, e->vlen);
  zv_spin_unlock(&s->s.lock);
  return 0;
}

static void after_write(zv_cache_t *c, stripe_t *s, uint64_t now_ns) {
  if (__atomic_add_fetch(&s->s.writes, 1, __ATOMIC_RELAXED) % WRITE_SWEEP_EVERY == 0) {
    int more;
    zv_cache_sweep(c, now_ns, WRITE_SWEEP_STEPS, &more);
  }
}

int zv_cache_set(zv_cache_t *c, const char *key, size_t klen, int type, const char *value,
                 size_t vlen, uint64_t ttl_ns, uint64_t now_ns, int mode) {
  size_t size = entry_size(klen, vlen);
  if (klen > ZV_CACHE_MAX_KEY || vlen > UINT32_MAX || size > c->max_bytes) return ZV_ETOOLONG;
  if (!now_ns) now_ns = zv_cache_clock();
  entry_t *e = zv_alloc(size);
  if (!e) return ZV_ENOMEM;
  e->hash = zv_fnv1a(key, klen);
  e->expires_ns = ttl_ns ? now_ns + ttl_ns : 0;
  e->used_ns = now_ns;
  e->klen = (uint32_t)klen;
  e->vlen = (uint32_t)vlen;
  e->type = type;
  memcpy(e->data, key, klen);
  if (vlen) memcpy(e->data + klen, value, vlen);
  reserve(c, size);
  stripe_t *s = STRIPE(c, e->hash);
  zv_spin_lock(&s->s.lock);
  entry_t *old = find(s, e->hash, key, klen);
  if (old && mode == ZV_CACHE_ADD && !expired(old, now_ns)) {
    zv_spin_unlock(&s->s.lock);
    uncharge(c, e);
    return ZV_ECONFLICT;
  }
  if (old) unlink_entry(s, old);
  insert(s, e);
  maybe_grow(s);
  zv_spin_unlock(&s->s.lock);
  if (old) uncharge(c, old);
  after_write(c, s, now_ns);
  return 0;
}

int zv_cache_delete(zv_cache_t *c, const char *key, size_t klen, uint64_t now_ns, int *existed) {
  if (!now_ns) now_ns = zv_cache_clock();
  *existed = 0;
  if (klen > ZV_CACHE_MAX_KEY) return 0;
  uint64_t h = zv_fnv1a(key, klen);
  stripe_t *s = STRIPE(c, h);
  zv_spin_lock(&s->s.lock);
  entry_t *e = find(s, h, key, klen);
  if (e) {
    *existed = !expired(e, now_ns);
    unlink_entry(s, e);
  }
  zv_spin_unlock(&s->s.lock);
  if (e) uncharge(c, e);
  return 0;
}

int zv_cache_exists(zv_cache_t *c, const char *key, size_t klen, uint64_t now_ns, int *exists) {
  if (!now_ns) now_ns = zv_cache_clock();
  *exists = 0;
  if (klen > ZV_CACHE_MAX_KEY) return 0;
  uint64_t h = zv_fnv1a(key, klen);
  stripe_t *s = STRIPE(c, h);
  zv_spin_lock(&s->s.lock);
  entry_t *e = find(s, h, key, klen);
  if (e && expired(e, now_ns)) {
    unlink_entry(s, e);
    zv_spin_unlock(&s->s.lock);
    uncharge(c, e);
    __atomic_add_fetch(&c->expired, 1, __ATOMIC_RELAXED);
    return 0;
  }
  *exists = e != NULL;
  zv_spin_unlock(&s->s.lock);
  return 0;
}

/* Adds n to a live number entry; returns 1 when done, 0 when absent, ZV_EINVAL if not a number. */
static int incr_locked(stripe_t *s, entry_t *e, double n, double *out) {
  double v;
  if (e->type != ZV_CACHE_NUMBER || e->vlen != sizeof v) return ZV_EINVAL;
  memcpy(&v, e->data + e->klen, sizeof v);
  v += n;
  memcpy(e->data + e->klen, &v, sizeof v);
  (void)s;
  *out = v;
  return 1;
}

int zv_cache_incr(zv_cache_t *c, const char *key, size_t klen, double n, uint64_t ttl_ns,
                  uint64_t now_ns, double *out) {
  if (klen > ZV_CACHE_MAX_KEY) return ZV_ETOOLONG;
  if (!now_ns) now_ns = zv_cache_clock();
  uint64_t h = zv_fnv1a(key, klen);
  stripe_t *s = STRIPE(c, h);
  entry_t *gone = NULL;
  int rc = 0;
  zv_spin_lock(&s->s.lock);
  entry_t *e = find(s, h, key, klen);
  if (e && expired(e, now_ns)) {
    unlink_entry(s, e);
    gone = e;
    e = NULL;
  }
  if (e) {
    rc = incr_locked(s, e, n, out);
    if (rc == 1) touch(s, e, now_ns);
  }
  zv_spin_unlock(&s->s.lock);
  if (gone) uncharge(c, gone);
  if (e) return rc < 0 ? rc : 0;

  /* Missing: build the entry unlocked, then look again in case another thread created it. */
  size_t size = entry_size(klen, sizeof(double));
  if (size > c->max_bytes) return ZV_ETOOLONG;
  entry_t *fresh = zv_alloc(size);
  if (!fresh) return ZV_ENOMEM;
  fresh->hash = h;
  fresh->expires_ns = ttl_ns ? now_ns + ttl_ns : 0;
  fresh->used_ns = now_ns;
  fresh->klen = (uint32_t)klen;
  fresh->vlen = sizeof(double);
  fresh->type = ZV_CACHE_NUMBER;
  memcpy(fresh->data, key, klen);
  memcpy(fresh->data + klen, &n, sizeof n);
  reserve(c, size);
  zv_spin_lock(&s->s.lock);
  e = find(s, h, key, klen);
  gone = NULL;
  if (e && expired(e, now_ns)) {
    unlink_entry(s, e);
    gone = e;
    e = NULL;
  }
  if (e) {
    rc = incr_locked(s, e, n, out);
    if (rc == 1) touch(s, e, now_ns);
  } else {
    insert(s, fresh);
    maybe_grow(s);
    *out = n;
  }
  zv_spin_unlock(&s->s.lock);
  if (gone) uncharge(c, gone);
  if (e) {
    uncharge(c, fresh);
    return rc < 0 ? rc : 0;
  }
  after_write(c, s, now_ns);
  return 0;
}

size_t zv_cache_sweep(zv_cache_t *c, uint64_t now_ns, size_t max_steps, int *more) {
  size_t removed = 0, steps = 0;
  entry_t *dead[16];
  if (!now_ns) now_ns = zv_cache_clock();
  *more = 1;
  zv_spin_lock(&c->sweep);
  while (steps < max_steps) {
    stripe_t *s = &c->stripes[c->sweep_stripe];
    size_t ndead = 0;
    int next_stripe = 0;
    zv_spin_lock(&s->s.lock);
    if (c->sweep_bucket > s->s.mask) {
      next_stripe = 1;
    } else {
      entry_t **pp = &s->s.buckets[c->sweep_bucket];
      while (*pp) {
        entry_t *e = *pp;
        if (expired(e, now_ns) && ndead < ZV_ARRAY_SIZE(dead)) {
          *pp = e->next;
          lru_unlink(s, e);
          s->s.count--;
          dead[ndead++] = e;
        } else {
          pp = &e->next;
        }
      }
      /* A chain with more than 16 expired entries is finished by the next visit. */
      if (ndead < ZV_ARRAY_SIZE(dead)) c->sweep_bucket++;
      steps++;
    }
    zv_spin_unlock(&s->s.lock);
    for (size_t i = 0; i < ndead; i++) uncharge(c, dead[i]);
    removed += ndead;
    if (next_stripe) {
      c->sweep_bucket = 0;
      if (++c->sweep_stripe == ZV_CACHE_STRIPES) {
        c->sweep_stripe = 0;
        *more = 0;
        break;
      }
    }
  }
  zv_spin_unlock(&c->sweep);
  if (removed) __atomic_add_fetch(&c->expired, removed, __ATOMIC_RELAXED);
  return removed;
}

void zv_cache_clear(zv_cache_t *c) {
  for (int i = 0; i < ZV_CACHE_STRIPES; i++) {
    stripe_t *s = &c->stripes[i];
    entry_t *list;
    zv_spin_lock(&s->s.lock);
    list = s->s.newest;
    memset(s->s.buckets, 0, (s->s.mask + 1) * sizeof *s->s.buckets);
    s->s.newest = s->s.oldest = NULL;
    s->s.count = 0;
    zv_spin_unlock(&s->s.lock);
    for (entry_t *e = list, *next; e; e = next) {
      next = e->older;
      uncharge(c, e);
    }
  }
}

void zv_cache_stats(zv_cache_t *c, zv_cache_stats_t *out) {
  size_t n = 0;
  for (int i = 0; i < ZV_CACHE_STRIPES; i++) {
    stripe_t *s = &c->stripes[i];
    zv_spin_lock(&s->s.lock);
    n += s->s.count;
    zv_spin_unlock(&s->s.lock);
  }
  out->entries = n;
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
