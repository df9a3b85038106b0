/*
 * cache_bench.c: the memory cache core (host/cache/): get hit, get miss, set (replace), incr,
 * and set under a full budget (eviction on every write). The clock is passed in.
 *
 *   make bench BENCH=Cache
 */
#include <stdio.h>

#include "bench.h"
#include "cache/cache.h"

#define KEYS 1024

static char keys[KEYS][24];
static size_t lens[KEYS];
static const char value[] = "{\"id\":42,\"name\":\"a cached value of some 60 bytes\"}";

static zv_cache_t *filled(size_t max_bytes) {
  zv_cache_t *c;
  if (zv_cache_new(max_bytes, &c)) abort();
  for (int i = 0; i < KEYS; i++) {
    lens[i] = (size_t)snprintf(keys[i], sizeof keys[i], "user:%d", 100000 + i);
    zv_cache_set(c, keys[i], lens[i], ZV_CACHE_STRING, value, sizeof value - 1, 0, 1, 0);
  }
  return c;
}

static void bench_get(zv_bench_t *b) {
  zv_cache_t *c = filled(64 << 20);
  char buf[256];
  size_t len;
  int type;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    unsigned k = (unsigned)i & (KEYS - 1);
    zv_bench_keep(zv_cache_get(c, keys[k], lens[k], i + 2, buf, sizeof buf, &len, &type));
  }
  zv_cache_free(c);
}

static void bench_get_miss(zv_bench_t *b) {
  zv_cache_t *c = filled(64 << 20);
  char buf[256];
  size_t len;
  int type;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++)
    zv_bench_keep(zv_cache_get(c, "missing:key", 11, i + 2, buf, sizeof buf, &len, &type));
  zv_cache_free(c);
}

static void bench_set(zv_bench_t *b) {
  zv_cache_t *c = filled(64 << 20);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    unsigned k = (unsigned)i & (KEYS - 1);
    zv_cache_set(c, keys[k], lens[k], ZV_CACHE_STRING, value, sizeof value - 1, 0, i + 2, 0);
  }
  zv_cache_free(c);
}

static void bench_incr(zv_bench_t *b) {
  zv_cache_t *c;
  double out;
  if (zv_cache_new(1 << 20, &c)) abort();
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_cache_incr(c, "counter", 7, 1, 0, i + 1, &out);
  zv_bench_keep(out);
  zv_cache_free(c);
}

/* A budget of ~100 entries and a new key per write: every set evicts one entry. */
static void bench_set_evict(zv_bench_t *b) {
  zv_cache_t *c;
  char key[32];
  if (zv_cache_new(100 * (zv_cache_overhead() + 70), &c)) abort();
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    int len = snprintf(key, sizeof key, "k:%llu", (unsigned long long)i);
    zv_cache_set(c, key, (size_t)len, ZV_CACHE_STRING, value, sizeof value - 1, 0, i + 1, 0);
  }
  zv_cache_free(c);
}

ZV_BENCH_MAIN(ZV_BENCH(CacheGet, bench_get)
              ZV_BENCH(CacheGetMiss, bench_get_miss)
              ZV_BENCH(CacheSet, bench_set)
              ZV_BENCH(CacheIncr, bench_incr)
              ZV_BENCH(CacheSetEvict, bench_set_evict))
