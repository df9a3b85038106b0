/*
 * spin.c: the contended half of spin.h's lock, out of line so that the uncontended path that
 * every table call inlines is one exchange and keeps no registers live across a system call.
 *
 * It must not include Lua or libuv headers.
 */
#include "spin.h"

void zv__spin_wait(zv_spin_t *s) {
  unsigned spins = 0;
  do {
    while (__atomic_load_n(&s->held, __ATOMIC_RELAXED)) {
      if (++spins > 64) sched_yield();
      else __builtin_ia32_pause();
    }
  } while (__atomic_exchange_n(&s->held, 1, __ATOMIC_ACQUIRE));
}
