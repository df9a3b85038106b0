/*
 * sql_bench.c: micro-benchmarks of the SQL renderer's core (host/sql/sql.c) and of the
 * statement cache lookup (host/sqlite/stmtcache.c).
 *
 *   EscapeLike        one LIKE value escaped into a reused builder (target <= 25 ns, 0 allocs)
 *   GroupTermsFew     4 grouping terms, one repeat, quoted and deduplicated (<= 150 ns, 0)
 *   GroupTermsMany    64 grouping leaves, every 4th a repeat (<= 2,000 ns, <= 1 alloc)
 *   QuoteIdent        a dotted identifier quoted
 *   StmtCacheHit      a 90-byte SQL text found in a cache of 64 statements
 */
#include "bench.h"
#include "../host/sql/sql.h"
#include "../host/sqlite/sqlite.h"

static zv_sql_buf_t buf;

static void bench_escape_like(zv_bench_t *b) {
  static const char value[] = "50%_off\\sale";
  zv_sql_buf_init(&buf);
  zv_sql_escape_like(&buf, value, sizeof value - 1);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_sql_buf_reset(&buf);
    zv_sql_escape_like(&buf, value, sizeof value - 1);
    zv_bench_keep(buf.len);
  }
  zv_sql_buf_free(&buf);
}

static void group_terms(const char *const *terms, size_t n) {
  zv_sql_dedup_t d;
  size_t kept = 0;
  zv_sql_buf_reset(&buf);
  zv_sql_dedup_begin(&d, &buf);
  for (size_t i = 0; i < n; i++) {
    size_t undo = buf.len, start;
    if (kept) zv_sql_lit(&buf, ", ");
    start = buf.len;
    zv_sql_ident(&buf, terms[i], strlen(terms[i]));
    kept += (size_t)zv_sql_dedup_term(&d, undo, start);
  }
  zv_sql_dedup_end(&d);
}

static void bench_group_few(zv_bench_t *b) {
  static const char *const terms[] = {"team", "region", "team", "users.year"};
  zv_sql_buf_init(&buf);
  group_terms(terms, 4);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    group_terms(terms, 4);
    zv_bench_keep(buf.len);
  }
  zv_sql_buf_free(&buf);
}

static void bench_group_many(zv_bench_t *b) {
  static char names[64][16];
  static const char *terms[64];
  for (int i = 0; i < 64; i++) {
    /* Every 4th leaf repeats an earlier one: 48 distinct terms. */
    snprintf(names[i], sizeof names[i], "col_%d", i % 4 == 3 ? i - 3 : i);
    terms[i] = names[i];
  }
  zv_sql_buf_init(&buf);
  group_terms(terms, 64);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    group_terms(terms, 64);
    zv_bench_keep(buf.len);
  }
  zv_sql_buf_free(&buf);
}

static void bench_quote(zv_bench_t *b) {
  zv_sql_buf_init(&buf);
  zv_sql_ident(&buf, "users.email", 11);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_sql_buf_reset(&buf);
    zv_sql_ident(&buf, "users.email", 11);
    zv_bench_keep(buf.len);
  }
  zv_sql_buf_free(&buf);
}

static void bench_cache_hit(zv_bench_t *b) {
  zv_sqlite_cache_t c;
  char sql[64][96];
  void *h, *ev;
  size_t idx;
  zv_sqlite_cache_init(&c, 64);
  for (int i = 0; i < 64; i++) {
    snprintf(sql[i], sizeof sql[i],
             "SELECT \"id\", \"email\", \"name\" FROM \"users\" WHERE \"id\" = ? AND \"x%02d\" = ? LIMIT ?", i);
    zv_sqlite_cache_put(&c, sql[i], strlen(sql[i]), (void *)(uintptr_t)(i + 1), &idx, &ev);
    zv_sqlite_cache_release(&c, idx);
  }
  size_t len = strlen(sql[40]);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    if (zv_sqlite_cache_get(&c, sql[40], len, &h, &idx) == 0) zv_sqlite_cache_release(&c, idx);
    zv_bench_keep((uintptr_t)h);
  }
  zv_sqlite_cache_free(&c);
}

ZV_BENCH_MAIN(ZV_BENCH(EscapeLike, bench_escape_like) ZV_BENCH(GroupTermsFew, bench_group_few)
                ZV_BENCH(GroupTermsMany, bench_group_many) ZV_BENCH(QuoteIdent, bench_quote)
                  ZV_BENCH(StmtCacheHit, bench_cache_hit))
