/*
 * httpc_resp_fuzz.c: libFuzzer target for the HTTP client's response parser (host/httpc/resp.c).
 *
 * The input is what a hostile server sends. The first byte picks the piece size (1..16, or all
 * at once) and whether the request was HEAD; the rest is fed piece by piece, re-feeding what a
 * call did not take, then the end of input. Whatever it is, nothing may crash or read past it,
 * and: a call takes at most what it is given; a BODY piece lies inside the bytes just fed; the
 * body never exceeds a Content-Length; after an error or DONE, the parser stays put (EINVAL);
 * the same input fed whole gives the same outcome and the same body length.
 * Run: make fuzz FUZZ_TIME=20.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "httpc/resp.h"

static void check(int ok) {
  if (!ok) abort();
}

static zv_httpc_resp_t r1, r2;

/* Feeds p[0, n) in pieces of step bytes; returns the final code (DONE or an error) and the
 * body length in *body. */
static int run(zv_httpc_resp_t *r, const uint8_t *p, size_t n, size_t step, int head,
               uint64_t *body) {
  size_t off = 0;
  int guard = 0;
  *body = 0;
  zv_httpc_resp_init(r, head);
  for (;;) {
    size_t k = n - off < step ? n - off : step, used = 0;
    int ev;
    check(++guard < 10000000);
    if (k == 0) {
      ev = zv_httpc_resp_feed(r, (const char *)p + off, 0, &used);
      check(used == 0);
      if (ev == ZV_HTTPC_EV_NONE) ev = zv_httpc_resp_eof(r);
    } else {
      ev = zv_httpc_resp_feed(r, (const char *)p + off, k, &used);
      check(used <= k);
    }
    if (ev == ZV_HTTPC_EV_BODY) {
      check(r->ev_p >= (const char *)p + off && r->ev_p + r->ev_n <= (const char *)p + off + used);
      check(r->ev_n > 0);
      *body += r->ev_n;
      if (r->content_length != UINT64_MAX && r->framing == 1) check(*body <= r->content_length);
    }
    off += used;
    if (ev < 0 || ev == ZV_HTTPC_EV_DONE) {
      size_t u2 = 0;
      check(zv_httpc_resp_feed(r, "x", 1, &u2) == ZV_EINVAL);
      return ev;
    }
    if (ev == ZV_HTTPC_EV_HEAD) {
      check(r->status >= 100 && r->status <= 999);
      check(r->nfields <= ZV_HTTPC_FIELDS_MAX);
      for (size_t i = 0; i < r->nfields; i++) {
        check(r->fields[i].name_len > 0);
        check((size_t)r->fields[i].val_off + r->fields[i].val_len <= r->head_len);
      }
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t b1, b2;
  size_t step;
  int head, e1, e2;
  if (size < 1) return 0;
  step = (data[0] & 15) ? (size_t)(data[0] & 15) : size;
  head = (data[0] >> 4) & 1;
  data++;
  size--;
  e1 = run(&r1, data, size, step ? step : 1, head, &b1);
  e2 = run(&r2, data, size, size ? size : 1, head, &b2);
  check(e1 == e2);
  if (e1 == ZV_HTTPC_EV_DONE) check(b1 == b2);
  return 0;
}
