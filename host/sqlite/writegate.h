/*
 * writegate.h: hands a SQLite database's write lock from one worker thread of this process to
 * the next without sleeping out a fixed delay. See writegate.c. No Lua, no libuv.
 */
#ifndef ZV_SQLITE_WRITEGATE_H
#define ZV_SQLITE_WRITEGATE_H

#include <stdint.h>

/* One connection's busy state: the wait limit and when the current busy spell began. */
typedef struct {
  int timeout_ms;     /* give up (SQLITE_BUSY to the caller) once this much has passed */
  uint64_t start_ns;  /* CLOCK_MONOTONIC at the spell's first call (count 0) */
} zv_sqlite_gate_t;

/* A sqlite3_busy_handler callback (arg: a zv_sqlite_gate_t). Waits until a thread of this
 * process ends a write transaction (zv_sqlite_gate_release) or a backoff delay passes,
 * whichever is first, and returns 1 (retry); returns 0 (give up) once timeout_ms has passed
 * since the spell began. Allocates nothing. */
int zv_sqlite_gate_busy(void *arg, int count);

/* Wakes every thread waiting in zv_sqlite_gate_busy. Cheap when nobody waits (one atomic
 * load); call it after a write transaction has released its lock. */
void zv_sqlite_gate_release(void);

/* For specs: the threads waiting now, and how many waits a release ended (not their delay). */
void zv_sqlite_gate_stats(int *waiting, uint64_t *wakes);

#endif
