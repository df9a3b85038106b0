/*
 * spin.h: the spin lock of the striped process-wide tables (cache, limiter, idempotency).
 *
 * Critical sections under it are a few dozen instructions (a bucket walk, an LRU relink), so
 * spinning beats sleeping on a mutex; after 64 spins the waiter yields the CPU, which matters on
 * machines with fewer cores than threads. Never hold one across a call that may block or raise.
 */
#ifndef ZV_SPIN_H
#define ZV_SPIN_H

#include <sched.h>

typedef struct {
  int held;
} zv_spin_t;

static inline void zv_spin_lock(zv_spin_t *s) {
  unsigned spins = 0;
  while (__atomic_exchange_n(&s->held, 1, __ATOMIC_ACQUIRE)) {
    while (__atomic_load_n(&s->held, __ATOMIC_RELAXED)) {
      if (++spins > 64) sched_yield();
      else __builtin_ia32_pause();
    }
  }
}

static inline void zv_spin_unlock(zv_spin_t *s) {
  __atomic_store_n(&s->held, 0, __ATOMIC_RELEASE);
}

#endif
