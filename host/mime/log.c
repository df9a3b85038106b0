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

/* Appends s as a JSON string. Eight bytes at a time while a word holds no byte below 0x20, no
 * '"' and no '\\' (UTF-8 passes through: the builder validated it). */
void zv__mime_json_str(zv_mime_buf_t *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  char *d;
  size_t i = 0;
  zv_mime_buf_reserve(b, 6 * n + 2);
  if (b->err) return;
  d = b->p + b->len;
  *d++ = '"';
  while (i < n) {
    size_t stop = n;
    if (i + 8 <= n) {
      uint64_t v, q, bs;
      memcpy(&v, s + i, 8);
      q = v ^ (ones * '"');
      bs = v ^ (ones * '\\');
      if (!((((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((bs - ones) & ~bs)) & highs)) {
        memcpy(d, s + i, 8);
        d += 8;
        i += 8;
        continue;
      }
      stop = i + 8; /* a byte of these eight needs a look: take them one by one */
    }
    for (; i < stop; i++) {
      unsigned char c = (unsigned char)s[i];
      if (c >= 32 && c != '"' && c != '\\') {
        *d++ = (char)c;
        continue;
      }
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
