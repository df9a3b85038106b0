/*
 * lock.c: the leases of lock.h over the shared striped table of core/stripes.h, and their
 * process-wide registry.
 *
 * It must not include Lua or libuv headers, must not allocate on a call for a key that has an
 * entry, and never holds two stripe locks at once.
 */
#include "lock.h"

#include <string.h>

#include "../core/registry.h"
#include "../core/spin.h"
#include "../core/stripes.h"
#include "../core/zv.h"

#define ADMIT_SWEEP_STEPS 8
/* How long a released key's entry stays for reuse before a sweep may drop it. */
#define KEEP_NS 10000000000ull

typedef struct entry {
  zv_stripe_node_t n;   /* chain, LRU links, hash, klen */
  uint64_t expires_ns;  /* the lease's end; once released, the end of the entry's keep */
  uint64_t fence;       /* the holder's fence; 0 when free */
  char key[];
} entry_t;

struct zv_lock_s {
  zv_stripes_t stripes;
  zv_stripe_cursor_t cursor;
  char gap[64];
  uint64_t next_fence;  /* atomic; also the count of leases granted, plus one */
  uint64_t contended;   /* atomic */
  uint64_t expired;     /* atomic */
};

static const zv_stripe_kind_t kind = {offsetof(entry_t, expires_ns), NULL, 0};

uint64_t zv_lock_clock(void) {
  return zv_stripe_clock();
}

int zv_lock_new(zv_lock_t **out) {
  zv_lock_t *l = zv_alloc(sizeof *l);
  if (!l) return ZV_ENOMEM;
  memset(l, 0, sizeof *l);
  l->next_fence = 1;
  if (zv_stripes_init(&l->stripes)) {
    zv_lock_free(l);
    return ZV_ENOMEM;
  }
  *out = l;
  return 0;
}

static void free_entry(zv_stripe_node_t *n) {
  zv_free(n);
}

void zv_lock_free(zv_lock_t *l) {
  if (!l) return;
  zv_stripes_free(&l->stripes, free_entry);
  zv_free(l);
}

static inline entry_t *find(zv_stripe_t *s, uint64_t h, const char *key, size_t len) {
  return (entry_t *)zv_stripe_find(s, h, key, len, offsetof(entry_t, key));
}

static inline int live(const entry_t *e, uint64_t now) {
  return e->fence != 0 && now < e->expires_ns;
}

/* Grants the lease on e (lock held). */
static inline void grant(zv_lock_t *l, entry_t *e, uint64_t ttl_ns, uint64_t now,
                         uint64_t *fence) {
  e->fence = __atomic_fetch_add(&l->next_fence, 1, __ATOMIC_RELAXED);
  e->expires_ns = ttl_ns > UINT64_MAX - now ? UINT64_MAX : now + ttl_ns;
  e->n.used_ns = now;
  *fence = e->fence;
}

int zv_lock_acquire(zv_lock_t *l, const char *key, size_t len, uint64_t ttl_ns, uint64_t now_ns,
                    uint64_t *fence) {
  if (len > ZV_LOCK_MAX_KEY) return ZV_ETOOLONG;
  if (!ttl_ns) return ZV_EINVAL;
  if (!now_ns) now_ns = zv_lock_clock();
  uint64_t h = zv_hash64(key, len);
  zv_stripe_t *s = zv_stripes_at(&l->stripes, h);
  int rc = 0;
  zv_spin_lock(&s->lock);
  entry_t *e = find(s, h, key, len);
  if (e) {
    if (live(e, now_ns)) rc = ZV_LOCK_BUSY;
    else grant(l, e, ttl_ns, now_ns, fence);
    zv_spin_unlock(&s->lock);
    if (rc) __atomic_add_fetch(&l->contended, 1, __ATOMIC_RELAXED);
    return rc;
  }
  zv_spin_unlock(&s->lock);

  /* A new key: allocate with no lock held, then look again (another thread may have won). */
  entry_t *fresh = zv_alloc(sizeof *fresh + len);
  if (!fresh) return ZV_ENOMEM;
  zv_spin_lock(&s->lock);
  e = find(s, h, key, len);
  if (e) {
    if (live(e, now_ns)) rc = ZV_LOCK_BUSY;
    else grant(l, e, ttl_ns, now_ns, fence);
  } else {
    fresh->n.hash = h;
    fresh->n.klen = (uint32_t)len;
    fresh->n.aux = 0;
    memcpy(fresh->key, key, len);
    grant(l, fresh, ttl_ns, now_ns, fence);
    zv_stripe_insert(s, &fresh->n);
    zv_stripe_grow(s);
    fresh = NULL;
  }
  zv_spin_unlock(&s->lock);
  zv_free(fresh);
  if (rc) __atomic_add_fetch(&l->contended, 1, __ATOMIC_RELAXED);
  int more;
  zv_lock_sweep(l, now_ns, ADMIT_SWEEP_STEPS, &more);
  return rc;
}

int zv_lock_extend(zv_lock_t *l, const char *key, size_t len, uint64_t fence, uint64_t ttl_ns,
                   uint64_t now_ns) {
  if (len > ZV_LOCK_MAX_KEY) return ZV_ETOOLONG;
  if (!ttl_ns) return ZV_EINVAL;
  if (!now_ns) now_ns = zv_lock_clock();
  uint64_t h = zv_hash64(key, len);
  zv_stripe_t *s = zv_stripes_at(&l->stripes, h);
  int rc = ZV_LOCK_NOT_HELD;
  zv_spin_lock(&s->lock);
  entry_t *e = find(s, h, key, len);
  if (e && fence && e->fence == fence && live(e, now_ns)) {
    e->expires_ns = ttl_ns > UINT64_MAX - now_ns ? UINT64_MAX : now_ns + ttl_ns;
    rc = 0;
  }
  zv_spin_unlock(&s->lock);
  return rc;
}

int zv_lock_unlock(zv_lock_t *l, const char *key, size_t len, uint64_t fence, uint64_t now_ns) {
  if (len > ZV_LOCK_MAX_KEY) return ZV_ETOOLONG;
  if (!now_ns) now_ns = zv_lock_clock();
  uint64_t h = zv_hash64(key, len);
  zv_stripe_t *s = zv_stripes_at(&l->stripes, h);
  int rc = ZV_LOCK_NOT_HELD;
  zv_spin_lock(&s->lock);
  entry_t *e = find(s, h, key, len);
  if (e && fence && e->fence == fence && live(e, now_ns)) {
    /* Free, but kept a while: taking the key again soon allocates nothing. */
    e->fence = 0;
    e->expires_ns = KEEP_NS > UINT64_MAX - now_ns ? UINT64_MAX : now_ns + KEEP_NS;
    rc = 0;
  }
  zv_spin_unlock(&s->lock);
  return rc;
}

int zv_lock_holder(zv_lock_t *l, const char *key, size_t len, uint64_t now_ns, uint64_t *fence,
                   uint64_t *left_ns) {
  if (len > ZV_LOCK_MAX_KEY) return ZV_ETOOLONG;
  if (!now_ns) now_ns = zv_lock_clock();
  uint64_t h = zv_hash64(key, len);
  zv_stripe_t *s = zv_stripes_at(&l->stripes, h);
  *fence = 0;
  *left_ns = 0;
  zv_spin_lock(&s->lock);
  entry_t *e = find(s, h, key, len);
  if (e && live(e, now_ns)) {
    *fence = e->fence;
    *left_ns = e->expires_ns - now_ns;
  }
  zv_spin_unlock(&s->lock);
  return 0;
}

static void drop(void *ctx, zv_stripe_node_t *n) {
  zv_lock_t *l = ctx;
  __atomic_add_fetch(&l->expired, 1, __ATOMIC_RELAXED);
  zv_free(n);
}

size_t zv_lock_sweep(zv_lock_t *l, uint64_t now_ns, size_t max_steps, int *more) {
  if (!now_ns) now_ns = zv_lock_clock();
  return zv_stripes_sweep(&l->stripes, &l->cursor, &kind, now_ns, max_steps, more, drop, l);
}

static void drop_quiet(void *ctx, zv_stripe_node_t *n) {
  (void)ctx;
  zv_free(n);
}

void zv_lock_clear(zv_lock_t *l) {
  zv_stripes_clear(&l->stripes, drop_quiet, NULL);
}

void zv_lock_stats(zv_lock_t *l, zv_lock_stats_t *out) {
  out->entries = zv_stripes_count(&l->stripes, NULL);
  out->acquired = __atomic_load_n(&l->next_fence, __ATOMIC_RELAXED) - 1;
  out->contended = __atomic_load_n(&l->contended, __ATOMIC_RELAXED);
  out->expired = __atomic_load_n(&l->expired, __ATOMIC_RELAXED);
}

/* --- the registry: one table per name, shared by every worker thread ------------------------- */

static zv_registry_t tables = ZV_REGISTRY_INIT;

static int lock_create(const void *arg, void **obj) {
  (void)arg;
  return zv_lock_new((zv_lock_t **)obj);
}

int zv_lock_open(const char *name, zv_lock_t **out) {
  return zv_registry_open(&tables, name, NULL, lock_create, NULL, (void **)out);
}

void zv_lock_release(zv_lock_t *l) {
  if (zv_registry_release(&tables, l)) zv_lock_free(l);
}
