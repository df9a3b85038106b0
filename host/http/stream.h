/*
 * stream.h: what server.c takes from stream.c, the module's one internal direction.
 *
 *   l_http.c --> server.h (the API) --> server.c --> stream.h --> stream.c
 *                                                    (accept, close, read events, pool)
 *
 * server.c listens, accepts and runs the lifecycle; stream.c runs the connections. stream.c
 * never calls server.c: when a connection closes or goes idle it calls the server's
 * on_conn_change pointer, which server.c sets at start. Not for callers outside host/http.
 */
#ifndef ZV_HTTP_STREAM_H
#define ZV_HTTP_STREAM_H

#include "server.h"

/* Takes the next connection from listener l into a pooled connection (handles, epfd, header
 * timer). Returns 0, or -1 when none could be made (the socket stays in the listener). */
int zv__http_conn_accept(zv_http_server_t *s, uv_stream_t *l);

/* Closes c's handles now, dropping what is unsent. */
void zv__http_conn_close_now(zv_http_sconn_t *c);

/* Winds idle connections down: with grace_ms 0 closes them now (drain); else each closes once
 * it stayed idle that long (close: the keep-alive timer, shortened). Connections running HTTP/2
 * streams get a GOAWAY at once either way. Returns how many connections remain open. */
uint32_t zv__http_conn_close_idle(zv_http_server_t *s, uint64_t grace_ms);

/* Closes the oldest idle keep-alive connection; returns 0, or -1 when none is idle. */
int zv__http_conn_evict(zv_http_server_t *s);

/* The poll callback of the server's epoll set: reads the sockets it names. */
void zv__http_events_cb(uv_poll_t *h, int status, int events);

/* Frees the pool of closed connections (the server's handles are all closed). */
void zv__http_pool_free(zv_http_server_t *s);

#endif
