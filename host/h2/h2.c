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
 * The files (h2_int.h draws them): this one is the transport and the context; h2_recv.c the
 * receive side (client -> core), h2_send.c the send side (core -> client), h2_io.c the frames
 * in and out through the lower transport.
 *
 * The lower transport is called with its own state (lower_xp). Any call into it, and any pump,
 * may close the connection (the server then calls x_close, which frees this state and closes
 * the virtual connections of its streams): after one, c->closing is checked before the state
 * is touched again.
 */
#include "h2_int.h"

#include <errno.h>
#include <stdint.h>

#define RAW_READ (16u << 10)
#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

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
        zv__h2_stream_free(st);
        zv__h2_pump(h->c, h); /* may close the connection: h is not touched after it */
        return;
      }
    }
  }
  zv__h2_stream_free(st);
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
  while (h->all) zv__h2_req_free(h, h->all);
  if (h->ctx->lower) h->ctx->lower->close(c, h->lower_xp);
  zv_free(h);
}

static ssize_t x_read(zv_http_sconn_t *c, void *xp, char *p, size_t n) {
  hconn_t *h = xp;
  char raw[RAW_READ];
  if (h->kind == K_STREAM) return zv__h2_stream_read(c, xp, p, n);
  if (h->mode == M_PASS) {
    if (h->sniff_off < h->nsniff) {
      size_t k = h->nsniff - h->sniff_off;
      if (k > n) k = n;
      memcpy(p, h->sniff + h->sniff_off, k);
      h->sniff_off += k;
      if (h->sniff_off < h->nsniff) c->rd_ready = 1;
      return (ssize_t)k;
    }
    return zv__h2_lower_read(c, h, p, n);
  }
  while (h->mode == M_SNIFF) {
    ssize_t r = zv__h2_lower_read(c, h, h->sniff + h->nsniff, PREFACE_LEN - h->nsniff);
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
    if (zv__h2_session_start(c, h) || zv__h2_feed(c, h, PREFACE, PREFACE_LEN)) {
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
    r = zv__h2_lower_read(c, h, raw, sizeof raw);
    if (r <= 0) return r;
    if (zv__h2_feed(c, h, raw, (size_t)r)) return -1;
  }
}

static int x_write(zv_http_sconn_t *c, void *xp, const uv_buf_t *bufs, unsigned n) {
  hconn_t *h = xp;
  if (h->kind == K_STREAM) return zv__h2_stream_write(c, xp, bufs, n);
  if (h->mode != M_H2) return zv__h2_lower_write(c, h, bufs, n);
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
    if (zv__h2_pump(c, h)) return;
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
  if (zv__h2_pump(c, h)) return; /* closed: h is freed */
  if (h->fatal) zv_http_abort(c);
}

static const zv_http_xport_t XPORT = {x_retain, x_release,  x_open,  x_read,
                                      x_write,  x_shutdown, x_close, x_flush};

const zv_http_xport_t *zv_h2_xport(void) {
  return &XPORT;
}
