/*
 * duration.c: the three duration parsers, the three writers and the rejection texts.
 *
 * A parser accumulates the magnitude in a uint64 that may reach 2^63 (so that -2^63 ns parses)
 * and applies the sign at the end. Every step checks for overflow before it happens: a value
 * past int64 is a rejection (OVERFLOW), never a wrap. A component with a fraction follows Go:
 *
 *   value = int * unit + uint64(float64(frac) * (float64(unit) / scale)),  scale = 10^digits
 *
 * which truncates below the nanosecond and gives Go's results to the bit. Writers fill a stack
 * buffer from its end (as Go's Duration.String does) and copy it out once.
 *
 * Nothing here allocates, keeps state or reads the locale; no Lua header may be included.
 */
#include "duration.h"

#include <math.h>
#include <string.h>

#include "../core/zv.h"

typedef unsigned char uc;

#define TWO63 (UINT64_C(1) << 63)
#define NS_SECOND UINT64_C(1000000000)
#define NS_MINUTE (60 * NS_SECOND)
#define NS_HOUR (60 * NS_MINUTE)
#define NS_DAY (24 * NS_HOUR)

/* --- reading ---------------------------------------------------------------------------- */

/* A number as Go reads it: v + f / 10^digits, with the digits of f that fit in 63 bits. */
typedef struct {
  uint64_t v;
  uint64_t f;
  int digits; /* digits kept in f: the fraction is f / 10^digits */
  int sep;    /* a decimal separator was read */
} num_t;

typedef struct {
  const uc *s; /* the whole input, for spans */
  const uc *end;
  zv_duration_cause_t *cause;
} in_t;

#if defined(__GNUC__)
#define COLD __attribute__((cold, noinline))
#define INLINE __attribute__((always_inline)) inline
#define LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define COLD
#define INLINE inline
#define LIKELY(x) (x)
#endif

static int isdigit_(uc c) {
  return (unsigned)(c - '0') < 10;
}

/* Length of the UTF-8 character at p (1 for a byte that does not start a valid one). */
static int charlen(const uc *p, const uc *end) {
  int n = *p < 0xC2 ? 1 : *p < 0xE0 ? 2 : *p < 0xF0 ? 3 : *p < 0xF5 ? 4 : 1;
  if (end - p < n) return 1;
  for (int i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80) return 1;
  return n;
}

/* Records a rejection at [at, at + len) of the input; returns the cause code. Kept out of line
 * so that the parsers' loops stay small. */
COLD static int fail(in_t *in, int code, const uc *at, size_t len) {
  in->cause->code = code;
  in->cause->format = 0;
  in->cause->at = (int32_t)(at - in->s);
  in->cause->len = (int32_t)len;
  return code;
}

/*
 * Go's scale after k kept digits: a float64 multiplied by 10 k times. Up to 10^22 every step is
 * exact, so it is the table's entry; past that (leading zeros are kept digits too) Go's rounding
 * is replayed step by step.
 */
static double scale_of(int digits) {
  static const double pow10d[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  double scale;
  if (digits <= 22) return pow10d[digits];
  scale = pow10d[22];
  for (int i = 22; i < digits; i++) scale *= 10;
  return scale;
}

/*
 * Go's leadingFraction from p: digits past 63 bits are read and dropped. The first 18 digits
 * cannot overflow, so only the rest pay for Go's checks; the float64 scale is left to
 * scale_of(), for the rare fraction that needs it. Returns the end of the digits.
 */
static const uc *read_frac(const uc *p, const uc *end, num_t *n) {
  uint64_t f = 0;
  int digits = 0, overflow = 0;
  while (p < end && digits < 18 && isdigit_(*p)) {
    f = f * 10 + (uint64_t)(*p++ - '0');
    digits++;
  }
  for (; p < end && isdigit_(*p); p++) {
    uint64_t y;
    if (overflow) continue;
    if (f > (TWO63 - 1) / 10) {
      overflow = 1;
      continue;
    }
    y = f * 10 + (uint64_t)(*p - '0');
    if (y > TWO63) {
      overflow = 1;
      continue;
    }
    f = y;
    digits++;
  }
  n->f = f;
  n->digits = digits;
  return p;
}

/* Reads [0-9]*(sep[0-9]*)? at *pp (sep is '.', or ',' too when comma is set); returns 0,
 * NUMBER (no digit at all) or OVERFLOW (the integer part passes 2^63, as Go's leadingInt). */
static INLINE int read_num(in_t *in, const uc **pp, int comma, num_t *n) {
  const uc *p = *pp, *start = p, *end = in->end;
  uint64_t v = 0;
  n->v = n->f = 0;
  n->digits = n->sep = 0;
  while (p < end && isdigit_(*p)) {
    if (v > TWO63 / 10) return fail(in, ZV_DURATION_COVERFLOW, start, (size_t)(end - start));
    v = v * 10 + (uint64_t)(*p - '0');
    if (v > TWO63) return fail(in, ZV_DURATION_COVERFLOW, start, (size_t)(end - start));
    p++;
  }
  n->v = v;
  if (p < end && (*p == '.' || (comma && *p == ','))) {
    const uc *q = read_frac(p + 1, end, n);
    n->sep = 1;
    if (q == p + 1 && p == start) /* a separator alone: ".s" */
      return fail(in, ZV_DURATION_CNUMBER, start, (size_t)(end - start));
    p = q;
  } else if (p == start) {
    return fail(in, ZV_DURATION_CNUMBER, start, (size_t)(end - start));
  }
  *pp = p;
  return 0;
}

/*
 * A unit, the largest integer part it can multiply without passing 2^63, and unit / 10^k for the
 * k where that is an integer (exact[k], k <= exact_digits). Precomputed: a 64-bit or a float
 * division would cost more than the rest of a parse. With k fraction digits f, Go computes
 * float64(f) * (float64(unit) / 10^k); when unit / 10^k is an integer q that is exactly f * q
 * (both factors and the product stay below 2^53), so the integer path gives Go's bits.
 */
typedef struct {
  uint64_t ns, max;
  int exact_digits;
  uint64_t exact[12];
} unit_t;

#define EXACT12(ns)                                                                           \
  {(ns), (ns) / 10, (ns) / 100, (ns) / 1000, (ns) / 10000, (ns) / 100000, (ns) / 1000000,    \
   (ns) / 10000000, (ns) / 100000000, (ns) / 1000000000, (ns) / 10000000000,                 \
   (ns) / 100000000000}
#define UNIT(ns, k) {(ns), TWO63 / (ns), (k), EXACT12(ns)}
static const unit_t U_NS = UNIT(1, 0), U_US = UNIT(1000, 3), U_MS = UNIT(1000000, 6),
                    U_S = UNIT(NS_SECOND, 9), U_M = UNIT(NS_MINUTE, 10), U_H = UNIT(NS_HOUR, 11),
                    U_D = UNIT(NS_DAY, 11), U_REFUSED_DAY = {0, 0, 0, {0}};

/* Adds n * unit to *d, keeping *d <= 2^63; returns 0 or OVERFLOW (span: the number's start). */
static INLINE int add(in_t *in, uint64_t *d, const num_t *n, const unit_t *unit, const uc *at) {
  uint64_t v = n->v;
  if (v > unit->max) return fail(in, ZV_DURATION_COVERFLOW, at, (size_t)(in->end - at));
  v *= unit->ns;
  if (n->f > 0) {
    if (n->digits <= unit->exact_digits)
      v += n->f * unit->exact[n->digits];
    else
      v += (uint64_t)((double)n->f * ((double)unit->ns / scale_of(n->digits)));
    if (v > TWO63) return fail(in, ZV_DURATION_COVERFLOW, at, (size_t)(in->end - at));
  }
  /* Go adds first and checks after, which wraps past 2^64; check before adding. */
  if (v > TWO63 - *d) return fail(in, ZV_DURATION_COVERFLOW, at, (size_t)(in->end - at));
  *d += v;
  return 0;
}

/* Applies the sign to a magnitude <= 2^63; returns 0 or OVERFLOW for +2^63. */
static int finish(in_t *in, int neg, uint64_t d, int64_t *ns) {
  if (neg) {
    *ns = d == TWO63 ? INT64_MIN : -(int64_t)d;
    return 0;
  }
  if (d > TWO63 - 1) return fail(in, ZV_DURATION_COVERFLOW, in->s, (size_t)(in->end - in->s));
  *ns = (int64_t)d;
  return 0;
}

static const uc *sign(const uc *p, const uc *end, int *neg) {
  *neg = 0;
  if (p < end && (*p == '-' || *p == '+')) {
    *neg = *p == '-';
    p++;
  }
  return p;
}

/*
 * Matches a unit of Go's table (plus "d" with days) at *pp. Go takes as the unit the whole run of
 * bytes up to the next digit or '.', so a name followed by more such bytes ("hs", "h-") is no
 * match. Returns the unit and moves *pp past it, or NULL with *pp at the end of the run;
 * &U_REFUSED_DAY for "d" without days.
 */
static INLINE const unit_t *unit_at(const uc **pp, const uc *end, int days) {
  const uc *p = *pp;
  const unit_t *u = NULL;
  size_t n = 1;
  switch (*p) {
  case 'h': u = &U_H; break;
  case 's': u = &U_S; break;
  case 'd': u = days ? &U_D : &U_REFUSED_DAY; break;
  case 'm':
    if (end - p > 1 && p[1] == 's') {
      u = &U_MS;
      n = 2;
    } else {
      u = &U_M;
    }
    break;
  case 'n':
  case 'u':
    if (end - p > 1 && p[1] == 's') {
      u = *p == 'n' ? &U_NS : &U_US;
      n = 2;
    }
    break;
  case 0xC2: /* U+00B5 MICRO SIGN */
  case 0xCE: /* U+03BC GREEK SMALL LETTER MU; Go accepts both */
    if (end - p > 2 && p[1] == (*p == 0xC2 ? 0xB5 : 0xBC) && p[2] == 's') {
      u = &U_US;
      n = 3;
    }
    break;
  }
  p += n;
  if (LIKELY(u != NULL) && (p == end || *p == '.' || isdigit_(*p))) {
    *pp = p;
    return u;
  }
  for (p = *pp; p < end && !(*p == '.' || isdigit_(*p)); p++) {
  }
  *pp = p;
  return NULL;
}

/* units: [-+]?([0-9]*(\.[0-9]*)?unit)+ or [-+]?0; with nano set, also [-+]?[0-9]+ (nano read in
 * the same pass, so that a units input does not pay for a nano attempt first). */
static int parse_units(in_t *in, int days, int nano, int64_t *ns) {
  const uc *end = in->end;
  int neg, rc;
  const uc *p = sign(in->s, end, &neg), *first = p;
  uint64_t d = 0;
  if (end - p == 1 && *p == '0') {
    *ns = 0;
    return 0;
  }
  if (p == end) return fail(in, ZV_DURATION_CNUMBER, p, 0);
  while (p < end) {
    const uc *start = p, *u;
    num_t n;
    const unit_t *unit;
    if (!(*p == '.' || isdigit_(*p))) return fail(in, ZV_DURATION_CNUMBER, p, (size_t)(end - p));
    if ((rc = read_num(in, &p, 0, &n))) return rc;
    if (p == end) {
      /* The integer part stops at 2^63, the magnitude of nano's limit; finish() checks the
       * sign, as parse_nano does. */
      if (nano && start == first && !n.sep) return finish(in, neg, n.v, ns);
      return fail(in, ZV_DURATION_CNOUNIT, start, (size_t)(p - start));
    }
    u = p;
    unit = unit_at(&p, end, days);
    if (p == u) return fail(in, ZV_DURATION_CNOUNIT, start, (size_t)(u - start));
    if (unit == &U_REFUSED_DAY) return fail(in, ZV_DURATION_CDAYS, u, 1);
    if (!unit) return fail(in, ZV_DURATION_CUNIT, u, (size_t)(p - u));
    if ((rc = add(in, &d, &n, unit, start))) return rc;
  }
  return finish(in, neg, d, ns);
}

/* iso8601: [-+]?P(nD)?(T(nH)?(nM)?(nS)?)? with at least one component; "," or "." fractions. */
static int parse_iso(in_t *in, int days, int64_t *ns) {
  static const unit_t *const units[4] = {&U_D, &U_H, &U_M, &U_S};
  const uc *end = in->end;
  int neg, rc, in_time = 0, last = -1, frac = 0;
  const uc *p = sign(in->s, end, &neg);
  uint64_t d = 0;
  if (p == end || *p != 'P') return fail(in, ZV_DURATION_CNOP, p, (size_t)(end - p));
  p++;
  if (p == end) return fail(in, ZV_DURATION_CNOCOMPONENT, p - 1, 1);
  while (p < end) {
    const uc *start = p;
    num_t n;
    int idx = -1;
    if (*p == 'T') {
      if (in_time) return fail(in, ZV_DURATION_CORDER, p, 1);
      in_time = 1;
      if (++p == end) return fail(in, ZV_DURATION_CNOCOMPONENT, p - 1, 1);
      continue;
    }
    if (frac) return fail(in, ZV_DURATION_CFRACTION, p, (size_t)(end - p));
    if (!(*p == '.' || *p == ',' || isdigit_(*p)))
      return fail(in, ZV_DURATION_CNUMBER, p, (size_t)(end - p));
    if ((rc = read_num(in, &p, 1, &n))) return rc;
    if (p == end) return fail(in, ZV_DURATION_CNOUNIT, start, (size_t)(p - start));
    switch (*p) {
    case 'D': idx = in_time ? -2 : 0; break;
    case 'H': idx = in_time ? 1 : -2; break;
    case 'M': idx = in_time ? 2 : -3; break;
    case 'S': idx = in_time ? 3 : -2; break;
    case 'Y':
    case 'W': idx = -3; break;
    }
    if (idx == -3) return fail(in, ZV_DURATION_CDESIGNATOR, p, 1);
    if (idx == -2 || (idx >= 0 && idx <= last)) return fail(in, ZV_DURATION_CORDER, p, 1);
    if (idx < 0) return fail(in, ZV_DURATION_CUNIT, p, (size_t)charlen(p, end));
    if (idx == 0 && !days) return fail(in, ZV_DURATION_CDAYS, p, 1);
    if ((rc = add(in, &d, &n, units[idx], start))) return rc;
    last = idx;
    frac = n.sep;
    p++;
  }
  return finish(in, neg, d, ns);
}

/* nano: [-+]?[0-9]+ within int64. Used when units are not accepted (parse_units reads nano
 * inputs otherwise). */
static int parse_nano(in_t *in, int64_t *ns) {
  const uc *end = in->end;
  int neg;
  const uc *p = sign(in->s, end, &neg);
  uint64_t d = 0, limit;
  if (p == end) return fail(in, ZV_DURATION_CNUMBER, p, 0);
  limit = neg ? TWO63 : TWO63 - 1;
  for (; p < end; p++) {
    uint64_t digit = (uint64_t)(*p - '0');
    if (digit > 9) return fail(in, ZV_DURATION_CSYNTAX, p, (size_t)charlen(p, end));
    if (d > (limit - digit) / 10) {
      while (++p < end)
        if (!isdigit_(*p)) return fail(in, ZV_DURATION_CSYNTAX, p, (size_t)charlen(p, end));
      return fail(in, ZV_DURATION_COVERFLOW, in->s, (size_t)(end - in->s));
    }
    d = d * 10 + digit;
  }
  *ns = neg ? (d == TWO63 ? INT64_MIN : -(int64_t)d) : (int64_t)d;
  return 0;
}

static int parse_as(in_t *in, unsigned fmt, int days, int64_t *ns) {
  switch (fmt) {
  case ZV_DURATION_ISO8601: return parse_iso(in, days, ns);
  case ZV_DURATION_UNITS: return parse_units(in, days, 0, ns);
  default: return parse_nano(in, ns);
  }
}

/*
 * Makes a rejection more useful, off the fast path: whitespace is named as such (Go would blame
 * a unit such as "h "), and an input that another format would take says that format is not
 * accepted.
 */
static void explain(in_t *in, unsigned accept) {
  zv_duration_cause_t probe;
  in_t other = {in->s, in->end, &probe};
  int64_t ignored;
  if (in->cause->code == ZV_DURATION_COVERFLOW) return;
  for (const uc *p = in->s; p < in->end; p++) {
    if (*p == ' ' || (*p >= '\t' && *p <= '\r')) {
      fail(in, ZV_DURATION_CSPACE, p, 1);
      return;
    }
  }
  for (unsigned fmt = 1; fmt <= ZV_DURATION_NANO; fmt <<= 1) {
    if (accept & fmt) continue;
    if (parse_as(&other, fmt, 1, &ignored) == 0) {
      fail(in, ZV_DURATION_CNOTACCEPTED, in->s, 0);
      in->cause->format = (int32_t)fmt;
      return;
    }
  }
}

int zv_duration_parse(const char *s, size_t len, unsigned accept, int days, int64_t *ns,
                      zv_duration_cause_t *cause) {
  zv_duration_cause_t local;
  in_t in;
  const uc *p;
  int rc;
  if (!cause) cause = &local;
  accept &= ZV_DURATION_ALL;
  /* Spans are int32: no duration is that long, and no reader should scan one. s may be NULL
   * when len is 0, so no pointer arithmetic happens before this check. */
  if (!accept || len == 0 || len > INT32_MAX) {
    memset(cause, 0, sizeof *cause);
    cause->code = !accept ? ZV_DURATION_CNOTACCEPTED
                  : len   ? ZV_DURATION_CSYNTAX
                          : ZV_DURATION_CEMPTY;
    return ZV_EINVAL;
  }
  in.s = (const uc *)s;
  in.end = in.s + len;
  in.cause = cause;
  /* The shape picks the parser: "P" after the sign is iso8601; anything else is units, which
   * reads nano's all-digit inputs too when nano is accepted. Without units, a digit goes to nano
   * and the rest to iso8601 (or nano, whichever is accepted); explain() may then improve the
   * cause. */
  p = in.s + (*in.s == '-' || *in.s == '+');
  if (p < in.end && *p == 'P' && (accept & ZV_DURATION_ISO8601))
    rc = parse_iso(&in, days, ns);
  else if (accept & ZV_DURATION_UNITS)
    rc = parse_units(&in, days, (accept & ZV_DURATION_NANO) != 0, ns);
  else if ((accept & ZV_DURATION_NANO) &&
           (p == in.end || isdigit_(*p) || !(accept & ZV_DURATION_ISO8601)))
    rc = parse_nano(&in, ns);
  else
    rc = parse_iso(&in, days, ns);
  if (rc == 0) return 0;
  explain(&in, accept);
  return in.cause->code == ZV_DURATION_COVERFLOW ? ZV_ERANGE : ZV_EINVAL;
}

int zv_duration_from_seconds(double seconds, int64_t *ns) {
  double v = round(seconds * 1e9);
  /* -2^63 is a double; 2^63 - 1 is not, so the upper bound is exclusive at 2^63. */
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return ZV_ERANGE;
  *ns = (int64_t)v;
  return 0;
}

/* --- writing ---------------------------------------------------------------------------- */

/* Writes v in decimal ending before w; returns the new start. */
static char *put_uint(char *w, uint64_t v) {
  do {
    *--w = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return w;
}

/* Go's fmtFrac: the prec digits of v's fraction without trailing zeros (and without the point
 * when they are all zero), ending before w. Returns the new start; *v keeps the integer part. */
static char *put_frac(char *w, uint64_t *v, int prec) {
  int print = 0;
  uint64_t x = *v;
  for (int i = 0; i < prec; i++) {
    uint64_t digit = x % 10;
    print = print || digit != 0;
    if (print) *--w = (char)('0' + digit);
    x /= 10;
  }
  if (print) *--w = '.';
  *v = x;
  return w;
}

/* Go's Duration.String, with days in front of hours when asked. */
static char *put_units(char *w, uint64_t u, int days) {
  if (u < NS_SECOND) {
    int prec;
    *--w = 's';
    if (u == 0) {
      *--w = '0';
      return w;
    }
    if (u < 1000) {
      prec = 0;
      *--w = 'n';
    } else if (u < 1000000) {
      prec = 3;
      *--w = (char)0xB5; /* U+00B5, as Go writes it */
      *--w = (char)0xC2;
    } else {
      prec = 6;
      *--w = 'm';
    }
    w = put_frac(w, &u, prec);
    return put_uint(w, u);
  }
  *--w = 's';
  w = put_frac(w, &u, 9);
  w = put_uint(w, u % 60);
  u /= 60;
  if (u > 0) {
    *--w = 'm';
    w = put_uint(w, u % 60);
    u /= 60;
    if (u > 0) {
      *--w = 'h';
      if (days && u >= 24) {
        w = put_uint(w, u % 24);
        *--w = 'd';
        u /= 24;
      }
      w = put_uint(w, u);
    }
  }
  return w;
}

/* The shortest exact ISO 8601 duration: zero components are left out, seconds carry the
 * fraction, days only when asked; zero is "PT0S". */
static char *put_iso(char *w, uint64_t u, int days) {
  uint64_t frac = u % NS_SECOND, sec = u / NS_SECOND, d = 0, h, m;
  int time;
  if (u == 0) {
    w -= 4;
    memcpy(w, "PT0S", 4);
    return w;
  }
  if (days) {
    d = sec / 86400;
    sec %= 86400;
  }
  h = sec / 3600;
  m = sec / 60 % 60;
  sec %= 60;
  time = h || m || sec || frac;
  if (sec || frac) {
    *--w = 'S';
    w = put_frac(w, &frac, 9);
    w = put_uint(w, sec);
  }
  if (m) {
    *--w = 'M';
    w = put_uint(w, m);
  }
  if (h) {
    *--w = 'H';
    w = put_uint(w, h);
  }
  if (time) *--w = 'T';
  if (d) {
    *--w = 'D';
    w = put_uint(w, d);
  }
  *--w = 'P';
  return w;
}

int zv_duration_format(int64_t ns, unsigned fmt, int days, char *buf, size_t cap, size_t *len) {
  char tmp[ZV_DURATION_BUFSIZE], *end = tmp + sizeof tmp, *w;
  uint64_t u = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
  size_t n;
  switch (fmt) {
  case ZV_DURATION_ISO8601: w = put_iso(end, u, days); break;
  case ZV_DURATION_UNITS: w = put_units(end, u, days); break;
  case ZV_DURATION_NANO: w = put_uint(end, u); break;
  default: return ZV_EINVAL;
  }
  if (ns < 0) *--w = '-';
  n = (size_t)(end - w);
  if (n + 1 > cap) return ZV_ETOOLONG;
  memcpy(buf, w, n);
  buf[n] = '\0';
  *len = n;
  return 0;
}

/* --- names and texts -------------------------------------------------------------------- */

static const char *const format_names[] = {"iso8601", "units", "nano"};

const char *zv_duration_format_name(unsigned fmt) {
  switch (fmt) {
  case ZV_DURATION_ISO8601: return format_names[0];
  case ZV_DURATION_UNITS: return format_names[1];
  case ZV_DURATION_NANO: return format_names[2];
  }
  return NULL;
}

unsigned zv_duration_format_id(const char *name, size_t len) {
  for (unsigned i = 0; i < 3; i++)
    if (strlen(format_names[i]) == len && memcmp(format_names[i], name, len) == 0) return 1u << i;
  return 0;
}

static const char *const templates[] = {
#define ZV__X(name, tmpl) tmpl,
  ZV_DURATION_CAUSE_MAP(ZV__X)
#undef ZV__X
};

/* A sticky text builder: after the first append that does not fit, appends do nothing. */
typedef struct {
  char *buf;
  size_t cap, len;
  int full;
} sb_t;

static void sb_put(sb_t *b, const char *s, size_t n) {
  if (b->full || n == 0) return;
  if (n + 1 > b->cap - b->len) {
    b->full = 1;
    return;
  }
  memcpy(b->buf + b->len, s, n);
  b->len += n;
}

static void sb_str(sb_t *b, const char *s) {
  sb_put(b, s, strlen(s));
}

/* Quotes s as Go's strconv.Quote does for valid UTF-8, stopping after about `max` bytes. */
static void sb_quote(sb_t *b, const char *str, size_t len, size_t max) {
  static const char hex[] = "0123456789abcdef";
  const uc *p = (const uc *)str, *end = len ? p + len : p;
  size_t out = 0;
  sb_put(b, "\"", 1);
  while (p < end) {
    char esc[4];
    int n = charlen(p, end);
    size_t k;
    if (out >= max) break;
    if (n > 1) {
      sb_put(b, (const char *)p, (size_t)n);
      k = (size_t)n;
    } else if (*p == '"' || *p == '\\') {
      esc[0] = '\\';
      esc[1] = (char)*p;
      sb_put(b, esc, k = 2);
    } else if (*p >= 0x20 && *p < 0x7F) {
      sb_put(b, (const char *)p, k = 1);
    } else {
      const char *named = *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : *p == '\r' ? "\\r" : NULL;
      if (named) {
        sb_put(b, named, k = 2);
      } else {
        esc[0] = '\\';
        esc[1] = 'x';
        esc[2] = hex[*p >> 4];
        esc[3] = hex[*p & 15];
        sb_put(b, esc, k = 4);
      }
    }
    out += k;
    p += n;
  }
  sb_put(b, "\"", 1);
  if (p < end) sb_put(b, "...", 3);
}

static size_t sb_end(sb_t *b) {
  if (b->cap) b->buf[b->len] = '\0';
  return b->len;
}

size_t zv_duration_cause_text(const zv_duration_cause_t *cause, const char *input, size_t len,
                              char *buf, size_t cap) {
  sb_t b = {buf, cap, 0, cap == 0};
  int code = cause->code;
  const char *t = templates[code >= 0 && code < ZV_DURATION_CMAX ? code : 0], *pct;
  while ((pct = strchr(t, '%')) != NULL) {
    sb_put(&b, t, (size_t)(pct - t));
    if (pct[1] == 'F') {
      const char *name = zv_duration_format_name((unsigned)cause->format);
      sb_str(&b, name ? name : "format");
    } else {
      size_t at = cause->at < 0 ? 0 : (size_t)cause->at;
      size_t n = cause->len < 0 ? 0 : (size_t)cause->len;
      if (!input || at > len) at = len = 0;
      if (n > len - at) n = len - at;
      if (n == 0 && at == len)
        sb_str(&b, "end of input");
      else
        sb_quote(&b, input + at, n, 32);
    }
    t = pct + 2;
  }
  sb_str(&b, t);
  return sb_end(&b);
}

size_t zv_duration_message(const char *input, size_t len, int quote, unsigned write,
                           unsigned accept, char *buf, size_t cap) {
  sb_t b = {buf, cap, 0, cap == 0};
  const char *sep = ": want ";
  sb_str(&b, "invalid duration ");
  if (quote)
    sb_quote(&b, input, len, 96);
  else
    sb_put(&b, input, len > 96 ? 96 : len);
  accept &= ZV_DURATION_ALL;
  if (zv_duration_format_name(write)) {
    sb_str(&b, sep);
    sb_str(&b, zv_duration_format_name(write));
    sep = " or ";
    accept &= ~write;
  }
  for (unsigned fmt = 1; fmt <= ZV_DURATION_NANO; fmt <<= 1) {
    if (!(accept & fmt)) continue;
    sb_str(&b, sep);
    sb_str(&b, zv_duration_format_name(fmt));
    sep = " or ";
  }
  return sb_end(&b);
}
