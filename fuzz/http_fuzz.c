/*
 * http_fuzz.c: libFuzzer target for the HTTP connection core (host/http/conn.c).
 *
 * Byte 0 picks the limits (max_header_bytes from 64 up, max_body_bytes from 0 up); byte 1
 * picks how many read boundaries split the input (low 7 bits), and the next bytes where, and
 * the mode (high bit): raw or structured. Raw, the rest is what a client sends. Structured, the
 * rest is decoded into request pieces (generate below): methods, targets, versions, header
 * names, separators, values, line ends, Content-Length and chunked bodies with their framing,
 * each picked from a list whose first entries are valid and whose others are the mutations the
 * differential spec knows (a space before the colon, a tab before chunked, a bare LF after chunk
 * data, a fold, a second Content-Length...), so the fuzzer spends its time near valid requests
 * instead of rediscovering the request line byte by byte. When every piece picked is valid and
 * the request fits the limits, the parser must accept it with exactly the body generated.
 * Either way, the bytes are fed through zv_http_conn_space/commit/parse in pieces, as the
 * server does.
 * Whatever the bytes, the core must not crash or read outside its buffer, and:
 *   - every request's URL, header names and values and body lie inside the buffer, before pos;
 *   - a body is never larger than max_body_bytes, the head never larger than max_header_bytes;
 *   - a failure is one of the statuses zever answers (400 413 414 417 431 501 505);
 *   - the buffer never grows past the limits plus slack;
 *   - feeding the same bytes in one piece gives the same requests (count, method, URL, body)
 *     as feeding them split, unless a limit fails in one of the two (limits count buffered
 *     bytes, so they may fire at different points);
 *   - a response head built from the request's first header is well formed or refused;
 *   - fed a third time with streaming on (max_stream_bytes: a chunked body, or one announced
 *     with Expect, is reported at its head and taken piece by piece as it comes, as
 *     stream_read.c and lx_body.c do), the requests and their bodies are the same, and the
 *     buffer stays within its window.
 * Run: make fuzz FUZZ_BIN=build/fuzz/http_fuzz FUZZ_TIME=60 (seeds in fuzz/corpus/http_fuzz/).
 */
#include <stdint.h>
#include <stdio.h>
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
  uint64_t body_sig[MAX_REQS]; /* a hash of the body alone */
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
  check(c->body_len <= c->limits.max_body_bytes || c->streamed);
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

#define FNV 1469598103934665603ull

static void feed(const zv_http_limits_t *lim, const uint8_t *data, size_t size,
                 const size_t *cuts, int ncuts, outcome_t *out) {
  zv_http_conn_t c;
  size_t at = 0;
  int streaming = 0;            /* a streamed body is being taken */
  uint64_t sig = 0, bsig = 0;   /* its running hashes (FNV chains over the pieces taken) */
  memset(out, 0, sizeof *out);
  if (zv_http_conn_init(&c, lim)) return;
  for (int piece = 0; piece <= ncuts && !out->failed; piece++) {
    size_t end = piece < ncuts ? cuts[piece] : size;
    while (at < end && !out->failed) {
      char *p;
      size_t n;
      int ev;
      check(zv_http_conn_space(&c, &p, &n) == 0);
      check(c.cap <= (size_t)c.limits.max_header_bytes + c.limits.max_body_bytes + (16 << 10) ||
            (c.streamed && c.cap <= (size_t)c.limits.max_header_bytes + ZV_HTTP_STREAM_WINDOW +
                                        (16 << 10)));
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
          check(s == 400 || s == 413 || s == 414 || s == 417 || s == 431 || s == 501 ||
                s == 505);
          out->failed = 1;
          out->status = s;
          break;
        }
        if (ev == ZV_HTTP_CONTINUE) continue;
        if (ev == ZV_HTTP_HEADERS) {
          /* The head of a streamed body: its pieces are taken as they come (below). */
          check(c.streamed && c.state == ZV_HTTP_BODY && c.limits.max_stream_bytes);
          streaming = 1;
          sig = hash(hash(FNV, zv_http_conn_method(&c), 3), c.buf + c.url_off, c.url_len);
          bsig = FNV;
          check_head(&c);
          continue;
        }
        check_request(&c);
        if (streaming) {
          sig = hash(sig, c.buf + c.body_off, c.body_len);
          bsig = hash(bsig, c.buf + c.body_off, c.body_len);
          streaming = 0;
          if (out->n < MAX_REQS) {
            out->sig[out->n] = sig;
            out->body_sig[out->n] = bsig;
          }
        } else if (out->n < MAX_REQS) {
          uint64_t h = hash(FNV, zv_http_conn_method(&c), 3);
          h = hash(h, c.buf + c.url_off, c.url_len);
          out->sig[out->n] = hash(h, c.buf + c.body_off, c.body_len);
          out->body_sig[out->n] = hash(FNV, c.buf + c.body_off, c.body_len);
        }
        out->n++;
        check_head(&c);
        if (!c.keep_alive) {
          out->failed = 2; /* the server would close here */
          break;
        }
        zv_http_conn_next(&c);
      }
      if (streaming && !out->failed && c.body_len) {
        /* The reader takes what came (in two bites when it can, as req:read(n) does). */
        size_t half = c.body_len / 2;
        check((size_t)c.body_off + c.body_len <= c.pos && c.pos <= c.len);
        sig = hash(sig, c.buf + c.body_off, half);
        bsig = hash(bsig, c.buf + c.body_off, half);
        zv_http_conn_body_take(&c, half);
        sig = hash(sig, c.buf + c.body_off, c.body_len);
        bsig = hash(bsig, c.buf + c.body_off, c.body_len);
        zv_http_conn_body_take(&c, c.body_len);
        check(c.body_len == 0 && c.pos <= c.len);
      }
    }
  }
  zv_http_conn_free(&c);
}


/* --- the structured generator ------------------------------------------------------------- */

#define GEN_MAX 8192

typedef struct {
  const uint8_t *p;
  size_t n;
  char out[GEN_MAX];
  size_t len;
  int valid;              /* every piece picked so far was a valid one */
  int nreq;               /* requests generated */
  uint64_t body_sig[MAX_REQS];
  size_t head_max;        /* the longest head generated */
  size_t body_max;        /* the largest body generated */
} gen_t;

static unsigned take(gen_t *g) {
  if (!g->n) return 0;
  g->n--;
  return *g->p++;
}

static void emit(gen_t *g, const char *s, size_t n) {
  if (g->len + n > GEN_MAX) {
    g->valid = 0;
    n = GEN_MAX - g->len;
  }
  memcpy(g->out + g->len, s, n);
  g->len += n;
}

static void emits(gen_t *g, const char *s) {
  emit(g, s, strlen(s));
}

/* Picks one of list[0, n): the first nvalid entries keep the request valid. */
static const char *pick(gen_t *g, const char *const *list, unsigned n, unsigned nvalid) {
  unsigned i = take(g) % n;
  if (i >= nvalid) g->valid = 0;
  return list[i];
}

#define PICK(g, list, nvalid) pick(g, list, sizeof list / sizeof *list, nvalid)

static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH",
                                      "FOO", "get", "G T", "", "CONNECT", "HEAD"};
static const char *const targets[] = {"/", "/a?b=c", "http://h/x", "HTTPS://h:1/y?z",
                                      "/%zz", "*", "h", "http://u@h/", "/a\x01", "", "ftp://h/"};
static const char *const versions[] = {"HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.10",
                                       "http/1.1", "HTTP/1.1 ", "HTTP/0.9", ""};
static const char *const seps[] = {" ", "  ", "\t", ""};
static const char *const eols[] = {"\r\n", "\n", "\r", "", "\r\n "};
static const char *const names[] = {"X-A", "Accept", "User-Agent", "Host", "Content-Length",
                                    "Transfer-Encoding", "Connection", "Expect", "X A", "Host ",
                                    "", "Content-Length ", "transfer-encoding", "X@A"};
static const char *const colons[] = {": ", ":", ":  ", " : ", ":\t", " :"};
static const char *const values[] = {"v", "text/html, */*", "a\tb", "", "chunked", "5",
                                     "gzip, chunked", "close", "keep-alive", "100-continue",
                                     "a b@c/d", "-1", "chunked, chunked", "\tchunked", "a\x00b",
                                     "5, 5", "upgrade", "something"};
static const char *const chunk_ends[] = {"\r\n", "\n", "XX", "", "\r"};
static const char *const exts[] = {"", ";a=b", ";x", " ;y=\"z\"", ";\x01", " x", ";a\n"};

/* One request from the ops: a request line, 0-7 extra headers, maybe a body. A valid request
 * gets Host: h (HTTP/1.1) and its framing headers from the body kind picked. */
static void gen_request(gen_t *g) {
  char num[32], body[256];
  unsigned nh, kind, blen = 0;
  const char *method = PICK(g, methods, 6), *version;
  size_t head_start = g->len;
  uint64_t bsig = 1469598103934665603ull;
  emits(g, method);
  emits(g, PICK(g, seps, 1));
  emits(g, PICK(g, targets, 4));
  emits(g, PICK(g, seps, 1));
  version = PICK(g, versions, 2);
  emits(g, version);
  emits(g, PICK(g, eols, 2));
  if (!strcmp(version, "HTTP/1.1") || !g->valid) {
    emits(g, "Host: h");
    emits(g, PICK(g, eols, 2));
  }
  nh = take(g) % 8;
  for (unsigned i = 0; i < nh; i++) {
    emits(g, PICK(g, names, 3));
    emits(g, PICK(g, colons, 3));
    emits(g, PICK(g, values, 3));
    emits(g, PICK(g, eols, 2));
  }
  kind = take(g) % 3; /* 0 none, 1 Content-Length, 2 chunked (HTTP/1.1 only) */
  if (kind == 2 && strcmp(version, "HTTP/1.1")) g->valid = 0;
  if (kind) {
    blen = take(g) % sizeof body;
    for (unsigned i = 0; i < blen; i++) body[i] = (char)('a' + i % 26);
    bsig = hash(bsig, body, blen);
  }
  if (kind == 1) {
    snprintf(num, sizeof num, "Content-Length: %u\r\n", blen);
    emits(g, num);
  } else if (kind == 2) {
    emits(g, "Transfer-Encoding: chunked\r\n");
  }
  emits(g, "\r\n");
  if (g->len - head_start > g->head_max) g->head_max = g->len - head_start;
  if (blen > g->body_max) g->body_max = blen;
  if (kind == 1) {
    emit(g, body, blen);
  } else if (kind == 2) {
    unsigned at = 0;
    while (at < blen) {
      unsigned n = 1 + take(g) % 64;
      if (n > blen - at) n = blen - at;
      snprintf(num, sizeof num, (take(g) & 1) ? "%x" : "%X", n);
      emits(g, num);
      emits(g, PICK(g, exts, 4));
      emits(g, PICK(g, chunk_ends, 1));
      emit(g, body + at, n);
      emits(g, PICK(g, chunk_ends, 1));
      at += n;
    }
    emits(g, "0");
    emits(g, PICK(g, exts, 4));
    emits(g, "\r\n");
    if (take(g) & 1) {
      emits(g, "X-T");
      emits(g, PICK(g, colons, 3));
      emits(g, "1");
      emits(g, PICK(g, eols, 2));
    }
    emits(g, "\r\n");
  }
  /* A raw byte dropped in now and then: anywhere else the lists do not reach. */
  if ((take(g) & 15) == 15) {
    char ch = (char)take(g);
    g->valid = 0;
    emit(g, &ch, 1);
  }
  if (g->nreq < MAX_REQS) g->body_sig[g->nreq] = bsig;
  g->nreq++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  zv_http_limits_t lim;
  size_t cuts[MAX_SPLITS];
  int ncuts;
  outcome_t split, whole, streamed;
  static gen_t g;
  int structured;
  if (size < 2) return 0;
  lim.max_header_bytes = 64 + (uint32_t)(data[0] & 0x0f) * 256;
  lim.max_body_bytes = (uint32_t)(data[0] >> 4) * 64;
  lim.max_stream_bytes = 0;
  ncuts = (data[1] & 0x7f) % (MAX_SPLITS + 1);
  structured = data[1] >> 7;
  data += 2;
  size -= 2;
  if (size < (size_t)ncuts) return 0;
  for (int i = 0; i < ncuts; i++) cuts[i] = data[i];
  data += ncuts;
  size -= (size_t)ncuts;
  if (structured) {
    unsigned nreq;
    g.p = data;
    g.n = size;
    g.len = 0;
    g.valid = 1;
    g.nreq = 0;
    g.head_max = g.body_max = 0;
    nreq = 1 + take(&g) % 3;
    for (unsigned i = 0; i < nreq; i++) gen_request(&g);
    data = (const uint8_t *)g.out;
    size = g.len;
  }

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
  {
    /* Streaming on, with the same limit for a streamed body: the same requests and bodies. */
    zv_http_limits_t sl = lim;
    sl.max_stream_bytes = lim.max_body_bytes;
    feed(&sl, data, size, cuts, ncuts, &streamed);
    if (streamed.failed != 1 && whole.failed != 1) {
      check(streamed.n == whole.n);
      for (int i = 0; i < streamed.n && i < MAX_REQS; i++) check(streamed.sig[i] == whole.sig[i]);
    }
  }
  /* A request built of valid pieces only, within the limits, is accepted with its body. */
  if (structured && g.valid && g.head_max <= lim.max_header_bytes &&
      g.body_max <= lim.max_body_bytes) {
    check(whole.failed != 1);
    check(whole.n >= 1);
    for (int i = 0; i < whole.n && i < g.nreq && i < MAX_REQS; i++)
      check(whole.body_sig[i] == g.body_sig[i]);
    if (whole.failed == 0) check(whole.n == g.nreq);
  }
  return 0;
}
