/*
 * h2_recv.c: the HTTP/2 layer's receive side, client -> core (see h2_int.h for the map):
 * nghttp2's callbacks gather each request stream (pseudo-headers, fields as HTTP/1.1 lines,
 * cookie crumbs, the body, within the server's limits), and a complete one (END_STREAM) is
 * handed to a virtual connection of its own, which the core reads as HTTP/1.1 bytes
 * (zv__h2_stream_read). It must not write frames itself (what a callback submits, a reset or a
 * GOAWAY, leaves with the outer call's pump) nor touch a response (h2_send.c).
 */
#include "h2_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

static int deliver(hconn_t *h, req_t *q);

void zv__h2_req_free(hconn_t *h, req_t *q) {
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
  zv__h2_req_free(h, q);
  return 0;
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

void zv__h2_stream_free(stream_t *st) {
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
    zv__h2_stream_free(st);
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  q->delivered = 1;
  if (!(st->c = zv__http_conn_open_virtual(h->c, st))) {
    zv__h2_stream_free(st);
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

int zv__h2_session_start(zv_http_sconn_t *c, hconn_t *h) {
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

/* A stream's request, as HTTP/1.1 bytes, for the core. */
ssize_t zv__h2_stream_read(zv_http_sconn_t *c, stream_t *st, char *p, size_t n) {
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
