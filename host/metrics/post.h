/*
 * post.h: one blocking HTTP/1.1 POST over plain TCP with a deadline, for the OTLP/HTTP trace
 * exporter (lua/adapters/trace/otlp.lua) until zever's HTTP client (#22) carries it on the loop.
 * It must not know Lua or libuv; it is not for request paths (it blocks its thread).
 */
#ifndef ZV_POST_H
#define ZV_POST_H

#include <stddef.h>

/*
 * POSTs body[0..len) with content_type to http://host:port/path and reads the status line.
 * timeout_ms bounds the whole exchange (resolve excepted). Returns 0 with *status set (any
 * status: the caller judges it), ZV_EINVAL for bad arguments, ZV_EIO when the connection
 * fails, times out or the answer is not HTTP. Allocates nothing on the heap besides
 * getaddrinfo's result.
 */
int zv_post(const char *host, int port, const char *path, const char *content_type,
            const char *body, size_t len, int timeout_ms, int *status);

#endif
