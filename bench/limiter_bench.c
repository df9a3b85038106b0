/*
 * limiter_bench.c: the limiter core (host/limiter/) on existing keys: one thread, two threads
 * on distinct keys (ns per op per thread, and the wall time per op of both), and one hot key
 * shared by two threads. The clock is passed in (a counter), so the numbers are the table's.
 *
 *   make bench BENCH=Limiter
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "bench.h"
#include "limiter/limiter.h"

#define KEYS 1024

static char keys[KEYS][24];
static size_t lens[KEYS];
/* The same keys split by stripe: part[0] maps to stripes 0..31, part[1] to 32..63. */
static int part[2][KEYS];
static int nparts[2];

static zv_limiter_t *fresh_with(zv_limiter_opts_t o) {
  zv_limiter_t *l;
  if (zv_limiter_new(&o, &l)) abort();
  for (int i = 0; i < KEYS; i++) {
    lens[i] = (size_t)snprintf(keys[i], sizeof keys[i], "user:%d", 100000 + i);
  }
  nparts[0] = nparts[1] = 0;
  for (int i = 0; i < KEYS; i++) {
    /* The limiter's stripe hash (limiter.h). */
    int half = (zv_hash64(keys[i], lens[i]) & (ZV_LIMITER_STRIPES - 1)) >= ZV_LIMITER_STRIPES / 2;
    part[half][nparts[half]++] = i;
  }
  return l;
}

static zv_limiter_t *fresh(void) {
  return fresh_with((zv_limiter_opts_t){1e9, 1e9, 100000, 600});
}

static void bench_allow(zv_bench_t *b) {
  zv_limiter_t *l = fresh();
  zv_limiter_result_t r;
  for (int i = 0; i < KEYS; i++) zv_limiter_allow(l, keys[i], lens[i], 1, 1, &r);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    unsigned k = (unsigned)i & (KEYS - 1);
    zv_limiter_allow(l, keys[k], lens[k], 1, i + 2, &r);
    zv_bench_keep(r.allowed);
  }
  zv_limiter_free(l);
}

/* Each worker on its own cache line: the one it writes (cpu_ns) is never the other's. */
typedef union {
  struct {
    zv_limiter_t *l;
    uint64_t n;
    const int *keys;  /* indexes into keys[] */
    unsigned mask;    /* keys used - 1 (a power of two); 0 = one hot key */
    double cpu_ns;    /* out: the thread's CPU time */
    uint64_t allowed; /* out: calls allowed (main keeps it: the sink is not the threads') */
  } w;
  char pad[128];
} worker_t;

static double thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *run_worker(void *arg) {
  worker_t *w = arg;
  zv_limiter_result_t r;
  uint64_t allowed = 0; /* kept per thread: a shared sink would bounce between the cores */
  double start = thread_cpu_ns();
  for (uint64_t i = 0; i < w->w.n; i++) {
    int k = w->w.keys[(unsigned)i & w->w.mask];
    zv_limiter_allow(w->w.l, keys[k], lens[k], 1, i + 2, &r);
    allowed += (uint64_t)r.allowed;
  }
  w->w.cpu_ns = thread_cpu_ns() - start;
  w->w.allowed = allowed;
  return NULL;
}

/*
 * Two threads, each doing b->n calls: the reported ns/op is wall time / b->n, i.e. the time of
 * one call per thread while both run. Lower than the one-thread figure means the two ran in
 * parallel without contending. On a shared machine a thread may wait for a CPU, which the wall
 * time counts too; so each run also records the threads' own CPU time per call, and main prints
 * its median over the timed runs: that part is what contention (false sharing included) costs.
 */
enum { HOT, SHARED_STRIPES, OWN_STRIPES, CHURN, MODES };

static const char *const mode_names[MODES] = {"LimiterAllowHotKey2Threads", "LimiterAllow2Threads",
                                              "LimiterAllow2ThreadsOwnStripes",
                                              "LimiterAllowChurn2Threads"};

#define CPU_RUNS 5 /* the harness's default count of timed runs: the last calls of a case */
static double cpu_per_op[MODES][CPU_RUNS];
static unsigned cpu_calls[MODES];

static int all[KEYS];

static void two_threads(zv_bench_t *b, int mode) {
  /*
   * CHURN: 1024 keys cycling through a table of 768 with a 1 us idle sweep (the clock moves 1 ns
   * a call), so calls admit, evict and sweep on both threads at once; mostly for the sanitizers.
   */
  zv_limiter_t *l = mode == CHURN ? fresh_with((zv_limiter_opts_t){1e9, 1, 768, 1e-6}) : fresh();
  zv_limiter_result_t r;
  pthread_t t[2];
  worker_t w[2];
  for (int i = 0; i < KEYS; i++) {
    all[i] = i;
    zv_limiter_allow(l, keys[i], lens[i], 1, 1, &r);
  }
  for (int i = 0; i < 2; i++) {
    w[i].w.l = l;
    w[i].w.n = b->n;
    if (mode == HOT) {
      w[i].w.keys = all;
      w[i].w.mask = 0;
    } else if (mode == SHARED_STRIPES || mode == CHURN) {
      /* Distinct keys (even / odd halves of the list) spread over all stripes. */
      w[i].w.keys = all + i * (KEYS / 2);
      w[i].w.mask = KEYS / 2 - 1;
    } else {
      /* Distinct keys whose stripes do not overlap: 256 of each half. */
      if (nparts[i] < 256) abort();
      w[i].w.keys = part[i];
      w[i].w.mask = 255;
    }
  }
  zv_bench_reset(b);
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, run_worker, &w[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++) zv_bench_keep(w[i].w.allowed);
  double cpu = w[0].w.cpu_ns > w[1].w.cpu_ns ? w[0].w.cpu_ns : w[1].w.cpu_ns;
  cpu_per_op[mode][cpu_calls[mode]++ % CPU_RUNS] = cpu / (double)b->n;
  zv_limiter_free(l);
}

static void bench_allow_2threads(zv_bench_t *b) {
  two_threads(b, SHARED_STRIPES);
}

static void bench_allow_2threads_own_stripes(zv_bench_t *b) {
  two_threads(b, OWN_STRIPES);
}

static void bench_allow_churn_2threads(zv_bench_t *b) {
  two_threads(b, CHURN);
}

static void bench_allow_hot_key(zv_bench_t *b) {
  zv_limiter_t *l = fresh();
  zv_limiter_result_t r;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_limiter_allow(l, keys[0], lens[0], 1, i + 2, &r);
    zv_bench_keep(r.allowed);
  }
  zv_limiter_free(l);
}

static void bench_allow_hot_key_2threads(zv_bench_t *b) {
  two_threads(b, HOT);
}

/* Churn: every call is a new key in a full table (admission + eviction). */
static void bench_allow_churn(zv_bench_t *b) {
  zv_limiter_t *l;
  zv_limiter_opts_t o = {10, 20, 1000, 0};
  zv_limiter_result_t r;
  char key[32];
  if (zv_limiter_new(&o, &l)) abort();
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    int len = snprintf(key, sizeof key, "ip:%llu", (unsigned long long)i);
    zv_limiter_allow(l, key, (size_t)len, 1, i + 1, &r);
  }
  zv_limiter_free(l);
}

int main(int argc, char **argv) {
  static const zv_bench_case_t cases[] = {
    ZV_BENCH(LimiterAllow, bench_allow)
    ZV_BENCH(LimiterAllow2Threads, bench_allow_2threads)
    ZV_BENCH(LimiterAllow2ThreadsOwnStripes, bench_allow_2threads_own_stripes)
    ZV_BENCH(LimiterAllowHotKey, bench_allow_hot_key)
    ZV_BENCH(LimiterAllowHotKey2Threads, bench_allow_hot_key_2threads)
    ZV_BENCH(LimiterAllowChurn, bench_allow_churn)
    ZV_BENCH(LimiterAllowChurn2Threads, bench_allow_churn_2threads)
  };
  int rc = zv_bench_main(argc, argv, cases, ZV_ARRAY_SIZE(cases));
  /* The busier thread's CPU time per call, median of the timed runs (see two_threads). */
  for (int m = 0; m < MODES; m++) {
    unsigned n = cpu_calls[m] < CPU_RUNS ? cpu_calls[m] : CPU_RUNS;
    if (n == 0) continue;
    printf("# %-36s thread CPU %8.2f ns/op (wall ns/op above also counts waits for a CPU)\n",
           mode_names[m], zv_bench_median(cpu_per_op[m], (int)n));
  }
  return rc;
}
