/*
 * duration_bench.c: micro-benchmarks of the duration core (host/duration/).
 *
 * Targets (issue 5): DurationParse <= 40 ns/op and 0 allocs for inputs up to 32 bytes;
 * DurationFormat <= 40 ns/op into a caller buffer. Issue 24 (2x the Go figures): DurationParse
 * <= 15 ns, DurationParse32Bytes and ParseMin <= 40 ns, DurationFormat <= 12 ns. On a loaded
 * machine compare builds with bash bench/instructions.sh --base OTHER_TREE Duration. The mixed cases cycle through a table so
 * that one input's branch pattern is not learned; the single-format cases show the spread.
 * Run: make bench BENCH=Duration (or build/bench/duration_bench Duration).
 */
#include <string.h>

#include "bench.h"
#include "duration/duration.h"

typedef struct {
  const char *s;
  size_t len;
} str_t;

#define S(lit) {lit, sizeof(lit) - 1}

/* Typical configuration values in all three formats, 2 to 24 bytes. The 31-byte, 11-component
 * input of DurationParse32Bytes is measured on its own: no configuration value looks like it. */
static const str_t mixed[] = {
  S("1h30m"),       S("300ms"),         S("PT1H30M"),     S("-1.5h"),
  S("PT0.5S"),      S("1500000000"),    S("15ns"),        S("P1DT2H"),
  S("2562047h47m16.854775807s"),        S("PT1H30M15.5S"),
  S("-PT1M"),       S("2µs"),           S("90s"),         S("PT30S"),
  S("5400000000000"), S("1d12h"),
};

static void parse_one(zv_bench_t *b, const char *s, size_t len) {
  int64_t ns;
  zv_duration_cause_t cause;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_duration_parse(s, len, ZV_DURATION_ALL, 1, &ns, &cause);
    zv_bench_keep(ns);
  }
}

static void bench_parse(zv_bench_t *b) {
  int64_t ns = 0;
  zv_duration_cause_t cause;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    const str_t *in = &mixed[i % ZV_ARRAY_SIZE(mixed)];
    zv_duration_parse(in->s, in->len, ZV_DURATION_ALL, 1, &ns, &cause);
    zv_bench_keep(ns);
  }
}

static void bench_parse_units(zv_bench_t *b) {
  parse_one(b, "1h30m", 5);
}

static void bench_parse_iso(zv_bench_t *b) {
  parse_one(b, "PT1H30M", 7);
}

static void bench_parse_nano(zv_bench_t *b) {
  parse_one(b, "5400000000000", 13);
}

static void bench_parse_fraction(zv_bench_t *b) {
  parse_one(b, "1.5h", 4);
}

static void bench_parse_32(zv_bench_t *b) {
  parse_one(b, "1h2m3.5s4ms5us6ns7h8m9s10ms11us", 31);
}

static void bench_parse_max(zv_bench_t *b) {
  parse_one(b, "-2562047h47m16.854775808s", 25);
}

static void bench_parse_reject(zv_bench_t *b) {
  int64_t ns = 0;
  zv_duration_cause_t cause;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_bench_keep(zv_duration_parse("1x", 2, ZV_DURATION_ALL, 1, &ns, &cause));
    zv_bench_keep(cause.code);
  }
}

/* The cold path: the cause text and the message of a rejection, as tostring(err) builds them. */
static void bench_reject_text(zv_bench_t *b) {
  char buf[ZV_DURATION_MSGSIZE];
  int64_t ns = 0;
  zv_duration_cause_t cause;
  zv_duration_parse("1x", 2, ZV_DURATION_ALL, 1, &ns, &cause);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_bench_keep(zv_duration_cause_text(&cause, "1x", 2, buf, sizeof buf));
    zv_bench_keep(zv_duration_message("1x", 2, 1, ZV_DURATION_ISO8601, ZV_DURATION_ALL, buf,
                                      sizeof buf));
  }
}

static const int64_t values[] = {
  INT64_C(5400000000000), INT64_C(500000000), 0, INT64_C(-60000000000), INT64_C(1500),
  INT64_C(93600000000000), INT64_C(9223372036854775807), INT64_C(16000000001),
};

static void bench_format(zv_bench_t *b) {
  static const unsigned fmts[] = {ZV_DURATION_ISO8601, ZV_DURATION_UNITS, ZV_DURATION_NANO};
  char buf[ZV_DURATION_BUFSIZE];
  size_t len = 0;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_duration_format(values[i % ZV_ARRAY_SIZE(values)], fmts[i % 3], 0, buf, sizeof buf, &len);
    zv_bench_keep(len);
  }
}

static void format_one(zv_bench_t *b, unsigned fmt) {
  char buf[ZV_DURATION_BUFSIZE];
  size_t len = 0;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_duration_format(values[i % ZV_ARRAY_SIZE(values)], fmt, 0, buf, sizeof buf, &len);
    zv_bench_keep(len);
  }
}

static void bench_format_units(zv_bench_t *b) {
  format_one(b, ZV_DURATION_UNITS);
}

static void bench_format_iso(zv_bench_t *b) {
  format_one(b, ZV_DURATION_ISO8601);
}

static void bench_format_nano(zv_bench_t *b) {
  format_one(b, ZV_DURATION_NANO);
}

ZV_BENCH_MAIN(
  ZV_BENCH(DurationParse, bench_parse)
  ZV_BENCH(DurationParseUnits, bench_parse_units)
  ZV_BENCH(DurationParseISO, bench_parse_iso)
  ZV_BENCH(DurationParseNano, bench_parse_nano)
  ZV_BENCH(DurationParseFraction, bench_parse_fraction)
  ZV_BENCH(DurationParse32Bytes, bench_parse_32)
  ZV_BENCH(DurationParseMin, bench_parse_max)
  ZV_BENCH(DurationParseReject, bench_parse_reject)
  ZV_BENCH(DurationRejectText, bench_reject_text)
  ZV_BENCH(DurationFormat, bench_format)
  ZV_BENCH(DurationFormatUnits, bench_format_units)
  ZV_BENCH(DurationFormatISO, bench_format_iso)
  ZV_BENCH(DurationFormatNano, bench_format_nano)
)
