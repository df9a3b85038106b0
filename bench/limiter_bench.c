/*
 * limiter_bench.c: the limiter core (host/limiter/) on existing keys: one thread, two threads
 * on distinct keys (ns per op per thread, and the wall time per op of both), and one hot key
 * shared by two threads. The clock is passed in (a counter), so the numbers are the table's.
 *
 *   make bench BENCH=Limiter
 */
#include <pthread.h>
#include <stdio.h>

#include "bench.h"
#include "limiter/limiter.h"

#define KEYS 1024

static char keys[KEYS][24];
static size_t lens[KEYS];
/* The same keys split by stripe: part[0] maps to stripes 0..31, part[1] to 32..63. */
static int part[2][KEYS];
static int nparts[2];

static uint64_t fnv1a(const char *p, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)p[i];
    h *= 1099511628211ull;
  }
  return h;
}

static zv_limiter_t *fresh(void) {
  zv_limiter_t *l;
  zv_limiter_opts_t o = {1e9, 1e9, 100000, 600};
  if (zv_limiter_new(&o, &l)) abort();
  for (int i = 0; i < KEYS; i++) {
    lens[i] = (size_t)snprintf(keys[i], sizeof keys[i], "user:%d", 100000 + i);
  }
  nparts[0] = nparts[1] = 0;
  for (int i = 0; i < KEYS; i++) {
    int half = (fnv1a(keys[i], lens[i]) & (ZV_LIMITER_STRIPES - 1)) >= ZV_LIMITER_STRIPES / 2;
    part[half][nparts[half]++] = i;
  }
  return l;
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

typedef struct {
  zv_limiter_t *l;
  uint64_t n;
  const int *keys;  /* indexes into keys[] */
  unsigned mask;    /* keys used - 1 (a power of two); 0 = one hot key */
} worker_t;

static void *run_worker(void *arg) {
  worker_t *w = arg;
  zv_limiter_result_t r;
  uint64_t allowed = 0; /* kept per thread: a shared sink would bounce between the cores */
  for (uint64_t i = 0; i < w->n; i++) {
    int k = w->keys[(unsigned)i & w->mask];
    zv_limiter_allow(w->l, keys[k], lens[k], 1, i + 2, &r);
    allowed += (uint64_t)r.allowed;
  }
  zv_bench_keep(allowed);
  return NULL;
}

/*
 * Two threads, each doing b->n calls: the reported ns/op is wall time / b->n, i.e. the time of
 * one call per thread while both run. Lower than the one-thread figure means the two ran in
 * parallel without contending.
 */
enum { HOT, SHARED_STRIPES, OWN_STRIPES };

static int all[KEYS];

static void two_threads(zv_bench_t *b, int mode) {
  zv_limiter_t *l = fresh();
  zv_limiter_result_t r;
  pthread_t t[2];
  worker_t w[2];
  for (int i = 0; i < KEYS; i++) {
    all[i] = i;
    zv_limiter_allow(l, keys[i], lens[i], 1, 1, &r);
  }
  for (int i = 0; i < 2; i++) {
    w[i].l = l;
    w[i].n = b->n;
    if (mode == HOT) {
      w[i].keys = all;
      w[i].mask = 0;
    } else if (mode == SHARED_STRIPES) {
      /* Distinct keys (even / odd halves of the list) spread over all stripes. */
      w[i].keys = all + i * (KEYS / 2);
      w[i].mask = KEYS / 2 - 1;
    } else {
      /* Distinct keys whose stripes do not overlap: 256 of each half. */
      if (nparts[i] < 256) abort();
      w[i].keys = part[i];
      w[i].mask = 255;
    }
  }
  zv_bench_reset(b);
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, run_worker, &w[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  zv_limiter_free(l);
}

static void bench_allow_2threads(zv_bench_t *b) {
  two_threads(b, SHARED_STRIPES);
}

static void bench_allow_2threads_own_stripes(zv_bench_t *b) {
  two_threads(b, OWN_STRIPES);
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

ZV_BENCH_MAIN(ZV_BENCH(LimiterAllow, bench_allow)
              ZV_BENCH(LimiterAllow2Threads, bench_allow_2threads)
              ZV_BENCH(LimiterAllow2ThreadsOwnStripes, bench_allow_2threads_own_stripes)
              ZV_BENCH(LimiterAllowHotKey, bench_allow_hot_key)
              ZV_BENCH(LimiterAllowHotKey2Threads, bench_allow_hot_key_2threads)
              ZV_BENCH(LimiterAllowChurn, bench_allow_churn))
