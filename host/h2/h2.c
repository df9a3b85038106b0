/*
 * h2.c: HTTP/2 as a transport layer of the HTTP server (see h2.h and host/http/xport.h).
 *
 * Per connection (hconn_t): a sniffing phase (the first 24 bytes: the HTTP/2 preface or not),
 * then either PASS (HTTP/1.1: every call goes straight to the lower transport) or H2: an
 * nghttp2 server session fed with the lower transport's plaintext.
 *
 * H2, reading: the connection's own core never sees a request. Each complete request stream
 * (END_STREAM) is handed at once to a virtual connection of its own (a stream_t, the server's
 * zv__http_conn_open_virtual), which the core reads as HTTP/1.1 bytes (request line, Host from
 * :authority, the fields, Content-Length of the collected body, the body) and runs like any
 * request: so the streams of one connection run side by side, each in its own handler
 * coroutine, and answer in any order. At most MAX_STREAMS run at once per connection (the
 * SETTINGS_MAX_CONCURRENT_STREAMS nghttp2 enforces; one more is refused). While any does, the
 * connection is busy for the server (zv__http_conn_busy: no keep-alive timeout, a drain waits).
 *
 * H2, writing: a stream's HTTP/1.1 response bytes (the core writes them through this transport,
 * with the stream's state) are parsed back: the head (a 1xx interim head is dropped), then the
 * body by Content-Length or chunked coding, into the stream's output buffer, from which
 * nghttp2's data source reads as the flow-control windows allow. What the stream holds counts
 * as its virtual connection's queued bytes (c->pending, and the server's stream_pending): a
 * streamed response's writer waits while it is above zever.stream's high mark, and goes on
 * (zv__http_conn_drained, from the idle callback) as WINDOW_UPDATEs let nghttp2 take it; held
 * bytes that do not move for write_timeout reset the stream (zv__http_conn_progress).
 * Every change ends with a pump:
 * nghttp2_session_mem_send's frames, gathered, written through the lower transport in one call
 * (not from inside nghttp2's callbacks: the outer call pumps after them).
 *
 * Drain: the server's graceful close of the connection (x_shutdown) sends GOAWAY with the last
 * stream id processed; the streams in flight finish (the server waits while the connection is
 * busy), then the lower transport's shutdown and the FIN follow.
 *
 * A client's RST_STREAM of a stream whose handler runs closes its virtual connection (the
 * handler's waits return an error, as when an HTTP/1.1 client goes away); a stream whose
 * handler ended without a complete response is reset (INTERNAL_ERROR).
 *
 * The lower transport is called with its own state (lower_xp). Any call into it, and any pump,
 * may close the connection (the server then calls x_close, which frees this state and closes
 * the virtual connections of its streams): after one, c->closing is checked before the state
 * is touched again.
 */
#include "h2.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <nghttp2/nghttp2.h>

#include "../core/zv.h"
#include "../http/server.h"

#define RAW_READ (16u << 10)
#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define PREFACE_LEN 24
#define MAX_STREAMS 128

struct zv_h2_ctx_s {
  const zv_http_xport_t *lower;
  void *lower_ctx;
  int refs;
};

typedef struct {
  char *p;
  size_t len, cap, off;
} buf_t;

enum { K_CONN, K_STREAM }; /* the first field of both states: what x_* was given */

typedef struct stream_s stream_t;
typedef struct hconn_s hconn_t;

typedef struct req_s {
  int32_t id;
  buf_t head;                 /* fields, as HTTP/1.1 lines */
  buf_t cookie;               /* cookie crumbs, joined with "; " */
  buf_t body;
  buf_t out;                  /* the response body not yet taken by nghttp2 */
  char method[16];
  char *path, *authority;
  size_t hbytes;              /* header block bytes (names + values) */
  uint8_t complete;           /* END_STREAM seen: ready for the core */
  uint8_t delivered, closed, out_eof, deferred, is_head, bad;
  stream_t *st;               /* the virtual connection running it, while it runs */
  struct req_s *aprev, *anext; /* every stream of the connection (nghttp2 frees none of them) */
} req_t;

/* A request stream's virtual connection: its state (xp) in the server. */
struct stream_s {
  int kind;                   /* K_STREAM */
  hconn_t *h;                 /* NULL once the connection closed */
  req_t *q;                   /* NULL once the stream closed */
  zv_http_sconn_t *c;         /* the virtual connection */
  buf_t deliver;              /* the request as HTTP/1.1 bytes, read by the core */
  /* The response parser. */
  int rstate;
  buf_t rhead;
  uint64_t rleft;
  uint8_t done;               /* the response was parsed to its end */
  stream_t *prev, *next;      /* the connection's running streams */
};

enum { M_SNIFF, M_PASS, M_H2 };
enum { R_HEAD, R_BODY, R_CSIZE, R_CDATA, R_CCRLF, R_TRAILER, R_DONE };

struct hconn_s {
  int kind;                   /* K_CONN */
  zv_h2_ctx_t *ctx;
  zv_http_sconn_t *c;
  void *lower_xp;
  nghttp2_session *s;
  int mode;
  char sniff[PREFACE_LEN];
  size_t nsniff, sniff_off;   /* bytes read while sniffing; given back in PASS */
  req_t *all;
  stream_t *running;          /* streams handed to the core (virtual connections) */
  uint32_t nrunning;
  uint32_t active;            /* streams handed to the core and not closed: busy while > 0 */
  size_t body_waiting;        /* request body bytes held, all streams */
  size_t out_waiting;         /* response bytes held, all streams */
  uint64_t resets, answered;
  uint8_t fatal;              /* the session failed or was told to go away: close after pump */
  uint8_t in_pump, in_recv;
  uint8_t goaway;             /* the drain's GOAWAY was sent */
  uint8_t flush_wanted;       /* a stream wrote: pump at the end of the idle pass (x_flush) */
};

/* --- buffers -------------------------------------------------------------------------------- */

static int buf_add(buf_t *b, const void *p, size_t n) {
  if (n == 0) return 0; /* (an empty value: b->p may be NULL, no memcpy from or to it) */
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    char *np;
    while (cap < b->len + n) cap *= 2;
    np = zv_realloc(b->p, cap);
    if (!np) return -1;
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
  return 0;
}

static int buf_str(buf_t *b, const char *s) {
  return buf_add(b, s, strlen(s));
}

static void buf_free(buf_t *b) {
  zv_free(b->p);
  memset(b, 0, sizeof *b);
}

/* --- the context ------------------------------------------------------------------------------ */

zv_h2_ctx_t *zv_h2_ctx_new(const zv_http_xport_t *lower, void *lower_ctx) {
  zv_h2_ctx_t *ctx = zv_alloc(sizeof *ctx);
  if (!ctx) return NULL;
  ctx->lower = lower;
  ctx->lower_ctx = lower_ctx;
  ctx->refs = 1;
  if (lower) lower->retain(lower_ctx);
  return ctx;
}

void zv_h2_ctx_retain(zv_h2_ctx_t *ctx) {
  __atomic_add_fetch(&ctx->refs, 1, __ATOMIC_RELAXED);
}

void zv_h2_ctx_release(zv_h2_ctx_t *ctx) {
  if (__atomic_sub_fetch(&ctx->refs, 1, __ATOMIC_ACQ_REL)) return;
  if (ctx->lower) ctx->lower->release(ctx->lower_ctx);
  zv_free(ctx);
}

const char *zv_h2_version(void) {
  nghttp2_info *i = nghttp2_version(0);
  return i ? i->version_str : "?";
}

/* --- the lower transport -------------------------------------------------------------------- */

/* Reads plaintext from below (the lower transport, or the socket as stream.c would). */
static ssize_t lower_read(zv_http_sconn_t *c, hconn_t *h, char *p, size_t n) {
  ssize_t r;
  if (h->ctx->lower) return h->ctx->lower->read(c, h->lower_xp, p, n);
  do {
    r = recv(c->fd, p, n, 0);
  } while (r < 0 && errno == EINTR);
  if (r > 0 && (size_t)r < n && !c->rd_eof) c->rd_ready = 0;
  return r;
}

static int lower_write(zv_http_sconn_t *c, hconn_t *h, const uv_buf_t *bufs, unsigned n) {
  if (h->ctx->lower) return h->ctx->lower->write(c, h->lower_xp, bufs, n);
  return zv__http_conn_send(c, bufs, n);
}

/* Sends what the session has to send. 0, or -1 when the connection closed (h is freed). */
static int pump(zv_http_sconn_t *c, hconn_t *h) {
  buf_t out = {0};
  int rc = 0;
  if (h->in_pump || h->in_recv) return 0; /* the outer call pumps */
  h->in_pump = 1;
  for (;;) {
    const uint8_t *d;
    ssize_t n = nghttp2_session_mem_send(h->s, &d);
    if (n < 0) {
      h->fatal = 1;
      break;
    }
    if (n == 0) break;
    if (buf_add(&out, d, (size_t)n)) {
      h->fatal = 1;
      break;
    }
  }
  h->in_pump = 0;
  if (out.len) {
    uv_buf_t b = uv_buf_init(out.p, (unsigned)out.len);
    rc = lower_write(c, h, &b, 1) || c->closing ? -1 : 0;
  }
  buf_free(&out);
  return rc;
}

/* --- streams ---------------------------------------------------------------------------------- */

static int deliver(hconn_t *h, req_t *q);

static void req_free(hconn_t *h, req_t *q) {
  if (q->st) {
    q->st->q = NULL;
    q->st = NULL;
  }
  if (q->aprev) q->aprev->anext = q->anext;
  else h->all = q->anext;
  if (q->anext) q->anext->aprev = q->aprev;
  if (!q->delivered) h->body_waiting -= q->body.len;
  h->out_waiting -= q->out.len - q->out.off;
  h->c->srv->stream_pending -= q->out.len - q->out.off;
  buf_free(&q->head);
  buf_free(&q->cookie);
  buf_free(&q->body);
  buf_free(&q->out);
  zv_free(q->path);
  zv_free(q->authority);
  zv_free(q);
}

static char *dup_n(const uint8_t *p, size_t n) {
  char *s = zv_alloc(n + 1);
  if (!s) return NULL;
  memcpy(s, p, n);
  s[n] = 0;
  return s;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *u) {
  hconn_t *h = u;
  req_t *q;
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  q = zv_alloc(sizeof *q);
  if (!q) return NGHTTP2_ERR_CALLBACK_FAILURE;
  memset(q, 0, sizeof *q);
  q->id = f->hd.stream_id;
  q->anext = h->all;
  if (h->all) h->all->aprev = q;
  h->all = q;
  nghttp2_session_set_stream_user_data(s, q->id, q);
  return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                     size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *u) {
  hconn_t *h = u;
  req_t *q;
  (void)flags;
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  q = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
  if (!q || q->bad) return 0;
  q->hbytes += nlen + vlen + 4;
  if (q->hbytes > h->c->srv->opts.limits.max_header_bytes) {
    /* Too large a header block (or an HPACK bomb): this stream goes, the connection stays. */
    q->bad = 1;
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  if (nlen && name[0] == ':') {
    if (nlen == 7 && !memcmp(name, ":method", 7)) {
      if (vlen >= sizeof q->method) q->bad = 1;
      else {
        memcpy(q->method, value, vlen);
        q->method[vlen] = 0;
        q->is_head = vlen == 4 && !memcmp(value, "HEAD", 4);
      }
    } else if (nlen == 5 && !memcmp(name, ":path", 5)) {
      if (!(q->path = dup_n(value, vlen))) q->bad = 1;
    } else if (nlen == 10 && !memcmp(name, ":authority", 10)) {
      if (!(q->authority = dup_n(value, vlen))) q->bad = 1;
    }
    return 0;
  }
  if (nlen == 6 && !memcmp(name, "cookie", 6)) {
    if ((q->cookie.len && buf_add(&q->cookie, "; ", 2)) || buf_add(&q->cookie, value, vlen))
      q->bad = 1;
    return 0;
  }
  /* The core sets its own framing; Host comes from :authority when there is one. */
  if ((nlen == 14 && !memcmp(name, "content-length", 14)) ||
      (nlen == 4 && !memcmp(name, "host", 4) && q->authority))
    return 0;
  if (buf_add(&q->head, name, nlen) || buf_add(&q->head, ": ", 2) ||
      buf_add(&q->head, value, vlen) || buf_add(&q->head, "\r\n", 2))
    q->bad = 1;
  return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d,
                         size_t n, void *u) {
  hconn_t *h = u;
  req_t *q = nghttp2_session_get_stream_user_data(s, id);
  (void)flags;
  if (!q || q->delivered || q->bad) return 0;
  if (q->body.len + n > h->c->srv->opts.limits.max_body_bytes ||
      h->body_waiting + n > ZV_H2_BODY_CAP) {
    q->bad = 1;
    nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
    return 0;
  }
  if (buf_add(&q->body, d, n)) return NGHTTP2_ERR_CALLBACK_FAILURE;
  h->body_waiting += n;
  return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *u) {
  hconn_t *h = u;
  req_t *q;
  if (f->hd.type == NGHTTP2_RST_STREAM) {
    /* Rapid reset: resets far beyond the requests this client let finish. */
    if (++h->resets > ZV_H2_RESET_MAX && h->resets > h->answered) {
      nghttp2_submit_goaway(s, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(s),
                            NGHTTP2_ENHANCE_YOUR_CALM, NULL, 0);
      h->fatal = 1;
    }
    return 0;
  }
  if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
      !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
    return 0;
  q = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
  if (!q || q->complete || q->bad) return 0;
  if (!q->method[0] || !q->path) { /* CONNECT and friends: not served */
    nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, q->id, NGHTTP2_REFUSED_STREAM);
    q->bad = 1;
    return 0;
  }
  q->complete = 1;
  return deliver(h, q);
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *u) {
  hconn_t *h = u;
  req_t *q = nghttp2_session_get_stream_user_data(s, id);
  (void)code;
  if (!q) return 0;
  nghttp2_session_set_stream_user_data(s, id, NULL);
  q->closed = 1;
  if (q->st) {
    stream_t *st = q->st;
    st->q = NULL;
    q->st = NULL;
    /* Reset before its handler answered: the handler is cancelled (its connection closes). */
    if (!st->done) zv_http_abort(st->c);
  }
  if (q->delivered && --h->active == 0) zv__http_conn_busy(h->c, 0);
  req_free(h, q);
  return 0;
}

/* nghttp2's data source: the response body as it is parsed. */
static ssize_t body_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *u) {
  hconn_t *h = u;
  req_t *q = src->ptr;
  size_t left = q->out.len - q->out.off;
  (void)s;
  (void)id;
  if (left == 0 && !q->out_eof) {
    q->deferred = 1;
    return NGHTTP2_ERR_DEFERRED;
  }
  if (len > left) len = left;
  memcpy(buf, q->out.p + q->out.off, len);
  q->out.off += len;
  h->out_waiting -= len;
  h->c->srv->stream_pending -= len;
  if (q->st) {
    /* The window took bytes: a writer waiting for the stream's queue to shrink may go on. */
    q->st->c->pending -= len;
    zv__http_conn_progress(q->st->c);
    zv__http_conn_drained(q->st->c);
  }
  if (q->out.off == q->out.len) q->out.off = q->out.len = 0;
  if (q->out_eof && q->out.len == 0) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return (ssize_t)len;
}

/* --- requests to the core --------------------------------------------------------------------- */

/* The request q as HTTP/1.1 bytes in d; 0, or -1 (out of memory). */
static int synthesize(hconn_t *h, req_t *q, buf_t *d) {
  char cl[48];
  d->len = d->off = 0;
  if (buf_str(d, q->method) || buf_add(d, " ", 1) || buf_str(d, q->path) ||
      buf_str(d, " HTTP/1.1\r\n"))
    return -1;
  if (q->authority && (buf_str(d, "host: ") || buf_str(d, q->authority) || buf_add(d, "\r\n", 2)))
    return -1;
  if (q->head.len && buf_add(d, q->head.p, q->head.len)) return -1;
  if (q->cookie.len &&
      (buf_str(d, "cookie: ") || buf_add(d, q->cookie.p, q->cookie.len) || buf_add(d, "\r\n", 2)))
    return -1;
  if (q->body.len || (strcmp(q->method, "GET") && strcmp(q->method, "HEAD"))) {
    snprintf(cl, sizeof cl, "content-length: %zu\r\n", q->body.len);
    if (buf_str(d, cl)) return -1;
  }
  if (buf_add(d, "\r\n", 2) || (q->body.len && buf_add(d, q->body.p, q->body.len))) return -1;
  h->body_waiting -= q->body.len;
  buf_free(&q->body);
  return 0;
}

static void stream_free(stream_t *st) {
  buf_free(&st->deliver);
  buf_free(&st->rhead);
  zv_free(st);
}

/* q is complete: a virtual connection of its own runs it (from the idle callback). */
static int deliver(hconn_t *h, req_t *q) {
  stream_t *st;
  if (h->nrunning >= MAX_STREAMS) { /* the client ignored SETTINGS_MAX_CONCURRENT_STREAMS */
    nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, q->id, NGHTTP2_REFUSED_STREAM);
    q->bad = 1;
    return 0;
  }
  st = zv_alloc(sizeof *st);
  if (!st) return NGHTTP2_ERR_CALLBACK_FAILURE;
  memset(st, 0, sizeof *st);
  st->kind = K_STREAM;
  st->h = h;
  st->q = q;
  st->rstate = R_HEAD;
  if (synthesize(h, q, &st->deliver)) {
    stream_free(st);
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  q->delivered = 1;
  if (!(st->c = zv__http_conn_open_virtual(h->c, st))) {
    stream_free(st);
    nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, q->id, NGHTTP2_INTERNAL_ERROR);
    q->bad = 1;
    q->delivered = 0; /* its body (none now) is not counted again */
    return 0;
  }
  q->st = st;
  st->next = h->running;
  if (h->running) h->running->prev = st;
  h->running = st;
  h->nrunning++;
  if (h->active++ == 0) zv__http_conn_busy(h->c, 1);
  return 0;
}

/* --- responses from the core ------------------------------------------------------------------ */

static int hop_by_hop(const char *n, size_t len) {
  return (len == 10 && !strncasecmp(n, "connection", 10)) ||
         (len == 10 && !strncasecmp(n, "keep-alive", 10)) ||
         (len == 17 && !strncasecmp(n, "transfer-encoding", 17)) ||
         (len == 7 && !strncasecmp(n, "upgrade", 7)) ||
         (len == 16 && !strncasecmp(n, "proxy-connection", 16));
}

/* The head in st->rhead is complete: submit it. Returns 0, or -1 when it makes no sense. */
static int submit_head(hconn_t *h, stream_t *st, req_t *q) {
  char *p = st->rhead.p, *end = p + st->rhead.len, *line, status[4];
  nghttp2_nv nv[64];
  size_t n = 0;
  int chunked = 0, has_len = 0, code;
  nghttp2_data_provider prd;
  if (st->rhead.len < 12 || memcmp(p, "HTTP/1.1 ", 9)) return -1;
  memcpy(status, p + 9, 3);
  status[3] = 0;
  code = atoi(status);
  if (code < 100 || code > 999) return -1;
  if (code < 200) { /* an interim head (100 Continue): HTTP/2 clients need none */
    st->rhead.len = 0;
    return 0;
  }
  nv[n++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, 3, NGHTTP2_NV_FLAG_NONE};
  line = memchr(p, '\n', (size_t)(end - p));
  /* status is reused below as the value of :status: keep it alive (it is on this stack). */
  while (line && ++line < end) {
    char *e = memchr(line, '\n', (size_t)(end - line)), *colon, *v;
    size_t nl, vl;
    if (!e) break;
    if (e - line <= 1) break; /* the empty line */
    colon = memchr(line, ':', (size_t)(e - line));
    if (!colon) return -1;
    nl = (size_t)(colon - line);
    v = colon + 1;
    while (v < e && *v == ' ') v++;
    vl = (size_t)(e - v);
    if (vl && v[vl - 1] == '\r') vl--;
    for (size_t i = 0; i < nl; i++)
      if (line[i] >= 'A' && line[i] <= 'Z') line[i] = (char)(line[i] + 32);
    if (nl == 17 && !memcmp(line, "transfer-encoding", 17)) chunked = 1;
    if (nl == 14 && !memcmp(line, "content-length", 14)) {
      has_len = 1;
      st->rleft = strtoull(v, NULL, 10);
    }
    if (!hop_by_hop(line, nl) && n < sizeof nv / sizeof nv[0])
      nv[n++] = (nghttp2_nv){(uint8_t *)line, (uint8_t *)v, nl, vl, NGHTTP2_NV_FLAG_NONE};
    line = e;
  }
  if (q->is_head || code == 204 || code == 304) st->rstate = R_DONE;
  else if (chunked) st->rstate = R_CSIZE;
  else if (has_len) st->rstate = st->rleft ? R_BODY : R_DONE;
  else st->rstate = R_DONE;
  if (!q->closed) {
    prd.source.ptr = q;
    prd.read_callback = body_read;
    if (st->rstate == R_DONE) q->out_eof = 1;
    if (nghttp2_submit_response(h->s, q->id, nv, n, st->rstate == R_DONE ? NULL : &prd)) return -1;
  }
  st->rhead.len = 0;
  return 0;
}

/* Response bytes for q's DATA frames. The stream's virtual connection counts them as its
 * queued bytes (c->pending), so that a streamed response's writer waits while the client's
 * window holds them back (zever.stream's high mark), as it waits for a full socket. */
static void out_add(hconn_t *h, req_t *q, const char *p, size_t n) {
  if (q->closed || n == 0) return;
  if (q->out.off && q->out.off >= q->out.len - q->out.off) {
    /* What nghttp2 took is at least what is left: move the rest down, so that a long stream
     * read as it is written reuses its buffer instead of growing it. */
    memmove(q->out.p, q->out.p + q->out.off, q->out.len - q->out.off);
    q->out.len -= q->out.off;
    q->out.off = 0;
  }
  if (h->out_waiting + n > ZV_H2_OUT_CAP || buf_add(&q->out, p, n)) {
    h->fatal = 1;
    return;
  }
  h->out_waiting += n;
  h->c->srv->stream_pending += n;
  if (q->st && (q->st->c->pending += n) == n) zv__http_conn_progress(q->st->c);
}

/* Parses n bytes of st's response; returns the bytes taken, or -1 on nonsense. */
static ssize_t parse_response(hconn_t *h, stream_t *st, const char *p, size_t n) {
  req_t *q = st->q;
  size_t i = 0;
  while (i < n && st->rstate != R_DONE) {
    switch (st->rstate) {
    case R_HEAD: {
      /* Up to the empty line that ends the head, a line at a time (a line may be split
       * across writes: the end is looked for in what was gathered). */
      int end = 0;
      while (i < n && !end) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t k = nl ? (size_t)(nl - (p + i)) + 1 : n - i;
        if (buf_add(&st->rhead, p + i, k)) return -1;
        i += k;
        end = nl && st->rhead.len >= 4 &&
              !memcmp(st->rhead.p + st->rhead.len - 4, "\r\n\r\n", 4);
      }
      if (end && submit_head(h, st, q)) return -1;
      break;
    }
    case R_BODY: {
      size_t k = n - i < st->rleft ? n - i : (size_t)st->rleft;
      out_add(h, q, p + i, k);
      i += k;
      st->rleft -= k;
      if (!st->rleft) st->rstate = R_DONE;
      break;
    }
    case R_CSIZE: {
      char ch = p[i++];
      if (ch == '\n') {
        st->rstate = st->rleft ? R_CDATA : R_TRAILER;
      } else if (ch >= '0' && ch <= '9') {
        st->rleft = st->rleft * 16 + (uint64_t)(ch - '0');
      } else if ((ch | 32) >= 'a' && (ch | 32) <= 'f') {
        st->rleft = st->rleft * 16 + (uint64_t)((ch | 32) - 'a' + 10);
      } else if (ch != '\r') {
        return -1;
      }
      break;
    }
    case R_CDATA: {
      size_t k = n - i < st->rleft ? n - i : (size_t)st->rleft;
      out_add(h, q, p + i, k);
      i += k;
      st->rleft -= k;
      if (!st->rleft) {
        st->rstate = R_CCRLF;
        st->rleft = 2;
      }
      break;
    }
    case R_CCRLF:
      i++;
      if (--st->rleft == 0) st->rstate = R_CSIZE;
      break;
    case R_TRAILER:
      /* zever ends a chunked body with "0\r\n\r\n": the last CRLF. */
      if (p[i++] == '\n') st->rstate = R_DONE;
      break;
    }
  }
  return (ssize_t)i;
}

/* st's response is complete. */
static void response_end(hconn_t *h, stream_t *st) {
  req_t *q = st->q;
  st->done = 1;
  h->answered++;
  q->out_eof = 1;
  if (q->deferred) {
    q->deferred = 0;
    nghttp2_session_resume_data(h->s, q->id);
  }
}

/* --- the transport ---------------------------------------------------------------------------- */

static void x_retain(void *ctx) {
  zv_h2_ctx_retain(ctx);
}

static void x_release(void *ctx) {
  zv_h2_ctx_release(ctx);
}

static void *x_open(void *vctx, zv_http_sconn_t *c) {
  zv_h2_ctx_t *ctx = vctx;
  hconn_t *h = zv_alloc(sizeof *h);
  if (!h) return NULL;
  memset(h, 0, sizeof *h);
  h->kind = K_CONN;
  h->ctx = ctx;
  h->c = c;
  h->mode = M_SNIFF;
  if (ctx->lower && !(h->lower_xp = ctx->lower->open(ctx->lower_ctx, c))) {
    zv_free(h);
    return NULL;
  }
  return h;
}

/* A stream's virtual connection closes: after its response, or aborted (the client reset the
 * stream, the connection closed, its handler failed or timed out). */
static void stream_close(stream_t *st) {
  hconn_t *h = st->h;
  req_t *q = st->q;
  if (h) {
    if (st->prev) st->prev->next = st->next;
    else h->running = st->next;
    if (st->next) st->next->prev = st->prev;
    h->nrunning--;
    if (q) {
      q->st = NULL;
      if (!st->done && !q->closed) {
        /* No complete response: the client learns it from a reset. */
        nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, q->id, NGHTTP2_INTERNAL_ERROR);
        stream_free(st);
        pump(h->c, h); /* may close the connection: h is not touched after it */
        return;
      }
    }
  }
  stream_free(st);
}

static void x_close(zv_http_sconn_t *c, void *xp) {
  hconn_t *h = xp;
  stream_t *st;
  if (h->kind == K_STREAM) {
    stream_close(xp);
    return;
  }
  /* The streams' virtual connections close too; first they let go of h, so that none of
   * them (nor a handler that runs when one is cancelled) reaches it. */
  for (st = h->running; st; st = st->next) {
    st->h = NULL;
    if (st->q) st->q->st = NULL;
    st->q = NULL;
  }
  while ((st = h->running)) {
    h->running = st->next;
    zv_http_abort(st->c); /* x_close frees st */
  }
  if (h->s) nghttp2_session_del(h->s); /* it calls no stream close callback */
  while (h->all) req_free(h, h->all);
  if (h->ctx->lower) h->ctx->lower->close(c, h->lower_xp);
  zv_free(h);
}

static int start_session(zv_http_sconn_t *c, hconn_t *h) {
  nghttp2_session_callbacks *cb;
  nghttp2_option *opt;
  nghttp2_settings_entry iv[3] = {
    {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS},
    {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, c->srv->opts.limits.max_header_bytes},
    {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
  };
  int rc;
  if (nghttp2_session_callbacks_new(&cb)) return -1;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  if (nghttp2_option_new(&opt)) {
    nghttp2_session_callbacks_del(cb);
    return -1;
  }
  nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
  rc = nghttp2_session_server_new2(&h->s, cb, h, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (rc) return -1;
  return nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, iv, 3) ? -1 : 0;
}

/* Feeds n bytes of input to the session and sends what it answers. 0, or -1 (errno set; the
 * connection may be closed). */
static int feed(zv_http_sconn_t *c, hconn_t *h, const char *p, size_t n) {
  ssize_t r;
  h->in_recv = 1;
  r = nghttp2_session_mem_recv(h->s, (const uint8_t *)p, n);
  h->in_recv = 0;
  if (r < 0) {
    /* A protocol error: nghttp2 queued a GOAWAY; send it, then close. */
    h->fatal = 1;
  }
  if (pump(c, h)) {
    errno = ECONNRESET;
    return -1;
  }
  if (h->fatal) {
    errno = EPROTO;
    return -1;
  }
  return 0;
}

/* A stream's request, as HTTP/1.1 bytes, for the core. */
static ssize_t stream_read(zv_http_sconn_t *c, stream_t *st, char *p, size_t n) {
  size_t k = st->deliver.len - st->deliver.off;
  if (k == 0) {
    errno = EAGAIN;
    return -1;
  }
  if (k > n) k = n;
  memcpy(p, st->deliver.p + st->deliver.off, k);
  st->deliver.off += k;
  if (st->deliver.off == st->deliver.len) {
    buf_free(&st->deliver);
    c->rd_ready = 0;
  } else {
    c->rd_ready = 1;
  }
  return (ssize_t)k;
}

static ssize_t x_read(zv_http_sconn_t *c, void *xp, char *p, size_t n) {
  hconn_t *h = xp;
  char raw[RAW_READ];
  if (h->kind == K_STREAM) return stream_read(c, xp, p, n);
  if (h->mode == M_PASS) {
    if (h->sniff_off < h->nsniff) {
      size_t k = h->nsniff - h->sniff_off;
      if (k > n) k = n;
      memcpy(p, h->sniff + h->sniff_off, k);
      h->sniff_off += k;
      if (h->sniff_off < h->nsniff) c->rd_ready = 1;
      return (ssize_t)k;
    }
    return lower_read(c, h, p, n);
  }
  while (h->mode == M_SNIFF) {
    ssize_t r = lower_read(c, h, h->sniff + h->nsniff, PREFACE_LEN - h->nsniff);
    if (r <= 0) return r; /* EAGAIN: the preface so far waits in sniff */
    if (memcmp(h->sniff + h->nsniff, &PREFACE[h->nsniff], (size_t)r)) {
      h->nsniff += (size_t)r;
      h->mode = M_PASS;
      c->rd_ready = 1; /* what was read is given back first */
      return x_read(c, xp, p, n);
    }
    h->nsniff += (size_t)r;
    if (h->nsniff < PREFACE_LEN) continue;
    h->mode = M_H2;
    /* The connection's own core takes no request from now on: the streams run as virtual
     * connections, and the server keeps it while they do (keep-alive timeout otherwise). */
    c->xp_hold = 1;
    zv__http_conn_busy(c, 0);
    if (start_session(c, h) || feed(c, h, PREFACE, PREFACE_LEN)) {
      errno = EPROTO;
      return -1;
    }
    c->rd_ready = 1;
  }
  /* H2: frames in until the socket is empty; the core gets no bytes of this connection. */
  for (;;) {
    ssize_t r;
    if (!c->rd_ready) {
      errno = EAGAIN;
      return -1;
    }
    r = lower_read(c, h, raw, sizeof raw);
    if (r <= 0) return r;
    if (feed(c, h, raw, (size_t)r)) return -1;
  }
}

/* A stream's HTTP/1.1 response from the core, parsed onto the stream. */
static int stream_write(zv_http_sconn_t *c, stream_t *st, const uv_buf_t *bufs, unsigned n) {
  hconn_t *h = st->h;
  if (!h || !st->q) { /* the connection or the stream is gone */
    zv_http_abort(c);
    return ZV_EIO;
  }
  for (unsigned i = 0; i < n && !st->done; i++) {
    const char *p = bufs[i].base;
    size_t left = bufs[i].len;
    while (left && !st->done) {
      ssize_t k = parse_response(h, st, p, left);
      if (k < 0) {
        zv_http_abort(h->c); /* closes c too */
        return ZV_EIO;
      }
      p += k;
      left -= (size_t)k;
      if (st->rstate == R_DONE) response_end(h, st);
      else if (st->q->deferred && st->q->out.len) {
        st->q->deferred = 0;
        nghttp2_session_resume_data(h->s, st->q->id);
      }
    }
  }
  /* The frames go out at the end of the server's idle pass, with those of the connection's
   * other streams that answer in it (x_flush): one write through the lower transport for
   * all of them (over TLS one record and one send instead of one each). */
  if (!h->flush_wanted) {
    h->flush_wanted = 1;
    zv__http_conn_flush_later(h->c);
  }
  if (h->fatal) {
    zv_http_abort(h->c);
    return ZV_EIO;
  }
  return 0;
}

static int x_write(zv_http_sconn_t *c, void *xp, const uv_buf_t *bufs, unsigned n) {
  hconn_t *h = xp;
  if (h->kind == K_STREAM) return stream_write(c, xp, bufs, n);
  if (h->mode != M_H2) return lower_write(c, h, bufs, n);
  return 0; /* the connection's own core answers nothing in H2 (cannot happen): dropped */
}

static void x_shutdown(zv_http_sconn_t *c, void *xp) {
  hconn_t *h = xp;
  if (h->kind == K_STREAM) return; /* (not called: a virtual connection just closes) */
  if (h->mode == M_H2) {
    if (!h->goaway) {
      /* Goodbye: streams up to the last one processed still finish; no new ones. */
      h->goaway = 1;
      nghttp2_submit_goaway(h->s, NGHTTP2_FLAG_NONE,
                            nghttp2_session_get_last_proc_stream_id(h->s), NGHTTP2_NO_ERROR,
                            NULL, 0);
    }
    /* The GOAWAY, and the frames of streams that answered since the last flush (the server
     * may go on with this close before its flush list), leave before the FIN. */
    h->flush_wanted = 0;
    if (pump(c, h)) return;
    if (h->active) return; /* the server waits (busy); it calls again when they are done */
  }
  if (h->ctx->lower) h->ctx->lower->shutdown(c, h->lower_xp);
}
/* The end of the server's idle pass: the frames of the streams that answered in it, in one
 * write through the lower transport. */
static void x_flush(zv_http_sconn_t *c, void *xp) {
  hconn_t *h = xp;
  if (h->kind != K_CONN || !h->flush_wanted) return;
  h->flush_wanted = 0;
  if (pump(c, h)) return; /* closed: h is freed */
  if (h->fatal) zv_http_abort(c);
}

static const zv_http_xport_t XPORT = {x_retain, x_release,  x_open,  x_read,
                                      x_write,  x_shutdown, x_close, x_flush};

const zv_http_xport_t *zv_h2_xport(void) {
  return &XPORT;
}
