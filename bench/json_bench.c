/*
 * json_bench.c: micro-benchmarks of the JSON core (host/json/): the strict reader onto a reused
 * tape, and the writer's pieces (numbers, strings) into a reused buffer. The Lua-level cases
 * (encode of a table, req:json of a body) are in bench/json_lua_bench.lua.
 * Run: make bench BENCH=Json (or build/bench/json_bench Json).
 */
#include <string.h>

#include "bench.h"
#include "json/json.h"

static const char small[] = "{\"title\":\"buy milk\",\"done\":false,\"priority\":3}";
static const char escaped[] = "{\"text\":\"line one\\nline two \\u00e9\\ud83d\\ude00\",\"n\":1.5e3}";

static void parse_one(zv_bench_t *b, const char *s, size_t n) {
  zv_json_tape_t tape = {0};
  int cause;
  size_t at;
  zv_json_parse(s, n, &tape, &cause, &at); /* the tape grows once, outside the loop */
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_json_parse(s, n, &tape, &cause, &at);
    zv_bench_keep(tape.n);
  }
  zv_json_tape_free(&tape);
}

static void bench_parse_small(zv_bench_t *b) {
  parse_one(b, small, sizeof small - 1);
}

static void bench_parse_escaped(zv_bench_t *b) {
  parse_one(b, escaped, sizeof escaped - 1);
}

static void bench_format_int(zv_bench_t *b) {
  char buf[ZV_JSON_NUMBUF];
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_bench_keep(zv_json_format_number((double)(i * 7919), buf));
}

static void bench_format_fraction(zv_bench_t *b) {
  char buf[ZV_JSON_NUMBUF];
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_bench_keep(zv_json_format_number((double)i + 0.25, buf));
}

static void bench_add_string(zv_bench_t *b) {
  zv_json_buf_t buf = {0};
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    buf.len = 0;
    zv_json_buf_add_string(&buf, "buy milk and bread", 18);
    zv_bench_keep(buf.len);
  }
  zv_json_buf_free(&buf);
}

ZV_BENCH_MAIN(
  ZV_BENCH(JsonParseSmall, bench_parse_small)
  ZV_BENCH(JsonParseEscaped, bench_parse_escaped)
  ZV_BENCH(JsonFormatInt, bench_format_int)
  ZV_BENCH(JsonFormatFraction, bench_format_fraction)
  ZV_BENCH(JsonAddString, bench_add_string)
)
