/*
 * encode.c: the byte-level encoders of the MIME builder: the sticky-error buffer, base64 in
 * 76-column lines, quoted-printable, and UTF-8 validation.
 *
 * The encoders write straight into the buffer: each reserves its worst case once and then
 * stores through a cursor, with no per-line or per-byte bounds checks and no scratch copies
 * (text bodies that need CRLF line breaks pass through a small stack stage). They must not
 * know about headers or message structure (mime.c).
 */
#include <string.h>

#include "mime.h"

/* SSE2 (every x86-64) sizes QP sixteen bytes at a time; elsewhere eight, with word tricks. */
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#define QP_SSE2 1
#endif

/* --- the buffer ------------------------------------------------------------------------- */

void zv_mime_buf_init(zv_mime_buf_t *b) {
  b->p = NULL;
  b->len = b->cap = 0;
  b->err = 0;
}

void zv_mime_buf_free(zv_mime_buf_t *b) {
  zv_free(b->p);
  zv_mime_buf_init(b);
}

void zv_mime_buf_reserve(zv_mime_buf_t *b, size_t n) {
  size_t want;
  char *p;
  if (b->err || b->cap - b->len >= n) return;
  if (n > SIZE_MAX / 2 - b->len) {
    b->err = ZV_ENOMEM;
    return;
  }
  want = b->len + n;
  if (want < 256) want = 256;
  p = zv_realloc(b->p, want);
  if (!p) {
    b->err = ZV_ENOMEM;
    return;
  }
  b->p = p;
  b->cap = want;
}

void zv__mime_buf_put_slow(zv_mime_buf_t *b, const void *s, size_t n) {
  zv_mime_buf_reserve(b, n);
  if (b->err) return;
  if (n) memcpy(b->p + b->len, s, n);
  b->len += n;
}

/* --- base64 ----------------------------------------------------------------------------- */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

#define B64_LINE_IN 57 /* input bytes of one 76-column line */

/* Two output characters per 12 input bits: 4096 pairs (8 KiB), a constant table. */
#define B64C(v) ((char)((v) < 26 ? 'A' + (v) : (v) < 52 ? 'a' + (v) - 26 : (v) < 62 ? '0' + (v) - 52 \
                                                   : (v) == 62 ? '+' : '/'))
#define P1(i) {B64C((i) >> 6), B64C((i) & 63)}
#define P4(i) P1(i), P1((i) + 1), P1((i) + 2), P1((i) + 3)
#define P16(i) P4(i), P4((i) + 4), P4((i) + 8), P4((i) + 12)
#define P64(i) P16(i), P16((i) + 16), P16((i) + 32), P16((i) + 48)
#define P256(i) P64(i), P64((i) + 64), P64((i) + 128), P64((i) + 192)
#define P1024(i) P256(i), P256((i) + 256), P256((i) + 512), P256((i) + 768)
static const char B64PAIR[4096][2] = {P1024(0), P1024(1024), P1024(2048), P1024(3072)};

/* Encodes n <= 57 bytes (a line) at d; returns the end. */
static char *b64_line(char *d, const unsigned char *s, size_t n) {
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
    memcpy(d, B64PAIR[v >> 12], 2);
    memcpy(d + 2, B64PAIR[v & 4095], 2);
    d += 4;
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)s[i] << 16;
    d[0] = B64[v >> 18];
    d[1] = B64[(v >> 12) & 63];
    d[2] = d[3] = '=';
    d += 4;
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
    d[0] = B64[v >> 18];
    d[1] = B64[(v >> 12) & 63];
    d[2] = B64[(v >> 6) & 63];
    d[3] = '=';
    d += 4;
  }
  return d;
}

/* Output bytes of n input bytes in lines: 4 per 3 (padded) plus CRLF between lines. */
static size_t b64_size(size_t n) {
  size_t lines = (n + B64_LINE_IN - 1) / B64_LINE_IN;
  return (n + 2) / 3 * 4 + (lines ? (lines - 1) * 2 : 0);
}

/* Encodes whole lines of src at the buffer's end; *first says no line was written yet. */
static void b64_lines(zv_mime_buf_t *b, const unsigned char *s, size_t n, int *first) {
  char *d;
  zv_mime_buf_reserve(b, b64_size(n) + 2);
  if (b->err) return;
  d = b->p + b->len;
  while (n) {
    size_t k = n < B64_LINE_IN ? n : B64_LINE_IN;
    if (!*first) {
      d[0] = '\r';
      d[1] = '\n';
      d += 2;
    }
    *first = 0;
    d = b64_line(d, s, k);
    s += k;
    n -= k;
  }
  b->len = (size_t)(d - b->p);
}

void zv_mime_base64(zv_mime_buf_t *b, const void *src, size_t n) {
  int first = 1;
  b64_lines(b, src, n, &first);
}

size_t zv__mime_base64_size(size_t n) {
  return b64_size(n);
}

/* The size of zv__mime_base64_text's output: each LF without a CR before it gains one. */
size_t zv__mime_base64_text_size(const char *src, size_t n) {
  size_t lone = 0;
  const char *p = src, *end = src + n;
  while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
    if (p == src || p[-1] != '\r') lone++;
    p++;
  }
  return b64_size(n + lone);
}

/* base64 of a text body with its line breaks made CRLF (a lone LF gains a CR), staged through
 * a stack chunk whose size is a multiple of a line so that lines continue across chunks. */
void zv__mime_base64_text(zv_mime_buf_t *b, const char *src, size_t n) {
  unsigned char stage[B64_LINE_IN * 64];
  size_t i = 0;
  int first = 1, pending_lf = 0;
  unsigned char prev = 0;
  while (i < n || pending_lf) {
    size_t k = 0;
    while (k < sizeof stage && (i < n || pending_lf)) {
      unsigned char c;
      if (pending_lf) {
        stage[k++] = '\n';
        pending_lf = 0;
        continue;
      }
      c = (unsigned char)src[i++];
      if (c == '\n' && prev != '\r') {
        stage[k++] = '\r';
        pending_lf = 1;
      } else {
        stage[k++] = c;
      }
      prev = c;
    }
    b64_lines(b, stage, k, &first);
  }
}

/* --- quoted-printable ------------------------------------------------------------------- */

static const char HEX[] = "0123456789ABCDEF";

/* QP classes: plain bytes stand for themselves; the rest need a look. */
enum { QP_PLAIN, QP_WSP, QP_ESC, QP_LF, QP_CR };

static int qp_class(unsigned char c) {
  if (c >= 33 && c <= 126 && c != '=') return QP_PLAIN;
  if (c == ' ' || c == '\t') return QP_WSP;
  if (c == '\n') return QP_LF;
  if (c == '\r') return QP_CR;
  return QP_ESC;
}

void zv_mime_qp(zv_mime_buf_t *b, const void *src, size_t n) {
  const unsigned char *s = src;
  size_t col = 0, i = 0;
  char *d;
  /* Worst case: every byte "=XX", plus a soft break "=\r\n" per 73 columns, plus CR for LF. */
  zv_mime_buf_reserve(b, n * 3 + (n * 3 / 73 + 1) * 3 + n + 8);
  if (b->err) return;
  d = b->p + b->len;
  while (i < n) {
    unsigned char c;
    size_t w;
    int cls;
    /* The common case: a run of plain bytes that fits the line. */
    while (i < n && col < ZV_MIME_LINE - 1 && s[i] >= 33 && s[i] <= 126 && s[i] != '=') {
      *d++ = (char)s[i++];
      col++;
    }
    if (i == n) break;
    c = s[i];
    cls = qp_class(c);
    if (cls == QP_LF || (cls == QP_CR && i + 1 < n && s[i + 1] == '\n')) {
      i += cls == QP_CR ? 2 : 1;
      d[0] = '\r';
      d[1] = '\n';
      d += 2;
      col = 0;
      continue;
    }
    if (cls == QP_PLAIN) {
      w = 1;
    } else if (cls == QP_WSP) {
      /* Whitespace before a line break or the end would be stripped in transit. */
      int at_end = i + 1 == n || s[i + 1] == '\n' ||
                   (s[i + 1] == '\r' && i + 2 < n && s[i + 2] == '\n');
      w = at_end ? 3 : 1;
    } else {
      w = 3;
    }
    if (col + w > ZV_MIME_LINE - 1) {
      d[0] = '=';
      d[1] = '\r';
      d[2] = '\n';
      d += 3;
      col = 0;
    }
    if (w == 1) {
      *d++ = (char)c;
    } else {
      d[0] = '=';
      d[1] = HEX[c >> 4];
      d[2] = HEX[c & 15];
      d += 3;
    }
    col += w;
    i++;
  }
  b->len = (size_t)(d - b->p);
}

/* Output widths of zv_mime_qp per byte: 1 for a byte that stands for itself, 3 for "=XX", 0 for
 * the ones that need a look (space and tab: 3 before a line break; CR and LF). A constant table. */
#define QW(c) ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r' ? 0 \
               : (c) >= 33 && (c) <= 126 && (c) != '=' ? 1 : 3)
#define QW4(c) QW(c), QW((c) + 1), QW((c) + 2), QW((c) + 3)
#define QW16(c) QW4(c), QW4((c) + 4), QW4((c) + 8), QW4((c) + 12)
#define QW64(c) QW16(c), QW16((c) + 16), QW16((c) + 32), QW16((c) + 48)
static const unsigned char QWIDTH[256] = {QW64(0), QW64(64), QW64(128), QW64(192)};

/* The byte index of the lowest flagged byte of a word's mask (flags in the high bits); 0 where
 * the word tricks are not known to apply, which only makes the caller go byte by byte. */
static size_t first_flag(uint64_t mask) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return mask ? (size_t)__builtin_ctzll(mask) >> 3 : 8;
#else
  return mask ? 0 : 8;
#endif
}

/* The size zv_mime_qp would write, without writing, and (escapes) the bytes it escapes that
 * decide base64 (see zv__mime_qp_escapes): the same line and soft-break rules in one pass.
 * Runs of printable ASCII (no "=") go eight bytes at a time up to the first byte that needs a
 * look; a space that ends a run is left for the byte-wise step (it is escaped before a line
 * break). A spec holds the size equal to the encoder's output on random bodies. */
size_t zv__mime_qp_size(const char *str, size_t n, int *ends_lf, size_t *escapes) {
  const unsigned char *s = (const unsigned char *)str;
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  size_t col = 0, out = 0, i = 0, esc = 0;
  int lf = 1;
  while (i < n) {
    unsigned char c;
    size_t w;
    if (i + 8 <= n) {
      size_t p;
#ifdef QP_SSE2
      if (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        /* flags: a byte >= 0x7F, below 0x20, or '=' */
        __m128i hit = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x7F)), v),
                         _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v)),
            _mm_cmpeq_epi8(v, _mm_set1_epi8('=')));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        p = mask ? (size_t)__builtin_ctz(mask) : 16;
      } else
#endif
      {
        uint64_t v, eq, mask;
        memcpy(&v, s + i, 8);
        eq = v ^ (ones * '=');
        /* flags: a byte >= 0x7F, below 0x20, or '=' */
        mask = ((v | (v + ones) | ((v - ones * 0x20) & ~v) | ((eq - ones) & ~eq)) & highs);
        p = first_flag(mask);
      }
      if (p && s[i + p - 1] == ' ') p--;
      if (p) {
        if (col + p <= ZV_MIME_LINE - 1) {
          out += p;
          col += p;
        } else {
          out += p + 3;
          col = col + p - (ZV_MIME_LINE - 1);
        }
        i += p;
        lf = 0;
        continue;
      }
    }
    c = s[i];
    w = QWIDTH[c];
    if (w == 0) {
      if (c == '\n' || (c == '\r' && i + 1 < n && s[i + 1] == '\n')) {
        i += c == '\r' ? 2 : 1;
        out += 2;
        col = 0;
        lf = 1;
        continue;
      }
      if (c == '\r') {
        w = 3;
      } else {
        /* Whitespace before a line break or the end is escaped (it would be stripped). */
        w = i + 1 == n || s[i + 1] == '\n' || (s[i + 1] == '\r' && i + 2 < n && s[i + 2] == '\n')
                ? 3 : 1;
      }
    } else if (w == 3) {
      esc++;
    }
    if (col + w > ZV_MIME_LINE - 1) {
      out += 3;
      col = 0;
    }
    out += w;
    col += w;
    lf = 0;
    i++;
  }
  *ends_lf = lf;
  if (escapes) *escapes = esc;
  return out;
}

/* Bytes QP must escape in a text body (not counting line breaks and inner whitespace): eight
 * bytes at a time while a word holds none of them. */
size_t zv__mime_qp_escapes(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0, esc = 0;
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t w, eq, lo;
      memcpy(&w, s + i, 8);
      eq = w ^ (ones * '=');
      eq = (eq - ones) & ~eq & highs;       /* a byte equal to '=' */
      lo = (w - ones * 0x20) & ~w & highs;  /* a byte below 0x20 */
      /* DEL: with no byte >= 0x80 in w, adding one carries into a high bit only from 0x7F */
      if (!((w & highs) | ((w + ones) & highs) | eq | lo)) {
        i += 8;
        continue;
      }
      for (size_t k = i + 8; i < k; i++) {
        unsigned char c = s[i];
        esc += c > 126 || c == '=' || (c < 32 && c != '\n' && c != '\r' && c != '\t');
      }
      continue;
    }
    unsigned char c = s[i++];
    esc += c > 126 || c == '=' || (c < 32 && c != '\n' && c != '\r' && c != '\t');
  }
  return esc;
}

/* --- UTF-8 ------------------------------------------------------------------------------ */

int zv_mime_utf8_valid(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      /* ASCII runs: eight bytes at a time. */
      while (i + 16 <= n) {
        uint64_t w, w2;
        memcpy(&w, s + i, 8);
        memcpy(&w2, s + i + 8, 8);
        if ((w | w2) & 0x8080808080808080ull) break;
        i += 16;
      }
      while (i + 8 <= n) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ull) break;
        i += 8;
      }
      if (i < n && s[i] < 0x80) i++;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      unsigned char c1;
      if (i + 2 >= n) return 0;
      c1 = s[i + 1];
      if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
      if (c == 0xE0 && c1 < 0xA0) return 0; /* overlong */
      if (c == 0xED && c1 > 0x9F) return 0; /* surrogate */
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      unsigned char c1;
      if (i + 3 >= n) return 0;
      c1 = s[i + 1];
      if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80) return 0;
      if (c == 0xF0 && c1 < 0x90) return 0; /* overlong */
      if (c == 0xF4 && c1 > 0x8F) return 0; /* above U+10FFFF */
      i += 4;
    } else {
      return 0;
    }
  }
  return 1;
}
