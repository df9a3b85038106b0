/*
 * smtp_reply_fuzz.c: libFuzzer target for the SMTP core (host/smtp/smtp.c).
 *
 * The input is what a hostile server sends. Whatever it is, nothing may crash or read past it:
 *   - zv_smtp_reply_parse on the whole input: a reply it accepts lies inside the input, ends in
 *     CRLF, has a code 200..559, its text inside the first line; parsing the consumed prefix
 *     alone gives the same reply, and every strict prefix of it is "incomplete" or an error;
 *   - a client session (STARTTLS and AUTH configured, one transaction queued) fed the input in
 *     chunks whose sizes come from the first byte: every event is known, the output never
 *     contains the password in clear, and a session that said DEAD stays dead.
 * Run: make fuzz FUZZ_TIME=20 (seeds in fuzz/corpus/smtp_reply_fuzz/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "smtp/smtp.h"

static void check(int ok) {
  if (!ok) abort();
}

static void parse(const char *p, size_t n) {
  zv_smtp_reply_t r, r2;
  int rc = zv_smtp_reply_parse(p, n, &r);
  check(rc == 0 || rc == 1 || rc == ZV_ESYNTAX || rc == ZV_ETOOLONG);
  if (rc != 1) return;
  check(r.consumed >= 5 && r.consumed <= n);
  check(p[r.consumed - 2] == '\r' && p[r.consumed - 1] == '\n');
  check(r.code >= 200 && r.code <= 559 && r.lines >= 1);
  check(r.text >= p + 3 && r.text + r.text_len <= p + r.consumed);
  check(zv_smtp_reply_parse(p, r.consumed, &r2) == 1);
  check(r2.code == r.code && r2.consumed == r.consumed && r2.lines == r.lines);
  if (r.consumed < 4096) {
    for (size_t k = 0; k < r.consumed; k++) check(zv_smtp_reply_parse(p, k, &r2) != 1);
  }
}

static const char PASS[] = "pw-Secret-9";

static void session(const char *p, size_t n) {
  zv_smtp_t s;
  const char *rcpts[2] = {"a@example.com", "b@example.com"};
  size_t lens[2] = {13, 13};
  size_t chunk = n ? (size_t)(unsigned char)p[0] % 17 + 1 : 1, off = n ? 1 : 0;
  int dead = 0;
  if (zv_smtp_init(&s, ZV_SMTP_STARTTLS, "client.example", "user", 4, PASS, sizeof PASS - 1))
    return;
  check(zv_smtp_send(&s, "z@example.com", 13, rcpts, lens, 2, ".x\r\n", 4) == 0);
  while (off < n) {
    size_t k = n - off < chunk ? n - off : chunk;
    int ev = zv_smtp_feed(&s, p + off, k);
    off += k;
    check(ev >= ZV_SMTP_MORE && ev <= ZV_SMTP_BYE);
    if (dead) check(ev == ZV_SMTP_DEAD);
    if (s.out.len) check(!memmem(s.out.p, s.out.len, PASS, sizeof PASS - 1));
    s.out.len = 0;
    if (ev == ZV_SMTP_TLS) zv_smtp_tls_ready(&s);
    if (ev == ZV_SMTP_DEAD || ev == ZV_SMTP_BYE) dead = 1;
    if (ev == ZV_SMTP_DONE && !dead) {
      zv_smtp_send(&s, "z@example.com", 13, rcpts, lens, 1, "y", 1);
    }
  }
  zv_smtp_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  parse((const char *)data, size);
  session((const char *)data, size);
  return 0;
}
