/*
 * h2_send.c: the HTTP/2 layer's send side, core -> client (see h2_int.h for the map): a
 * stream's HTTP/1.1 response, as the core writes it, is parsed back (the head into an HTTP/2
 * response; the body by Content-Length or chunked coding into the stream's output buffer),
 * which nghttp2's data source (body_read) takes as the flow-control windows allow. It must not
 * write to the lower transport: the frames leave at the end of the server's idle pass (x_flush
 * in h2.c), one write for every stream that answered in it.
 */
#include "h2_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <strings.h>

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

int zv__h2_stream_write(zv_http_sconn_t *c, stream_t *st, const uv_buf_t *bufs, unsigned n) {
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
