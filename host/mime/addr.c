/*
 * addr.c: email addresses: the addr-spec check and the "Name <a@b.c>" parser.
 *
 * One pass over the bytes, no copies and no allocation: domain labels are checked as the scan
 * crosses them (their length is a counter, not a substring). It must not accept anything that
 * would need quoting or encoding in an SMTP envelope (quoted local parts, address literals,
 * UTF-8): an address that passes here can be written into RCPT TO as it is.
 */
#include "mime.h"

/* RFC 5322 atext: ALPHA DIGIT and ! # $ % & ' * + - / = ? ^ _ ` { | } ~ */
static int is_atext(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 1;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
    case '/': case '=': case '?': case '^': case '_': case '`': case '{': case '|': case '}':
    case '~':
      return 1;
    default:
      return 0;
  }
}

static int is_ldh(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

int zv_mime_addr_check(const char *s, size_t len) {
  size_t i = 0, at, label = 0;
  unsigned char prev = '.';
  if (len == 0 || len > 254) return ZV_EINVAL;
  /* local part: dot-atom, 1..64 bytes */
  for (; i < len && s[i] != '@'; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '.') {
      if (prev == '.') return ZV_EINVAL; /* leading or doubled dot */
    } else if (!is_atext(c)) {
      return ZV_EINVAL;
    }
    prev = c;
  }
  if (i == len || i == 0 || i > 64 || prev == '.') return ZV_EINVAL;
  at = i++;
  if (len - i == 0 || len - i > 253) return ZV_EINVAL;
  /* domain: labels of letters, digits and hyphens */
  prev = '.';
  for (; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '.') {
      if (label == 0 || prev == '-') return ZV_EINVAL;
      label = 0;
    } else {
      if (!is_ldh(c)) return ZV_EINVAL;
      if (label == 0 && c == '-') return ZV_EINVAL;
      if (++label > 63) return ZV_EINVAL;
    }
    prev = c;
  }
  (void)at;
  if (label == 0 || prev == '-') return ZV_EINVAL; /* trailing dot or hyphen */
  return 0;
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
