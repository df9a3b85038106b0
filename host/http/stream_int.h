/*
 * stream_int.h: what the four files of the connections share; stream.h is what server.c sees.
 *
 *   stream.c         a connection's life: the pool, the idle keep-alive list, timers and
 *                    timeouts, accepting, closing (now, or gracefully after a final response)
 *   stream_read.c    reading the socket, parsing, dispatching requests to on_request, pipelining
 *   stream_write.c   writing (send(2) first, uv_write for the rest) and the responses built on
 *                    it: whole, streamed, upgraded to another protocol
 *   stream_static.c  static files (app:static): the head and a sendfile(2) body
 *
 * Each file calls the others only through the functions declared here. Not for callers outside
 * these four files: the rest of host/http uses server.h, server.c uses stream.h.
 */
#ifndef ZV_HTTP_STREAM_INT_H
#define ZV_HTTP_STREAM_INT_H

#include "stream.h"

/* What a connection's timer waits for (stream.c, the file comment). */
enum { T_NONE, T_HEADER, T_BODY, T_KEEPALIVE, T_LINGER, T_HANDLER };

/* stream.c: arms the timer for mode (lazily: see the timers section). */
void zv__http_arm(zv_http_sconn_t *c, int mode);
/* stream.c: arms the timer for what the parser waits for now. */
void zv__http_arm_for_state(zv_http_sconn_t *c);
/* stream.c: starts the timer for the earliest of the mode's and the write deadline. */
void zv__http_rearm(zv_http_sconn_t *c, uint64_t now);
/* stream.c: starts the uv timer to fire in ms (now is the loop time). */
void zv__http_timer_start(zv_http_sconn_t *c, uint64_t now, uint64_t ms);
/* stream.c: bytes in the kernel's send queue of c (SIOCOUTQ), 0 when unknown. */
uint64_t zv__http_kernel_outq(zv_http_sconn_t *c);
/* stream.c: sends FIN after the queued writes, then lingers; after a final response. */
void zv__http_conn_close_graceful(zv_http_sconn_t *c);
/* (zv__http_conn_close_now is in stream.h: server.c uses it too.) */

/* stream_read.c: the connection wants bytes again (read from the idle callback). */
void zv__http_start_reading(zv_http_sconn_t *c);
/* stream_read.c: tells a waiting reader of a streamed body (on_body) that something came. */
void zv__http_body_notify(zv_http_sconn_t *c);
/* stream_read.c: the response is complete and flushed: the next request on c. */
void zv__http_next_request(zv_http_sconn_t *c);

/* stream_write.c: sends bufs through the transport when there is one (xport.h); 0 or ZV_EIO
 * (the connection is closed then). */
int zv__http_conn_write(zv_http_sconn_t *c, uv_buf_t *bufs, unsigned n);
/* stream_write.c: an upgraded connection's bytes collected in c->head (zv_http_write) go out
 * now, in one write; 0 or ZV_EIO (the connection is closed then). */
int zv__http_conn_uncork(zv_http_sconn_t *c);
/* stream_write.c: builds a response head into c->head; 0, ZV_EINVAL (a malformed header) or
 * ZV_ENOMEM. */
int zv__http_build_head(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs, size_t nhdrs,
                        int64_t content_length, int chunked);
/* stream_write.c: after the last byte of a response was handed to libuv. */
void zv__http_response_done(zv_http_sconn_t *c);

/* stream_static.c: sends what is left of a static file's body. */
void zv__http_file_continue(zv_http_sconn_t *c);
/* stream_static.c: answers c's request from a static mount; 1 when it did, 0 to go on to
 * on_request. */
int zv__http_serve_static(zv_http_sconn_t *c);

#endif
