/*
 * cron_bench.c: micro-benchmarks of the cron core (host/cron/).
 *
 * CronParse cycles through typical specs (fields with lists, ranges, steps, names, descriptors);
 * CronNext* ask for the next fire time after times spread over a year (a fixed stride, so the
 * searches start at different minutes, days and months). CronNextRare is the worst common case:
 * Feb 29, crossing up to eight years. Both are expected to allocate nothing.
 * Run: make bench BENCH=Cron (or build/bench/cron_bench Cron).
 */
#include <string.h>

#include "bench.h"
#include "cron/cron.h"

static const char *const SPECS[] = {
  "*/5 * * * *",       "0 9 * * 1-5",     "30 4 1,15 * *",     "0 0 13 * fri",
  "1-30/5 8-18 * jan-jun mon-fri",        "@daily",            "15 10 * * sun",
  "0 */2 * * *",
};

static void bench_parse(zv_bench_t *b) {
  size_t lens[ZV_ARRAY_SIZE(SPECS)];
  zv_cron_t c;
  char err[ZV_CRON_ERRSIZE];
  for (size_t i = 0; i < ZV_ARRAY_SIZE(SPECS); i++) lens[i] = strlen(SPECS[i]);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    size_t k = i % ZV_ARRAY_SIZE(SPECS);
    zv_cron_parse(SPECS[k], lens[k], &c, err, sizeof err);
    zv_bench_keep(c.minute);
  }
}

static void next_one(zv_bench_t *b, const char *spec) {
  zv_cron_t c;
  char err[ZV_CRON_ERRSIZE];
  int64_t t0 = 1704067200, out = 0; /* 2024-01-01 */
  if (zv_cron_parse(spec, strlen(spec), &c, err, sizeof err)) return;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_cron_next(&c, t0 + (int64_t)(i % 4096) * 7919, &out); /* ~1 year in 4096 strides */
    zv_bench_keep(out);
  }
}

static void bench_next_every5(zv_bench_t *b) {
  next_one(b, "*/5 * * * *");
}

static void bench_next_weekdays(zv_bench_t *b) {
  next_one(b, "0 9 * * 1-5");
}

static void bench_next_or(zv_bench_t *b) {
  next_one(b, "0 0 13 * fri");
}

static void bench_next_rare(zv_bench_t *b) {
  next_one(b, "0 12 29 2 *");
}

static void bench_next_mixed(zv_bench_t *b) {
  zv_cron_t cs[ZV_ARRAY_SIZE(SPECS)];
  char err[ZV_CRON_ERRSIZE];
  int64_t t0 = 1704067200, out = 0;
  for (size_t k = 0; k < ZV_ARRAY_SIZE(SPECS); k++) {
    zv_cron_parse(SPECS[k], strlen(SPECS[k]), &cs[k], err, sizeof err);
  }
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_cron_next(&cs[i % ZV_ARRAY_SIZE(SPECS)], t0 + (int64_t)(i % 4096) * 7919, &out);
    zv_bench_keep(out);
  }
}

ZV_BENCH_MAIN(
  ZV_BENCH(CronParse, bench_parse)
  ZV_BENCH(CronNext, bench_next_mixed)
  ZV_BENCH(CronNextEvery5, bench_next_every5)
  ZV_BENCH(CronNextWeekdays, bench_next_weekdays)
  ZV_BENCH(CronNextOr, bench_next_or)
  ZV_BENCH(CronNextRare, bench_next_rare)
)
