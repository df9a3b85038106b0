/*
 * mime_addr_fuzz.c: libFuzzer target for the address parser and the header writers of the MIME
 * core (host/mime/).
 *
 * The input is parsed as an address ("a@b.c" or "Name <a@b.c>"). Whatever it is, parsing must
 * not crash or read past it, and:
 *   - an accepted address has spans inside the input and an email that zv_mime_addr_check
 *     accepts; a rejection has a known cause;
 *   - a message built From that address (and with the input as subject and as a display name)
 *     either is refused with a cause, or renders with CRLF line ends only, every line a folded
 *     continuation or a header, no line of its headers above 998 bytes, and no header line that
 *     the input could have injected (each header line starts with a known name or a space).
 * Run: make fuzz FUZZ_BIN=build/fuzz/mime_addr_fuzz FUZZ_TIME=60 (seeds in
 * fuzz/corpus/mime_addr_fuzz/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "mime/mime.h"

static void check(int ok) {
  if (!ok) abort();
}

static int known_header(const char *p, size_t n) {
  static const char *const names[] = {"From: ", "To: ", "Subject: ", "Date: ", "Message-ID: ",
                                      "MIME-Version: ", "Content-Type: ",
                                      "Content-Transfer-Encoding: "};
  if (n && (p[0] == ' ' || p[0] == '\t')) return 1;
  for (size_t i = 0; i < ZV_ARRAY_SIZE(names); i++) {
    size_t k = strlen(names[i]);
    if (n >= k && memcmp(p, names[i], k) == 0) return 1;
  }
  return 0;
}

static void check_headers(const zv_mime_buf_t *b, const zv_mime_info_t *info) {
  const char *p = b->p + info->start, *end = p + info->header_len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    check(nl != NULL && nl > p && nl[-1] == '\r');
    check((size_t)(nl - p) - 1 <= 998);
    check(known_header(p, (size_t)(nl - p)));
    for (const char *q = p; q < nl - 1; q++) check(*q != '\r' && *q != '\n');
    p = nl + 1;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = size ? malloc(size) : NULL;
  zv_mime_addr_t a, to = {{NULL, 0}, {"t@b.c", 5}}, named;
  zv_mime_msg_t m;
  zv_mime_buf_t b;
  zv_mime_info_t info;
  zv_mime_cause_t cause;
  int code = 0, rc;
  if (size) memcpy(s, data, size);

  rc = zv_mime_addr_parse(s, size, &a, &code);
  if (rc == 0) {
    check(a.email.s >= s && a.email.s + a.email.len <= s + size);
    check(zv_mime_addr_check(a.email.s, a.email.len) == 0);
    if (a.name.s) check(a.name.s >= s && a.name.s + a.name.len <= s + size);
  } else {
    check(rc == ZV_EINVAL && code > ZV_MIME_CNONE && code < ZV_MIME_CMAX);
    a.name.s = NULL;
    a.email.s = "f@b.c";
    a.email.len = 5;
  }

  /* The parsed address as From, the raw input as a display name of To and as the subject. */
  named = to;
  named.name.s = s ? s : "";
  named.name.len = size;
  for (int variant = 0; variant < 2; variant++) {
    memset(&m, 0, sizeof m);
    m.addrs[ZV_MIME_FROM] = &a;
    m.naddrs[ZV_MIME_FROM] = 1;
    m.addrs[ZV_MIME_TO] = variant ? &named : &to;
    m.naddrs[ZV_MIME_TO] = 1;
    if (!variant) {
      m.subject.s = s ? s : "";
      m.subject.len = size;
    }
    m.text.s = "body";
    m.text.len = 4;
    m.now = 1796000000;
    m.nonce = size;
    zv_mime_buf_init(&b);
    rc = zv_mime_build(&m, &b, &info, &cause);
    if (rc == 0) {
      check(b.len > 0 && b.len <= b.cap);
      check_headers(&b, &info);
    } else {
      check(rc == ZV_EINVAL && cause.code > ZV_MIME_CNONE && cause.code < ZV_MIME_CMAX);
      check(b.len == 0);
    }
    zv_mime_buf_free(&b);
  }
  free(s);
  return 0;
}
