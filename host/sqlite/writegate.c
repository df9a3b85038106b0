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
 *
 * zever.db's transactions no longer meet here against each other: they queue first on the
 * process's write lock of the file (zv_sqlite_wlock_*, below), so within one process this
 * handler only serves writes outside db:transaction (a raw BEGIN, an autocommit write while a
 * transaction runs) and holders in other processes (TFB /updates at 2 workers: 0 calls a
 * request, against 0.017 before, bench/tfb/wal.sh with STAT).
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
  if (count == 0 && !g->carry) g->start_ns = now;
  g->carry = 0;
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

void zv_sqlite_gate_spell(zv_sqlite_gate_t *g) {
  g->start_ns = now_ns();
  g->carry = 1;
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

/*
 * The process's write lock per database file (writegate.h: zv_sqlite_wlock_*). zever.db takes it
 * before BEGIN IMMEDIATE and gives it back once the transaction is over (after COMMIT's step,
 * so after the WAL hook's checkpoint), so the worker threads of this process queue here instead
 * of failing BEGIN IMMEDIATE against each other in SQLite. SQLite's own locks still decide
 * between processes (and against a connection that writes without this lock).
 *
 * Why the checkpoint matters: with the lock freed at SQLite's commit, the next thread's write
 * transaction began while the committing thread was still checkpointing; a writer that begins
 * before the checkpoint has copied every frame cannot restart the WAL, so under steady writes
 * from two threads the WAL never restarted (161 MB after 6 s of TFB /updates at 2 workers, every
 * commit then checkpointing, its file growing block by block). Queued behind the checkpoint, the
 * next writer finds the WAL copied and starts it over.
 *
 * Waiters queue in arrival order, each on a condition variable of its own on its stack; a give
 * frees the lock and wakes the first waiter (one wake-up, no herd), which takes it unless a
 * running thread asked first (release()). A thread never
 * waits for a lock its own thread holds (another coroutine's transaction, on another connection
 * of the same file: it could only be given back by this thread): that take fails at once. All
 * files share one mutex, held only for the few instructions of a take or give.
 */
#include <sys/stat.h>

#define NFILES 64

typedef struct waiter {
  pthread_cond_t cv; /* on CLOCK_MONOTONIC */
  struct waiter *next;
} waiter_t;

struct zv_sqlite_wlock {
  dev_t dev;
  ino_t ino;
  int refs; /* connections open on the file; 0: a free slot */
  const void *owner; /* the holding connection, NULL when free */
  pthread_t thread;  /* its thread, while held */
  waiter_t *head, *tail;
};

static struct {
  pthread_mutex_t mu;
  zv_sqlite_wlock_t files[NFILES];
  zv_sqlite_wlock_stats_t stats;
} locks = {PTHREAD_MUTEX_INITIALIZER, {{0}}, {0}};

zv_sqlite_wlock_t *zv_sqlite_wlock_open(const char *path) {
  struct stat st;
  zv_sqlite_wlock_t *w = NULL, *free_slot = NULL;
  if (!path || !path[0] || stat(path, &st) != 0) return NULL;
  pthread_mutex_lock(&locks.mu);
  for (int i = 0; i < NFILES && !w; i++) {
    zv_sqlite_wlock_t *f = &locks.files[i];
    if (f->refs == 0) {
      if (!free_slot) free_slot = f;
    } else if (f->dev == st.st_dev && f->ino == st.st_ino) {
      w = f;
    }
  }
  if (!w && free_slot) {
    w = free_slot;
    w->dev = st.st_dev;
    w->ino = st.st_ino;
    w->owner = NULL;
    w->head = w->tail = NULL;
  }
  if (w) w->refs++;
  pthread_mutex_unlock(&locks.mu);
  return w;
}

/* Under locks.mu: frees the lock and wakes the first waiter (one wake-up, no herd). The lock is
 * not reserved for it: a thread that is running and asks first takes it (the woken waiter then
 * waits again, still first in line). Handing it to the waiter instead made a convoy: on a
 * loaded machine the waiter is often not running, and the lock sat idle until it was. */
static void release(zv_sqlite_wlock_t *w) {
  w->owner = NULL;
  if (w->head) {
    locks.stats.handoffs++;
    pthread_cond_signal(&w->head->cv);
  }
}

void zv_sqlite_wlock_close(zv_sqlite_wlock_t *w, const void *owner) {
  if (!w) return;
  pthread_mutex_lock(&locks.mu);
  if (w->owner == owner) release(w);
  w->refs--;
  pthread_mutex_unlock(&locks.mu);
}

int zv_sqlite_wlock_take(zv_sqlite_wlock_t *w, const void *owner, int timeout_ms) {
  waiter_t me;
  pthread_condattr_t a;
  struct timespec until;
  uint64_t t;
  int rc = 0;
  if (!w) return 0;
  pthread_mutex_lock(&locks.mu);
  if (w->owner == owner) { /* already held by this connection: nothing to wait for */
    pthread_mutex_unlock(&locks.mu);
    return 0;
  }
  if (!w->owner) {
    w->owner = owner;
    w->thread = pthread_self();
    locks.stats.takes++;
    pthread_mutex_unlock(&locks.mu);
    return 0;
  }
  if (pthread_equal(w->thread, pthread_self())) {
    locks.stats.refused++;
    pthread_mutex_unlock(&locks.mu);
    return ZV_SQLITE_WLOCK_OWN_THREAD;
  }
  if (timeout_ms <= 0) {
    locks.stats.timeouts++;
    pthread_mutex_unlock(&locks.mu);
    return ZV_SQLITE_WLOCK_TIMEOUT;
  }
  t = now_ns() + (uint64_t)timeout_ms * 1000000u;
  until.tv_sec = (time_t)(t / 1000000000u);
  until.tv_nsec = (long)(t % 1000000000u);
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&me.cv, &a);
  pthread_condattr_destroy(&a);
  me.next = NULL;
  if (w->tail) w->tail->next = &me;
  else w->head = &me;
  w->tail = &me;
  locks.stats.waits++;
  while (w->owner && pthread_cond_timedwait(&me.cv, &locks.mu, &until) != ETIMEDOUT) {
  }
  { /* leave the queue, taken or timed out */
    waiter_t **p = &w->head, *prev = NULL;
    while (*p != &me) {
      prev = *p;
      p = &(*p)->next;
    }
    *p = me.next;
    if (w->tail == &me) w->tail = prev;
  }
  if (!w->owner) {
    w->owner = owner;
    w->thread = pthread_self();
    locks.stats.takes++;
  } else {
    locks.stats.timeouts++;
    rc = ZV_SQLITE_WLOCK_TIMEOUT;
  }
  pthread_mutex_unlock(&locks.mu);
  pthread_cond_destroy(&me.cv);
  return rc;
}

void zv_sqlite_wlock_give(zv_sqlite_wlock_t *w, const void *owner) {
  if (!w) return;
  pthread_mutex_lock(&locks.mu);
  if (w->owner == owner) release(w);
  pthread_mutex_unlock(&locks.mu);
}

void zv_sqlite_wlock_stats(zv_sqlite_wlock_stats_t *s) {
  pthread_mutex_lock(&locks.mu);
  *s = locks.stats;
  s->waiting = 0;
  for (int i = 0; i < NFILES; i++)
    for (waiter_t *n = locks.files[i].head; n; n = n->next) s->waiting++;
  pthread_mutex_unlock(&locks.mu);
}
