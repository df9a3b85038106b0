/*
 * duration_parse.c: the three duration parsers and the causes of their rejections.
 *
 * A parser accumulates the magnitude in a uint64 that may reach 2^63 (so that -2^63 ns parses)
 * and applies the sign at the end. Every step checks for overflow before it happens: a value
 * past int64 is a rejection (OVERFLOW), never a wrap. A component with a fraction follows Go:
 *
 *   value = int * unit + uint64(float64(frac) * (float64(unit) / scale)),  scale = 10^digits
 *
 * which truncates below the nanosecond and gives Go's results to the bit. The units reader is one
 * pass with table-driven unit names and overflow checks per component, not per digit. A
 * rejection is a code and a span (zv_duration_cause_t); its text is duration_write.c's.
 *
 * Nothing here allocates, keeps state or reads the locale; no Lua header may be included.
 */
#include "duration_int.h"

#include <string.h>

#include "../core/zv.h"

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


static int isdigit_(uc c) {
  return (unsigned)(c - '0') < 10;
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

/* What a digit loop read past its first 18 digits: the end of the digits and the value (NULL p
 * for an integer part past 2^63), or the fraction's kept digits. */
typedef struct {
  const uc *p;
  uint64_t v;
} int_run_t;

typedef struct {
  const uc *p;
  uint64_t f;
  int digits;
} frac_run_t;

/* Go's leadingInt past the 18th digit: it stops at 2^63. Out of line: a configuration value
 * with 19 digits or more before a unit is rare. */
COLD static int_run_t long_int(const uc *p, const uc *end, uint64_t v) {
  int_run_t r = {NULL, 0};
  for (; p < end && isdigit_(*p); p++) {
    if (v > TWO63 / 10) return r;
    v = v * 10 + (uint64_t)(*p - '0');
    if (v > TWO63) return r;
  }
  r.p = p;
  r.v = v;
  return r;
}

/* Go's leadingFraction past the 18th digit: digits past 63 bits are read and dropped. */
COLD static frac_run_t long_frac(const uc *p, const uc *end, uint64_t f, int digits) {
  frac_run_t r;
  int overflow = 0;
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
  r.p = p;
  r.f = f;
  r.digits = digits;
  return r;
}

/* The end of the digit run at p, or of its first 18 digits: 10^18 - 1 < 2^63 - 1, so a loop
 * that stops there needs no overflow check per digit. */
static INLINE const uc *cap18(const uc *p, const uc *end) {
  return end - p > 18 ? p + 18 : end;
}

/* The value of the 18 digits at p (known to be digits). */
static uint64_t read18(const uc *p) {
  uint64_t v = 0;
  for (int i = 0; i < 18; i++) v = v * 10 + (uint64_t)(p[i] - '0');
  return v;
}

/*
 * Reads [0-9]*(sep[0-9]*)? at *pp (sep is '.', or ',' too when comma is set); returns 0, NUMBER
 * (no digit at all) or OVERFLOW (the integer part passes 2^63, as Go's leadingInt). The first 18
 * digits of each part are read with no check; a longer run goes on out of line with Go's checks,
 * which only digits past the 18th can trip. The float64 scale of a fraction is left to
 * scale_of(), for the rare fraction that needs it.
 */
static INLINE int read_num(in_t *in, const uc **pp, int comma, num_t *n) {
  const uc *p = *pp, *start = p, *end = in->end, *lim = cap18(p, end);
  uint64_t v = 0, f = 0;
  unsigned c;
  n->v = n->f = 0;
  n->digits = n->sep = 0;
  while (p < lim && (c = (unsigned)*p - '0') < 10) {
    v = v * 10 + c;
    p++;
  }
  if (p == lim && p < end && isdigit_(*p)) {
    int_run_t r = long_int(p, end, v);
    if (!r.p) return fail(in, ZV_DURATION_COVERFLOW, start, (size_t)(end - start));
    p = r.p;
    v = r.v;
  }
  n->v = v;
  if (p < end && (*p == '.' || (comma && *p == ','))) {
    const uc *dot = p++;
    lim = cap18(p, end);
    while (p < lim && (c = (unsigned)*p - '0') < 10) {
      f = f * 10 + c;
      p++;
    }
    n->digits = (int)(p - dot - 1);
    if (p == lim && p < end && isdigit_(*p)) {
      frac_run_t r = long_frac(p, end, f, n->digits);
      p = r.p;
      f = r.f;
      n->digits = r.digits;
    }
    n->sep = 1;
    if (p == dot + 1 && dot == start) /* a separator alone: ".s" */
      return fail(in, ZV_DURATION_CNUMBER, start, (size_t)(end - start));
  } else if (p == start) {
    return fail(in, ZV_DURATION_CNUMBER, start, (size_t)(end - start));
  }
  n->f = f;
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

/* The units by kind; the order of the time units is the order ISO 8601 wants them in. */
enum { K_NONE, K_NS, K_US, K_MS, K_S, K_M, K_H, K_D };
static const unit_t UNITS[8] = {
  {0, 0, 0, {0}},        UNIT(1, 0),           UNIT(1000, 3),         UNIT(1000000, 6),
  UNIT(NS_SECOND, 9),    UNIT(NS_MINUTE, 10),  UNIT(NS_HOUR, 11),     UNIT(NS_DAY, 11),
};

/* The same ns and max by kind, 8 bytes apart: one scaled load each in the units loop. */
static const uint64_t UNIT_NS[8] = {0, 1, 1000, 1000000, NS_SECOND, NS_MINUTE, NS_HOUR, NS_DAY};
static const uint64_t UNIT_MAX[8] = {0,
                                     TWO63,
                                     TWO63 / 1000,
                                     TWO63 / 1000000,
                                     TWO63 / NS_SECOND,
                                     TWO63 / NS_MINUTE,
                                     TWO63 / NS_HOUR,
                                     TWO63 / NS_DAY};

/*
 * Go's unit table as lookups rather than string compares: a one-byte name by its byte, a
 * two-byte name (always ending in 's') by its first byte; the three-byte "µs" is checked by hand.
 * STOP marks the bytes that end a unit's name for Go (digits and '.').
 */
static const uc UNIT1[256] = {['h'] = K_H, ['m'] = K_M, ['s'] = K_S, ['d'] = K_D};
static const uc UNIT2[256] = {['m'] = K_MS, ['u'] = K_US, ['n'] = K_NS};
static const uc STOP[256] = {['.'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1,
                             ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1};

/*
 * ISO 8601 designators, by whether the T was read: the kind of unit (K_S..K_D, which must come
 * in decreasing order), or why the designator is refused there.
 */
enum { ISO_UNKNOWN, ISO_ORDER, ISO_DESIGNATOR };
static const uc ISO_DATE[256] = {['D'] = K_D,          ['H'] = ISO_ORDER,      ['M'] = ISO_DESIGNATOR,
                                 ['S'] = ISO_ORDER,    ['Y'] = ISO_DESIGNATOR, ['W'] = ISO_DESIGNATOR};
static const uc ISO_TIME[256] = {['D'] = ISO_ORDER,    ['H'] = K_H,            ['M'] = K_M,
                                 ['S'] = K_S,          ['Y'] = ISO_DESIGNATOR, ['W'] = ISO_DESIGNATOR};

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
 * Matches a unit of Go's table (plus "d" with days) at u. Go takes as the unit the whole run of
 * bytes up to the next digit or '.', so that is what is matched ("hs" and "h-" are no unit).
 * Returns the end of the run and the kind; K_NONE for an unknown name (or an empty run, which
 * the caller tells apart by the end). "d" without days is K_D too: the caller refuses it. The units
 * parser matches the one- and two-byte names inline first, and refuses a one-byte run that names
 * no unit ("1x") inline too; it comes here for the rest.
 */
typedef struct {
  const uc *p;
  int k;
} unit_run_t;

COLD static unit_run_t unit_at(const uc *u, const uc *end) {
  unit_run_t r = {u, K_NONE};
  size_t len;
  while (r.p < end && !STOP[*r.p]) r.p++;
  len = (size_t)(r.p - u);
  if (len == 1)
    r.k = UNIT1[*u];
  else if (len == 2)
    r.k = u[1] == 's' ? UNIT2[*u] : K_NONE;
  /* U+00B5 MICRO SIGN or U+03BC GREEK SMALL LETTER MU, then 's': Go accepts both. */
  else if (len == 3 && u[2] == 's' &&
           ((u[0] == 0xC2 && u[1] == 0xB5) || (u[0] == 0xCE && u[1] == 0xBC)))
    r.k = K_US;
  return r;
}

/* The value of f / 10^digits units of kind k, as Go computes it (see unit_t). */
static uint64_t frac_value(uint64_t f, int digits, int k) {
  const unit_t *unit = &UNITS[k];
  if (digits <= unit->exact_digits) return f * unit->exact[digits];
  return (uint64_t)((double)f * ((double)unit->ns / scale_of(digits)));
}

/*
 * units: [-+]?([0-9]*(\.[0-9]*)?unit)+ or [-+]?0; with nano set, also [-+]?[0-9]+ (nano read in
 * the same pass, so that a units input does not pay for a nano attempt first).
 *
 * One pass, each byte looked at once on the way to an accepted value: a component's digits are
 * summed with no check (a run of more than 18 is read again with Go's checks, out of line), its
 * unit is one or two bytes matched by table when followed by a digit, '.' or the end (anything
 * else goes to unit_at), and the overflow checks are one per component, on the product and the
 * sum. Rejections leave the loop for fail(), which is out of line.
 */
static INLINE int parse_units(in_t *in, int days, int nano, int64_t *ns) {
  const uc *end = in->end, *p = in->s, *first;
  int neg = 0;
  uint64_t d = 0;
  if (*p == '-' || *p == '+') { /* in->s is never empty */
    neg = *p == '-';
    p++;
  }
  first = p;
  if (end - p == 1 && *p == '0') {
    *ns = 0;
    return 0;
  }
  if (p == end) return fail(in, ZV_DURATION_CNUMBER, p, 0);
  do {
    const uc *start = p, *u;
    uint64_t v = 0, f = 0;
    unsigned c;
    int k, digits = 0;
    while (p < end && (c = (unsigned)*p - '0') < 10) {
      v = v * 10 + c;
      p++;
    }
    if (UNLIKELY(p - start > 18)) {
      int_run_t r = long_int(start + 18, end, read18(start));
      if (!r.p) return fail(in, ZV_DURATION_COVERFLOW, start, (size_t)(end - start));
      v = r.v;
    }
    if (p == end) {
      /* The integer part stops at 2^63, the magnitude of nano's limit; finish() checks the
       * sign, as parse_nano does. */
      if (nano && start == first) return finish(in, neg, v, ns);
      return fail(in, ZV_DURATION_CNOUNIT, start, (size_t)(p - start));
    }
    if (*p == '.') {
      const uc *dot = p++;
      while (p < end && (c = (unsigned)*p - '0') < 10) {
        f = f * 10 + c;
        p++;
      }
      digits = (int)(p - dot - 1);
      if (UNLIKELY(digits > 18)) {
        frac_run_t r = long_frac(dot + 19, end, read18(dot + 1), 18);
        f = r.f;
        digits = r.digits;
      }
      if (p == dot + 1 && dot == start) /* a separator alone: ".s" */
        return fail(in, ZV_DURATION_CNUMBER, start, (size_t)(end - start));
      if (p == end) return fail(in, ZV_DURATION_CNOUNIT, start, (size_t)(p - start));
    } else if (p == start) {
      return fail(in, ZV_DURATION_CNUMBER, start, (size_t)(end - start));
    }
    u = p;
    /* A one-byte unit, or a two-byte one ending in 's', followed by a digit, '.' or the end. */
    if ((k = UNIT1[*p]) != K_NONE && (p + 1 == end || STOP[p[1]])) {
      p++;
    } else if (p + 1 < end && p[1] == 's' && (k = UNIT2[*p]) != K_NONE &&
               (p + 2 == end || STOP[p[2]])) {
      p += 2;
    } else if (!STOP[*p] && (p + 1 == end || STOP[p[1]])) {
      /* One byte that names no unit (the usual typo, "1x"): unit_at would say the same. */
      return fail(in, ZV_DURATION_CUNIT, u, 1);
    } else {
      unit_run_t r = unit_at(u, end);
      p = r.p;
      k = r.k;
      if (k == K_NONE) {
        if (p == u) return fail(in, ZV_DURATION_CNOUNIT, start, (size_t)(u - start));
        return fail(in, ZV_DURATION_CUNIT, u, (size_t)(p - u));
      }
    }
    if (k == K_D && !days) return fail(in, ZV_DURATION_CDAYS, u, 1);
    if (v > UNIT_MAX[k]) return fail(in, ZV_DURATION_COVERFLOW, start, (size_t)(end - start));
    v *= UNIT_NS[k];
    if (f > 0) {
      v += frac_value(f, digits, k);
      if (v > TWO63) return fail(in, ZV_DURATION_COVERFLOW, start, (size_t)(end - start));
    }
    /* Go adds first and checks after, which wraps past 2^64; check before adding. */
    if (v > TWO63 - d) return fail(in, ZV_DURATION_COVERFLOW, start, (size_t)(end - start));
    d += v;
  } while (p < end);
  return finish(in, neg, d, ns);
}

/* Why a designator is refused (ISO_UNKNOWN, ISO_ORDER or ISO_DESIGNATOR) at p. */
COLD static int refuse(in_t *in, int why, const uc *p) {
  if (why == ISO_DESIGNATOR) return fail(in, ZV_DURATION_CDESIGNATOR, p, 1);
  if (why == ISO_ORDER) return fail(in, ZV_DURATION_CORDER, p, 1);
  return fail(in, ZV_DURATION_CUNIT, p, (size_t)charlen(p, in->end));
}

/* iso8601: [-+]?P(nD)?(T(nH)?(nM)?(nS)?)? with at least one component; "," or "." fractions. */
static INLINE int parse_iso(in_t *in, int days, int64_t *ns) {
  const uc *end = in->end, *des = ISO_DATE;
  int neg, rc, last = K_D + 1, frac = 0;
  const uc *p = sign(in->s, end, &neg);
  uint64_t d = 0;
  if (p == end || *p != 'P') return fail(in, ZV_DURATION_CNOP, p, (size_t)(end - p));
  p++;
  if (p == end) return fail(in, ZV_DURATION_CNOCOMPONENT, p - 1, 1);
  while (p < end) {
    const uc *start = p;
    num_t n;
    int k;
    if (*p == 'T') {
      if (des == ISO_TIME) return fail(in, ZV_DURATION_CORDER, p, 1);
      des = ISO_TIME;
      if (++p == end) return fail(in, ZV_DURATION_CNOCOMPONENT, p - 1, 1);
      continue;
    }
    if (frac) return fail(in, ZV_DURATION_CFRACTION, p, (size_t)(end - p));
    if ((rc = read_num(in, &p, 1, &n))) return rc;
    if (p == end) return fail(in, ZV_DURATION_CNOUNIT, start, (size_t)(p - start));
    k = des[*p];
    if (k < K_S) return refuse(in, k, p);
    if (k >= last) return fail(in, ZV_DURATION_CORDER, p, 1);
    if (k == K_D && !days) return fail(in, ZV_DURATION_CDAYS, p, 1);
    if ((rc = add(in, &d, &n, &UNITS[k], start))) return rc;
    last = k;
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

/* An input that a format outside accept would take: its cause says that format is not
 * accepted. Out of line: only codecs that refuse a format get here. */
COLD static void explain_other(in_t *in, unsigned accept) {
  zv_duration_cause_t probe;
  in_t other = {in->s, in->end, &probe};
  int64_t ignored;
  for (unsigned fmt = 1; fmt <= ZV_DURATION_NANO; fmt <<= 1) {
    if (accept & fmt) continue;
    if (parse_as(&other, fmt, 1, &ignored) == 0) {
      fail(in, ZV_DURATION_CNOTACCEPTED, in->s, 0);
      in->cause->format = (int32_t)fmt;
      return;
    }
  }
}

/*
 * Makes a rejection more useful: whitespace is named as such (Go would blame a unit such as
 * "h "), and an input that another format would take says that format is not accepted. The
 * whitespace scan stays inline: a rejected short input ("1x") should cost a parse, not calls.
 */
static INLINE void explain(in_t *in, unsigned accept) {
  if (in->cause->code == ZV_DURATION_COVERFLOW) return;
  for (const uc *p = in->s; p < in->end; p++) {
    if (*p == ' ' || (unsigned)(*p - '\t') <= '\r' - '\t') {
      fail(in, ZV_DURATION_CSPACE, p, 1);
      return;
    }
  }
  if ((accept & ZV_DURATION_ALL) != ZV_DURATION_ALL) explain_other(in, accept);
}

int zv_duration_parse(const char *s, size_t len, unsigned accept, int days, int64_t *ns,
                      zv_duration_cause_t *cause) {
  zv_duration_cause_t local;
  in_t in;
  const uc *p;
  int rc = 0, iso = 0;
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
    iso = 1;
  else if (accept & ZV_DURATION_UNITS)
    rc = parse_units(&in, days, (accept & ZV_DURATION_NANO) != 0, ns);
  else if ((accept & ZV_DURATION_NANO) &&
           (p == in.end || isdigit_(*p) || !(accept & ZV_DURATION_ISO8601)))
    rc = parse_nano(&in, ns);
  else
    iso = 1;
  if (iso) /* one call site, so that the parser is inlined once here */
    rc = parse_iso(&in, days, ns);
  if (LIKELY(rc == 0)) return 0;
  explain(&in, accept);
  return in.cause->code == ZV_DURATION_COVERFLOW ? ZV_ERANGE : ZV_EINVAL;
}
