/*
 * http_fuzz.c: libFuzzer target for the HTTP connection core (host/http/conn.c).
 *
 * Byte 0 picks the limits (max_header_bytes from 64 up, max_body_bytes from 0 up); byte 1
 * picks how many read boundaries split the input, and the next bytes where. The rest is what a
 * client sends, fed through zv_http_conn_space/commit/parse in those pieces, as the server does.
 * Whatever the bytes, the core must not crash or read outside its buffer, and:
 *   - every request's URL, header names and values and body lie inside the buffer, before pos;
 *   - a body is never larger than max_body_bytes, the head never larger than max_header_bytes;
 *   - a failure is one of the statuses zever answers (400 413 414 417 431 505);
 *   - the buffer never grows past the limits plus slack;
 *   - feeding the same bytes in one piece gives the same requests (count, method, URL, body)
 *     as feeding them split, unless a limit fails in one of the two (limits count buffered
 *     bytes, so they may fire at different points);
 *   - a response head built from the request's first header is well formed or refused.
 * Run: make fuzz FUZZ_BIN=build/fuzz/http_fuzz FUZZ_TIME=60 (seeds in fuzz/corpus/http_fuzz/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "http/conn.h"

#define MAX_SPLITS 8
#define MAX_REQS 64

static void check(int ok) {
  if (!ok) abort();
}

typedef struct {
  int n, failed, status;
  uint64_t sig[MAX_REQS]; /* a hash of method, URL and body per request */
} outcome_t;

static uint64_t hash(uint64_t h, const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h;
}

static void check_request(const zv_http_conn_t *c) {
  check(c->state == ZV_HTTP_DONE);
  check((size_t)c->url_off + c->url_len <= c->pos);
  check(c->path_len <= c->url_len);
  if (c->query_off >= 0) check((size_t)c->query_off + c->query_len <= c->pos);
  check(c->nheaders <= ZV_HTTP_MAX_HEADERS);
  for (uint32_t i = 0; i < c->nheaders; i++) {
    const zv_http_header_t *h = &c->headers[i];
    check((size_t)h->name_off + h->name_len <= c->pos);
    check((size_t)h->value_off + h->value_len <= c->pos);
    check(h->value_off >= c->start && h->value_off - c->start <= c->limits.max_header_bytes);
  }
  check(c->body_len <= c->limits.max_body_bytes);
  if (c->body_len) check((size_t)c->body_off + c->body_len <= c->pos);
}

static void check_head(const zv_http_conn_t *c) {
  zv_http_buf_t b = {0};
  zv_http_hdrinfo_t info;
  zv_http_head_t h = {200, 5, 0, 0, "Sun, 06 Nov 1994 08:49:37 GMT"};
  zv_http_head_begin(&b, 200);
  if (c->nheaders) {
    const zv_http_header_t *x = &c->headers[0];
    const char *name = c->buf + x->name_off, *value = c->buf + x->value_off;
    if (zv_http_check_header(name, x->name_len, value, x->value_len, &info) == 0) {
      zv_http_head_add(&b, name, x->name_len, value, x->value_len);
      for (size_t i = 0; i < x->value_len; i++) check(value[i] != '\r' && value[i] != '\n');
    }
  }
  zv_http_head_end(&b, &h, 1);
  check(b.err || (b.len >= 4 && !memcmp(b.p + b.len - 4, "\r\n\r\n", 4)));
  zv_http_buf_free(&b);
}

static void feed(const zv_http_limits_t *lim, const uint8_t *data, size_t size,
                 const size_t *cuts, int ncuts, outcome_t *out) {
  zv_http_conn_t c;
  size_t at = 0;
  memset(out, 0, sizeof *out);
  if (zv_http_conn_init(&c, lim)) return;
  for (int piece = 0; piece <= ncuts && !out->failed; piece++) {
    size_t end = piece < ncuts ? cuts[piece] : size;
    while (at < end && !out->failed) {
      char *p;
      size_t n;
      int ev;
      check(zv_http_conn_space(&c, &p, &n) == 0);
      check(c.cap <= (size_t)c.limits.max_header_bytes + c.limits.max_body_bytes + (16 << 10));
      if (n == 0) {
        /* Only a waiting request or an error may refuse input; we always answered. */
        check(c.state == ZV_HTTP_ERROR);
        break;
      }
      if (n > end - at) n = end - at;
      memcpy(p, data + at, n);
      zv_http_conn_commit(&c, n);
      at += n;
      while ((ev = zv_http_conn_parse(&c)) != ZV_HTTP_NEED_MORE) {
        if (ev == ZV_HTTP_FAIL) {
          int s = c.status;
          check(s == 400 || s == 413 || s == 414 || s == 417 || s == 431 || s == 505);
          out->failed = 1;
          out->status = s;
          break;
        }
        if (ev == ZV_HTTP_CONTINUE) continue;
        check_request(&c);
        if (out->n < MAX_REQS) {
          uint64_t h = hash(1469598103934665603ull, zv_http_conn_method(&c), 3);
          h = hash(h, c.buf + c.url_off, c.url_len);
          out->sig[out->n] = hash(h, c.buf + c.body_off, c.body_len);
        }
        out->n++;
        check_head(&c);
        if (!c.keep_alive) {
          out->failed = 2; /* the server would close here */
          break;
        }
        zv_http_conn_next(&c);
      }
    }
  }
  zv_http_conn_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  zv_http_limits_t lim;
  size_t cuts[MAX_SPLITS];
  int ncuts;
  outcome_t split, whole;
  if (size < 2) return 0;
  lim.max_header_bytes = 64 + (uint32_t)(data[0] & 0x0f) * 256;
  lim.max_body_bytes = (uint32_t)(data[0] >> 4) * 64;
  ncuts = data[1] % (MAX_SPLITS + 1);
  data += 2;
  size -= 2;
  if (size < (size_t)ncuts) return 0;
  for (int i = 0; i < ncuts; i++) cuts[i] = data[i];
  data += ncuts;
  size -= (size_t)ncuts;
  /* Cut positions: ascending, inside the input. */
  for (int i = 0; i < ncuts; i++) {
    cuts[i] = size ? cuts[i] * size / 256 : 0;
    if (i && cuts[i] < cuts[i - 1]) cuts[i] = cuts[i - 1];
  }
  feed(&lim, data, size, cuts, ncuts, &split);
  feed(&lim, data, size, NULL, 0, &whole);
  if (split.failed != 1 && whole.failed != 1) {
    check(split.n == whole.n);
    for (int i = 0; i < split.n && i < MAX_REQS; i++) check(split.sig[i] == whole.sig[i]);
  }
  return 0;
}
