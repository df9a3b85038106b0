/*
 * writegate.c: a busy handler for SQLite that hands the write lock of a database from one worker
 * thread of this process to the next as soon as it is released, instead of SQLite's default
 * handler (sqlite3_busy_timeout), which sleeps 1, 2, 5, 10, 15, 20, 25 ... 100 ms whatever
 * happens meanwhile. It must not hold its mutex while SQLite runs, and it allocates nothing.
 *
 * `zever serve` runs one SQLite connection per worker thread, all in one process. SQLite has one
 * writer at a time: a second thread's BEGIN IMMEDIATE answers SQLITE_BUSY and SQLite calls the
 * busy handler until the lock is free. With the default handler the second thread sleeps at
 * least 1 ms, while a TechEmpower /updates transaction (20 UPDATEs) holds the lock ~0.1 ms: the
 * lock sits free most of the time and both workers wait. Here the waiter blocks on a condition
 * variable, and the thread that committed wakes it (the connection's WAL hook, which SQLite calls
 * after the commit has released the write lock):
 *
 *     worker A: BEGIN IMMEDIATE ... COMMIT --wal hook--> zv_sqlite_gate_release: gen++, broadcast
 *     worker B: BEGIN IMMEDIATE -> BUSY -> zv_sqlite_gate_busy: wait for gen to move (or a delay)
 *                                       -> retry -> BEGIN succeeds
 *
 * The delay is the default handler's schedule, so a lock held by another process (no wake-up
 * reaches us) or a release missed in the window between SQLite's failed attempt and the wait
 * costs what it costs today; busy_timeout bounds the whole spell, as sqlite3_busy_timeout does.
 * One gate serves every database of the process: a commit wakes waiters of other files too, and
 * they try again and wait again (one failed lock attempt each). SQLite calls the WAL hook only
 * for a commit that wrote pages: a write transaction that wrote nothing or rolled back frees
 * the lock without a wake-up, and its waiters go on at the end of their delay.
 */
#include "writegate.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

/* SQLite's default busy schedule (sqliteDefaultBusyCallback), in milliseconds. */
static const unsigned char delays[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100};
#define NDELAYS ((int)(sizeof delays / sizeof delays[0]))

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* on CLOCK_MONOTONIC (init) */
  uint64_t gen;       /* bumped by every release while someone waits; under mu */
  uint64_t wakes;     /* waits ended by a release; under mu */
  int waiters;        /* threads inside the wait; written under mu, read by release without it */
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_destroy(&gate.cv);
  pthread_cond_init(&gate.cv, &a);
  pthread_condattr_destroy(&a);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int zv_sqlite_gate_busy(void *arg, int count) {
  zv_sqlite_gate_t *g = arg;
  uint64_t now = now_ns(), limit = (uint64_t)(g->timeout_ms > 0 ? g->timeout_ms : 0) * 1000000u;
  uint64_t spent, delay, gen;
  struct timespec until;
  if (count == 0) g->start_ns = now;
  spent = now - g->start_ns;
  if (spent >= limit) return 0;
  delay = (uint64_t)delays[count < NDELAYS ? count : NDELAYS - 1] * 1000000u;
  if (delay > limit - spent) delay = limit - spent;
  until.tv_sec = (time_t)((now + delay) / 1000000000u);
  until.tv_nsec = (long)((now + delay) % 1000000000u);
  pthread_once(&once, init);
  pthread_mutex_lock(&gate.mu);
  gen = gate.gen;
  __atomic_store_n(&gate.waiters, gate.waiters + 1, __ATOMIC_SEQ_CST);
  while (gate.gen == gen && pthread_cond_timedwait(&gate.cv, &gate.mu, &until) != ETIMEDOUT) {
  }
  if (gate.gen != gen) gate.wakes++;
  __atomic_store_n(&gate.waiters, gate.waiters - 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&gate.mu);
  return 1;
}

void zv_sqlite_gate_release(void) {
  if (__atomic_load_n(&gate.waiters, __ATOMIC_SEQ_CST) == 0) return;
  pthread_mutex_lock(&gate.mu);
  gate.gen++;
  pthread_cond_broadcast(&gate.cv);
  pthread_mutex_unlock(&gate.mu);
}

void zv_sqlite_gate_stats(int *waiting, uint64_t *wakes) {
  pthread_mutex_lock(&gate.mu);
  *waiting = gate.waiters;
  *wakes = gate.wakes;
  pthread_mutex_unlock(&gate.mu);
}
