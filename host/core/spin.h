/*
 * spin.h: the spin lock of the striped process-wide tables (cache, limiter, idempotency).
 *
 * Critical sections under it are a few dozen instructions (a bucket walk, an LRU relink), so
 * spinning beats sleeping on a mutex; after 64 spins the waiter yields the CPU, which matters on
 * machines with fewer cores than threads. Taking a free lock is one inline exchange; the wait
 * is out of line (spin.c), so callers save no registers for it. Never hold one across a call
 * that may block or raise.
 */
#ifndef ZV_SPIN_H
#define ZV_SPIN_H

#include <sched.h>

typedef struct {
  int held;
} zv_spin_t;

/* Spins (then yields) until it takes a lock that was held: spin.c. */
void zv__spin_wait(zv_spin_t *s);

static inline void zv_spin_lock(zv_spin_t *s) {
  if (__builtin_expect(__atomic_exchange_n(&s->held, 1, __ATOMIC_ACQUIRE), 0)) zv__spin_wait(s);
}

/* Takes the lock when it is free (1), or returns 0 at once. */
static inline int zv_spin_trylock(zv_spin_t *s) {
  return !__atomic_exchange_n(&s->held, 1, __ATOMIC_ACQUIRE);
}

static inline void zv_spin_unlock(zv_spin_t *s) {
  __atomic_store_n(&s->held, 0, __ATOMIC_RELEASE);
}

#endif
