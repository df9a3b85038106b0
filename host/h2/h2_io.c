/*
 * h2_io.c: the HTTP/2 layer's frames in and out (see h2_int.h for the map): reads and writes
 * through the lower transport (TLS, or the socket), input fed to the nghttp2 session, and the
 * pump that gathers the session's frames into one write. It must not call the receive or the
 * send side (h2_recv.c, h2_send.c): they run as nghttp2's callbacks from inside the session.
 *
 * Any write may close the connection (the server then calls x_close, which frees h): after a
 * pump that returned -1, h is not touched.
 */
#include "h2_int.h"

#include <errno.h>
#include <sys/socket.h>

ssize_t zv__h2_lower_read(zv_http_sconn_t *c, hconn_t *h, char *p, size_t n) {
  ssize_t r;
  if (h->ctx->lower) return h->ctx->lower->read(c, h->lower_xp, p, n);
  do {
    r = recv(c->fd, p, n, 0);
  } while (r < 0 && errno == EINTR);
  if (r > 0 && (size_t)r < n && !c->rd_eof) c->rd_ready = 0;
  return r;
}

int zv__h2_lower_write(zv_http_sconn_t *c, hconn_t *h, const uv_buf_t *bufs, unsigned n) {
  if (h->ctx->lower) return h->ctx->lower->write(c, h->lower_xp, bufs, n);
  return zv__http_conn_send(c, bufs, n);
}

int zv__h2_pump(zv_http_sconn_t *c, hconn_t *h) {
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
    rc = zv__h2_lower_write(c, h, &b, 1) || c->closing ? -1 : 0;
  }
  buf_free(&out);
  return rc;
}

/* Feeds n bytes of input to the session and sends what it answers. 0, or -1 (errno set; the
 * connection may be closed). */
int zv__h2_feed(zv_http_sconn_t *c, hconn_t *h, const char *p, size_t n) {
  ssize_t r;
  h->in_recv = 1;
  r = nghttp2_session_mem_recv(h->s, (const uint8_t *)p, n);
  h->in_recv = 0;
  if (r < 0) {
    /* A protocol error: nghttp2 queued a GOAWAY; send it, then close. */
    h->fatal = 1;
  }
  if (zv__h2_pump(c, h)) {
    errno = ECONNRESET;
    return -1;
  }
  if (h->fatal) {
    errno = EPROTO;
    return -1;
  }
  return 0;
}
