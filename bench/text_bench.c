/*
 * text_bench.c: the did-you-mean kernel. TextDistance compares two 8-12 byte words; TextClosest
 * scans 20 command names for a typical typo, as `zever helo` does.
 */
#include "bench.h"
#include "../host/text/text.h"

static const zv_text_str_t commands[] = {
  {"bench", 5},   {"check", 5},    {"completion", 10}, {"config", 6}, {"console", 7},
  {"doctor", 6},  {"fmt", 3},      {"gen", 3},         {"help", 4},   {"jobs", 4},
  {"mail", 4},    {"migrate", 7},  {"new", 3},         {"routes", 6}, {"run", 3},
  {"schedule", 8}, {"serve", 5},   {"test", 4},        {"version", 7}, {"worker", 6},
};

static void bench_distance(zv_bench_t *b) {
  /* Words of 9 and 10 bytes differing in the middle: little prefix or suffix to trim. */
  static const char *a = "migration", *c = "mgirtaions";
  size_t d = 0;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_text_distance(a, 9, c, 10, &d);
    zv_bench_keep(d);
  }
}

static void bench_closest(zv_bench_t *b) {
  size_t index = 0;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_text_closest("sevre", 5, commands, ZV_ARRAY_SIZE(commands), 2, &index, NULL);
    zv_bench_keep(index);
  }
}

static void bench_closest_miss(zv_bench_t *b) {
  size_t index = 0;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    int rc = zv_text_closest("xyzzyq", 6, commands, ZV_ARRAY_SIZE(commands), 2, &index, NULL);
    zv_bench_keep(rc);
  }
}

ZV_BENCH_MAIN(ZV_BENCH(TextDistance, bench_distance) ZV_BENCH(TextClosest, bench_closest)
                  ZV_BENCH(TextClosestMiss, bench_closest_miss))
