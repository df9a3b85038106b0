/*
 * limiter.c: the striped token-bucket table of limiter.h and its process-wide registry.
 *
 * It must not include Lua or libuv headers, must not allocate on a call for a key that is in
 * the table, and must never hold two stripe locks at once (see the lock order in limiter.h).
 * Admission runs a small bounded sweep too, so idle keys go away without a timer.
 */
#include "limiter.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "../core/registry.h"
#include "../core/spin.h"
#include "../core/zv.h"

#define INITIAL_BUCKETS 8
#define ADMIT_SWEEP_STEPS 8

/* A spin lock that yields the CPU after a short spin: critical sections are a few dozen ns. */

typedef struct entry {
  struct entry *next;     /* hash chain */
  struct entry *newer;    /* LRU list of the stripe */
  struct entry *older;
  uint64_t hash;
  uint64_t last_ns;       /* last call: refill time and LRU age */
  double tokens;
  uint32_t len;
  char key[];
} entry_t;

/* Padded to two cache lines so that stripes used by different threads never share one. */
typedef union {
  struct {
    zv_spin_t lock;
    size_t mask;          /* buckets - 1 */
    size_t count;
    entry_t **buckets;
    entry_t *newest;
    entry_t *oldest;
  } s;
  char pad[128];
} stripe_t;

struct zv_limiter_s {
  stripe_t stripes[ZV_LIMITER_STRIPES];
  double rate_ns;         /* tokens per nanosecond */
  double burst;
  uint64_t idle_ns;       /* effective idle threshold (0: never) */
  zv_limiter_opts_t opts;
  size_t max_entries;
  size_t used;            /* atomic: reserved slots */
  uint64_t evictions;     /* atomic */
  uint64_t expired;       /* atomic */
  unsigned cursor;        /* atomic: next stripe to sweep */
  zv_spin_t admit;
};

uint64_t zv_limiter_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
}

/* --- options -------------------------------------------------------------------------------- */

static int check_opts(const zv_limiter_opts_t *o) {
  if (!o || !(o->rate >= 0) || isinf(o->rate) || !(o->burst >= 1) || isinf(o->burst) ||
      o->max_entries < 1 || !(o->idle >= 0))
    return ZV_EINVAL;
  return 0;
}

int zv_limiter_new(const zv_limiter_opts_t *opts, zv_limiter_t **out) {
  int rc = check_opts(opts);
  if (rc) return rc;
  zv_limiter_t *l = zv_alloc(sizeof *l);
  if (!l) return ZV_ENOMEM;
  memset(l, 0, sizeof *l);
  for (int i = 0; i < ZV_LIMITER_STRIPES; i++) {
    stripe_t *s = &l->stripes[i];
    s->s.buckets = zv_alloc(INITIAL_BUCKETS * sizeof *s->s.buckets);
    if (!s->s.buckets) {
      zv_limiter_free(l);
      return ZV_ENOMEM;
    }
    memset(s->s.buckets, 0, INITIAL_BUCKETS * sizeof *s->s.buckets);
    s->s.mask = INITIAL_BUCKETS - 1;
  }
  l->opts = *opts;
  l->rate_ns = opts->rate / 1e9;
  l->burst = opts->burst;
  l->max_entries = opts->max_entries;
  if (opts->idle > 0) {
    /* A key idle for less than a refill may still owe tokens: keep it that long at least. */
    double idle = opts->idle;
    double refill = opts->rate > 0 ? opts->burst / opts->rate : 0;
    if (refill > idle) idle = refill;
    l->idle_ns = idle * 1e9 >= 1.8e19 ? UINT64_MAX : (uint64_t)(idle * 1e9);
  }
  *out = l;
  return 0;
}

void zv_limiter_free(zv_limiter_t *l) {
  if (!l) return;
  for (int i = 0; i < ZV_LIMITER_STRIPES; i++) {
    stripe_t *s = &l->stripes[i];
    for (entry_t *e = s->s.newest, *next; e; e = next) {
      next = e->older;
      zv_free(e);
    }
    zv_free(s->s.buckets);
  }
  zv_free(l);
}

/* --- one stripe (its lock held) ------------------------------------------------------------- */

static inline entry_t *find(stripe_t *s, uint64_t h, const char *key, size_t len) {
  for (entry_t *e = s->s.buckets[(h >> 6) & s->s.mask]; e; e = e->next)
    if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0) return e;
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

static inline void touch(stripe_t *s, entry_t *e) {
  if (s->s.newest == e) return;
  lru_unlink(s, e);
  lru_push(s, e);
}

/* Unlinks e from its chain and the LRU list; the caller frees it after unlocking. */
static void unlink_entry(stripe_t *s, entry_t *e) {
  entry_t **pp = &s->s.buckets[(e->hash >> 6) & s->s.mask];
  while (*pp != e) pp = &(*pp)->next;
  *pp = e->next;
  lru_unlink(s, e);
  s->s.count--;
}

/* Doubles the bucket array when the load passes 1; a failed allocation only keeps chains long. */
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

static inline void charge(const zv_limiter_t *l, entry_t *e, double cost, uint64_t now,
                          zv_limiter_result_t *r) {
  if (now > e->last_ns) {
    double t = e->tokens + (double)(now - e->last_ns) * l->rate_ns;
    e->tokens = t < l->burst ? t : l->burst;
    e->last_ns = now;
  }
  if (cost > l->burst) cost = l->burst;
  /* A tolerance of 1e-9 tokens absorbs the rounding of rate * elapsed. */
  if (e->tokens + 1e-9 >= cost) {
    e->tokens -= cost;
    if (e->tokens < 0) e->tokens = 0;
    r->allowed = 1;
    r->retry_after = 0;
  } else {
    r->allowed = 0;
    r->retry_after = l->rate_ns > 0 ? (cost - e->tokens) / (l->rate_ns * 1e9) : INFINITY;
  }
  r->remaining = e->tokens;
}

/* --- admission ------------------------------------------------------------------------------ */

/*
 * Reserves one slot, evicting the least recently used entry of all stripes while the table is
 * full. Runs under the admit lock, taking one stripe lock at a time.
 */
static void admit(zv_limiter_t *l) {
  zv_spin_lock(&l->admit);
  while (__atomic_load_n(&l->used, __ATOMIC_RELAXED) >= l->max_entries) {
    int victim = -1;
    uint64_t oldest = UINT64_MAX;
    for (int i = 0; i < ZV_LIMITER_STRIPES; i++) {
      stripe_t *s = &l->stripes[i];
      zv_spin_lock(&s->s.lock);
      if (s->s.oldest && s->s.oldest->last_ns <= oldest) {
        oldest = s->s.oldest->last_ns;
        victim = i;
      }
      zv_spin_unlock(&s->s.lock);
    }
    if (victim < 0) {
      /* Every slot is a reservation whose insert is in flight: let it land, then look again. */
      zv_spin_unlock(&l->admit);
      sched_yield();
      zv_spin_lock(&l->admit);
      continue;
    }
    stripe_t *s = &l->stripes[victim];
    entry_t *e;
    zv_spin_lock(&s->s.lock);
    e = s->s.oldest;
    if (e) unlink_entry(s, e);
    zv_spin_unlock(&s->s.lock);
    if (e) {
      zv_free(e);
      __atomic_sub_fetch(&l->used, 1, __ATOMIC_RELAXED);
      __atomic_add_fetch(&l->evictions, 1, __ATOMIC_RELAXED);
    }
  }
  __atomic_add_fetch(&l->used, 1, __ATOMIC_RELAXED);
  zv_spin_unlock(&l->admit);
}

int zv_limiter_allow(zv_limiter_t *l, const char *key, size_t len, double cost, uint64_t now_ns,
                     zv_limiter_result_t *r) {
  if (len > ZV_LIMITER_MAX_KEY) return ZV_ETOOLONG;
  if (!(cost >= 0)) return ZV_EINVAL;
  if (!now_ns) now_ns = zv_limiter_clock();
  uint64_t h = zv_fnv1a(key, len);
  stripe_t *s = &l->stripes[h & (ZV_LIMITER_STRIPES - 1)];
  zv_spin_lock(&s->s.lock);
  entry_t *e = find(s, h, key, len);
  if (e) {
    charge(l, e, cost, now_ns, r);
    touch(s, e);
    zv_spin_unlock(&s->s.lock);
    return 0;
  }
  zv_spin_unlock(&s->s.lock);

  /* A new key: allocate and reserve a slot with no stripe lock held, then look again. */
  entry_t *fresh = zv_alloc(sizeof *fresh + len);
  if (!fresh) return ZV_ENOMEM;
  admit(l);
  zv_spin_lock(&s->s.lock);
  e = find(s, h, key, len);
  if (e) {
    /* Another thread admitted it meanwhile: give the slot back. */
    charge(l, e, cost, now_ns, r);
    touch(s, e);
    zv_spin_unlock(&s->s.lock);
    __atomic_sub_fetch(&l->used, 1, __ATOMIC_RELAXED);
    zv_free(fresh);
  } else {
    fresh->hash = h;
    fresh->len = (uint32_t)len;
    memcpy(fresh->key, key, len);
    fresh->tokens = l->burst;
    fresh->last_ns = now_ns;
    entry_t **slot = &s->s.buckets[(h >> 6) & s->s.mask];
    fresh->next = *slot;
    *slot = fresh;
    lru_push(s, fresh);
    s->s.count++;
    charge(l, fresh, cost, now_ns, r);
    maybe_grow(s);
    zv_spin_unlock(&s->s.lock);
  }
  if (l->idle_ns) {
    int more;
    zv_limiter_sweep(l, now_ns, ADMIT_SWEEP_STEPS, &more);
  }
  return 0;
}

int zv_limiter_reset(zv_limiter_t *l, const char *key, size_t len, int *existed) {
  if (len > ZV_LIMITER_MAX_KEY) return ZV_ETOOLONG;
  uint64_t h = zv_fnv1a(key, len);
  stripe_t *s = &l->stripes[h & (ZV_LIMITER_STRIPES - 1)];
  zv_spin_lock(&s->s.lock);
  entry_t *e = find(s, h, key, len);
  if (e) unlink_entry(s, e);
  zv_spin_unlock(&s->s.lock);
  if (e) {
    zv_free(e);
    __atomic_sub_fetch(&l->used, 1, __ATOMIC_RELAXED);
  }
  if (existed) *existed = e != NULL;
  return 0;
}

size_t zv_limiter_sweep(zv_limiter_t *l, uint64_t now_ns, size_t max_steps, int *more) {
  size_t removed = 0, steps = 0;
  if (!now_ns) now_ns = zv_limiter_clock();
  *more = 0;
  if (!l->idle_ns) return 0;
  for (int visited = 0; visited < ZV_LIMITER_STRIPES; visited++) {
    if (steps >= max_steps) {
      *more = 1;
      break;
    }
    unsigned i = __atomic_fetch_add(&l->cursor, 1, __ATOMIC_RELAXED) & (ZV_LIMITER_STRIPES - 1);
    stripe_t *s = &l->stripes[i];
    steps++;
    for (;;) {
      entry_t *e;
      zv_spin_lock(&s->s.lock);
      e = s->s.oldest;
      if (e && now_ns > e->last_ns && now_ns - e->last_ns >= l->idle_ns && steps < max_steps) {
        unlink_entry(s, e);
      } else {
        if (e && steps >= max_steps && now_ns > e->last_ns && now_ns - e->last_ns >= l->idle_ns)
          *more = 1;
        e = NULL;
      }
      zv_spin_unlock(&s->s.lock);
      if (!e) break;
      steps++;
      zv_free(e);
      removed++;
      __atomic_sub_fetch(&l->used, 1, __ATOMIC_RELAXED);
      __atomic_add_fetch(&l->expired, 1, __ATOMIC_RELAXED);
    }
  }
  return removed;
}

void zv_limiter_stats(zv_limiter_t *l, zv_limiter_stats_t *out) {
  size_t n = 0;
  for (int i = 0; i < ZV_LIMITER_STRIPES; i++) {
    stripe_t *s = &l->stripes[i];
    zv_spin_lock(&s->s.lock);
    n += s->s.count;
    zv_spin_unlock(&s->s.lock);
  }
  out->entries = n;
  out->max_entries = l->max_entries;
  out->evictions = __atomic_load_n(&l->evictions, __ATOMIC_RELAXED);
  out->expired = __atomic_load_n(&l->expired, __ATOMIC_RELAXED);
}

/* --- the registry: one table per name, shared by every worker thread ------------------------- */

static zv_registry_t limiters = ZV_REGISTRY_INIT;

static int limiter_same(void *obj, const void *arg) {
  const zv_limiter_opts_t *a = &((zv_limiter_t *)obj)->opts, *b = arg;
  return a->rate == b->rate && a->burst == b->burst && a->max_entries == b->max_entries &&
                 a->idle == b->idle
             ? 0
             : ZV_ECONFLICT;
}

static int limiter_create(const void *arg, void **obj) {
  return zv_limiter_new(arg, (zv_limiter_t **)obj);
}

int zv_limiter_open(const char *name, const zv_limiter_opts_t *opts, zv_limiter_t **out) {
  int rc = check_opts(opts);
  if (rc) return rc;
  return zv_registry_open(&limiters, name, limiter_same, limiter_create, opts, (void **)out);
}

void zv_limiter_release(zv_limiter_t *l) {
  if (zv_registry_release(&limiters, l)) zv_limiter_free(l);
}
