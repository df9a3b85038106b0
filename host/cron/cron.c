/*
 * cron.c: the cron core: a parser from spec text to bit sets, and the next-time search.
 *
 * The parser walks the text once and writes bits; errors are formatted into the caller's buffer
 * (snprintf into a fixed array, no allocation). The search works on a civil date (year, month,
 * day, hour, minute) and at each level jumps to the next set bit, carrying into the level above
 * when there is none, so it visits at most a few dozen states per month it crosses. It must not
 * allocate, read a clock or know time zones.
 */
#include "cron.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/zv.h"

typedef struct {
  const char *name;
  unsigned min, max;          /* accepted values (day-of-week accepts 7 = Sunday) */
  const char *const *names;   /* 3-letter names for min.., or NULL */
} field_t;

static const char *const MONTHS[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                     "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const DAYS[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

enum { F_MINUTE, F_HOUR, F_DOM, F_MONTH, F_DOW, NFIELDS };

static const field_t FIELDS[NFIELDS] = {
  {"minute", 0, 59, NULL},
  {"hour", 0, 23, NULL},
  {"day-of-month", 1, 31, NULL},
  {"month", 1, 12, MONTHS},
  {"day-of-week", 0, 7, DAYS},
};

typedef struct {
  const char *spec;
  const char *alias; /* the five fields it stands for */
} descriptor_t;

static const descriptor_t DESCRIPTORS[] = {
  {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
  {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
  {"@hourly", "0 * * * *"},
};

static int fail(char *err, size_t errsize, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errsize, const char *fmt, ...) {
  if (errsize > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsize, fmt, ap);
    va_end(ap);
  }
  return ZV_ESYNTAX;
}

static char lower(char ch) {
  return ch >= 'A' && ch <= 'Z' ? (char)(ch | 0x20) : ch;
}

static int is_blank(char ch) {
  return ch == ' ' || ch == '\t';
}

static int is_alnum(char ch) {
  return (ch >= '0' && ch <= '9') || (lower(ch) >= 'a' && lower(ch) <= 'z');
}

/* Shows at most 16 bytes of a token in a message. */
static int shown(size_t n) {
  return n > 16 ? 16 : (int)n;
}

/*
 * Reads one value (a number or a name) at *p, before end. Returns 0 with *v and *p advanced,
 * or ZV_ESYNTAX with the message written.
 */
static int value(const field_t *f, const char **p, const char *end, unsigned *v, char *err,
                 size_t errsize) {
  const char *s = *p, *q = s;
  while (q < end && is_alnum(*q)) q++;
  size_t n = (size_t)(q - s);
  if (n == 0) {
    if (s < end) return fail(err, errsize, "%s: unexpected \"%c\"", f->name, *s);
    return fail(err, errsize, "%s: a value is missing", f->name);
  }
  if (s[0] >= '0' && s[0] <= '9') {
    unsigned x = 0;
    for (const char *c = s; c < q; c++) {
      if (*c < '0' || *c > '9') goto not_number;
      if (x < 100000) x = x * 10 + (unsigned)(*c - '0');
    }
    if (x < f->min || x > f->max) {
      return fail(err, errsize, "%s: %.*s is out of range %u-%u", f->name, shown(n), s, f->min,
                  f->max);
    }
    *v = x;
    *p = q;
    return 0;
  }
  if (f->names && n == 3) {
    unsigned count = f == &FIELDS[F_MONTH] ? 12 : 7;
    for (unsigned i = 0; i < count; i++) {
      const char *nm = f->names[i];
      if (lower(s[0]) == nm[0] && lower(s[1]) == nm[1] && lower(s[2]) == nm[2]) {
        *v = f->min + i;
        *p = q;
        return 0;
      }
    }
  }
not_number:
  if (f->names) {
    return fail(err, errsize, "%s: \"%.*s\" is not a number or a %s name (%s-%s)", f->name,
                shown(n), s, f == &FIELDS[F_MONTH] ? "month" : "day", f->names[0],
                f == &FIELDS[F_MONTH] ? "dec" : "sat");
  }
  return fail(err, errsize, "%s: \"%.*s\" is not a number", f->name, shown(n), s);
}

/*
 * Parses one field s[0..end) into *bits (bit v for value v). *star is set when the field is
 * exactly `*` or `*` with step 1.
 */
static int parse_field(const field_t *f, const char *s, const char *end, uint64_t *bits, int *star,
                       char *err, size_t errsize) {
  const char *p = s;
  uint64_t out = 0;
  int items = 0, star_items = 0;
  for (;;) {
    unsigned lo, hi, step = 1;
    int is_star = 0, rc;
    if (p == end || *p == ',') return fail(err, errsize, "%s: empty list item", f->name);
    if (*p == '*') {
      is_star = 1;
      lo = f->min;
      hi = f->max;
      p++;
    } else {
      if ((rc = value(f, &p, end, &lo, err, errsize))) return rc;
      hi = lo;
      if (p < end && *p == '-') {
        p++;
        if ((rc = value(f, &p, end, &hi, err, errsize))) return rc;
        if (hi < lo) return fail(err, errsize, "%s: range %u-%u is backwards", f->name, lo, hi);
      } else if (p < end && *p == '/') {
        hi = f->max; /* a/n: from a to the maximum, every n */
      }
    }
    if (p < end && *p == '/') {
      const char *q = ++p;
      unsigned span = f->max - f->min + 1, x = 0;
      while (q < end && *q >= '0' && *q <= '9') {
        if (x < 100000) x = x * 10 + (unsigned)(*q - '0');
        q++;
      }
      if (q == p) {
        if (p < end && *p != ',') return fail(err, errsize, "%s: unexpected \"%c\"", f->name, *p);
        return fail(err, errsize, "%s: a step is missing after \"/\"", f->name);
      }
      if (x < 1 || x > span) {
        return fail(err, errsize, "%s: step %.*s is out of range 1-%u", f->name,
                    shown((size_t)(q - p)), p, span);
      }
      step = x;
      p = q;
    }
    if (p < end && *p != ',') return fail(err, errsize, "%s: unexpected \"%c\"", f->name, *p);
    for (unsigned v = lo; v <= hi; v += step) out |= (uint64_t)1 << v;
    items++;
    if (is_star && step == 1) star_items++;
    if (p == end) break;
    p++; /* the comma */
  }
  *bits = out;
  *star = items == 1 && star_items == 1;
  return 0;
}

static int days_in_month(int64_t y, unsigned m) {
  static const unsigned char DIM[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
  return DIM[m];
}

static int parse_fields(const char *s, size_t len, zv_cron_t *out, char *err, size_t errsize) {
  const char *end = s + len, *p = s;
  const char *fs[NFIELDS], *fe[NFIELDS];
  int n = 0;
  for (;;) {
    while (p < end && is_blank(*p)) p++;
    if (p == end) break;
    const char *q = p;
    while (q < end && !is_blank(*q)) q++;
    if (n < NFIELDS) {
      fs[n] = p;
      fe[n] = q;
    }
    n++;
    p = q;
  }
  if (n != NFIELDS) {
    return fail(err, errsize,
                "cron: expected 5 fields (minute hour day-of-month month day-of-week) or an "
                "@descriptor, got %d",
                n);
  }
  uint64_t bits[NFIELDS];
  int star[NFIELDS], rc;
  for (int i = 0; i < NFIELDS; i++) {
    if ((rc = parse_field(&FIELDS[i], fs[i], fe[i], &bits[i], &star[i], err, errsize))) return rc;
  }
  if (bits[F_DOW] & (1u << 7)) bits[F_DOW] = (bits[F_DOW] | 1u) & 0x7f;
  out->minute = bits[F_MINUTE];
  out->hour = (uint32_t)bits[F_HOUR];
  out->dom = (uint32_t)bits[F_DOM];
  out->month = (uint16_t)bits[F_MONTH];
  out->dow = (uint8_t)bits[F_DOW];
  out->flags = (uint8_t)((star[F_DOM] ? ZV_CRON_DOM_STAR : 0) |
                         (star[F_DOW] ? ZV_CRON_DOW_STAR : 0));
  /* Only day-of-month decides the day when day-of-week is `*`: one of its days must exist in
   * one of the months (February counts 29), or the schedule would never fire. */
  if ((out->flags & ZV_CRON_DOW_STAR) && !(out->flags & ZV_CRON_DOM_STAR)) {
    int ok = 0;
    for (unsigned m = 1; m <= 12 && !ok; m++) {
      if (!(out->month >> m & 1)) continue;
      unsigned dim = m == 2 ? 29 : (unsigned)days_in_month(1, m);
      if (out->dom & ((((uint32_t)1 << dim) - 1) << 1)) ok = 1;
    }
    if (!ok) {
      return fail(err, errsize, "day-of-month: no selected day occurs in the selected months");
    }
  }
  return 0;
}

int zv_cron_parse(const char *spec, size_t len, zv_cron_t *out, char *err, size_t errsize) {
  const char *s = spec, *end = spec + len;
  if (errsize > 0) err[0] = '\0';
  while (s < end && is_blank(*s)) s++;
  while (end > s && is_blank(end[-1])) end--;
  if (s < end && *s == '@') {
    size_t n = (size_t)(end - s);
    for (size_t i = 0; i < ZV_ARRAY_SIZE(DESCRIPTORS); i++) {
      const descriptor_t *d = &DESCRIPTORS[i];
      if (strlen(d->spec) != n) continue;
      size_t k = 0;
      while (k < n && lower(s[k]) == d->spec[k]) k++;
      if (k == n) return parse_fields(d->alias, strlen(d->alias), out, err, errsize);
    }
    return fail(err, errsize,
                "cron: unknown descriptor \"%.*s\" (want @yearly, @annually, @monthly, @weekly, "
                "@daily, @midnight or @hourly)",
                shown(n), s);
  }
  return parse_fields(s, (size_t)(end - s), out, err, errsize);
}

/* --- dates ------------------------------------------------------------------------------- */

/* The usual era arithmetic: 400-year eras of 146097 days, years counted from March so that
 * the leap day falls at the end. */
int64_t zv_cron_days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;                                    /* 0..399 */
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* 0..365 */
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;            /* 0..146096 */
  return era * 146097 + doe - 719468;
}

void zv_cron_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
  *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* 0 = Sunday; 1970-01-01 was a Thursday. */
static unsigned weekday(int64_t days) {
  int64_t w = (days + 4) % 7;
  return (unsigned)(w < 0 ? w + 7 : w);
}

static int day_ok(const zv_cron_t *c, unsigned d, unsigned wd) {
  int dom = (int)(c->dom >> d & 1), dow = (int)(c->dow >> wd & 1);
  if (c->flags & (ZV_CRON_DOM_STAR | ZV_CRON_DOW_STAR)) return dom && dow;
  return dom || dow;
}

/* The lowest set bit >= from, or -1. */
static int next_bit(uint64_t set, unsigned from) {
  if (from >= 64) return -1;
  set &= ~(uint64_t)0 << from;
  return set ? __builtin_ctzll(set) : -1;
}

/* --- search ------------------------------------------------------------------------------ */

int zv_cron_next(const zv_cron_t *c, int64_t t, int64_t *out) {
  if (t < ZV_CRON_TIME_MIN || t > ZV_CRON_TIME_MAX) return ZV_ERANGE;
  int64_t t0 = floor_div(t, 60) * 60 + 60;
  int64_t days = floor_div(t0, 86400);
  unsigned secs = (unsigned)(t0 - days * 86400);
  unsigned h = secs / 3600, mi = secs % 3600 / 60, mo, d;
  int64_t y;
  zv_cron_civil_from_days(days, &y, &mo, &d);
  for (;;) {
    if (y > 9999) return ZV_ERANGE;
    if (!(c->month >> mo & 1)) {
      int nm = next_bit(c->month, mo + 1);
      if (nm < 0) {
        y++;
        nm = next_bit(c->month, 1);
      }
      mo = (unsigned)nm;
      d = 1, h = 0, mi = 0;
      continue;
    }
    unsigned dim = (unsigned)days_in_month(y, mo);
    if (d > dim) {
      if (++mo > 12) y++, mo = 1;
      d = 1, h = 0, mi = 0;
      continue;
    }
    /* The day: walk forward within the month, the weekday advancing with it. */
    unsigned wd = weekday(zv_cron_days_from_civil(y, mo, d)), d0 = d;
    while (d <= dim && !day_ok(c, d, wd)) d++, wd = wd == 6 ? 0 : wd + 1;
    if (d != d0) h = 0, mi = 0;
    if (d > dim) continue; /* carried into the next month above */
    int nh = next_bit(c->hour, h);
    if (nh < 0) {
      d++, h = 0, mi = 0;
      continue;
    }
    if ((unsigned)nh != h) h = (unsigned)nh, mi = 0;
    int nmi = next_bit(c->minute, mi);
    if (nmi < 0) {
      mi = 0;
      if (++h == 24) d++, h = 0;
      continue;
    }
    mi = (unsigned)nmi;
    break;
  }
  *out = zv_cron_days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 + (int64_t)mi * 60;
  return 0;
}

int zv_cron_match(const zv_cron_t *c, int64_t t) {
  int64_t days = floor_div(t, 86400), y;
  unsigned secs = (unsigned)(t - days * 86400), m, d;
  zv_cron_civil_from_days(days, &y, &m, &d);
  return (c->month >> m & 1) && day_ok(c, d, weekday(days)) && (c->hour >> (secs / 3600) & 1) &&
         (c->minute >> (secs % 3600 / 60) & 1);
}
