/*
 * queue_bench.c: the memory queue core (host/queue/): a push + pop + ack round trip on one
 * topic, the same with 1000 messages waiting, a delayed push that becomes visible, and a lease
 * that runs out and comes back. The clock is passed in.
 *
 *   make bench BENCH=Queue
 */
#include <stdio.h>

#include "bench.h"
#include "queue/queue.h"

static const char payload[] = "{\"job\":\"send_welcome\",\"args\":{\"user_id\":42}}";

static void round_trip(zv_bench_t *b, int backlog) {
  zv_queue_t *q;
  if (zv_queue_new(&q)) abort();
  uint64_t id;
  for (int i = 0; i < backlog; i++)
    zv_queue_push(q, "jobs", 4, 1, payload, sizeof payload - 1, NULL, 0, 0, 0, 1, &id);
  char buf[256];
  zv_queue_msg_t m;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_queue_push(q, "jobs", 4, 1, payload, sizeof payload - 1, NULL, 0, 0, 0, i + 1, &id);
    if (zv_queue_pop(q, "jobs", 4, 30000000000ull, i + 1, buf, sizeof buf, &m)) abort();
    zv_bench_keep(zv_queue_ack(q, m.id, m.lease));
  }
  zv_queue_free(q);
}

static void bench_round_trip(zv_bench_t *b) {
  round_trip(b, 0);
}

static void bench_round_trip_backlog(zv_bench_t *b) {
  round_trip(b, 1000);
}

static void bench_delayed(zv_bench_t *b) {
  zv_queue_t *q;
  if (zv_queue_new(&q)) abort();
  uint64_t id;
  char buf[256];
  zv_queue_msg_t m;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    uint64_t now = i * 10 + 1;
    zv_queue_push(q, "jobs", 4, 1, payload, sizeof payload - 1, NULL, 0, 5, 0, now, &id);
    if (zv_queue_pop(q, "jobs", 4, 30000000000ull, now + 5, buf, sizeof buf, &m)) abort();
    zv_bench_keep(zv_queue_ack(q, m.id, m.lease));
  }
  zv_queue_free(q);
}

static void bench_lease_expiry(zv_bench_t *b) {
  zv_queue_t *q;
  if (zv_queue_new(&q)) abort();
  uint64_t id;
  char buf[256];
  zv_queue_msg_t m;
  zv_queue_push(q, "jobs", 4, 1, payload, sizeof payload - 1, NULL, 0, 0, 0, 1, &id);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    /* each pop finds the previous lease (1 ns) run out: promote, attempt + 1, lease again */
    if (zv_queue_pop(q, "jobs", 4, 1, i + 2, buf, sizeof buf, &m)) abort();
    zv_bench_keep(m.attempt);
  }
  zv_queue_free(q);
}

ZV_BENCH_MAIN(ZV_BENCH(QueueRoundTrip, bench_round_trip)
              ZV_BENCH(QueueRoundTripBacklog1000, bench_round_trip_backlog)
              ZV_BENCH(QueueDelayed, bench_delayed)
              ZV_BENCH(QueueLeaseExpiry, bench_lease_expiry))
