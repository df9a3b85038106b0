/*
 * idempotency_bench.c: the idempotency table core (host/idempotency/): a replay hit, a
 * duplicate of a pending key, the full begin + complete (+ forget) cycle of a request, the
 * cycle on new keys in a full table (an eviction per call), and the request fingerprint. The
 * clock is passed in.
 *
 *   make build/bench/idempotency_bench && build/bench/idempotency_bench
 */
#include <stdio.h>

#include "bench.h"
#include "idempotency/idem.h"

#define KEYS 1024
#define NS 1000000000ull

static char keys[KEYS][40];
static size_t lens[KEYS];
static const char fp[] = "858ff2893289bba3d359d9031acc02fc";
static const char result[] = "3:2011:16:application/json21:{\"id\":\"ch_1\",\"ok\":1}";

static zv_idem_t *completed(size_t max_keys) {
  zv_idem_t *t;
  zv_idem_begin_t r;
  char buf[256];
  if (zv_idem_new(max_keys, 64 << 20, &t)) abort();
  for (int i = 0; i < KEYS; i++) {
    lens[i] = (size_t)snprintf(keys[i], sizeof keys[i], "8c1f4e2a-0b7d-4a%06d", i);
    zv_idem_begin(t, keys[i], lens[i], fp, sizeof fp - 1, 86400 * NS, 60 * NS, 1, buf,
                  sizeof buf, &r);
    zv_idem_complete(t, keys[i], lens[i], r.token, 1, result, sizeof result - 1, 1);
  }
  return t;
}

static void bench_replay(zv_bench_t *b) {
  zv_idem_t *t = completed(100000);
  zv_idem_begin_t r;
  char buf[256];
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    unsigned k = (unsigned)i & (KEYS - 1);
    zv_idem_begin(t, keys[k], lens[k], fp, sizeof fp - 1, 86400 * NS, 60 * NS, i + 2, buf,
                  sizeof buf, &r);
    zv_bench_keep(r.len);
  }
  zv_idem_free(t);
}

static void bench_pending(zv_bench_t *b) {
  zv_idem_t *t;
  zv_idem_begin_t r;
  char buf[256];
  if (zv_idem_new(100000, 64 << 20, &t)) abort();
  zv_idem_begin(t, "pending", 7, fp, sizeof fp - 1, 86400 * NS, 0, 1, buf, sizeof buf, &r);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_idem_begin(t, "pending", 7, fp, sizeof fp - 1, 86400 * NS, 0, i + 2, buf, sizeof buf, &r);
    zv_bench_keep(r.status);
  }
  zv_idem_free(t);
}

/* One request's life: reserve, store the response, then forget (so the table stays small). */
static void bench_cycle(zv_bench_t *b) {
  zv_idem_t *t;
  zv_idem_begin_t r;
  char buf[256];
  int existed;
  if (zv_idem_new(100000, 64 << 20, &t)) abort();
  for (int i = 0; i < KEYS; i++)
    lens[i] = (size_t)snprintf(keys[i], sizeof keys[i], "8c1f4e2a-0b7d-4a%06d", i);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    unsigned k = (unsigned)i & (KEYS - 1);
    zv_idem_begin(t, keys[k], lens[k], fp, sizeof fp - 1, 86400 * NS, 60 * NS, i + 1, buf,
                  sizeof buf, &r);
    zv_idem_complete(t, keys[k], lens[k], r.token, 1, result, sizeof result - 1, i + 1);
    zv_idem_forget(t, keys[k], lens[k], 0, i + 1, &existed);
  }
  zv_idem_free(t);
}

/* New keys forever into a table of 10000: each begin evicts the least recently used. */
static void bench_churn(zv_bench_t *b) {
  zv_idem_t *t = completed(10000);
  zv_idem_begin_t r;
  char buf[256], key[24] = "idem:";
  for (int i = 0; i < 10000; i++) {
    uint64_t id = (uint64_t)i | (1ull << 63);
    memcpy(key + 5, &id, sizeof id);
    zv_idem_begin(t, key, 13, fp, sizeof fp - 1, 86400 * NS, 60 * NS, 2, buf, sizeof buf, &r);
    zv_idem_complete(t, key, 13, r.token, 1, result, sizeof result - 1, 2);
  }
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    memcpy(key + 5, &i, sizeof i);
    zv_idem_begin(t, key, 13, fp, sizeof fp - 1, 86400 * NS, 60 * NS, i + 3, buf, sizeof buf, &r);
    zv_idem_complete(t, key, 13, r.token, 1, result, sizeof result - 1, i + 3);
  }
  zv_idem_free(t);
}

static void bench_fingerprint(zv_bench_t *b) {
  static char body[1024];
  const char *parts[4] = {"POST", "/v1/charges", "", body};
  size_t plens[4] = {4, 11, 0, sizeof body};
  char out[33];
  for (size_t i = 0; i < sizeof body; i++) body[i] = (char)('a' + i % 26);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    body[0] = (char)i;
    zv_idem_fingerprint(parts, plens, 4, out);
    zv_bench_keep(out[0]);
  }
}

ZV_BENCH_MAIN(ZV_BENCH(IdemBeginReplay, bench_replay)
              ZV_BENCH(IdemBeginPending, bench_pending)
              ZV_BENCH(IdemBeginCompleteForget, bench_cycle)
              ZV_BENCH(IdemBeginCompleteChurn, bench_churn)
              ZV_BENCH(IdemFingerprint1KiB, bench_fingerprint))
