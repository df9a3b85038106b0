/*
 * xport.h: the transport hook of the HTTP server: what a connection's bytes pass through between
 * the socket and the HTTP/1.1 core when the server has one (TLS: host/tls/, a lazy module that
 * fills this table). With none (opts.xport NULL, c->xp NULL) the server reads and writes the
 * socket itself, as before: the hook costs one pointer test at each of its points.
 *
 *   stream.c                         the transport (host/tls/tls.c, host/h2/h2.c)
 *   accept ------------------------> open(ctx, c)          its state: c->xp
 *   conn_readable: recv ----------->  read(c, xp, p, n)     plaintext, 0 at EOF, -1 + errno
 *   conn_write: send/uv_write ----->  write(c, xp, bufs, n) --> zv__http_conn_send (cipher)
 *   file_continue: sendfile ------->  (pread + write: no sendfile through a transport)
 *   conn_close_graceful: FIN ------>  shutdown(c, xp)       e.g. TLS close_notify
 *   conn_close_now ---------------->  close(c, xp)          frees xp
 *   idle pass, end ---------------->  flush(c, xp)          after zv__http_conn_flush_later
 *   server start / last handle ---->  retain(ctx) / release(ctx)
 *
 * read owns c->rd_ready while it runs: it sets it when bytes may remain (in the socket or
 * buffered in the transport), clears it when the socket said EAGAIN. Anything the transport
 * must send on its own (handshake records, alerts) goes out through zv__http_conn_send, which
 * may close the connection: after it, the transport checks c->closing before touching its
 * state again (close has run). The state is passed to every call rather than read from c->xp,
 * so that one transport can run over another (h2 over TLS) with states of their own.
 */
#ifndef ZV_HTTP_XPORT_H
#define ZV_HTTP_XPORT_H

#include <sys/types.h>

#include <uv.h>

struct zv_http_sconn_s;

typedef struct zv_http_xport_s {
  void (*retain)(void *ctx);
  void (*release)(void *ctx);
  /* A new connection: its state (the server keeps it in c->xp and passes it back as xp), or
   * NULL (the connection is closed). */
  void *(*open)(void *ctx, struct zv_http_sconn_s *c);
  /* Plaintext into p (at most n bytes): > 0 bytes, 0 at the end, -1 with errno (EAGAIN: wait
   * for the socket). */
  ssize_t (*read)(struct zv_http_sconn_s *c, void *xp, char *p, size_t n);
  /* Sends bufs through the transport: 0, or ZV_EIO (the connection is closed). */
  int (*write)(struct zv_http_sconn_s *c, void *xp, const uv_buf_t *bufs, unsigned n);
  /* Before the FIN of a graceful close. */
  void (*shutdown)(struct zv_http_sconn_s *c, void *xp);
  /* The connection closes: free xp. */
  void (*close)(struct zv_http_sconn_s *c, void *xp);
  /* Optional (NULL: never called): sends what the transport gathered for c; called once at
   * the end of the idle pass after zv__http_conn_flush_later(c). May close c. */
  void (*flush)(struct zv_http_sconn_s *c, void *xp);
} zv_http_xport_t;

/* The first fields of a transport's Lua userdata: http.listen{tls = ud} reads them. */
typedef struct {
  const zv_http_xport_t *xport;
  void *ctx;
} zv_http_xport_ud_t;

/* The metatable name of such userdata (the TLS context of zever.tls). */
#define ZV_HTTP_XPORT_MT "zever.tls.context"
/* ... or an HTTP/2 layer of zever.h2 (over a TLS context or the plain socket). */
#define ZV_HTTP_XPORT_MT_H2 "zever.h2.layer"

/* stream.c: sends raw bytes on c (what the kernel does not take now is queued, under the same
 * write deadline and MAX_PENDING as responses): 0, or ZV_EIO (the connection is closed). */
int zv__http_conn_send(struct zv_http_sconn_s *c, const uv_buf_t *bufs, unsigned n);

/*
 * Streams as connections of their own (HTTP/2): a transport that multiplexes requests on one
 * connection runs each as a virtual connection, so that the core (one request at a time per
 * connection) runs them side by side. A virtual connection has no socket: the core reads its
 * request through read(c, xp, ...) and writes its response through write(c, xp, ...) with the
 * xp given here, like any connection of the transport, and closes it after that one response
 * (close(c, xp) then; shutdown is not called). Its timeouts are the core's (handler, body).
 */

/* stream.c: a virtual connection run by the transport of parent, its state xp; NULL when out
 * of memory. Its request is read from the idle callback, never from inside this call. */
struct zv_http_sconn_s *zv__http_conn_open_virtual(struct zv_http_sconn_s *parent, void *xp);

/* stream_read.c: the transport holds parent's streams (c->xp_hold set by the transport):
 * busy 1 while some are in flight (no header/keep-alive timeout; a graceful close, after
 * the transport's shutdown, waits for them), 0 when none is (the keep-alive timeout runs; a
 * graceful close that waited goes on, from the idle callback). */
void zv__http_conn_busy(struct zv_http_sconn_s *c, int busy);

/* stream.c/stream_read.c: the transport keeps a virtual connection's c->pending (the response
 * bytes it holds for the stream; HTTP/2: until the client's flow-control window takes them), so
 * that a streamed response's writer waits while it is above the high mark (back-pressure, as
 * over a socket). When it shrinks the transport calls this: a writer waiting for c->pending to
 * fall to its low mark goes on, from the idle callback (never from the caller's stack). */
void zv__http_conn_drained(struct zv_http_sconn_s *c);

/* stream.c: the transport took bytes of a virtual connection's c->pending or added some to an
 * empty one: the write deadline starts again. A stream whose held bytes do not move for
 * write_timeout (a client that stops giving window) is closed and counted in write_timeouts,
 * as a connection whose socket does not drain. */
void zv__http_conn_progress(struct zv_http_sconn_s *c);

/* stream_read.c: the transport gathers output for c (HTTP/2: the frames of the streams that
 * answered) and wants flush(c, xp) called once, at the end of the server's idle pass, before
 * the loop waits for events again: so the responses of one pass leave in one write (one TLS
 * record, one send) instead of one each. Idempotent until the flush; nothing for a closing c. */
void zv__http_conn_flush_later(struct zv_http_sconn_s *c);

#endif
