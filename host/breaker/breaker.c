/*
 * breaker.c: the shared circuit breakers of breaker.h and their process-wide registry.
 *
 * It must not include Lua or libuv headers and must not allocate after a breaker is created.
 * allow on a closed breaker is one atomic load; every other step takes the breaker's spin lock
 * for a few dozen instructions and never calls out while holding it.
 */
#include "breaker.h"

#include <string.h>
#include <time.h>

#include "../core/registry.h"
#include "../core/spin.h"
#include "../core/zv.h"

struct zv_breaker_s {
  int state;                  /* atomic */
  zv_spin_t lock;
  zv_breaker_cfg_t cfg;
  uint64_t until_ns;
  uint32_t trials, trial_ok;
  uint32_t pos, calls, failures, slow;
  uint64_t rejected;          /* atomic */
  uint64_t opened;
  int registered;             /* in the registry (zv_breaker_open), not private */
  uint8_t outcome[];          /* cfg.window of them */
};

uint64_t zv_breaker_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_or_clock(uint64_t now_ns) {
  return now_ns ? now_ns : zv_breaker_clock();
}

static int cfg_valid(const zv_breaker_cfg_t *c) {
  return c->failure_rate > 0 && c->failure_rate <= 1 && c->slow_rate > 0 && c->slow_rate <= 1 &&
         c->window >= 1 && c->window <= ZV_BREAKER_MAX_WINDOW && c->min_calls >= 1 &&
         c->half_open_calls >= 1;
}

/* Under the lock: an empty window. */
static void clear_window(zv_breaker_t *b) {
  memset(b->outcome, 0, b->cfg.window);
  b->pos = b->calls = b->failures = b->slow = 0;
}

/* Under the lock. */
static void trip(zv_breaker_t *b, uint64_t now_ns) {
  b->until_ns = now_ns + b->cfg.open_ns;
  b->opened++;
  b->trials = b->trial_ok = 0;
  __atomic_store_n(&b->state, ZV_BREAKER_OPEN, __ATOMIC_RELEASE);
}

/* Under the lock: one outcome into the ring, the oldest one out. */
static void push(zv_breaker_t *b, int failed, int slow) {
  uint32_t pos = b->pos + 1 >= b->cfg.window ? 0 : b->pos + 1;
  uint8_t old = b->outcome[pos];
  b->pos = pos;
  if (old) {
    b->calls--;
    if (old == 2 || old == 4) b->failures--;
    if (old == 3 || old == 4) b->slow--;
  }
  b->outcome[pos] = (uint8_t)(failed ? (slow ? 4 : 2) : (slow ? 3 : 1));
  b->calls++;
  if (failed) b->failures++;
  if (slow) b->slow++;
}

int zv_breaker_allow(zv_breaker_t *b, uint64_t now_ns, uint64_t *retry_ns) {
  if (__atomic_load_n(&b->state, __ATOMIC_ACQUIRE) == ZV_BREAKER_CLOSED) return 0;
  now_ns = now_or_clock(now_ns);
  int rc = 0;
  zv_spin_lock(&b->lock);
  int st = b->state;
  if (st == ZV_BREAKER_OPEN) {
    if (now_ns < b->until_ns) {
      *retry_ns = b->until_ns - now_ns;
      rc = 1;
      goto refuse;
    }
    b->trials = b->trial_ok = 0;
    st = ZV_BREAKER_HALF_OPEN;
    __atomic_store_n(&b->state, st, __ATOMIC_RELEASE);
  }
  if (st == ZV_BREAKER_HALF_OPEN) {
    if (b->trials >= b->cfg.half_open_calls) {
      *retry_ns = 0;
      rc = 2;
      goto refuse;
    }
    b->trials++;
  }
  zv_spin_unlock(&b->lock);
  return 0;
refuse:
  zv_spin_unlock(&b->lock);
  __atomic_add_fetch(&b->rejected, 1, __ATOMIC_RELAXED);
  return rc;
}

int zv_breaker_record(zv_breaker_t *b, int failed, uint64_t took_ns, uint64_t now_ns) {
  int slow = b->cfg.slow_ns && took_ns >= b->cfg.slow_ns;
  zv_spin_lock(&b->lock);
  int st = b->state;
  if (st == ZV_BREAKER_HALF_OPEN) {
    if (failed || slow) {
      trip(b, now_or_clock(now_ns));
    } else if (++b->trial_ok >= b->cfg.half_open_calls) {
      clear_window(b);
      __atomic_store_n(&b->state, ZV_BREAKER_CLOSED, __ATOMIC_RELEASE);
    }
  } else if (st == ZV_BREAKER_CLOSED) {
    /* An outcome that arrives after the breaker opened (a call let through before) is not
     * counted: the window starts again when it closes. */
    push(b, failed, slow);
    double calls = (double)b->calls;
    if (b->calls >= b->cfg.min_calls && ((double)b->failures >= b->cfg.failure_rate * calls ||
                                         (double)b->slow >= b->cfg.slow_rate * calls)) {
      trip(b, now_or_clock(now_ns));
    }
  }
  st = b->state;
  zv_spin_unlock(&b->lock);
  return st;
}

void zv_breaker_cfg(zv_breaker_t *b, zv_breaker_cfg_t *out) {
  *out = b->cfg;
}

void zv_breaker_stats(zv_breaker_t *b, uint64_t now_ns, zv_breaker_stats_t *out) {
  now_ns = now_or_clock(now_ns);
  zv_spin_lock(&b->lock);
  out->state = b->state;
  out->retry_ns = 0;
  if (out->state == ZV_BREAKER_OPEN) {
    if (now_ns >= b->until_ns) out->state = ZV_BREAKER_HALF_OPEN;
    else out->retry_ns = b->until_ns - now_ns;
  }
  out->calls = b->calls;
  out->failures = b->failures;
  out->slow = b->slow;
  out->opened = b->opened;
  zv_spin_unlock(&b->lock);
  out->rejected = __atomic_load_n(&b->rejected, __ATOMIC_RELAXED);
}

void zv_breaker_reset(zv_breaker_t *b) {
  zv_spin_lock(&b->lock);
  clear_window(b);
  b->trials = b->trial_ok = 0;
  __atomic_store_n(&b->state, ZV_BREAKER_CLOSED, __ATOMIC_RELEASE);
  zv_spin_unlock(&b->lock);
}

/* --- the registry: one breaker per name, shared by every worker thread ----------------------- */

static zv_registry_t breakers = ZV_REGISTRY_INIT;

static int breaker_create(const void *arg, void **obj) {
  const zv_breaker_cfg_t *cfg = arg;
  zv_breaker_t *b = zv_alloc(sizeof *b + cfg->window);
  if (!b) return ZV_ENOMEM;
  memset(b, 0, sizeof *b + cfg->window);
  b->cfg = *cfg;
  *obj = b;
  return 0;
}

/* Called under the registry's lock, before any other thread can see the breaker. */
static int breaker_create_registered(const void *arg, void **obj) {
  int rc = breaker_create(arg, obj);
  if (rc == 0) ((zv_breaker_t *)*obj)->registered = 1;
  return rc;
}

int zv_breaker_new(const zv_breaker_cfg_t *cfg, zv_breaker_t **out) {
  if (!cfg_valid(cfg)) return ZV_EINVAL;
  return breaker_create(cfg, (void **)out);
}

int zv_breaker_open(const char *name, const zv_breaker_cfg_t *cfg, zv_breaker_t **out) {
  if (!cfg_valid(cfg)) return ZV_EINVAL;
  if (strlen(name) > ZV_BREAKER_MAX_NAME) return ZV_ETOOLONG;
  return zv_registry_open(&breakers, name, NULL, breaker_create_registered, cfg, (void **)out);
}

void zv_breaker_release(zv_breaker_t *b) {
  if (!b) return;
  if (!b->registered || zv_registry_release(&breakers, b)) zv_free(b);
}
