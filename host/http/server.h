/*
 * server.h: the HTTP/1.1 server on a libuv loop: listening, connections, timeouts, keep-alive,
 * pipelining, responses and drain. The protocol itself is conn.c's; this file moves bytes.
 *
 * It must not include lua.h: the binding (l_http.c) hands requests to Lua through the callbacks
 * and answers them through zv_http_respond and friends.
 *
 *   zv_http_server_t --conns--> [sconn] <-> [sconn] <-> ...    each: uv_tcp_t + uv_timer_t
 *        |  listener (uv_tcp_t)                                       + zv_http_conn_t core
 *        |  events (uv_poll_t on epfd): the connections' sockets, edge-triggered, read here
 *        |  idle (uv_idle_t): runs connections whose next pipelined request is buffered,
 *        |                    or whose socket still holds bytes to read
 *        |  timer (uv_timer_t): the drain deadline (idle until a drain: the refusal log's)
 *        +--idle_head..idle_tail--> idle keep-alive sconns, oldest first (max_connections
 *        |                          closes the oldest to admit a new connection)
 *        +--free--> closed sconns kept for reuse (with their buffers)
 *
 * server.c (this API, listening, accepting, draining) calls stream.c (the connections) through
 * stream.h; stream.c calls back only through s->on_conn_change, never server.c by name.
 *
 * Reading does not go through libuv's stream reads: those watch each socket level-triggered
 * (the kernel polls every socket twice per event) and read with read(2) (the VFS path on top of
 * the socket's). The sockets sit in a private epoll set (epfd), edge-triggered, and are read
 * with recv(2) once per event unless the read filled the buffer; the loop watches epfd itself.
 * Responses go out with send(2) (sendmsg(2) for several buffers) while nothing is queued; what
 * the kernel did not take goes to uv_write. Accept, shutdown and close stay libuv's.
 *
 * A connection hands one request at a time to on_request and parses the next one only after
 * the response is complete, so responses go out in order. on_request is never called from
 * inside zv_http_respond (the next pipelined request waits for the idle callback).
 */
#ifndef ZV_HTTP_SERVER_H
#define ZV_HTTP_SERVER_H

#include <stdint.h>

#include <uv.h>

#include "conn.h"
#include "http_ffi.h"
#include "xport.h"

typedef struct zv_http_server_s zv_http_server_t;
typedef struct zv_http_sconn_s zv_http_sconn_t;

typedef struct {
  /* A complete request is in c->core (state DONE); answer it now or later. */
  void (*on_request)(zv_http_server_t *s, zv_http_sconn_t *c);
  /* The connection closes: forget c (c->data); it must not be used after this returns. */
  void (*on_conn_close)(zv_http_server_t *s, zv_http_sconn_t *c);
  /* A drain finished: every connection is closed. */
  void (*on_drained)(zv_http_server_t *s);
  /* Every handle of the server is closed; the owner may free the server's memory now. */
  void (*on_closed)(zv_http_server_t *s);
  /* The request of c went unanswered for its handler timeout (opts.handler_timeout_ms, or
   * c->handler_ms) after on_request returned: answer it (503) or abort it now. May be NULL. */
  void (*on_handler_timeout)(zv_http_server_t *s, zv_http_sconn_t *c);
  /* A streamed response's queued bytes fell to the low mark asked by zv_http_want_writable.
   * May be NULL. */
  void (*on_writable)(zv_http_server_t *s, zv_http_sconn_t *c);
  /* An upgraded connection (zv_http_upgrade) read more bytes: they follow in c->core.buf
   * [0..c->core.len). May be NULL. */
  void (*on_upgraded_data)(zv_http_server_t *s, zv_http_sconn_t *c);
  /* A streamed request body's reader waited (zv_http_body_want) and bytes came, the body
   * ended (c->core.state DONE) or failed (ERROR: 413, 400, 408). May be NULL. */
  void (*on_body)(zv_http_server_t *s, zv_http_sconn_t *c);
} zv_http_server_cb_t;

typedef struct {
  const char *host;        /* numeric IPv4 or IPv6 address, or "localhost" */
  int port;                /* 0: the kernel picks one */
  int reuseport;           /* SO_REUSEPORT, so that several loops can bind the same port */
  int fd;                  /* >= 0: accept on this listening TCP socket (systemd's LISTEN_FDS),
                            * a duplicate of it, instead of binding host:port; -1 by default */
  int backlog;
  zv_http_limits_t limits;
  uint64_t header_timeout_ms;
  uint64_t body_timeout_ms;
  uint64_t keepalive_timeout_ms;
  uint64_t write_timeout_ms;   /* no write progress for this long closes the connection */
  uint64_t handler_timeout_ms; /* a request unanswered this long after its handler yielded:
                                * on_handler_timeout; 0: none */
  uint32_t max_connections;
  /* Static mounts (app:static), served by stream.c before on_request, or NULL. The caller
   * owns them and keeps them until on_closed. */
  const struct zv_static_s *statics;
  /* A transport (TLS) every connection's bytes pass through, or NULL (xport.h); the server
   * retains xport_ctx while it runs. */
  const zv_http_xport_t *xport;
  void *xport_ctx;
} zv_http_server_opts_t;

/* Sets the defaults: 127.0.0.1:0, reuseport, backlog 511, 8 KiB head, 1 MiB body, header 10 s,
 * body 30 s, keep-alive 75 s, write 60 s, no handler timeout, 10000 connections. */
void zv_http_server_defaults(zv_http_server_opts_t *o);

enum { ZV_HTTP_RESP_NONE, ZV_HTTP_RESP_STREAM, ZV_HTTP_RESP_DONE };

#define ZV_HTTP_HC_MAX 4 /* application headers of a head that the next response may reuse */

struct zv_http_sconn_s {
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_shutdown_t shutdown;
  zv_http_server_t *srv;
  zv_http_sconn_t *prev, *next; /* the server's list of open connections */
  zv_http_sconn_t *ready_next;  /* the server's list of connections with a buffered request */
  zv_http_sconn_t *idle_prev, *idle_next; /* the server's idle keep-alive list, oldest first */
  zv_http_conn_t core;
  zv_http_buf_t head;           /* response heads, reused */
  void *data;                   /* the binding's object for the current request */
  uint64_t deadline;            /* loop time (ms) when what timer_mode waits for times out */
  uint64_t timer_due;           /* loop time (ms) when the uv timer fires, if active */
  uint64_t wdeadline;           /* loop time (ms) when queued writes time out without progress */
  uint64_t queued;              /* bytes ever handed to uv_write on this connection */
  uint64_t wmark;               /* bytes written (queued - still queued) at the last check */
  uint64_t koutq;               /* the kernel's send queue (SIOCOUTQ) at the last check */
  uint64_t handler_ms;          /* this request's handler timeout; 0: the server's */
  size_t pending;               /* bytes queued in uv_write requests */
  unsigned writes;              /* uv_write requests in flight */
  int nclose;                   /* handles whose close callback is still due */
  int fd;                       /* the socket, in the server's epfd */
  uint8_t timer_mode, resp, fresh, reading, closing, lingering, shutting, in_dispatch, ready;
  uint8_t must_close, is_head, stream_raw, no_body;
  uint8_t rd_ready;             /* the socket may hold unread bytes (or EOF, or an error) */
  uint8_t rd_eof;               /* the peer shut down or the socket failed: read to the end */
  uint8_t in_read;              /* inside conn_readable */
  uint8_t in_idle;              /* on the server's idle keep-alive list */
  uint8_t want_process, want_read; /* what the idle callback does for a ready connection */
  uint8_t file_wait;            /* a static file's body waits for the socket to drain (EPOLLOUT) */
  int file_fd;                  /* the static file being sent, or -1 */
  uint64_t file_off, file_end;  /* what of it is left to send */
  size_t low_water;             /* on_writable when pending falls to this (want_writable) */
  uint8_t want_writable;        /* a streamed response waits for its queue to shrink */
  uint8_t upgraded;             /* another protocol (zv_http_upgrade) owns the connection */
  uint8_t corked;               /* inside on_upgraded_data: writes collect in head */
  uint8_t body_streaming;       /* the request was dispatched at its head; its body still comes */
  uint8_t body_wait;            /* the body's reader waits for on_body */
  size_t up_cap;                /* the most an upgraded connection's buffer may grow to */
  void *xp;                     /* the transport's state of this connection, or NULL */
  /* A virtual connection (an HTTP/2 stream, zv__http_conn_open_virtual): the connection whose
   * transport runs it; it has no socket of its own and closes after one response. */
  zv_http_sconn_t *parent;
  uint8_t xp_hold;              /* the transport runs streams on it: a drain closes it gracefully */
  uint8_t xp_busy;              /* ... and some are in flight: no timeout, the FIN waits */
  uint8_t want_shutdown;        /* the idle callback goes on with a graceful close that waited */
  uint8_t want_notify;          /* the idle callback tells a waiting writer its queue shrank
                                 * (a virtual connection: zv__http_conn_drained) */
  uint8_t want_flush;           /* on the server's flush list (zv__http_conn_flush_later) */
  zv_http_sconn_t *flush_next;
  /* The last head built (stream_write.c, zv__http_build_head): head.p[0, hc_len) still holds
   * its status line (hc_line bytes) and its application headers, checked and laid out; a
   * response with the same status and byte-equal headers reuses them and appends only the
   * framing, Date and Server. hc_len 0: nothing to reuse. */
  uint32_t hc_len, hc_line;
  uint16_t hc_status;
  uint8_t hc_nhdrs, hc_date, hc_server;
  uint32_t hc_nlen[ZV_HTTP_HC_MAX], hc_vlen[ZV_HTTP_HC_MAX];
};

struct zv_http_server_s {
  uv_tcp_t listener;
  uv_poll_t events;             /* watches epfd */
  uv_idle_t idle;
  uv_timer_t timer;
  uv_loop_t *loop;
  zv_http_server_cb_t cb;
  void *data;                   /* the owner's */
  zv_http_server_opts_t opts;
  zv_http_sconn_t *conns, *ready, *free;
  zv_http_sconn_t *flushq;      /* connections whose transport sends at the end of the idle pass */
  zv_http_sconn_t *idle_head, *idle_tail; /* idle keep-alive connections, oldest first */
  uint32_t nconns, nfree;
  uint32_t nlive;               /* connections open and not closing (what max_connections caps) */
  uint32_t nstreams;            /* of nconns, virtual connections (HTTP/2 streams running) */
  uint64_t requests;
  /* Counters (stats): connections closed for no write progress, idle keep-alive connections
   * closed to admit new ones, accepts deferred at max_connections, handler timeouts. */
  uint64_t write_timeouts, evicted, refused, handler_timeouts;
  uint64_t refused_logged;      /* refused at the last log line */
  uint64_t refused_log_at;      /* loop time (ms) of the last log line */
  size_t pending;               /* bytes queued in uv_write requests, all connections */
  size_t stream_pending;        /* response bytes a transport holds for its streams (HTTP/2:
                                 * waiting for the client's flow-control window), all streams */
  /* Set by server.c: stream.c calls it when a connection closed or went idle, so that a paused
   * accept can go on and a finished drain be reported. stream.c never calls server.c by name. */
  void (*on_conn_change)(zv_http_server_t *s);
  int port;
  int uverr;                    /* the libuv error of a failed start */
  int nhandles;                 /* of listener, events, idle, timer: not closed yet */
  int epfd;                     /* the connections' sockets, edge-triggered; -1 when closed */
  uint8_t listening, draining, drained, finishing, torn_down;
  uint8_t stopping;             /* close, drain or teardown ran: every response says
                                 * Connection: close and its connection closes after it */
  uint8_t paused;               /* a connection waits in the listener at max_connections */
  uint64_t date_next;           /* loop time (ms) of the next wall-clock second */
  char date[32];
};

/*
 * Binds, listens and starts accepting on loop. Returns 0, ZV_EINVAL (bad host) or ZV_EIO with
 * s->uverr set. After a failure past the address check, on_closed still comes (the handles
 * close asynchronously); after ZV_EINVAL nothing was started and nothing comes.
 */
int zv_http_server_start(zv_http_server_t *s, uv_loop_t *loop, const zv_http_server_opts_t *o,
                         const zv_http_server_cb_t *cb, void *data);

/*
 * Stops accepting and lets the open connections wind down without a race (nginx's graceful
 * shutdown): a request being read or answered is answered with Connection: close, then its
 * connection closes; an idle one (keep-alive, or fresh with nothing received) closes once it
 * stayed idle for grace_ms, or after answering its next request (Connection: close) if one
 * comes first. grace_ms 0 closes the idle ones at once, which races a client that is sending
 * its next request. HTTP/2 connections get a GOAWAY. on_closed comes once every connection
 * closed. A second call changes nothing but the idle connections' grace, which only shortens.
 */
void zv_http_server_close(zv_http_server_t *s, uint64_t grace_ms);

/* Stops accepting, closes idle connections, closes the others after their current response,
 * force-closes what remains after deadline_ms, then calls on_drained. Once only. */
void zv_http_server_drain(zv_http_server_t *s, uint64_t deadline_ms);

/* Closes everything now (the loop is going away); on_closed comes from the close callbacks. */
void zv_http_server_teardown(zv_http_server_t *s);

/*
 * Answers the current request of c. hdrs holds 2 * nhdrs strings: name, value, name, value.
 * The server adds Content-Length, Date and Server (unless given) and Connection: close when the
 * connection closes after it. Returns 0; ZV_EINVAL when a header is malformed (nothing sent);
 * ZV_EIO when the connection is closed.
 */
int zv_http_respond(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs, size_t nhdrs,
                    const char *body, size_t len);

/* Streaming: the head with chunked framing (HTTP/1.1) or close-delimited (HTTP/1.0), then
 * chunks, then the end. Same returns as zv_http_respond. */
int zv_http_write_head(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs, size_t nhdrs);
int zv_http_write(zv_http_sconn_t *c, const char *chunk, size_t len);
int zv_http_finish(zv_http_sconn_t *c);

/* Streaming with a Content-Length: the head says length, and the caller writes exactly length
 * bytes with zv_http_write (sent as they are, no chunk framing) before zv_http_finish; one that
 * cannot must zv_http_abort. Same returns as zv_http_respond. */
int zv_http_write_head_len(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs,
                           size_t nhdrs, uint64_t length);

/*
 * Hands the connection to another protocol (a WebSocket): writes head (the 101 response, built
 * by the caller) and from then on reads raw bytes into c->core.buf[0..c->core.len) (what the
 * client sent after the request first), calling on_upgraded_data when more came; the owner
 * takes bytes off the front with zv_http_upgraded_consume. The buffer grows up to max_buffer;
 * full, reading waits for a consume. Writes go out with zv_http_write unframed; zv_http_finish
 * shuts the connection down gracefully, zv_http_abort closes it. 0 or ZV_EIO.
 */
int zv_http_upgrade(zv_http_sconn_t *c, const char *head, size_t len, size_t max_buffer);
void zv_http_upgraded_consume(zv_http_sconn_t *c, size_t n);

/* Back-pressure: asks for on_writable once c's queued bytes (c->pending) fall to low or below.
 * Once only; the caller checks c->pending first (no callback comes when it is low already). */
void zv_http_want_writable(zv_http_sconn_t *c, size_t low);

/*
 * Streamed request bodies (limits.max_stream_bytes > 0): a request whose body is large, chunked
 * or announced with Expect: 100-continue reaches on_request at the end of its head, with
 * c->body_streaming set; its decoded body bytes come into c->core.buf[body_off, +body_len)
 * as the client sends them, at most ZV_HTTP_STREAM_WINDOW ahead of the reader (then the socket
 * is not read: TCP flow control slows the client).
 *   zv_http_body_want     the reader waits: sends "100 Continue" once if the client asked for
 *                         it, reads the socket, and calls on_body once when something came
 *                         (body_timeout: 408). 0 or ZV_EIO.
 *   zv_http_body_take     drops the first n bytes of body_len (the reader has them).
 *   zv_http_body_buffer_all  the route wants the body whole after all: it collects in the
 *                         buffer under max_body_bytes (zv_http_body_want waits for the end);
 *                         0 or 413 when it is larger already.
 * A response that completes before the body was read closes the connection after it.
 */
int zv_http_body_want(zv_http_sconn_t *c);
void zv_http_body_take(zv_http_sconn_t *c, size_t n);
int zv_http_body_buffer_all(zv_http_sconn_t *c);

/* Closes c at once, dropping what is unsent (used when a response cannot be completed). */
void zv_http_abort(zv_http_sconn_t *c);

/* Writes the peer's address ("127.0.0.1") into buf and its port into *port; 0 or ZV_EIO. */
int zv_http_peer(zv_http_sconn_t *c, char *buf, size_t cap, int *port);

/* Raises the soft RLIMIT_NOFILE towards the hard one when it is below want (never above want);
 * writes the limits now in force. Returns 0 or ZV_EIO. */
int zv_http_nofile(uint64_t want, uint64_t *soft, uint64_t *hard);

/* The JSON body zever sends with a status it answers itself ({"error":"bad_request"}). */
const char *zv_http_error_body(int status);

#endif
