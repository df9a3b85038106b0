/*
 * limiter.c: the token buckets of limiter.h over the shared striped table of core/stripes.h,
 * and their process-wide registry.
 *
 * It must not include Lua or libuv headers, must not allocate on a call for a key that is in
 * the table, and must never hold two stripe locks at once (see the lock order in limiter.h).
 * Admission runs a small bounded sweep too, so idle keys go away without a timer.
 */
#include "limiter.h"

#include <math.h>
#include <sched.h>
#include <string.h>

#include "../core/registry.h"
#include "../core/spin.h"
#include "../core/stripes.h"
#include "../core/zv.h"

#define ADMIT_SWEEP_STEPS 8

typedef struct entry {
  zv_stripe_node_t n;     /* chain, LRU links, hash, klen; used_ns: the last call (refill time) */
  double tokens;
  char key[];
} entry_t;

/*
 * The stripes come first, padded; the settings every call reads sit on their own cache line,
 * apart from the counters that admissions and sweeps write, so a new key admitted on one core
 * does not take the settings' line away from calls on existing keys on another.
 */
struct zv_limiter_s {
  zv_stripes_t stripes;
  struct {
    double rate_ns;       /* tokens per nanosecond */
    double burst;
    uint64_t idle_ns;     /* effective idle threshold (0: never) */
    size_t max_entries;
    zv_limiter_opts_t opts;
  } cfg;                  /* set at creation; read by every call */
  char gap[64];           /* keeps the counters below off cfg's cache lines */
  size_t used;            /* atomic: reserved slots */
  uint64_t evictions;     /* atomic */
  uint64_t expired;       /* atomic */
  unsigned cursor;        /* atomic: next stripe to sweep */
  zv_spin_t admit;
};

/* limiter.h promises 64 stripes: the shared table has that many. */
typedef char stripes_match[ZV_LIMITER_STRIPES == ZV_STRIPES ? 1 : -1];

/* A lazy LRU (stripes.h): a call on a key marks its entry instead of relinking it. */
static const zv_stripe_kind_t kind = {0, NULL, 1};

uint64_t zv_limiter_clock(void) {
  return zv_stripe_clock();
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
  if (zv_stripes_init(&l->stripes)) {
    zv_limiter_free(l);
    return ZV_ENOMEM;
  }
  l->cfg.opts = *opts;
  l->cfg.rate_ns = opts->rate / 1e9;
  l->cfg.burst = opts->burst;
  l->cfg.max_entries = opts->max_entries;
  if (opts->idle > 0) {
    /* A key idle for less than a refill may still owe tokens: keep it that long at least. */
    double idle = opts->idle;
    double refill = opts->rate > 0 ? opts->burst / opts->rate : 0;
    if (refill > idle) idle = refill;
    l->cfg.idle_ns = idle * 1e9 >= 1.8e19 ? UINT64_MAX : (uint64_t)(idle * 1e9);
  }
  *out = l;
  return 0;
}

static void free_entry(zv_stripe_node_t *n) {
  zv_free(n);
}

void zv_limiter_free(zv_limiter_t *l) {
  if (!l) return;
  zv_stripes_free(&l->stripes, free_entry);
  zv_free(l);
}

/* --- one stripe (its lock held) ------------------------------------------------------------- */

static inline entry_t *find(zv_stripe_t *s, uint64_t h, const char *key, size_t len) {
  return (entry_t *)zv_stripe_find(s, h, key, len, offsetof(entry_t, key));
}

static inline void charge(const zv_limiter_t *l, entry_t *e, double cost, uint64_t now,
                          zv_limiter_result_t *r) {
  double rate_ns = l->cfg.rate_ns, burst = l->cfg.burst;
  if (now > e->n.used_ns) {
    double t = e->tokens + (double)(now - e->n.used_ns) * rate_ns;
    e->tokens = t < burst ? t : burst;
    e->n.used_ns = now;
  }
  if (cost > burst) cost = burst;
  /* A tolerance of 1e-9 tokens absorbs the rounding of rate * elapsed. */
  if (e->tokens + 1e-9 >= cost) {
    e->tokens -= cost;
    if (e->tokens < 0) e->tokens = 0;
    r->allowed = 1;
    r->retry_after = 0;
  } else {
    r->allowed = 0;
    r->retry_after = rate_ns > 0 ? (cost - e->tokens) / (rate_ns * 1e9) : INFINITY;
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
  while (__atomic_load_n(&l->used, __ATOMIC_RELAXED) >= l->cfg.max_entries) {
    int victim = zv_stripes_oldest(&l->stripes, &kind, 0, 0);
    if (victim < 0) {
      /* Every slot is a reservation whose insert is in flight: let it land, then look again. */
      zv_spin_unlock(&l->admit);
      sched_yield();
      zv_spin_lock(&l->admit);
      continue;
    }
    zv_stripe_node_t *e = zv_stripes_pop_oldest(&l->stripes, &kind, victim);
    if (e) {
      zv_free(e);
      __atomic_sub_fetch(&l->used, 1, __ATOMIC_RELAXED);
      __atomic_add_fetch(&l->evictions, 1, __ATOMIC_RELAXED);
    }
  }
  __atomic_add_fetch(&l->used, 1, __ATOMIC_RELAXED);
  zv_spin_unlock(&l->admit);
}

/*
 * A key that was not in its stripe: allocate and reserve a slot with no stripe lock held, then
 * look again. Out of line so that the path for a key that exists (zv_limiter_allow) keeps few
 * registers to save and restore.
 */
static __attribute__((noinline)) int allow_new(zv_limiter_t *l, uint64_t h, const char *key,
                                               size_t len, double cost, uint64_t now_ns,
                                               zv_limiter_result_t *r) {
  zv_stripe_t *s = zv_stripes_at(&l->stripes, h);
  entry_t *fresh = zv_alloc(sizeof *fresh + len);
  if (!fresh) return ZV_ENOMEM;
  admit(l);
  zv_spin_lock(&s->lock);
  entry_t *e = find(s, h, key, len);
  if (e) {
    /* Another thread admitted it meanwhile: give the slot back. */
    charge(l, e, cost, now_ns, r);
    zv_stripe_mark(&e->n);
    zv_spin_unlock(&s->lock);
    __atomic_sub_fetch(&l->used, 1, __ATOMIC_RELAXED);
    zv_free(fresh);
  } else {
    fresh->n.hash = h;
    fresh->n.klen = (uint32_t)len;
    fresh->n.aux = 0;
    memcpy(fresh->key, key, len);
    fresh->tokens = l->cfg.burst;
    fresh->n.used_ns = now_ns;
    zv_stripe_insert(s, &fresh->n);
    charge(l, fresh, cost, now_ns, r);
    zv_stripe_grow(s);
    zv_spin_unlock(&s->lock);
  }
  if (l->cfg.idle_ns) {
    int more;
    zv_limiter_sweep(l, now_ns, ADMIT_SWEEP_STEPS, &more);
  }
  return 0;
}

/*
 * Charges an entry found in stripe s (its lock held), marks it used, and unlocks. The mark
 * writes only the entry's own line: relinking it as the newest would write the stripe's newest
 * and up to three other entries, which on two cores are often the other core's.
 */
static inline void hit(zv_limiter_t *l, zv_stripe_t *s, entry_t *e, double cost, uint64_t now_ns,
                       zv_limiter_result_t *r) {
  charge(l, e, cost, now_ns, r);
  zv_stripe_mark(&e->n);
  zv_spin_unlock(&s->lock);
}

/* Every case of zv_limiter_allow: the clock to read, a long key, a lock to wait for, a new key. */
static __attribute__((noinline)) int allow_any(zv_limiter_t *l, const char *key, size_t len,
                                               double cost, uint64_t now_ns,
                                               zv_limiter_result_t *r) {
  if (len > ZV_LIMITER_MAX_KEY) return ZV_ETOOLONG;
  if (!(cost >= 0)) return ZV_EINVAL;
  if (!now_ns) now_ns = zv_limiter_clock();
  uint64_t h = zv_hash64(key, len);
  zv_stripe_t *s = zv_stripes_at(&l->stripes, h);
  zv_spin_lock(&s->lock);
  entry_t *e = find(s, h, key, len);
  if (!e) {
    zv_spin_unlock(&s->lock);
    return allow_new(l, h, key, len, cost, now_ns, r);
  }
  hit(l, s, e, cost, now_ns, r);
  return 0;
}

/*
 * Keys up to this many bytes are compared inline (stripes.h), so the fast path below calls
 * nothing: it holds no register across a call and saves none.
 */
#define FAST_KEY 32

/*
 * The fast path: a short key that exists, the time given, its stripe's lock free. A key that
 * is not there goes to allow_new; whatever else hands the same arguments to allow_any (a tail
 * call, no lock held), which does it all.
 */
int zv_limiter_allow(zv_limiter_t *l, const char *key, size_t len, double cost, uint64_t now_ns,
                     zv_limiter_result_t *r) {
  if (__builtin_expect(len > FAST_KEY || !now_ns || !(cost >= 0), 0))
    return allow_any(l, key, len, cost, now_ns, r);
  uint64_t h = zv_hash64(key, len);
  zv_stripe_t *s = zv_stripes_at(&l->stripes, h);
  if (__builtin_expect(!zv_spin_trylock(&s->lock), 0))
    return allow_any(l, key, len, cost, now_ns, r);
  entry_t *e = find(s, h, key, len);
  if (__builtin_expect(e == NULL, 0)) {
    /* A new key: the hash and the stripe are known, so admit it without looking again. */
    zv_spin_unlock(&s->lock);
    return allow_new(l, h, key, len, cost, now_ns, r);
  }
  hit(l, s, e, cost, now_ns, r);
  return 0;
}

int zv_limiter_reset(zv_limiter_t *l, const char *key, size_t len, int *existed) {
  if (len > ZV_LIMITER_MAX_KEY) return ZV_ETOOLONG;
  uint64_t h = zv_hash64(key, len);
  zv_stripe_t *s = zv_stripes_at(&l->stripes, h);
  zv_spin_lock(&s->lock);
  entry_t *e = find(s, h, key, len);
  if (e) zv_stripe_unlink(s, &e->n);
  zv_spin_unlock(&s->lock);
  if (e) {
    zv_free(e);
    __atomic_sub_fetch(&l->used, 1, __ATOMIC_RELAXED);
  }
  if (existed) *existed = e != NULL;
  return 0;
}

/* Whether the entry n has been idle long enough for the sweep to drop it. */
static inline int is_idle(const zv_limiter_t *l, const zv_stripe_node_t *n, uint64_t now) {
  return now > n->used_ns && now - n->used_ns >= l->cfg.idle_ns;
}

size_t zv_limiter_sweep(zv_limiter_t *l, uint64_t now_ns, size_t max_steps, int *more) {
  size_t removed = 0, steps = 0;
  if (!now_ns) now_ns = zv_limiter_clock();
  *more = 0;
  if (!l->cfg.idle_ns) return 0;
  for (int visited = 0; visited < ZV_STRIPES; visited++) {
    if (steps >= max_steps) {
      *more = 1;
      break;
    }
    unsigned i = __atomic_fetch_add(&l->cursor, 1, __ATOMIC_RELAXED) & (ZV_STRIPES - 1);
    zv_stripe_t *s = &l->stripes.at[i].s;
    steps++;
    for (;;) {
      zv_stripe_node_t *e;
      zv_spin_lock(&s->lock);
      e = zv_stripe_settle(s);
      if (e && is_idle(l, e, now_ns) && steps < max_steps) {
        zv_stripe_unlink(s, e);
      } else {
        if (e && steps >= max_steps && is_idle(l, e, now_ns)) *more = 1;
        e = NULL;
      }
      zv_spin_unlock(&s->lock);
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
  out->entries = zv_stripes_count(&l->stripes, NULL);
  out->max_entries = l->cfg.max_entries;
  out->evictions = __atomic_load_n(&l->evictions, __ATOMIC_RELAXED);
  out->expired = __atomic_load_n(&l->expired, __ATOMIC_RELAXED);
}

/* --- the registry: one table per name, shared by every worker thread ------------------------- */

static zv_registry_t limiters = ZV_REGISTRY_INIT;

static int limiter_same(void *obj, const void *arg) {
  const zv_limiter_opts_t *a = &((zv_limiter_t *)obj)->cfg.opts, *b = arg;
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
