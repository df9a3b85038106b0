/*
 * addr.c: email addresses: the addr-spec check and the "Name <a@b.c>" parser.
 *
 * One pass over the bytes, no copies and no allocation: domain labels are checked as the scan
 * crosses them (their length is a counter, not a substring). It must not accept anything that
 * would need quoting or encoding in an SMTP envelope (quoted local parts, address literals,
 * UTF-8): an address that passes here can be written into RCPT TO as it is.
 */
#include "mime.h"

/* Byte classes, a constant table: ATEXT for RFC 5322 atext (ALPHA DIGIT and
 * ! # $ % & ' * + - / = ? ^ _ ` { | } ~), LDH for letters, digits and hyphen. */
enum { ATEXT = 1, LDH = 2 };
#define ALNUM(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || ((c) >= '0' && (c) <= '9'))
#define ASPECIAL(c) ((c) == '!' || (c) == '#' || (c) == '$' || (c) == '%' || (c) == '&' || \
                     (c) == '\'' || (c) == '*' || (c) == '+' || (c) == '-' || (c) == '/' || \
                     (c) == '=' || (c) == '?' || (c) == '^' || (c) == '_' || (c) == '`' || \
                     (c) == '{' || (c) == '|' || (c) == '}' || (c) == '~')
#define AC(c) ((ALNUM(c) || ASPECIAL(c) ? ATEXT : 0) | (ALNUM(c) || (c) == '-' ? LDH : 0))
#define AC4(c) AC(c), AC((c) + 1), AC((c) + 2), AC((c) + 3)
#define AC16(c) AC4(c), AC4((c) + 4), AC4((c) + 8), AC4((c) + 12)
#define AC64(c) AC16(c), AC16((c) + 16), AC16((c) + 32), AC16((c) + 48)
static const unsigned char ACLASS[256] = {AC64(0), AC64(64), AC64(128), AC64(192)};

int zv_mime_addr_check(const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0, start;
  if (len == 0 || len > 254) return ZV_EINVAL;
  /* local part: dot-atom (runs of atext joined by single dots), 1..64 bytes, then '@' */
  for (;;) {
    start = i;
    while (i < len && (ACLASS[s[i]] & ATEXT)) i++;
    /* an empty run: a leading, doubled or trailing dot, an empty local part, a bad byte */
    if (i == start || i == len) return ZV_EINVAL;
    if (s[i] == '@') break;
    if (s[i] != '.') return ZV_EINVAL;
    i++;
  }
  if (i > 64) return ZV_EINVAL;
  i++;
  if (len - i == 0 || len - i > 253) return ZV_EINVAL;
  /* domain: labels of letters, digits and hyphens (1-63 bytes, no hyphen at either end) */
  for (;;) {
    start = i;
    while (i < len && (ACLASS[s[i]] & LDH)) i++;
    if (i == start || i - start > 63 || s[start] == '-' || s[i - 1] == '-') return ZV_EINVAL;
    if (i == len) return 0;
    if (s[i] != '.') return ZV_EINVAL;
    i++;
  }
}

static int is_wsp(char c) {
  return c == ' ' || c == '\t';
}

int zv_mime_addr_parse(const char *s, size_t len, zv_mime_addr_t *out, int *code) {
  size_t a = 0, b = len, lt;
  out->name.s = NULL;
  out->name.len = 0;
  out->email.s = NULL;
  out->email.len = 0;
  /* The common case, a bare addr-spec: the check alone decides (it accepts no whitespace,
   * control or '>'); anything else takes the full path, which finds the precise cause. */
  if (len && s[len - 1] != '>' && zv_mime_addr_check(s, len) == 0) {
    out->email.s = s;
    out->email.len = len;
    return 0;
  }
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\r' || c == '\n') {
      *code = ZV_MIME_CNEWLINE;
      return ZV_EINVAL;
    }
    if ((c < 32 && c != '\t') || c == 127) {
      *code = ZV_MIME_CCONTROL;
      return ZV_EINVAL;
    }
  }
  *code = ZV_MIME_CADDRESS;
  while (a < b && is_wsp(s[a])) a++;
  while (b > a && is_wsp(s[b - 1])) b--;
  if (a == b) return ZV_EINVAL;
  if (s[b - 1] != '>') {
    if (zv_mime_addr_check(s + a, b - a)) return ZV_EINVAL;
    out->email.s = s + a;
    out->email.len = b - a;
    return 0;
  }
  /* "name <addr>": the last '<' opens the address (a quoted name may contain '<'). */
  lt = b - 1;
  while (lt > a && s[lt - 1] != '<') lt--;
  if (lt == a) return ZV_EINVAL;
  if (zv_mime_addr_check(s + lt, b - 1 - lt)) return ZV_EINVAL;
  out->email.s = s + lt;
  out->email.len = b - 1 - lt;
  b = lt - 1;
  while (b > a && is_wsp(s[b - 1])) b--;
  if (b > a && (s[a] == '"' || s[b - 1] == '"')) {
    if (b - a < 2 || s[a] != '"' || s[b - 1] != '"') return ZV_EINVAL;
    a++;
    b--;
    for (size_t i = a; i < b; i++) {
      if (s[i] == '"' || s[i] == '\\') return ZV_EINVAL;
    }
  } else {
    for (size_t i = a; i < b; i++) {
      if (s[i] == '"' || s[i] == '<' || s[i] == '>') return ZV_EINVAL;
    }
  }
  if (!zv_mime_utf8_valid(s + a, b - a)) {
    *code = ZV_MIME_CUTF8;
    return ZV_EINVAL;
  }
  if (b > a) {
    out->name.s = s + a;
    out->name.len = b - a;
  }
  return 0;
}
