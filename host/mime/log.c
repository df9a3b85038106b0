/*
 * log.c: the JSON line of the log mailer, rendered from the headers zv_mime_build_headers has
 * just written (and the size it measured), into a buffer the caller keeps between sends.
 *
 *   {"time":"2026-11-29T22:54:38Z","message_id":"<...>","from":"z@x.io","to":["a@b.c"],
 *    "cc":[],"bcc":[],"subject":"Hi","headers":"From: ...\r\n...","size":1234,
 *    "text_bytes":5,"html_bytes":0,"attachments":[{"filename":"a.txt",
 *    "content_type":"text/plain","bytes":3}]}\n
 *
 * Strings are UTF-8 (validated by the builder) and escaped for JSON; nothing else is
 * transformed. It must not allocate beyond one reserve of the line's upper bound.
 */
#include <string.h>

#include "mime.h"

#define PUT_LIT(b, lit) zv_mime_buf_put((b), (lit), sizeof(lit) - 1)

/* Bytes that need an escape in a JSON string: below 0x20, '"' and '\\'. */
#define JE(c) ((c) < 0x20 || (c) == '"' || (c) == '\\')
#define JE4(c) JE(c), JE((c) + 1), JE((c) + 2), JE((c) + 3)
#define JE16(c) JE4(c), JE4((c) + 4), JE4((c) + 8), JE4((c) + 12)
#define JE64(c) JE16(c), JE16((c) + 16), JE16((c) + 32), JE16((c) + 48)
static const unsigned char JESC[256] = {JE64(0), JE64(64), JE64(128), JE64(192)};

#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#define JSON_SSE2 1
#endif
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JSON_SWAR 1
#endif
/* With SSE2 the words take only a tail shorter than a block. */
#ifdef JSON_SSE2
#define JSON_WORDS_AT(i, n) ((i) + 16 > (n))
#else
#define JSON_WORDS_AT(i, n) 1
#endif

/* Appends s as a JSON string (UTF-8 passes through: the builder validated it). Runs of plain
 * bytes go sixteen at a time with SSE2, then eight with word tricks (the whole string without
 * SSE2, the tail with it): a block is stored whole, and the cursor advances to its first byte
 * that needs an escape (the lowest flag of the mask is exact), so an escape costs the same
 * wherever it falls. The last bytes, and everything in the portable fallback, go byte by byte
 * through a table of the bytes that need one. */
void zv__mime_json_str(zv_mime_buf_t *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  char *d;
  size_t i = 0;
  zv_mime_buf_reserve(b, 6 * n + 2);
  if (b->err) return;
  d = b->p + b->len;
  *d++ = '"';
  while (i < n) {
    unsigned char c;
#ifdef JSON_SSE2
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  ctl = _mm_set1_epi8(0x1F);
    while (i + 16 <= n) {
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
      __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v)); /* v <= 0x1F */
      unsigned mask = (unsigned)_mm_movemask_epi8(hit);
      _mm_storeu_si128((__m128i *)(void *)d, v); /* room: 6 bytes reserved per input byte */
      if (!mask) {
        d += 16;
        i += 16;
        continue;
      }
      {
        size_t k = (size_t)__builtin_ctz(mask);
        d += k;
        i += k;
      }
      break;
    }
    if (i == n) break;
#endif
#ifdef JSON_SWAR
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (JSON_WORDS_AT(i, n) && i + 8 <= n) {
      uint64_t v, q, bs, mask;
      memcpy(&v, s + i, 8);
      q = v ^ (ones * '"');
      bs = v ^ (ones * '\\');
      mask = (((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((bs - ones) & ~bs)) & highs;
      memcpy(d, &v, 8); /* room: 6 bytes reserved per input byte */
      if (!mask) {
        d += 8;
        i += 8;
        continue;
      }
      {
        size_t k = (size_t)__builtin_ctzll(mask) >> 3;
        d += k;
        i += k;
      }
      break;
    }
    if (i == n) break;
#endif
    /* the last bytes: up to the next escape without leaving this loop */
    if (i + 8 > n) {
      while (i < n && !JESC[(unsigned char)s[i]]) *d++ = s[i++];
      if (i == n) break;
    }
    c = (unsigned char)s[i++];
    if (!JESC[c]) {
      *d++ = (char)c;
      continue;
    }
    /* escapes come in runs (CRLF): take the run here */
    for (;;) {
      *d++ = '\\';
      switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '\n': *d++ = 'n'; break;
        case '\r': *d++ = 'r'; break;
        case '\t': *d++ = 't'; break;
        default:
          d[0] = 'u';
          d[1] = '0';
          d[2] = '0';
          d[3] = hex[c >> 4];
          d[4] = hex[c & 15];
          d += 5;
      }
      if (i == n || !JESC[(unsigned char)s[i]]) break;
      c = (unsigned char)s[i++];
    }
  }
  *d++ = '"';
  b->len = (size_t)(d - b->p);
}

static void put_num(zv_mime_buf_t *b, size_t v) {
  char out[24];
  size_t i = sizeof out;
  do {
    out[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  zv_mime_buf_put(b, out + i, sizeof out - i);
}

static char *digits(char *p, int v, int width) {
  for (int i = width - 1; i >= 0; i--) {
    p[i] = (char)('0' + v % 10);
    v /= 10;
  }
  return p + width;
}

static void put_emails(zv_mime_buf_t *b, const zv_mime_addr_t *list, size_t n) {
  PUT_LIT(b, "[");
  for (size_t i = 0; i < n; i++) {
    if (i) PUT_LIT(b, ",");
    zv__mime_json_str(b, list[i].email.s, list[i].email.len);
  }
  PUT_LIT(b, "]");
}

static size_t bound(const zv_mime_msg_t *m, const zv_mime_info_t *info) {
  size_t e = 512 + 6 * (info->header_len + info->msgid_len);
  for (int l = 0; l < ZV_MIME_NLISTS; l++) {
    for (size_t i = 0; i < m->naddrs[l]; i++) e += 6 * m->addrs[l][i].email.len + 4;
  }
  if (m->subject.s) e += 6 * m->subject.len;
  for (size_t i = 0; i < m->nattachments; i++) {
    const zv_mime_attachment_t *a = &m->attachments[i];
    e += 96 + 6 * ((a->filename.s ? a->filename.len : 0) + (a->content_type.s ? a->content_type.len : 24));
  }
  return e;
}

void zv_mime_log_line(zv_mime_buf_t *line, const zv_mime_msg_t *m, const zv_mime_buf_t *msg,
                      const zv_mime_info_t *info) {
  int y, mo, d, hh, mm, ss, wd;
  char ts[32], *p = ts;
  zv_mime_buf_reserve(line, bound(m, info));
  zv__mime_civil(m->now, &y, &mo, &d, &hh, &mm, &ss, &wd);
  if (y < 0 || y > 9999) y = 0;
  p = digits(p, y, 4);
  *p++ = '-';
  p = digits(p, mo, 2);
  *p++ = '-';
  p = digits(p, d, 2);
  *p++ = 'T';
  p = digits(p, hh, 2);
  *p++ = ':';
  p = digits(p, mm, 2);
  *p++ = ':';
  p = digits(p, ss, 2);
  *p++ = 'Z';
  PUT_LIT(line, "{\"time\":\"");
  zv_mime_buf_put(line, ts, (size_t)(p - ts));
  PUT_LIT(line, "\",\"message_id\":");
  zv__mime_json_str(line, msg->p + info->msgid_at, info->msgid_len);
  PUT_LIT(line, ",\"from\":");
  zv__mime_json_str(line, m->addrs[ZV_MIME_FROM][0].email.s, m->addrs[ZV_MIME_FROM][0].email.len);
  PUT_LIT(line, ",\"to\":");
  put_emails(line, m->addrs[ZV_MIME_TO], m->naddrs[ZV_MIME_TO]);
  PUT_LIT(line, ",\"cc\":");
  put_emails(line, m->addrs[ZV_MIME_CC], m->naddrs[ZV_MIME_CC]);
  PUT_LIT(line, ",\"bcc\":");
  put_emails(line, m->addrs[ZV_MIME_BCC], m->naddrs[ZV_MIME_BCC]);
  PUT_LIT(line, ",\"subject\":");
  zv__mime_json_str(line, m->subject.s ? m->subject.s : "", m->subject.s ? m->subject.len : 0);
  PUT_LIT(line, ",\"headers\":");
  zv__mime_json_str(line, msg->p + info->start, info->header_len);
  PUT_LIT(line, ",\"size\":");
  put_num(line, info->size);
  PUT_LIT(line, ",\"text_bytes\":");
  put_num(line, m->text.s ? m->text.len : 0);
  PUT_LIT(line, ",\"html_bytes\":");
  put_num(line, m->html.s ? m->html.len : 0);
  PUT_LIT(line, ",\"attachments\":[");
  for (size_t i = 0; i < m->nattachments; i++) {
    const zv_mime_attachment_t *a = &m->attachments[i];
    if (i) PUT_LIT(line, ",");
    PUT_LIT(line, "{\"filename\":");
    if (a->filename.s) {
      zv__mime_json_str(line, a->filename.s, a->filename.len);
    } else {
      PUT_LIT(line, "null");
    }
    PUT_LIT(line, ",\"content_type\":");
    if (a->content_type.s) {
      zv__mime_json_str(line, a->content_type.s, a->content_type.len);
    } else {
      PUT_LIT(line, "\"application/octet-stream\"");
    }
    PUT_LIT(line, ",\"bytes\":");
    put_num(line, a->data.len);
    PUT_LIT(line, "}");
  }
  PUT_LIT(line, "]}\n");
}
