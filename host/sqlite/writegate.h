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
  int carry;          /* set: the spell began before SQLite's first call (zv_sqlite_gate_spell) */
} zv_sqlite_gate_t;

/* Starts a busy spell now, before SQLite calls the handler (a wait for the process's write lock
 * ahead of BEGIN IMMEDIATE): the handler's first call continues it instead of starting its own,
 * so timeout_ms bounds both waits together. The caller clears carry afterwards. */
void zv_sqlite_gate_spell(zv_sqlite_gate_t *g);

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

/*
 * The process's write lock of one database file (writegate.c): the worker threads of this
 * process queue on it before BEGIN IMMEDIATE, in arrival order, and the holder frees it once its
 * transaction is over, waking the first in line. SQLite's own locks still decide between processes.
 */
typedef struct zv_sqlite_wlock zv_sqlite_wlock_t;

#define ZV_SQLITE_WLOCK_TIMEOUT 1    /* not free within timeout_ms */
#define ZV_SQLITE_WLOCK_OWN_THREAD 2 /* held by another connection of the calling thread */

typedef struct {
  uint64_t takes;    /* locks taken (at once or after a wait) */
  uint64_t waits;    /* takes that queued */
  uint64_t handoffs; /* gives that woke a queued waiter */
  uint64_t timeouts; /* takes that gave up (timeout_ms) */
  uint64_t refused;  /* takes refused: the calling thread holds it on another connection */
  int waiting;       /* threads queued now */
} zv_sqlite_wlock_stats_t;

/* The lock of the file at path (by device and inode; every connection of the file shares one),
 * counted once per call; NULL when path names no file (":memory:", "") or the process already
 * tracks 64 files: the connection then runs on SQLite's locks alone. */
zv_sqlite_wlock_t *zv_sqlite_wlock_open(const char *path);

/* Drops one count of zv_sqlite_wlock_open, giving the lock on if owner holds it. */
void zv_sqlite_wlock_close(zv_sqlite_wlock_t *w, const void *owner);

/* Takes w for owner (a connection): 0 at once when free or already owner's; otherwise waits up
 * up to timeout_ms for it to be freed (0), ZV_SQLITE_WLOCK_TIMEOUT after that; at once
 * ZV_SQLITE_WLOCK_OWN_THREAD when another connection of the calling thread holds it (waiting
 * would never end). w NULL: 0. Allocates nothing. */
int zv_sqlite_wlock_take(zv_sqlite_wlock_t *w, const void *owner, int timeout_ms);

/* Frees w if owner holds it, waking its first waiter; otherwise nothing. */
void zv_sqlite_wlock_give(zv_sqlite_wlock_t *w, const void *owner);

/* For specs and benchmarks: the process's counts. */
void zv_sqlite_wlock_stats(zv_sqlite_wlock_stats_t *s);

#endif
