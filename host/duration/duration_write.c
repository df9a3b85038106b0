/*
 * duration_write.c: the three duration writers, seconds to nanoseconds, the format names and
 * the texts of a rejection (its cause and the message), made only when someone asks.
 *
 * Writers fill a stack buffer around its middle, integers back to front two digits at a time
 * and the fraction front to back, and copy it out once.
 *
 * Nothing here allocates, keeps state or reads the locale; no Lua header may be included.
 */
#include "duration_int.h"

#include <math.h>
#include <string.h>

#include "../core/zv.h"

/* --- seconds ---------------------------------------------------------------------------- */

/* Seconds (a Lua number) to int64 nanoseconds, rounded to the nearest; ZV_ERANGE outside. */
int zv_duration_from_seconds(double seconds, int64_t *ns) {
  double v = round(seconds * 1e9);
  /* -2^63 is a double; 2^63 - 1 is not, so the upper bound is exclusive at 2^63. */
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return ZV_ERANGE;
  *ns = (int64_t)v;
  return 0;
}

/* --- writing ---------------------------------------------------------------------------- */

/*
 * A writer builds its text in a stack buffer around a fixed middle: the integer parts back to
 * front from the middle (two digits per division, from zv__digit_pairs), the fraction and the
 * last unit front to back from it, so that trailing zeros of the fraction are dropped by moving
 * the end rather than by dividing first. The text [w, e) is copied out once.
 */
#define MID 24

/* Writes v in decimal ending before w, two digits a step; returns the new start. */
static INLINE char *put_uint(char *w, uint64_t v) {
  while (v >= 100) {
    uint64_t q = v / 100;
    w -= 2;
    memcpy(w, zv__digit_pairs + 2 * (v - q * 100), 2);
    v = q;
  }
  if (v >= 10) {
    w -= 2;
    memcpy(w, zv__digit_pairs + 2 * v, 2);
  } else {
    *--w = (char)('0' + v);
  }
  return w;
}

/* Writes v < 100 ending before w (Go writes minutes and seconds without a leading zero). */
static INLINE char *put_small(char *w, unsigned v) {
  if (v >= 10) {
    w -= 2;
    memcpy(w, zv__digit_pairs + 2 * v, 2);
  } else {
    *--w = (char)('0' + v);
  }
  return w;
}

/* Go's fmtFrac, front to back from e: '.' and the prec (3, 6 or 9) digits of x < 10^prec
 * without trailing zeros, nothing when x is 0. Returns the new end. */
static char *put_frac(char *e, uint32_t x, int prec) {
  char *digits = e + 1;
  if (x == 0) return e;
  *e = '.';
  if (prec == 9) { /* the first three digits, then the other six as for prec 6 */
    uint32_t hi = x / 1000000;
    x -= hi * 1000000;
    *digits = (char)('0' + hi / 100);
    memcpy(digits + 1, zv__digit_pairs + 2 * (hi % 100), 2);
    digits += 3;
    prec = 6;
  }
  if (prec == 6) {
    uint32_t a = x / 10000, b = x / 100 % 100;
    memcpy(digits, zv__digit_pairs + 2 * a, 2);
    memcpy(digits + 2, zv__digit_pairs + 2 * b, 2);
    memcpy(digits + 4, zv__digit_pairs + 2 * (x % 100), 2);
    digits += 6;
  } else { /* 3 */
    *digits = (char)('0' + x / 100);
    memcpy(digits + 1, zv__digit_pairs + 2 * (x % 100), 2);
    digits += 3;
  }
  while (digits[-1] == '0') digits--; /* x != 0: a non-zero digit stops it */
  return digits;
}

/* Go's Duration.String, with days in front of hours when asked. Writes around mid; returns the
 * end, *wp the start. */
static char *put_units(char *mid, uint64_t u, int days, char **wp) {
  char *w = mid, *e = mid;
  if (u < NS_SECOND) {
    if (u == 0) {
      *--w = '0';
      *e++ = 's';
    } else if (u < 1000) {
      w = put_uint(mid, u);
      memcpy(e, "ns", 2);
      e += 2;
    } else if (u < 1000000) {
      w = put_uint(mid, u / 1000);
      e = put_frac(e, (uint32_t)(u % 1000), 3);
      memcpy(e, "\xC2\xB5s", 3); /* U+00B5, as Go writes it */
      e += 3;
    } else {
      w = put_uint(mid, u / 1000000);
      e = put_frac(e, (uint32_t)(u % 1000000), 6);
      memcpy(e, "ms", 2);
      e += 2;
    }
    *wp = w;
    return e;
  } else {
    /* One 64-bit division for the hours; minutes and seconds in 32 bits from the rest. */
    uint64_t sec = u / NS_SECOND, h = sec / 3600;
    unsigned rest = (unsigned)(sec - h * 3600), m = rest / 60;
    e = put_frac(e, (uint32_t)(u - sec * NS_SECOND), 9);
    *e++ = 's';
    w = put_small(w, rest - m * 60);
    if (sec >= 60) {
      *--w = 'm';
      w = put_small(w, m);
      if (h) {
        *--w = 'h';
        if (days && h >= 24) {
          w = put_small(w, (unsigned)(h % 24));
          *--w = 'd';
          h /= 24;
        }
        w = put_uint(w, h);
      }
    }
  }
  *wp = w;
  return e;
}

/* The shortest exact ISO 8601 duration: zero components are left out, seconds carry the
 * fraction, days only when asked; zero is "PT0S". Writes around mid; returns the end, *wp the
 * start. */
static char *put_iso(char *mid, uint64_t u, int days, char **wp) {
  uint64_t sec = u / NS_SECOND, d = 0, h;
  uint32_t frac = (uint32_t)(u - sec * NS_SECOND);
  unsigned m, s;
  char *w = mid, *e = mid;
  if (u == 0) {
    memcpy(w -= 4, "PT0S", 4);
    *wp = w;
    return e;
  }
  if (days) {
    d = sec / 86400;
    sec %= 86400;
  }
  h = sec / 3600;
  m = (unsigned)(sec - h * 3600) / 60;
  s = (unsigned)(sec - h * 3600) - m * 60;
  if (s || frac) {
    e = put_frac(e, frac, 9);
    *e++ = 'S';
    w = put_small(w, s);
  }
  if (m) {
    *--w = 'M';
    w = put_small(w, m);
  }
  if (h) {
    *--w = 'H';
    w = put_uint(w, h);
  }
  if (w != mid || e != mid) *--w = 'T';
  if (d) {
    *--w = 'D';
    w = put_uint(w, d);
  }
  *--w = 'P';
  *wp = w;
  return e;
}

int zv_duration_format(int64_t ns, unsigned fmt, int days, char *buf, size_t cap, size_t *len) {
  char tmp[MID + 16 + ZV_DURATION_BUFSIZE], *w, *e;
  uint64_t u = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
  size_t n;
  switch (fmt) {
  case ZV_DURATION_ISO8601: e = put_iso(tmp + MID, u, days, &w); break;
  case ZV_DURATION_UNITS: e = put_units(tmp + MID, u, days, &w); break;
  case ZV_DURATION_NANO:
    e = tmp + MID;
    w = put_uint(e, u);
    break;
  default: return ZV_EINVAL;
  }
  if (ns < 0) *--w = '-';
  n = (size_t)(e - w);
  if (n + 1 > cap) return ZV_ETOOLONG;
  /* A copy of a constant size is a few moves, not a call: the bytes past e are garbage that
   * the NUL ends (tmp has room for them past any start). */
  if (cap >= ZV_DURATION_BUFSIZE)
    memcpy(buf, w, ZV_DURATION_BUFSIZE);
  else
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
