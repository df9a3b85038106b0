/*
 * check.c: everything that decides whether a message may be built: the causes of a refusal and
 * their text, and the validation zv_mime_build runs before it writes a byte (addresses, CR/LF
 * in any header, UTF-8, content types, sizes). It must not write to the output buffer.
 */
#include <stdio.h>
#include <string.h>

#include "mime.h"

/* --- causes ----------------------------------------------------------------------------- */

static const char *const cause_msgs[] = {
  "",
#define ZV__X(name, msg) msg,
  ZV_MIME_CAUSE_MAP(ZV__X)
#undef ZV__X
};

static const char *const field_names[] = {
#define ZV__X(name, str) str,
  ZV_MIME_FIELD_MAP(ZV__X)
#undef ZV__X
};

const char *zv_mime_field_name(int field) {
  if (field < 0 || field >= ZV_MIME_FMAX) return "message";
  return field_names[field];
}

static int is_list(int field) {
  return field == ZV_MIME_FTO || field == ZV_MIME_FCC || field == ZV_MIME_FBCC ||
         field == ZV_MIME_FREPLY_TO || field == ZV_MIME_FHEADER || field == ZV_MIME_FATTACHMENT;
}

size_t zv_mime_cause_text(const zv_mime_cause_t *c, char *buf, size_t size) {
  char tmp[256];
  const char *msg = c->code > 0 && c->code < ZV_MIME_CMAX ? cause_msgs[c->code] : "is invalid";
  size_t n = 0;
  n += (size_t)snprintf(tmp, sizeof tmp, "%s", zv_mime_field_name(c->field));
  if (is_list(c->field)) n += (size_t)snprintf(tmp + n, sizeof tmp - n, "[%zu]", c->index + 1);
  if (c->part && n < sizeof tmp) n += (size_t)snprintf(tmp + n, sizeof tmp - n, ".%s", c->part);
  if (n < sizeof tmp) n += (size_t)snprintf(tmp + n, sizeof tmp - n, " %s", msg);
  if (n >= sizeof tmp) n = sizeof tmp - 1;
  if (size) {
    size_t k = n < size ? n : size - 1;
    memcpy(buf, tmp, k);
    buf[k] = '\0';
  }
  return n;
}

/* --- validation ------------------------------------------------------------------------- */

int zv__mime_refuse(zv_mime_cause_t *c, int code, int field, size_t index, const char *part) {
  c->code = code;
  c->field = field;
  c->index = index;
  c->part = part;
  return code == ZV_MIME_CTOO_LARGE ? ZV_ETOOLONG : ZV_EINVAL;
}

/* 0, or the cause code of a header value that may not be written: CR/LF, controls, bad UTF-8. */
static int check_value(const char *s, size_t n, int ascii_only) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  int bad = 0, high = 0;
  uint64_t seen = 0;
  size_t i = 0;
  for (; i < n; i++) {
    unsigned char c;
    /* eight bytes at a time while none is a control (below 0x20, or 0x7F); bytes from 0x80
     * up are noted for the UTF-8 check */
    while (i + 8 <= n) {
      uint64_t v;
      memcpy(&v, s + i, 8);
      if ((((v - ones * 0x20) & ~v) | ((v + ones) & ~v)) & highs) break;
      seen |= v;
      i += 8;
    }
    if (i == n) break;
    c = (unsigned char)s[i];
    if (c >= 32 && c < 127) continue;
    if (c == '\r' || c == '\n') return ZV_MIME_CNEWLINE;
    if (c >= 128) {
      high = 1;
      if (ascii_only) bad = 1;
    } else if (c != '\t') {
      bad = 1;
    }
  }
  if (seen & highs) {
    high = 1;
    if (ascii_only) bad = 1;
  }
  if (bad) return ZV_MIME_CCONTROL;
  if (high && !zv_mime_utf8_valid(s, n)) return ZV_MIME_CUTF8;
  return 0;
}

static int ascii_ieq(const char *a, size_t n, const char *lit) {
  size_t m = strlen(lit);
  if (n != m) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)a[i];
    if (c >= 'A' && c <= 'Z') c = (unsigned char)(c + 32);
    if (c != (unsigned char)lit[i]) return 0;
  }
  return 1;
}

static const char *const reserved[] = {
  "from", "to", "cc", "bcc", "reply-to", "subject", "date", "message-id", "mime-version",
  "content-type", "content-transfer-encoding", "content-disposition",
};

static int is_token(unsigned char c) {
  return c > 32 && c < 127 && !strchr("()<>@,;:\\\"/[]?=", c);
}

static int check_content_type(const char *s, size_t n) {
  size_t i = 0, t = 0;
  if (check_value(s, n, 1)) return 0;
  while (i < n && is_token((unsigned char)s[i])) i++, t++;
  if (t == 0 || i == n || s[i] != '/') return 0;
  i++;
  t = 0;
  while (i < n && is_token((unsigned char)s[i])) i++, t++;
  if (t == 0) return 0;
  return i == n || s[i] == ';' || s[i] == ' ';
}

int zv__mime_validate(const zv_mime_msg_t *m, zv_mime_cause_t *c, size_t max) {
  size_t raw = 0, nrcpt = 0;
  int code;
  if (m->naddrs[ZV_MIME_FROM] == 0) return zv__mime_refuse(c, ZV_MIME_CNO_FROM, ZV_MIME_FFROM, 0, NULL);
  if (m->naddrs[ZV_MIME_FROM] > 1) return zv__mime_refuse(c, ZV_MIME_CMANY_FROM, ZV_MIME_FFROM, 0, NULL);
  for (int l = 0; l < ZV_MIME_NLISTS; l++) {
    int field = ZV_MIME_FFROM + l;
    for (size_t i = 0; i < m->naddrs[l]; i++) {
      const zv_mime_addr_t *a = &m->addrs[l][i];
      int parsed = i < 32 && (m->checked[l] >> i & 1u);
      if (!a->email.s) return zv__mime_refuse(c, ZV_MIME_CADDRESS, field, i, NULL);
      if (!parsed) {
        code = check_value(a->email.s, a->email.len, 1);
        if (code) return zv__mime_refuse(c, code, field, i, NULL);
        if (zv_mime_addr_check(a->email.s, a->email.len))
          return zv__mime_refuse(c, ZV_MIME_CADDRESS, field, i, NULL);
      }
      if (a->name.s) {
        if (!parsed) {
          code = check_value(a->name.s, a->name.len, 0);
          if (code) return zv__mime_refuse(c, code, field, i, "name");
        }
        if (a->name.len > 998) return zv__mime_refuse(c, ZV_MIME_CTOO_LONG, field, i, "name");
      }
      raw += a->email.len + (a->name.s ? a->name.len : 0);
    }
    if (l == ZV_MIME_TO || l == ZV_MIME_CC || l == ZV_MIME_BCC) nrcpt += m->naddrs[l];
  }
  if (nrcpt == 0) return zv__mime_refuse(c, ZV_MIME_CNO_RECIPIENT, ZV_MIME_FTO, 0, NULL);
  if (m->subject.s) {
    code = check_value(m->subject.s, m->subject.len, 0);
    if (code) return zv__mime_refuse(c, code, ZV_MIME_FSUBJECT, 0, NULL);
    raw += m->subject.len;
  }
  if (m->date.s) {
    code = check_value(m->date.s, m->date.len, 1);
    if (code) return zv__mime_refuse(c, code, ZV_MIME_FDATE, 0, NULL);
    if (m->date.len == 0 || m->date.len > 64) return zv__mime_refuse(c, ZV_MIME_CTOO_LONG, ZV_MIME_FDATE, 0, NULL);
  }
  if (m->message_id.s) {
    const char *s = m->message_id.s;
    size_t n = m->message_id.len;
    code = check_value(s, n, 1);
    if (code) return zv__mime_refuse(c, code, ZV_MIME_FMESSAGE_ID, 0, NULL);
    if (n == 0 || n > 250) return zv__mime_refuse(c, ZV_MIME_CTOO_LONG, ZV_MIME_FMESSAGE_ID, 0, NULL);
    if (s[0] == '<') {
      if (n < 3 || s[n - 1] != '>') return zv__mime_refuse(c, ZV_MIME_CCONTROL, ZV_MIME_FMESSAGE_ID, 0, NULL);
      s++;
      n -= 2;
    }
    for (size_t i = 0; i < n; i++) {
      if (s[i] == ' ' || s[i] == '\t' || s[i] == '<' || s[i] == '>')
        return zv__mime_refuse(c, ZV_MIME_CCONTROL, ZV_MIME_FMESSAGE_ID, 0, NULL);
    }
  }
  for (size_t i = 0; i < m->nheaders; i++) {
    const zv_mime_header_t *h = &m->headers[i];
    if (!h->name.s || h->name.len == 0 || h->name.len > 76)
      return zv__mime_refuse(c, ZV_MIME_CHEADER_NAME, ZV_MIME_FHEADER, i, "name");
    code = check_value(h->name.s, h->name.len, 1);
    if (code == ZV_MIME_CNEWLINE) return zv__mime_refuse(c, code, ZV_MIME_FHEADER, i, "name");
    for (size_t k = 0; k < h->name.len; k++) {
      unsigned char ch = (unsigned char)h->name.s[k];
      if (ch <= 32 || ch >= 127 || ch == ':')
        return zv__mime_refuse(c, ZV_MIME_CHEADER_NAME, ZV_MIME_FHEADER, i, "name");
    }
    for (size_t k = 0; k < ZV_ARRAY_SIZE(reserved); k++) {
      if (ascii_ieq(h->name.s, h->name.len, reserved[k]))
        return zv__mime_refuse(c, ZV_MIME_CRESERVED, ZV_MIME_FHEADER, i, "name");
    }
    if (!h->value.s) return zv__mime_refuse(c, ZV_MIME_CCONTROL, ZV_MIME_FHEADER, i, "value");
    code = check_value(h->value.s, h->value.len, 0);
    if (code) return zv__mime_refuse(c, code, ZV_MIME_FHEADER, i, "value");
    raw += h->name.len + h->value.len;
  }
  if (m->text.s) {
    if (!zv_mime_utf8_valid(m->text.s, m->text.len)) return zv__mime_refuse(c, ZV_MIME_CUTF8, ZV_MIME_FTEXT, 0, NULL);
    raw += m->text.len;
  }
  if (m->html.s) {
    if (!zv_mime_utf8_valid(m->html.s, m->html.len)) return zv__mime_refuse(c, ZV_MIME_CUTF8, ZV_MIME_FHTML, 0, NULL);
    raw += m->html.len;
  }
  for (size_t i = 0; i < m->nattachments; i++) {
    const zv_mime_attachment_t *a = &m->attachments[i];
    if (a->filename.s) {
      code = check_value(a->filename.s, a->filename.len, 0);
      if (code) return zv__mime_refuse(c, code, ZV_MIME_FATTACHMENT, i, "filename");
      if (a->filename.len > ZV_MIME_MAX_FILENAME)
        return zv__mime_refuse(c, ZV_MIME_CTOO_LONG, ZV_MIME_FATTACHMENT, i, "filename");
    }
    if (a->content_type.s) {
      code = check_value(a->content_type.s, a->content_type.len, 1);
      if (code == ZV_MIME_CNEWLINE) return zv__mime_refuse(c, code, ZV_MIME_FATTACHMENT, i, "content_type");
      if (a->content_type.len > 200 || !check_content_type(a->content_type.s, a->content_type.len))
        return zv__mime_refuse(c, ZV_MIME_CCONTENT_TYPE, ZV_MIME_FATTACHMENT, i, "content_type");
    }
    if (!a->data.s) return zv__mime_refuse(c, ZV_MIME_CCONTROL, ZV_MIME_FATTACHMENT, i, "data");
    raw += a->data.len + (a->filename.s ? a->filename.len : 0);
  }
  if (raw > max) return zv__mime_refuse(c, ZV_MIME_CTOO_LARGE, ZV_MIME_FMESSAGE, 0, NULL);
  return 0;
}

