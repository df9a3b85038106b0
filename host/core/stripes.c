/*
 * stripes.c: the cold half of stripes.h: setup and teardown, bucket growth, taking an LRU tail,
 * and the walks over all stripes (expiry sweep, clear, count).
 *
 * It must not include Lua or libuv headers, must never hold two stripe locks at once, and
 * never frees an owner's entry itself: entries go back through the owner's callbacks, after the
 * stripe lock is dropped. Lock order: the sweep cursor's lock -> one stripe lock.
 */
#include "stripes.h"

#include "zv.h"

#define INITIAL_BUCKETS 8
#define SWEEP_BATCH 16

/* stripes.h counts on a stripe's fields fitting 56 of its 128 bytes (no shared cache lines). */
typedef char stripe_fits[sizeof(zv_stripe_t) <= 56 ? 1 : -1];

int zv_stripes_init(zv_stripes_t *t) {
  for (int i = 0; i < ZV_STRIPES; i++) {
    zv_stripe_t *s = &t->at[i].s;
    s->buckets = zv_alloc(INITIAL_BUCKETS * sizeof *s->buckets);
    if (!s->buckets) return ZV_ENOMEM;
    memset(s->buckets, 0, INITIAL_BUCKETS * sizeof *s->buckets);
    s->mask = INITIAL_BUCKETS - 1;
  }
  return 0;
}

void zv_stripes_free(zv_stripes_t *t, void (*drop)(zv_stripe_node_t *n)) {
  for (int i = 0; i < ZV_STRIPES; i++) {
    zv_stripe_t *s = &t->at[i].s;
    for (zv_stripe_node_t *n = s->newest, *next; n; n = next) {
      next = n->older;
      drop(n);
    }
    zv_free(s->buckets);
    s->buckets = NULL;
  }
}

void zv__stripe_rehash(zv_stripe_t *s) {
  size_t n = s->mask + 1;
  zv_stripe_node_t **nb = zv_alloc(2 * n * sizeof *nb);
  if (!nb) return;
  memset(nb, 0, 2 * n * sizeof *nb);
  size_t mask = 2 * n - 1;
  for (size_t i = 0; i < n; i++) {
    for (zv_stripe_node_t *e = s->buckets[i], *next; e; e = next) {
      next = e->next;
      zv_stripe_node_t **slot = &nb[(e->hash >> ZV_STRIPE_BITS) & mask];
      e->next = *slot;
      *slot = e;
    }
  }
  zv_free(s->buckets);
  s->buckets = nb;
  s->mask = mask;
}

zv_stripe_node_t *zv_stripes_pop_oldest(zv_stripes_t *t, const zv_stripe_kind_t *k, int i) {
  zv_stripe_t *s = &t->at[i].s;
  zv_spin_lock(&s->lock);
  zv_stripe_node_t *n = k->lazy ? zv_stripe_settle(s) : s->oldest;
  if (n) {
    zv_stripe_unlink(s, n);
    if (k->unlinked) k->unlinked(s, n);
  }
  zv_spin_unlock(&s->lock);
  return n;
}

size_t zv_stripes_sweep(zv_stripes_t *t, zv_stripe_cursor_t *cur, const zv_stripe_kind_t *k,
                        uint64_t now, size_t max_steps, int *more,
                        void (*drop)(void *ctx, zv_stripe_node_t *n), void *ctx) {
  size_t removed = 0, steps = 0;
  zv_stripe_node_t *dead[SWEEP_BATCH];
  *more = 1;
  zv_spin_lock(&cur->lock);
  while (steps < max_steps) {
    zv_stripe_t *s = &t->at[cur->stripe].s;
    size_t ndead = 0;
    int next_stripe = 0;
    zv_spin_lock(&s->lock);
    if (cur->bucket > s->mask) {
      next_stripe = 1;
    } else {
      zv_stripe_node_t **pp = &s->buckets[cur->bucket];
      while (*pp) {
        zv_stripe_node_t *n = *pp;
        if (zv_stripe_expired(k, n, now) && ndead < SWEEP_BATCH) {
          *pp = n->next;
          zv__stripe_lru_unlink(s, n);
          s->count--;
          if (k->unlinked) k->unlinked(s, n);
          dead[ndead++] = n;
        } else {
          pp = &n->next;
        }
      }
      /* A chain with more than SWEEP_BATCH expired entries is finished by the next visit. */
      if (ndead < SWEEP_BATCH) cur->bucket++;
      steps++;
    }
    zv_spin_unlock(&s->lock);
    for (size_t i = 0; i < ndead; i++) drop(ctx, dead[i]);
    removed += ndead;
    if (next_stripe) {
      cur->bucket = 0;
      if (++cur->stripe == ZV_STRIPES) {
        cur->stripe = 0;
        *more = 0;
        break;
      }
    }
  }
  zv_spin_unlock(&cur->lock);
  return removed;
}

void zv_stripes_clear(zv_stripes_t *t, void (*drop)(void *ctx, zv_stripe_node_t *n), void *ctx) {
  for (int i = 0; i < ZV_STRIPES; i++) {
    zv_stripe_t *s = &t->at[i].s;
    zv_stripe_node_t *list;
    zv_spin_lock(&s->lock);
    list = s->newest;
    memset(s->buckets, 0, (s->mask + 1) * sizeof *s->buckets);
    s->newest = s->oldest = NULL;
    s->count = 0;
    s->flagged = 0;
    zv_spin_unlock(&s->lock);
    for (zv_stripe_node_t *n = list, *next; n; n = next) {
      next = n->older;
      drop(ctx, n);
    }
  }
}

size_t zv_stripes_count(zv_stripes_t *t, size_t *flagged) {
  size_t n = 0, f = 0;
  for (int i = 0; i < ZV_STRIPES; i++) {
    zv_stripe_t *s = &t->at[i].s;
    zv_spin_lock(&s->lock);
    n += s->count;
    f += s->flagged;
    zv_spin_unlock(&s->lock);
  }
  if (flagged) *flagged = f;
  return n;
}
