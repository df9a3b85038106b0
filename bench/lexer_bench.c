/*
 * lexer_bench.c: the .zen lexer (host/lexer/) on its two extremes.
 *
 *   LexValid      a 1 MB schema made by repeating dsl/testdata/{tasks,blog}.zen, a fresh lexer per
 *                 op: allocs/op counts the whole 1 MB (the token array doubles; messages none)
 *   LexValidWarm  the same with one lexer reused across ops (its arrays are kept): 0 allocs
 *   LexIllegal    9,000 illegal runes ("§ " repeated), a fresh lexer per op: one message made
 *                 for all of them (the per-lexer cache), diagnostics in a doubling array
 *   LexIllegalWarm the same with one lexer reused (as the zever.lexer binding does)
 *
 * The LexValid lines end with MB/s (input bytes / ns per op). Run from the repository root (the
 * fixtures are read from dsl/testdata/): make bench BENCH=Lex
 */
#include "bench.h"
#include "../host/lexer/lexer.h"

static char *valid_src;
static size_t valid_len;
static char *illegal_src;
static size_t illegal_len;
static zv_lexer_t warm;

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (!f) {
    fprintf(stderr, "lexer_bench: cannot open %s (run from the repository root)\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) exit(1);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static void setup(void) {
  size_t la, lb, cap = 1u << 20;
  char *a = slurp("dsl/testdata/tasks.zen", &la), *b = slurp("dsl/testdata/blog.zen", &lb);
  valid_src = malloc(cap);
  while (valid_len + la + lb <= cap) {
    memcpy(valid_src + valid_len, a, la);
    memcpy(valid_src + valid_len + la, b, lb);
    valid_len += la + lb;
  }
  free(a);
  free(b);
  illegal_len = 9000 * 3;
  illegal_src = malloc(illegal_len);
  for (size_t i = 0; i < 9000; i++) memcpy(illegal_src + i * 3, "\xc2\xa7 ", 3);
}

static void bench_valid(zv_bench_t *b) {
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_lexer_t lx;
    zv_lexer_init(&lx);
    zv_lexer_run(&lx, valid_src, valid_len);
    zv_bench_keep(lx.ntoks);
    zv_lexer_free(&lx);
  }
}

static void bench_valid_warm(zv_bench_t *b) {
  zv_lexer_run(&warm, valid_src, valid_len);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_lexer_run(&warm, valid_src, valid_len);
    zv_bench_keep(warm.ntoks);
  }
}

static void bench_illegal_warm(zv_bench_t *b) {
  zv_lexer_run(&warm, illegal_src, illegal_len);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_lexer_run(&warm, illegal_src, illegal_len);
    zv_bench_keep(warm.ndiags);
  }
}

static void bench_illegal(zv_bench_t *b) {
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_lexer_t lx;
    zv_lexer_init(&lx);
    zv_lexer_run(&lx, illegal_src, illegal_len);
    zv_bench_keep(lx.ndiags);
    zv_lexer_free(&lx);
  }
}

/* zv_bench_run_case with the throughput appended: MB/s of input (1 MB = 2^20 bytes). */
static void run_with_rate(const char *name, void (*fn)(zv_bench_t *), size_t bytes) {
  int count = (int)zv_bench_env("ZV_BENCH_COUNT", 5);
  double ns[64], by[64], al[64], target = zv_bench_env("ZV_BENCH_TIME", 0.5) * 1e9;
  uint64_t n = 1;
  if (count < 1) count = 1;
  if (count > 64) count = 64;
  for (;;) {
    zv_bench_result_t r = zv_bench_once(fn, n);
    if (r.ns_per_op * (double)n >= target) break;
    n = (uint64_t)(target / r.ns_per_op * 1.2) + 1;
  }
  for (int i = 0; i < count; i++) {
    zv_bench_result_t r = zv_bench_once(fn, n);
    ns[i] = r.ns_per_op;
    by[i] = r.bytes_per_op;
    al[i] = r.allocs_per_op;
  }
  double m = zv_bench_median(ns, count);
  printf("Benchmark%-28s %10llu %12.2f ns/op %8.0f B/op %6.2f allocs/op %8.1f MB/s\n", name,
         (unsigned long long)n, m, zv_bench_median(by, count), zv_bench_median(al, count),
         (double)bytes / (1 << 20) / (m / 1e9));
  fflush(stdout);
}

int main(int argc, char **argv) {
  static const zv_bench_case_t illegal = {"LexIllegal", bench_illegal};
  static const zv_bench_case_t illegal_warm = {"LexIllegalWarm", bench_illegal_warm};
  const char *filter = argc > 1 ? argv[1] : getenv("BENCH");
  (void)zv_bench_main;
  setup();
  zv_lexer_init(&warm);
  if (!filter || !*filter || strstr("LexValid", filter))
    run_with_rate("LexValid", bench_valid, valid_len);
  if (!filter || !*filter || strstr("LexValidWarm", filter))
    run_with_rate("LexValidWarm", bench_valid_warm, valid_len);
  if (!filter || !*filter || strstr("LexIllegal", filter)) zv_bench_run_case(&illegal);
  if (!filter || !*filter || strstr("LexIllegalWarm", filter)) zv_bench_run_case(&illegal_warm);
  zv_lexer_free(&warm);
  free(valid_src);
  free(illegal_src);
  return 0;
}
