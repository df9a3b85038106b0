/*
 * stream_write.c: writing to a connection and the responses built on it: a whole response
 * (zv_http_respond), a streamed one (head, chunks, end), a connection upgraded to another
 * protocol (WebSocket), and the write callback that starts the next request once a response is
 * out.
 *
 * It must not call into Lua, and must not allocate per request in steady state: a response goes
 * out with one send(2) of head + body (a small body is copied behind the head; a larger one goes
 * as a second iovec of sendmsg(2)), and only the part the kernel did not take is copied into a
 * uv_write request, under the write deadline that stream.c's timer checks.
 */
#include "stream_int.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../core/zv.h"

#define MAX_PENDING (64u << 20) /* unsent bytes per connection before it is dropped */
#define SMALL_BODY 1024          /* a body up to this size is copied behind the head: one send */
#define UNCORK_AT (16u << 10)    /* an upgraded connection's collected bytes go out at this */

typedef struct {
  uv_write_t req;
  size_t len;
  char data[];
} wreq_t;

/* Formats the Date header when the wall-clock second changed; checked against the loop's cached
 * time, so a response costs no clock read. */
static const char *server_date(zv_http_server_t *s) {
  uint64_t now = uv_now(s->loop);
  if (now >= s->date_next) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    zv_http_date(ts.tv_sec, s->date);
    s->date_next = now + 1000 - (uint64_t)(ts.tv_nsec / 1000000);
  }
  return s->date;
}

/* --- connections: writing ------------------------------------------------------------------ */

static void write_cb(uv_write_t *req, int status);

/* What uv_try_write does, without the VFS write path: send(2) for one buffer, sendmsg(2) for
 * more. Only while no uv_write is queued (the caller checks). Bytes sent, or a libuv error. */
static int try_send(zv_http_sconn_t *c, uv_buf_t *bufs, unsigned n) {
  ssize_t r;
  do {
    if (n == 1) {
      r = send(c->fd, bufs[0].base, bufs[0].len,
               MSG_NOSIGNAL | MSG_DONTWAIT | (c->file_fd >= 0 ? MSG_MORE : 0));
    } else {
      struct iovec iov[4];
      struct msghdr m;
      if (n > 4) return uv_try_write((uv_stream_t *)&c->tcp, bufs, n);
      for (unsigned i = 0; i < n; i++) {
        iov[i].iov_base = bufs[i].base;
        iov[i].iov_len = bufs[i].len;
      }
      memset(&m, 0, sizeof m);
      m.msg_iov = iov;
      m.msg_iovlen = n;
      r = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  } while (r < 0 && errno == EINTR);
  if (r >= 0) return (int)r;
  return errno == EWOULDBLOCK ? UV_EAGAIN : uv_translate_sys_error(errno);
}

/* Sends bufs as they are (raw: below the transport, if any). */
static int conn_send(zv_http_sconn_t *c, uv_buf_t *bufs, unsigned n) {
  size_t total = 0, skip, len;
  wreq_t *w;
  uv_buf_t b;
  int r;
  for (unsigned i = 0; i < n; i++) total += bufs[i].len;
  if (total == 0) return 0;
  if (c->writes == 0) {
    r = c->fd >= 0 ? try_send(c, bufs, n) : UV_EBADF;
    if (r >= 0 && (size_t)r == total) return 0;
    if (r < 0 && r != UV_EAGAIN) {
      zv__http_conn_close_now(c);
      return ZV_EIO;
    }
    skip = r < 0 ? 0 : (size_t)r;
  } else {
    skip = 0;
  }
  len = total - skip;
  if (c->writes == 0) {
    /* The write deadline starts with the first queued write (see the file comment). */
    uint64_t now = uv_now(c->srv->loop);
    c->wmark = c->queued;
    c->koutq = zv__http_kernel_outq(c);
    c->wdeadline = now + c->srv->opts.write_timeout_ms;
    if (!uv_is_active((uv_handle_t *)&c->timer) || c->timer_due > c->wdeadline)
      zv__http_timer_start(c, now, c->srv->opts.write_timeout_ms);
  }
  if (c->pending + len > MAX_PENDING) {
    zv__http_conn_close_now(c);
    return ZV_EIO;
  }
  w = zv_alloc(sizeof *w + len);
  if (!w) {
    zv__http_conn_close_now(c);
    return ZV_EIO;
  }
  w->len = len;
  len = 0;
  for (unsigned i = 0; i < n; i++) {
    size_t bl = bufs[i].len;
    if (skip >= bl) {
      skip -= bl;
      continue;
    }
    memcpy(w->data + len, bufs[i].base + skip, bl - skip);
    len += bl - skip;
    skip = 0;
  }
  b = uv_buf_init(w->data, (unsigned)w->len);
  if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, write_cb)) {
    zv_free(w);
    zv__http_conn_close_now(c);
    return ZV_EIO;
  }
  c->writes++;
  c->pending += w->len;
  c->queued += w->len;
  c->srv->pending += w->len;
  return 0;
}

int zv__http_conn_send(zv_http_sconn_t *c, const uv_buf_t *bufs, unsigned n) {
  return conn_send(c, (uv_buf_t *)bufs, n); /* try_send and uv_write only read the buffers */
}

/* Sends bufs through the transport when there is one (xport.h). */
int zv__http_conn_write(zv_http_sconn_t *c, uv_buf_t *bufs, unsigned n) {
  if (c->xp) return c->srv->opts.xport->write(c, c->xp, bufs, n);
  return conn_send(c, bufs, n);
}

static void write_cb(uv_write_t *req, int status) {
  wreq_t *w = ZV_CONTAINER_OF(req, wreq_t, req);
  zv_http_sconn_t *c = req->handle->data;
  c->writes--;
  c->pending -= w->len;
  c->srv->pending -= w->len;
  zv_free(w);
  if (c->closing) return;
  if (status < 0) {
    zv__http_conn_close_now(c);
    return;
  }
  /* Progress: the write deadline starts again. */
  c->wdeadline = uv_now(c->srv->loop) + c->srv->opts.write_timeout_ms;
  /* A streamed response waits for its queue to shrink (back-pressure): tell the owner. */
  if (c->want_writable && c->pending <= c->low_water && c->resp == ZV_HTTP_RESP_STREAM) {
    c->want_writable = 0;
    if (c->srv->cb.on_writable) c->srv->cb.on_writable(c->srv, c);
    return;
  }
  /* A static file's head is out: its body follows. */
  if (c->writes == 0 && c->file_fd >= 0 && !c->file_wait) {
    zv__http_file_continue(c);
    return;
  }
  if (c->writes == 0 && c->resp == ZV_HTTP_RESP_DONE && !c->must_close && !c->in_dispatch)
    zv__http_next_request(c);
}

/* --- responses ----------------------------------------------------------------------------- */

/* True when the status line and application headers of the last head built on c (still in
 * c->head, see hc_len in server.h) are the ones asked for now: the same status and, header by
 * header, the same name and value lengths and bytes. They were checked when that head was built,
 * so equal bytes need no second check. An upgraded connection uses c->head for its own bytes. */
static int head_reusable(const zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs,
                         size_t nhdrs) {
  const char *o;
  if (!c->hc_len || c->hc_status != status || c->hc_nhdrs != nhdrs || c->upgraded) return 0;
  o = c->head.p + c->hc_line;
  for (size_t i = 0; i < nhdrs; i++) {
    const zv_http_str_t *name = &hdrs[2 * i], *value = &hdrs[2 * i + 1];
    if (name->n != c->hc_nlen[i] || value->n != c->hc_vlen[i] || memcmp(o, name->p, name->n) ||
        memcmp(o + name->n + 2, value->p, value->n))
      return 0;
    o += name->n + value->n + 4;
  }
  return 1;
}

/*
 * Builds the head into c->head; returns 0 or ZV_EINVAL (a malformed header). A response like
 * the connection's previous one (the usual case on keep-alive: the same status and content
 * type) keeps that head's status line and headers and rewrites only the tail (framing, Date,
 * Server), which zv_http_head_end writes anew each time. Heads with headers the server computes
 * itself (skipped here), or more than ZV_HTTP_HC_MAX headers, are not kept for reuse.
 */
int zv__http_build_head(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs, size_t nhdrs,
                      int64_t content_length, int chunked) {
  zv_http_server_t *s = c->srv;
  zv_http_head_t h;
  int has_date = 0, has_server = 0, keep = nhdrs <= ZV_HTTP_HC_MAX && status >= 0 &&
                                            status <= UINT16_MAX;
  if (head_reusable(c, status, hdrs, nhdrs)) {
    c->head.len = c->hc_len;
    c->head.err = 0;
    has_date = c->hc_date;
    has_server = c->hc_server;
    goto tail;
  }
  c->hc_len = 0;
  zv_http_head_begin(&c->head, status);
  c->hc_line = (uint32_t)c->head.len;
  for (size_t i = 0; i < nhdrs; i++) {
    const zv_http_str_t *name = &hdrs[2 * i], *value = &hdrs[2 * i + 1];
    zv_http_hdrinfo_t info;
    if (zv_http_check_header(name->p, name->n, value->p, value->n, &info)) return ZV_EINVAL;
    if (info.is_close) c->must_close = 1;
    has_date |= info.is_date;
    has_server |= info.is_server;
    if (info.skip) {
      keep = 0;
      continue;
    }
    zv_http_head_add(&c->head, name->p, name->n, value->p, value->n);
    if (keep) {
      c->hc_nlen[i] = (uint32_t)name->n;
      c->hc_vlen[i] = (uint32_t)value->n;
    }
  }
  if (keep && !c->head.err && !c->upgraded && c->head.len <= UINT32_MAX) {
    c->hc_len = (uint32_t)c->head.len;
    c->hc_status = (uint16_t)status;
    c->hc_nhdrs = (uint8_t)nhdrs;
    c->hc_date = (uint8_t)has_date;
    c->hc_server = (uint8_t)has_server;
  }
tail:
  if (s->stopping) c->must_close = 1; /* close, drain or teardown: this is the last */
  /* The rest of a streamed body was not read: the connection cannot carry another request. */
  if (c->body_streaming) c->must_close = 1;
  h.status = status;
  h.content_length = content_length;
  h.chunked = chunked;
  h.close = c->must_close;
  h.date = has_date ? NULL : server_date(s);
  zv_http_head_end(&c->head, &h, !has_server);
  return c->head.err ? ZV_ENOMEM : 0;
}

/* After the last byte of a response was handed to libuv. */
void zv__http_response_done(zv_http_sconn_t *c) {
  c->resp = ZV_HTTP_RESP_DONE;
  if (c->closing) return;
  if (c->must_close || c->parent) { /* a virtual connection (a stream) answers once */
    zv__http_conn_close_graceful(c);
    return;
  }
  if (c->in_dispatch || c->writes) return;
  zv__http_next_request(c);
}

int zv_http_respond(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs, size_t nhdrs,
                    const char *body, size_t len) {
  uv_buf_t bufs[2];
  unsigned n = 1;
  int no_body = status < 200 || status == 204 || status == 304;
  int rc;
  if (c->closing || c->shutting) return ZV_EIO;
  rc = zv__http_build_head(c, status, hdrs, nhdrs, no_body ? -1 : (int64_t)len, 0);
  if (rc == ZV_EINVAL) return rc;
  if (rc) {
    zv__http_conn_close_now(c);
    return ZV_EIO;
  }
  if (!no_body && !c->is_head && len) {
    /* The head buffer grows once to hold a small body too; if it cannot, two iovecs. */
    if (len <= SMALL_BODY) zv_http_buf_add(&c->head, body, len);
    if (len > SMALL_BODY || c->head.err) {
      c->head.err = 0;
      bufs[n++] = uv_buf_init((char *)body, (unsigned)len);
    }
  }
  bufs[0] = uv_buf_init(c->head.p, (unsigned)c->head.len);
  if (zv__http_conn_write(c, bufs, n)) return ZV_EIO;
  zv__http_response_done(c);
  return 0;
}

/* The head of a streamed response: chunked (length < 0, HTTP/1.1), close-delimited (length < 0,
 * HTTP/1.0) or with a Content-Length the caller promises to write exactly (raw bytes follow). */
static int write_head(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs, size_t nhdrs,
                      int64_t length) {
  uv_buf_t b;
  int rc, raw, nb = status < 200 || status == 204 || status == 304;
  if (c->closing || c->shutting) return ZV_EIO;
  c->no_body = (uint8_t)(nb || c->is_head);
  /* HTTP/1.0 has no chunked coding: the body ends when the connection does. */
  raw = length >= 0 || c->core.parser.http_minor == 0;
  if (raw && length < 0) c->must_close = 1;
  rc = zv__http_build_head(c, status, hdrs, nhdrs, nb ? -1 : length, !raw && !nb);
  if (rc == ZV_EINVAL) return rc;
  if (rc) {
    zv__http_conn_close_now(c);
    return ZV_EIO;
  }
  c->stream_raw = (uint8_t)raw;
  b = uv_buf_init(c->head.p, (unsigned)c->head.len);
  if (zv__http_conn_write(c, &b, 1)) return ZV_EIO;
  c->resp = ZV_HTTP_RESP_STREAM;
  return 0;
}

int zv_http_write_head(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs,
                       size_t nhdrs) {
  return write_head(c, status, hdrs, nhdrs, -1);
}

int zv_http_write_head_len(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs,
                           size_t nhdrs, uint64_t length) {
  return write_head(c, status, hdrs, nhdrs, (int64_t)length);
}

int zv_http_upgrade(zv_http_sconn_t *c, const char *head, size_t len, size_t max_buffer) {
  size_t rest;
  uv_buf_t b = uv_buf_init((char *)head, (unsigned)len);
  if (c->closing || c->shutting || c->resp != ZV_HTTP_RESP_NONE) return ZV_EIO;
  if (zv__http_conn_write(c, &b, 1)) return ZV_EIO;
  /* What the client sent after the request is already the new protocol's. */
  rest = c->core.len - c->core.pos;
  if (rest && c->core.pos) memmove(c->core.buf, c->core.buf + c->core.pos, rest);
  c->core.len = rest;
  c->core.pos = 0;
  c->up_cap = max_buffer > c->core.cap ? max_buffer : c->core.cap;
  c->upgraded = 1;
  c->head.len = 0;
  c->resp = ZV_HTTP_RESP_STREAM;
  c->stream_raw = 1;
  c->no_body = 0;
  c->must_close = 1;
  zv__http_arm(c, T_NONE);
  c->reading = 0;
  c->rd_ready = 1; /* bytes may wait in the socket: look once */
  zv__http_start_reading(c);
  return 0;
}

void zv_http_upgraded_consume(zv_http_sconn_t *c, size_t n) {
  if (n > c->core.len) n = c->core.len;
  if (n < c->core.len) memmove(c->core.buf, c->core.buf + n, c->core.len - n);
  c->core.len -= n;
  if (!c->closing && !c->shutting && !c->reading) zv__http_start_reading(c);
}

void zv_http_want_writable(zv_http_sconn_t *c, size_t low) {
  c->low_water = low;
  c->want_writable = 1;
}

int zv__http_conn_uncork(zv_http_sconn_t *c) {
  uv_buf_t b;
  if (!c->head.len) return 0;
  b = uv_buf_init(c->head.p, (unsigned)c->head.len);
  c->head.len = 0;
  return zv__http_conn_write(c, &b, 1) ? ZV_EIO : 0;
}

int zv_http_write(zv_http_sconn_t *c, const char *chunk, size_t len) {
  char hex[24];
  uv_buf_t bufs[3];
  int n = 0;
  if (c->closing || c->shutting) return ZV_EIO;
  if (len == 0 || c->no_body) return 0;
  if (c->upgraded) {
    /* Collected in head: inside on_upgraded_data sent when it returns (conn_readable, an echo
     * per message), otherwise at the end of the idle pass (zv__http_conn_flush_later): so
     * what one pass writes to a connection (the messages of several broadcasts) goes out in
     * one send. From UNCORK_AT bytes on, what was collected and this chunk go at once (the
     * chunk not copied: head stays small). */
    if (!c->corked && c->head.len + len >= UNCORK_AT) {
      bufs[0] = uv_buf_init(c->head.p, (unsigned)c->head.len);
      bufs[1] = uv_buf_init((char *)chunk, (unsigned)len);
      n = c->head.len ? 0 : 1;
      c->head.len = 0;
      return zv__http_conn_write(c, bufs + n, 2 - (unsigned)n) ? ZV_EIO : 0;
    }
    zv_http_buf_add(&c->head, chunk, len);
    if (c->head.err) {
      c->head.err = 0;
      zv__http_conn_close_now(c);
      return ZV_EIO;
    }
    if (!c->corked) zv__http_conn_flush_later(c);
    return 0;
  }
  if (c->stream_raw) {
    bufs[0] = uv_buf_init((char *)chunk, (unsigned)len);
    return zv__http_conn_write(c, bufs, 1) ? ZV_EIO : 0;
  }
  {
    size_t v = len;
    char *e = hex + sizeof hex - 2, *p = e;
    do {
      *--p = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v);
    e[0] = '\r';
    e[1] = '\n';
    n = (int)(e + 2 - p);
    bufs[0] = uv_buf_init(p, (unsigned)n);
  }
  bufs[1] = uv_buf_init((char *)chunk, (unsigned)len);
  bufs[2] = uv_buf_init((char *)"\r\n", 2);
  return zv__http_conn_write(c, bufs, 3) ? ZV_EIO : 0;
}

int zv_http_finish(zv_http_sconn_t *c) {
  uv_buf_t b = uv_buf_init((char *)"0\r\n\r\n", 5);
  if (c->closing || c->shutting) return ZV_EIO;
  /* What an upgraded connection collected goes before the end. */
  if (c->upgraded && zv__http_conn_uncork(c)) return ZV_EIO;
  if (!c->no_body && !c->stream_raw && zv__http_conn_write(c, &b, 1)) return ZV_EIO;
  zv__http_response_done(c);
  return 0;
}

int zv_http_peer(zv_http_sconn_t *c, char *buf, size_t cap, int *port) {
  struct sockaddr_storage ss;
  int len = sizeof ss;
  zv_http_sconn_t *sock = c->parent ? c->parent : c; /* a stream: its connection's peer */
  if (c->closing) return ZV_EIO;
  if (uv_tcp_getpeername(&sock->tcp, (struct sockaddr *)&ss, &len)) return ZV_EIO;
  if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    if (uv_ip6_name(a, buf, cap)) return ZV_EIO;
    *port = ntohs(a->sin6_port);
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    if (uv_ip4_name(a, buf, cap)) return ZV_EIO;
    *port = ntohs(a->sin_port);
  }
  return 0;
}

