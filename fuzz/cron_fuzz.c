/*
 * cron_fuzz.c: libFuzzer target for the cron core (host/cron/).
 *
 * The first 8 bytes (little-endian) are a time t, folded into the accepted range; the rest is
 * the spec. Whatever the input, parsing must not crash or read past it; a rejection leaves a
 * NUL-terminated message naming a field ("minute: ...") or "cron: ..."; an accepted spec must
 * give, for t and a few times derived from it:
 *   - n = next(t) with t < n, n a multiple of 60, and match(n);
 *   - next(n - 1) == n and next(t') == n for t' between t and n (nothing matches in between);
 *   - next(n) > n, and n fails to match nothing: the minute before n either does not match or
 *     is <= t.
 * next may only fail (ZV_ERANGE) near the year 9999.
 * Run: make fuzz FUZZ_BIN=build/fuzz/cron_fuzz FUZZ_TIME=60 (seeds in fuzz/corpus/cron_fuzz/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "cron/cron.h"

static void check(int ok) {
  if (!ok) abort();
}

static const char *const NAMES[] = {"minute: ", "hour: ", "day-of-month: ", "month: ",
                                    "day-of-week: ", "cron: "};

static void check_time(const zv_cron_t *c, int64_t t) {
  int64_t n, again;
  int rc = zv_cron_next(c, t, &n);
  if (rc) {
    check(rc == ZV_ERANGE && t > 253402300799LL - 9LL * 366 * 86400);
    return;
  }
  check(n > t && n % 60 == 0 && zv_cron_match(c, n));
  check(zv_cron_next(c, n - 1, &again) == 0 && again == n);
  int64_t mid = t + (n - t) / 2;
  check(zv_cron_next(c, mid, &again) == 0 && again == n);
  if (n - 60 > t) check(!zv_cron_match(c, n - 60));
  if (zv_cron_next(c, n, &again) == 0) check(again > n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t u = 0;
  zv_cron_t c;
  char err[ZV_CRON_ERRSIZE];
  if (size < 8) return 0;
  for (int i = 7; i >= 0; i--) u = u << 8 | data[i];
  /* Mostly times near now (2000-2100), sometimes anywhere in years 1-9999. */
  int64_t t;
  if (u & 1) {
    uint64_t span = (uint64_t)(ZV_CRON_TIME_MAX - ZV_CRON_TIME_MIN + 1);
    t = ZV_CRON_TIME_MIN + (int64_t)((u >> 1) % span);
  } else {
    t = 946684800 + (int64_t)((u >> 1) % (100ULL * 366 * 86400));
  }
  /* The spec, copied so that a read past its end is caught by ASan. */
  size_t len = size - 8;
  char *spec = (char *)malloc(len ? len : 1);
  if (!spec) return 0;
  memcpy(spec, data + 8, len);
  int rc = zv_cron_parse(spec, len, &c, err, sizeof err);
  free(spec);
  if (rc) {
    check(rc == ZV_ESYNTAX);
    const char *nul = (const char *)memchr(err, '\0', sizeof err);
    check(nul != NULL && nul > err);
    int named = 0;
    for (size_t i = 0; i < ZV_ARRAY_SIZE(NAMES); i++) {
      if (strncmp(err, NAMES[i], strlen(NAMES[i])) == 0) named = 1;
    }
    check(named);
    return 0;
  }
  check(c.minute && c.minute < (1ULL << 60) && c.hour && c.hour < (1u << 24));
  check(c.month && !(c.month & 1) && c.month < (1u << 13) && c.dow < (1u << 7));
  check(!(c.dom & 1));
  check_time(&c, t);
  check_time(&c, t - t % 86400);
  int64_t n;
  if (zv_cron_next(&c, t, &n) == 0) check_time(&c, n);
  return 0;
}
