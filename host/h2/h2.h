/*
 * h2.h: HTTP/2 for the HTTP server (libnghttp2), as a transport layer of host/http (xport.h)
 * stacked over the connection's own transport (TLS, or the plain socket).
 *
 *   socket -> [TLS] -> h2 layer --(each stream's request as HTTP/1.1 bytes)--> the HTTP/1.1 core,
 *                         ^            on a virtual connection of its own        one per stream
 *                         +------(each stream's HTTP/1.1 response, parsed back)--------+
 *
 * A connection whose first bytes are the HTTP/2 preface (after ALPN h2 over TLS, or h2c with
 * prior knowledge on a plain port) is run by an nghttp2 server session; anything else passes
 * through untouched (HTTP/1.1 as before). Each complete request stream (headers, and its body
 * when it has one) is handed to the core as an HTTP/1.1 request on a virtual connection of its
 * own (zv__http_conn_open_virtual), so the application's handlers run exactly as they do for
 * HTTP/1.1, the streams of one connection side by side; each response is parsed back (status,
 * headers, Content-Length or chunked body) into an HTTP/2 response on its stream, sent as soon
 * as it comes. A drain sends GOAWAY and lets the streams in flight finish.
 *
 * Bounds: SETTINGS_MAX_CONCURRENT_STREAMS 128 (also the handlers running at once); a header block larger than the server's
 * max_header_bytes resets its stream (HPACK's dynamic table is nghttp2's 4 KiB); a body larger
 * than max_body_bytes resets its stream; request bodies waiting on one connection are capped at
 * ZV_H2_BODY_CAP in all; responses waiting for the client's flow-control window at
 * ZV_H2_OUT_CAP; rapid reset (CVE-2023-44487): nghttp2's stream reset rate limit, and a client
 * that resets more than ZV_H2_RESET_MAX streams beyond those it let finish gets GOAWAY
 * (ENHANCE_YOUR_CALM) and is closed.
 *
 * Not Lua: the binding is l_h2_core.c.
 */
#ifndef ZV_H2_H2_H
#define ZV_H2_H2_H

#include <stddef.h>

#include "../http/xport.h"

#define ZV_H2_BODY_CAP (16u << 20)
#define ZV_H2_OUT_CAP (64u << 20)
#define ZV_H2_RESET_MAX 100

typedef struct zv_h2_ctx_s zv_h2_ctx_t;

/* A layer over lower (NULL: the plain socket), which it retains. NULL when out of memory. */
zv_h2_ctx_t *zv_h2_ctx_new(const zv_http_xport_t *lower, void *lower_ctx);
void zv_h2_ctx_retain(zv_h2_ctx_t *ctx);
void zv_h2_ctx_release(zv_h2_ctx_t *ctx);

const zv_http_xport_t *zv_h2_xport(void);

/* nghttp2's version text. */
const char *zv_h2_version(void);

#endif
