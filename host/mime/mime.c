/*
 * mime.c: zv_mime_build: validates a message (check.c), estimates its size, grows the output
 * once and renders headers (RFC 5322, RFC 2047 encoded words, folding at 76 columns) and the body
 * structure (single part, multipart/alternative, multipart/mixed).
 *
 * Validation runs to completion before the first byte is written, so a refused message leaves
 * the buffer as it was. Rendering cannot fail except for memory; the size cap is checked on
 * raw sizes before anything is allocated, and on the real size at the end. This file must not
 * read clocks or random sources (the caller passes now and nonce), and must not allocate beyond
 * the one reserve.
 */
#include <stdio.h>
#include <string.h>

#include "mime.h"

/* --- small writers ---------------------------------------------------------------------- */

#define PUT_LIT(b, lit) zv_mime_buf_put((b), (lit), sizeof(lit) - 1)

static const char HEX[] = "0123456789ABCDEF";
static const char hex_lower[] = "0123456789abcdef";

/* A header writer: the buffer and the current column of the line being written. */
typedef struct {
  zv_mime_buf_t *b;
  size_t col;
} hw_t;

static void hw_put(hw_t *w, const char *s, size_t n) {
  zv_mime_buf_put(w->b, s, n);
  w->col += n;
}

static void hw_fold(hw_t *w) {
  PUT_LIT(w->b, "\r\n ");
  w->col = 1;
}

static void hw_name(hw_t *w, const char *name) {
  size_t n = strlen(name);
  zv_mime_buf_put(w->b, name, n);
  PUT_LIT(w->b, ": ");
  w->col = n + 2;
}

static void hw_end(hw_t *w) {
  PUT_LIT(w->b, "\r\n");
  w->col = 0;
}

static size_t utf8_len(unsigned char c) {
  if (c < 0xC0) return 1;
  if (c < 0xE0) return 2;
  if (c < 0xF0) return 3;
  return 4;
}

/* Bytes that stand for themselves in a Q-encoded word in any position (RFC 2047 5(3)): cost 1;
 * space is written "_" (1); everything else "=XX" (3). A constant table of the costs. */
#define QP1(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || \
                ((c) >= '0' && (c) <= '9') || (c) == '!' || (c) == '*' || (c) == '+' || \
                (c) == '-' || (c) == '/' || (c) == ' ' ? 1 : 3)
#define QP4(c) QP1(c), QP1((c) + 1), QP1((c) + 2), QP1((c) + 3)
#define QP16(c) QP4(c), QP4((c) + 4), QP4((c) + 8), QP4((c) + 12)
#define QP64(c) QP16(c), QP16((c) + 16), QP16((c) + 32), QP16((c) + 48)
static const unsigned char QCOST[256] = {QP64(0), QP64(64), QP64(128), QP64(192)};

static int q_plain(unsigned char c) {
  return QCOST[c] == 1 && c != ' ';
}

static size_t q_cost(unsigned char c) {
  return QCOST[c];
}

static void b64_small(zv_mime_buf_t *b, const unsigned char *s, size_t n) {
  static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *d;
  zv_mime_buf_reserve(b, (n + 2) / 3 * 4);
  if (b->err) return;
  d = b->p + b->len;
  for (; n >= 3; s += 3, n -= 3) {
    uint32_t v = (uint32_t)s[0] << 16 | (uint32_t)s[1] << 8 | s[2];
    d[0] = B64[v >> 18];
    d[1] = B64[(v >> 12) & 63];
    d[2] = B64[(v >> 6) & 63];
    d[3] = B64[v & 63];
    d += 4;
  }
  if (n) {
    uint32_t v = (uint32_t)s[0] << 16 | (n > 1 ? (uint32_t)s[1] << 8 : 0);
    d[0] = B64[v >> 18];
    d[1] = B64[(v >> 12) & 63];
    d[2] = n > 1 ? B64[(v >> 6) & 63] : '=';
    d[3] = '=';
    d += 4;
  }
  b->len = (size_t)(d - b->p);
}

/*
 * Writes s as RFC 2047 encoded words ("=?UTF-8?Q?...?=" or "?B?", whichever is shorter for the
 * whole value), each on its own line after the first, never splitting a UTF-8 character. Every
 * line stays within 76 columns. The caller has written the separator before the first word.
 */
static void put_encoded(hw_t *w, const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t qlen = 0, i = 0;
  int use_q;
  for (size_t k = 0; k < n; k++) qlen += q_cost(s[k]);
  use_q = qlen <= (n + 2) / 3 * 4;
  if (ZV_MIME_LINE < w->col + 12 + 12) hw_fold(w);
  if (use_q) {
    /* One pass: characters go into the open word while they fit; a word is closed and a new
     * one opened on the next folded line when the next whole character does not fit. */
    size_t cap = ZV_MIME_LINE - w->col - 12, used = 0, lcol = w->col;
    char *d, *lstart;
    if (n == 0) return;
    /* Each byte 3 at most; per word "=?UTF-8?Q?", "?=" and a fold (15). A word closes only
     * when it is more than full less a character (12): past the first, at least 17 bytes. */
    zv_mime_buf_reserve(w->b, 3 * n + (n / 17 + 2) * 15);
    if (w->b->err) return;
    d = w->b->p + w->b->len;
    lstart = d;
    memcpy(d, "=?UTF-8?Q?", 10);
    d += 10;
    while (i < n) {
      size_t cl = utf8_len(s[i]), cost = 0;
      if (i + cl > n) cl = n - i;
      for (size_t k = 0; k < cl; k++) cost += q_cost(s[i + k]);
      if (used + cost > cap && used) {
        memcpy(d, "?=\r\n =?UTF-8?Q?", 15);
        d += 15;
        lstart = d - 10; /* the new line: the fold's space, then this word */
        lcol = 1;
        cap = ZV_MIME_LINE - 1 - 12;
        used = 0;
      }
      used += cost;
      for (size_t k = 0; k < cl; k++) {
        unsigned char c = s[i + k];
        if (q_plain(c)) {
          *d++ = (char)c;
        } else if (c == ' ') {
          *d++ = '_';
        } else {
          d[0] = '=';
          d[1] = HEX[c >> 4];
          d[2] = HEX[c & 15];
          d += 3;
        }
      }
      i += cl;
    }
    d[0] = '?';
    d[1] = '=';
    d += 2;
    w->col = lcol + (size_t)(d - lstart);
    w->b->len = (size_t)(d - w->b->p);
    return;
  }
  while (i < n) {
    size_t cap, j;
    if (i > 0) hw_fold(w);
    cap = ZV_MIME_LINE - w->col - 12;
    /* The most whole characters that fit: cap / 4 * 3 bytes, cut back to the start of a
     * character (the value is valid UTF-8: validation ran first). */
    j = i + cap / 4 * 3;
    if (j >= n) {
      j = n;
    } else {
      while (j > i && (s[j] & 0xC0) == 0x80) j--;
      if (j == i) j = i + utf8_len(s[i]); /* cannot happen with cap >= 12; stay finite */
      if (j > n) j = n;
    }
    {
      size_t start = w->b->len;
      PUT_LIT(w->b, "=?UTF-8?B?");
      b64_small(w->b, s + i, j - i);
      PUT_LIT(w->b, "?=");
      w->col += w->b->len - start;
    }
    i = j;
  }
}

static int is_wsp(unsigned char c) {
  return c == ' ' || c == '\t';
}

/* An unstructured value (Subject, custom headers) can be written as it is when it is printable
 * ASCII, has no surrounding whitespace, no "=?" (which a reader would try to decode), and no
 * word too long to fit a line. */
static int raw_unstructured(const char *s, size_t n) {
  size_t word = 0;
  if (n == 0) return 1;
  if (is_wsp((unsigned char)s[0]) || is_wsp((unsigned char)s[n - 1])) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\t' || c == ' ') {
      word = 0;
      continue;
    }
    if (c < 33 || c > 126) return 0;
    if (c == '=' && i + 1 < n && s[i + 1] == '?') return 0;
    if (++word > ZV_MIME_LINE - 12) return 0;
  }
  return 1;
}

/* Writes an unstructured value folded at whitespace, or as encoded words. */
static void put_unstructured(hw_t *w, const char *s, size_t n) {
  size_t i = 0;
  if (!raw_unstructured(s, n)) {
    put_encoded(w, s, n);
    return;
  }
  while (i < n) {
    size_t j = i;
    while (j < n && is_wsp((unsigned char)s[j])) j++;
    while (j < n && !is_wsp((unsigned char)s[j])) j++;
    /* The token is whitespace + a word; folding puts CRLF before its whitespace. */
    if (i > 0 && w->col + (j - i) > ZV_MIME_LINE) {
      PUT_LIT(w->b, "\r\n");
      w->col = 0;
    }
    hw_put(w, s + i, j - i);
    i = j;
  }
}

/* --- addresses -------------------------------------------------------------------------- */

/* RFC 5322 atext (ALPHA DIGIT and ! # $ % & ' * + - / = ? ^ _ ` { | } ~): a constant table. */
#define AT(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || ((c) >= '0' && (c) <= '9') || \
               (c) == '!' || (c) == '#' || (c) == '$' || (c) == '%' || (c) == '&' || (c) == '\'' || \
               (c) == '*' || (c) == '+' || (c) == '-' || (c) == '/' || (c) == '=' || (c) == '?' || \
               (c) == '^' || (c) == '_' || (c) == '`' || (c) == '{' || (c) == '|' || (c) == '}' || \
               (c) == '~')
#define AT4(c) AT(c), AT((c) + 1), AT((c) + 2), AT((c) + 3)
#define AT16(c) AT4(c), AT4((c) + 4), AT4((c) + 8), AT4((c) + 12)
#define AT64(c) AT16(c), AT16((c) + 16), AT16((c) + 32), AT16((c) + 48)
static const unsigned char ATEXT[256] = {AT64(0), AT64(64), AT64(128), AT64(192)};

static int is_atext(unsigned char c) {
  return ATEXT[c];
}

enum { NAME_ATOMS, NAME_QUOTED, NAME_ENCODED };

static int name_form(const char *s, size_t n, size_t *quoted_len) {
  int atoms = 1;
  size_t q = 2;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 32 || c > 126) return NAME_ENCODED;
    if (c == '"' || c == '\\') q++;
    q++;
    if (c == ' ') {
      if (i == 0 || i + 1 == n || s[i + 1] == ' ') atoms = 0;
    } else if (!is_atext(c)) {
      atoms = 0;
    }
  }
  /* "=?" in a phrase could be read as an encoded word. */
  for (size_t i = 0; i + 1 < n; i++) {
    if (s[i] == '=' && s[i + 1] == '?') return NAME_ENCODED;
  }
  *quoted_len = q;
  return atoms ? NAME_ATOMS : NAME_QUOTED;
}

/* A word written bare: atext only, and short enough to fit a folded line. */
static int atom_word(const char *s, size_t n) {
  if (n == 0 || n > 60) return 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_atext((unsigned char)s[i])) return 0;
  }
  return 1;
}

/*
 * A display name that needs encoding: words that are atoms stay bare, and each run of other
 * words (with the single spaces between them) becomes encoded words. Splitting only at the
 * boundary between an atom and an encoded run keeps decoders that follow RFC 2047 (whitespace
 * between two encoded words is dropped) and Python 3.11's phrase parser (which keeps it) in
 * agreement; only a run too long for one encoded word is split between two encoded words.
 * Names with surrounding or doubled whitespace are encoded whole.
 */
static void put_phrase(hw_t *w, const char *s, size_t n) {
  size_t i = 0;
  for (size_t k = 0; k < n; k++) {
    if (s[k] == '\t' || (s[k] == ' ' && (k == 0 || k + 1 == n || s[k + 1] == ' '))) {
      put_encoded(w, s, n);
      return;
    }
  }
  while (i < n) {
    size_t j = i;
    while (j < n && s[j] != ' ') j++;
    if (i > 0) {
      size_t need = atom_word(s + i, j - i) ? j - i : 24;
      if (w->col + 1 + need > ZV_MIME_LINE) {
        hw_fold(w);
      } else {
        hw_put(w, " ", 1);
      }
    }
    if (atom_word(s + i, j - i)) {
      hw_put(w, s + i, j - i);
    } else {
      /* extend the run over following words that are not atoms */
      while (j < n) {
        size_t e = j + 1;
        while (e < n && s[e] != ' ') e++;
        if (atom_word(s + j + 1, e - j - 1)) break;
        j = e;
      }
      put_encoded(w, s + i, j - i);
    }
    i = j < n ? j + 1 : j;
  }
}

static void put_address(hw_t *w, const zv_mime_addr_t *a, int first) {
  size_t need = a->email.len, qlen = 0;
  int form = NAME_ATOMS;
  if (a->name.s && a->name.len) {
    form = name_form(a->name.s, a->name.len, &qlen);
    /* A name that cannot stay on one line goes word by word (folding between words). */
    if ((form == NAME_QUOTED && qlen > 60) || (form == NAME_ATOMS && a->name.len > 60))
      form = NAME_ENCODED;
    need = form == NAME_ATOMS ? a->name.len + 3 + a->email.len
           : form == NAME_QUOTED ? qlen + 3 + a->email.len : 24;
  }
  if (!first) {
    PUT_LIT(w->b, ",");
    w->col++;
    if (w->col + 1 + need > ZV_MIME_LINE) {
      hw_fold(w);
    } else {
      hw_put(w, " ", 1);
    }
  }
  if (!a->name.s || a->name.len == 0) {
    hw_put(w, a->email.s, a->email.len);
    return;
  }
  if (form == NAME_ATOMS) {
    hw_put(w, a->name.s, a->name.len);
  } else if (form == NAME_QUOTED) {
    size_t start = w->b->len;
    PUT_LIT(w->b, "\"");
    for (size_t i = 0; i < a->name.len; i++) {
      char c = a->name.s[i];
      if (c == '"' || c == '\\') PUT_LIT(w->b, "\\");
      zv_mime_buf_put(w->b, &c, 1);
    }
    PUT_LIT(w->b, "\"");
    w->col += w->b->len - start;
  } else {
    put_phrase(w, a->name.s, a->name.len);
  }
  if (w->col + 3 + a->email.len > ZV_MIME_LINE) {
    hw_fold(w);
  } else {
    hw_put(w, " ", 1);
  }
  hw_put(w, "<", 1);
  hw_put(w, a->email.s, a->email.len);
  hw_put(w, ">", 1);
}

static void put_address_header(hw_t *w, const char *name, const zv_mime_addr_t *list, size_t n) {
  if (n == 0) return;
  hw_name(w, name);
  for (size_t i = 0; i < n; i++) put_address(w, &list[i], i == 0);
  hw_end(w);
}

/* --- size estimate ---------------------------------------------------------------------- */

static size_t est_value(size_t n) {
  return 4 * n + 48;
}

static size_t est_b64(size_t n) {
  return (n + 2) / 3 * 4 + ((n + 56) / 57 + 1) * 2;
}

/* Bodies: the QP bound, or base64 of the text with every LF doubled to CRLF. */
static size_t est_text(size_t n) {
  size_t qp = n * 3 + (n * 3 / 73 + 1) * 3 + n + 8, b64 = est_b64(2 * n);
  return (qp > b64 ? qp : b64) + 160;
}

/* An upper bound of the bytes rendered; with measure set, bodies and attachments count only their
 * part headers (their content is sized, not written). */
static size_t estimate(const zv_mime_msg_t *m, int measure) {
  size_t e = 1024;
  for (int l = 0; l < ZV_MIME_NLISTS; l++) {
    for (size_t i = 0; i < m->naddrs[l]; i++) {
      const zv_mime_addr_t *a = &m->addrs[l][i];
      e += a->email.len + 16 + (a->name.s ? est_value(a->name.len) : 0);
    }
  }
  if (m->subject.s) e += est_value(m->subject.len) + 16;
  if (m->date.s) e += m->date.len + 16;
  if (m->message_id.s) e += m->message_id.len + 24;
  for (size_t i = 0; i < m->nheaders; i++) {
    e += m->headers[i].name.len + est_value(m->headers[i].value.len) + 8;
  }
  if (m->text.s) e += est_text(measure ? 0 : m->text.len);
  if (m->html.s) e += est_text(measure ? 0 : m->html.len);
  for (size_t i = 0; i < m->nattachments; i++) {
    const zv_mime_attachment_t *a = &m->attachments[i];
    e += 300 + est_b64(measure ? 0 : a->data.len) + (a->content_type.s ? a->content_type.len : 24);
    if (a->filename.s) e += 2 * (3 * a->filename.len + 40);
  }
  return e;
}

/* --- rendering -------------------------------------------------------------------------- */

/* Civil date of a day count since 1970-01-01 (Howard Hinnant's days_from_civil inverse):
 * no gmtime_r, which takes glibc's time-zone lock. */
void zv__mime_civil(int64_t t, int *y, int *mo, int *d, int *hh, int *mm, int *ss, int *wday) {
  int64_t days = t / 86400, rem = t % 86400, z, era, doe, yoe, doy, mp;
  if (rem < 0) {
    rem += 86400;
    days--;
  }
  *hh = (int)(rem / 3600);
  *mm = (int)(rem / 60 % 60);
  *ss = (int)(rem % 60);
  *wday = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday (4) */
  z = days + 719468;
  era = (z >= 0 ? z : z - 146096) / 146097;
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *mo = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = (int)(yoe + era * 400 + (*mo <= 2));
}

static char *two(char *p, int v) {
  p[0] = (char)('0' + v / 10 % 10);
  p[1] = (char)('0' + v % 10);
  return p + 2;
}

static void put_date(zv_mime_buf_t *b, int64_t now) {
  static const char days[] = "SunMonTueWedThuFriSat";
  static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  int y, mo, d, hh, mm, ss, wd;
  char out[32], *p = out;
  zv__mime_civil(now, &y, &mo, &d, &hh, &mm, &ss, &wd);
  if (y < 0 || y > 9999) y = 1970;
  memcpy(p, days + 3 * wd, 3);
  p += 3;
  *p++ = ',';
  *p++ = ' ';
  p = two(p, d);
  *p++ = ' ';
  memcpy(p, months + 3 * (mo - 1), 3);
  p += 3;
  *p++ = ' ';
  p = two(p, y / 100);
  p = two(p, y % 100);
  *p++ = ' ';
  p = two(p, hh);
  *p++ = ':';
  p = two(p, mm);
  *p++ = ':';
  p = two(p, ss);
  memcpy(p, " +0000", 6);
  p += 6;
  zv_mime_buf_put(b, out, (size_t)(p - out));
}

static void put_hex64(zv_mime_buf_t *b, uint64_t v) {
  char out[16];
  for (int i = 15; i >= 0; i--) {
    out[i] = hex_lower[v & 15];
    v >>= 4;
  }
  zv_mime_buf_put(b, out, 16);
}

static uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static void put_message_id(zv_mime_buf_t *b, const zv_mime_msg_t *m) {
  const zv_mime_str_t *from = &m->addrs[ZV_MIME_FROM][0].email;
  const char *at = memchr(from->s, '@', from->len);
  if (m->message_id.s) {
    int bracket = m->message_id.s[0] != '<';
    if (bracket) PUT_LIT(b, "<");
    zv_mime_buf_put(b, m->message_id.s, m->message_id.len);
    if (bracket) PUT_LIT(b, ">");
    return;
  }
  PUT_LIT(b, "<");
  put_hex64(b, mix64(m->nonce));
  PUT_LIT(b, ".");
  put_hex64(b, (uint64_t)m->now);
  PUT_LIT(b, "@");
  zv_mime_buf_put(b, at + 1, from->len - (size_t)(at + 1 - from->s));
  PUT_LIT(b, ">");
}

/* "=_zv" + 16 hex digits + "_" + kind: 22 bytes. */
#define BOUNDARY_LEN 22

static void put_boundary(zv_mime_buf_t *b, const char *bnd) {
  zv_mime_buf_put(b, bnd, BOUNDARY_LEN);
}

/* Escaped bytes of a body; above a sixth of the body base64 is the shorter encoding. */
static int wants_base64(const char *s, size_t n) {
  return zv__mime_qp_escapes(s, n) * 6 > n;
}

/* A text part's headers and content, without a line break after the content. *b64 says which
 * encoding was used and *ends_lf whether the output now ends with LF (true for an empty body:
 * the blank line before it does); the caller needs both to end a single-part message. When
 * measure is set the content is not encoded: its size is returned instead (0 otherwise). */
static size_t put_text_part(zv_mime_buf_t *b, const char *subtype, zv_mime_str_t body, int *b64,
                            int *ends_lf, int measure) {
  const char *s = body.s ? body.s : "";
  size_t n = body.s ? body.len : 0, skipped = 0, qp = 0;
  int qp_lf = 1;
  if (measure) {
    /* one pass sizes the QP output and counts the escapes that decide the encoding */
    size_t esc;
    qp = zv__mime_qp_size(s, n, &qp_lf, &esc);
    *b64 = esc * 6 > n;
  } else {
    *b64 = wants_base64(s, n);
  }
  PUT_LIT(b, "Content-Type: text/");
  zv_mime_buf_put(b, subtype, strlen(subtype));
  PUT_LIT(b, "; charset=utf-8\r\n");
  if (*b64) {
    PUT_LIT(b, "Content-Transfer-Encoding: base64\r\n\r\n");
    if (measure) {
      skipped = zv__mime_base64_text_size(s, n);
    } else {
      zv__mime_base64_text(b, s, n);
    }
    *ends_lf = n == 0; /* base64 lines are separated, not ended, by CRLF */
  } else {
    PUT_LIT(b, "Content-Transfer-Encoding: quoted-printable\r\n\r\n");
    if (measure) {
      skipped = qp;
      *ends_lf = qp_lf;
    } else {
      size_t at = b->len;
      zv_mime_qp(b, s, n);
      *ends_lf = b->err || b->len == at || b->p[b->len - 1] == '\n';
    }
  }
  return skipped;
}

/* The body without attachments: one text part or multipart/alternative. *single is 1 when the
 * content is a single QP part, 2 when it is a single base64 part, 0 for a multipart; *ends_lf
 * as for put_text_part. Returns the bytes measured instead of written (see put_text_part). */
static size_t put_body(zv_mime_buf_t *b, const zv_mime_msg_t *m, const char *bnd_a, int *single,
                       int *ends_lf, int measure) {
  int b64;
  size_t skipped;
  if (m->text.s && m->html.s) {
    PUT_LIT(b, "Content-Type: multipart/alternative;\r\n boundary=\"");
    put_boundary(b, bnd_a);
    PUT_LIT(b, "\"\r\n\r\n--");
    put_boundary(b, bnd_a);
    PUT_LIT(b, "\r\n");
    skipped = put_text_part(b, "plain", m->text, &b64, ends_lf, measure);
    PUT_LIT(b, "\r\n--");
    put_boundary(b, bnd_a);
    PUT_LIT(b, "\r\n");
    skipped += put_text_part(b, "html", m->html, &b64, ends_lf, measure);
    PUT_LIT(b, "\r\n--");
    put_boundary(b, bnd_a);
    PUT_LIT(b, "--");
    *single = 0;
    *ends_lf = 0;
    return skipped;
  }
  if (m->html.s) {
    skipped = put_text_part(b, "html", m->html, &b64, ends_lf, measure);
  } else {
    skipped = put_text_part(b, "plain", m->text, &b64, ends_lf, measure);
  }
  *single = b64 ? 2 : 1;
  return skipped;
}

static int simple_filename(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 32 || c > 126 || c == '"' || c == '\\') return 0;
  }
  return n > 0;
}

static int attr_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr("!#$&+-.^_`|~", c));
}

/* An attachment part; with measure set the base64 content is sized, not written, and its size
 * returned (0 otherwise). */
static size_t put_attachment(zv_mime_buf_t *b, const zv_mime_attachment_t *a, int measure) {
  hw_t w = {b, 0};
  /* A quoted filename must fit one folded line; longer or non-ASCII ones use RFC 2231. */
  int simple = a->filename.s && a->filename.len <= 60 && simple_filename(a->filename.s, a->filename.len);
  hw_name(&w, "Content-Type");
  if (a->content_type.s) {
    hw_put(&w, a->content_type.s, a->content_type.len);
  } else {
    hw_put(&w, "application/octet-stream", 24);
  }
  if (simple) {
    hw_put(&w, ";", 1);
    if (w.col + 8 + a->filename.len > ZV_MIME_LINE) {
      hw_fold(&w);
    } else {
      hw_put(&w, " ", 1);
    }
    hw_put(&w, "name=\"", 6);
    hw_put(&w, a->filename.s, a->filename.len);
    hw_put(&w, "\"", 1);
  }
  hw_end(&w);
  hw_name(&w, "Content-Disposition");
  hw_put(&w, "attachment", 10);
  if (a->filename.s && a->filename.len) {
    hw_put(&w, ";", 1);
    if (simple) {
      if (w.col + 12 + a->filename.len > ZV_MIME_LINE) {
        hw_fold(&w);
      } else {
        hw_put(&w, " ", 1);
      }
      hw_put(&w, "filename=\"", 10);
      hw_put(&w, a->filename.s, a->filename.len);
      hw_put(&w, "\"", 1);
    } else {
      /* RFC 2231: filename*=utf-8''percent-encoded, on its own line (at most ~790 columns). */
      hw_fold(&w);
      hw_put(&w, "filename*=utf-8''", 17);
      for (size_t i = 0; i < a->filename.len; i++) {
        unsigned char c = (unsigned char)a->filename.s[i];
        if (attr_char(c)) {
          zv_mime_buf_put(b, &c, 1);
        } else {
          char e[3] = {'%', HEX[c >> 4], HEX[c & 15]};
          zv_mime_buf_put(b, e, 3);
        }
      }
    }
  }
  hw_end(&w);
  PUT_LIT(b, "Content-Transfer-Encoding: base64\r\n\r\n");
  if (measure) return zv__mime_base64_size(a->data.len);
  zv_mime_base64(b, a->data.s, a->data.len);
  return 0;
}

/* zv_mime_build and zv_mime_build_headers: with measure set, bodies and attachment contents are
 * sized instead of encoded, and the output is cut back to the top-level headers at the end. */
static int render(const zv_mime_msg_t *m, zv_mime_buf_t *out, zv_mime_info_t *info,
                  zv_mime_cause_t *cause, int measure) {
  size_t max = m->max_bytes ? m->max_bytes : ZV_MIME_MAX_BYTES, start = out->len, at, skipped;
  char bnd_a[BOUNDARY_LEN], bnd_m[BOUNDARY_LEN];
  hw_t w = {out, 0};
  int rc, single, ends_lf;
  zv_mime_cause_t spare;
  zv_mime_info_t where;
  if (!cause) cause = &spare;
  if (!info) info = &where;
  memset(cause, 0, sizeof *cause);
  if (out->err) return out->err;
  rc = zv__mime_validate(m, cause, max);
  if (rc) return rc;
  zv_mime_buf_reserve(out, estimate(m, measure));
  if (out->err) return out->err;
  info->start = start;

  put_address_header(&w, "From", m->addrs[ZV_MIME_FROM], m->naddrs[ZV_MIME_FROM]);
  put_address_header(&w, "Reply-To", m->addrs[ZV_MIME_REPLY_TO], m->naddrs[ZV_MIME_REPLY_TO]);
  put_address_header(&w, "To", m->addrs[ZV_MIME_TO], m->naddrs[ZV_MIME_TO]);
  put_address_header(&w, "Cc", m->addrs[ZV_MIME_CC], m->naddrs[ZV_MIME_CC]);
  if (m->subject.s) {
    hw_name(&w, "Subject");
    put_unstructured(&w, m->subject.s, m->subject.len);
    hw_end(&w);
  }
  PUT_LIT(out, "Date: ");
  if (m->date.s) {
    zv_mime_buf_put(out, m->date.s, m->date.len);
  } else {
    put_date(out, m->now);
  }
  PUT_LIT(out, "\r\nMessage-ID: ");
  at = out->len;
  put_message_id(out, m);
  info->msgid_at = at;
  info->msgid_len = out->len - at;
  PUT_LIT(out, "\r\nMIME-Version: 1.0\r\n");
  for (size_t i = 0; i < m->nheaders; i++) {
    const zv_mime_header_t *h = &m->headers[i];
    zv_mime_buf_put(out, h->name.s, h->name.len);
    PUT_LIT(out, ": ");
    w.col = h->name.len + 2;
    put_unstructured(&w, h->value.s, h->value.len);
    hw_end(&w);
  }
  if (out->err) goto fail;

  /* Boundaries from the Message-ID: stable for a pinned id, unique for generated ones. */
  {
    uint64_t h = zv_fnv1a(out->p + at, info->msgid_len);
    memcpy(bnd_a, "=_zv", 4);
    for (int i = 0; i < 16; i++) bnd_a[4 + i] = hex_lower[(h >> (60 - 4 * i)) & 15];
    memcpy(bnd_m, bnd_a, BOUNDARY_LEN - 2);
    memcpy(bnd_a + 20, "_a", 2);
    memcpy(bnd_m + 20, "_m", 2);
  }

  if (m->nattachments) {
    PUT_LIT(out, "Content-Type: multipart/mixed;\r\n boundary=\"");
    put_boundary(out, bnd_m);
    PUT_LIT(out, "\"\r\n");
    info->header_len = out->len - start;
    PUT_LIT(out, "\r\n--");
    put_boundary(out, bnd_m);
    PUT_LIT(out, "\r\n");
    skipped = put_body(out, m, bnd_a, &single, &ends_lf, measure);
    for (size_t i = 0; i < m->nattachments; i++) {
      PUT_LIT(out, "\r\n--");
      put_boundary(out, bnd_m);
      PUT_LIT(out, "\r\n");
      skipped += put_attachment(out, &m->attachments[i], measure);
    }
    PUT_LIT(out, "\r\n--");
    put_boundary(out, bnd_m);
    PUT_LIT(out, "--\r\n");
  } else {
    /* The top-level headers end where the body's content begins: at its first blank line. */
    size_t body_at = out->len;
    skipped = put_body(out, m, bnd_a, &single, &ends_lf, measure);
    if (out->err) goto fail;
    {
      const char *blank = NULL, *p = out->p + body_at, *end = out->p + out->len;
      /* from CR to CR (memchr) rather than byte by byte */
      while (end - p >= 4 && (p = memchr(p, '\r', (size_t)(end - p - 3))) != NULL) {
        if (p[1] == '\n' && p[2] == '\r' && p[3] == '\n') {
          blank = p;
          break;
        }
        p++;
      }
      info->header_len = blank ? (size_t)(blank - out->p) + 2 - start : out->len - start;
    }
    if (single == 0) {
      PUT_LIT(out, "\r\n");
    } else if (!ends_lf) {
      /* base64 gets a final CRLF; QP a soft break: the message ends with CRLF, the text not */
      if (single == 2) {
        PUT_LIT(out, "\r\n");
      } else {
        PUT_LIT(out, "=\r\n");
      }
    }
  }
  if (out->err) goto fail;
  info->size = out->len - start + skipped;
  if (info->size > max) {
    out->len = start;
    return zv__mime_refuse(cause, ZV_MIME_CTOO_LARGE, ZV_MIME_FMESSAGE, 0, NULL);
  }
  if (measure) out->len = start + info->header_len;
  return 0;
fail:
  rc = out->err;
  out->len = start;
  return rc;
}

int zv_mime_build(const zv_mime_msg_t *m, zv_mime_buf_t *out, zv_mime_info_t *info,
                  zv_mime_cause_t *cause) {
  return render(m, out, info, cause, 0);
}

int zv_mime_build_headers(const zv_mime_msg_t *m, zv_mime_buf_t *out, zv_mime_info_t *info,
                          zv_mime_cause_t *cause) {
  return render(m, out, info, cause, 1);
}
