/*
 * conn.h: one HTTP/1.1 client connection on a zever loop: resolve, connect, TLS through the
 * hook of tlsx.h (when given), write a request, pull response events from resp.h's parser.
 *
 * No Lua here: the binding (l_httpc.c) maps results and resumes the waiting coroutine; the
 * pool, redirects, timeouts and decoding are Lua's (lua/zever/httpc.lua). One operation at a
 * time; each either completes at once (the call returns 1, results in the connection) or
 * later (returns 0; notify is called once from the loop). Closing drops an operation in
 * progress without notifying: whoever closes (a timeout) reports it.
 *
 *   connect --> [tls] --> expect + send --> read: HEAD, BODY..., DONE --> idle (pooled)
 *                                      ^------------------------------------'  alive()
 *
 * Reading happens only while a read is pending (a streaming caller that stops reading stops
 * the socket: backpressure), plus the idle watch of a pooled connection, which marks it dead
 * when the server closes it or sends anything. An idle connection does not keep the loop
 * alive.
 */
#ifndef ZV_HTTPC_CONN_H
#define ZV_HTTPC_CONN_H

#include <uv.h>

#include "../loop/loop.h"
#include "resp.h"
#include "tlsx.h"

/* Failure kinds, by name for Lua (the binding returns the name): one table. */
#define ZV_HTTPC_KIND_MAP(X)    \
  X(OK, "ok")                   \
  X(DNS, "dns")                 \
  X(REFUSED, "refused")         \
  X(IO, "unavailable")          \
  X(CLOSED, "closed")           \
  X(TLS, "tls")                 \
  X(PROTOCOL, "protocol")       \
  X(TOO_LARGE, "too_large")     \
  X(NOMEM, "nomem")

enum {
#define ZV__K(id, name) ZV_HTTPC_K_##id,
  ZV_HTTPC_KIND_MAP(ZV__K)
#undef ZV__K
  ZV_HTTPC_KINDS
};

const char *zv_httpc_kind_name(int kind);

typedef struct zv_httpc_conn_s zv_httpc_conn_t;
typedef void (*zv_httpc_notify_fn)(zv_httpc_conn_t *c, void *user);
typedef void (*zv_httpc_free_fn)(zv_httpc_conn_t *c, void *user);

/* The result of the last operation. */
typedef struct {
  int kind;          /* ZV_HTTPC_K_OK or a failure */
  int ev;            /* read: ZV_HTTPC_EV_HEAD, _BODY or _DONE */
  char why[600];     /* a failure's message (host:port, never credentials) */
} zv_httpc_result_t;

/*
 * Allocates a connection registered with the loop (torn down with it: on_free then runs, and
 * the owner forgets its pointer). Returns 0 or ZV_ENOMEM.
 */
int zv_httpc_conn_new(zv_loop_t *loop, zv_httpc_notify_fn notify, zv_httpc_free_fn on_free,
                      void *user, zv_httpc_conn_t **out);

/* Resolves host (IPv4 addresses first) and connects to port. 0 pending, 1 done now. */
int zv_httpc_conn_connect(zv_httpc_conn_t *c, const char *host, int port);

/* Runs a TLS handshake over the connection (retains ctx). 0 pending, 1 done now. */
int zv_httpc_conn_tls(zv_httpc_conn_t *c, const zv_httpc_tls_t *vt, void *ctx,
                      const char *servername);

/* Readies the parser for the next response (no_body: the request is HEAD or CONNECT). */
void zv_httpc_conn_expect(zv_httpc_conn_t *c, int no_body);

/* Writes p[0, n) (copied when the kernel does not take it at once). 0 pending, 1 done now. */
int zv_httpc_conn_send(zv_httpc_conn_t *c, const char *p, size_t n);

/* The next response event. 0 pending, 1 done now. */
int zv_httpc_conn_read(zv_httpc_conn_t *c);

/* The last operation's result; after a read, the parser (status, fields, body piece). */
const zv_httpc_result_t *zv_httpc_conn_result(const zv_httpc_conn_t *c);
const zv_httpc_resp_t *zv_httpc_conn_resp(const zv_httpc_conn_t *c);

/* Parks the connection in a pool: watched for a close, not keeping the loop alive. */
void zv_httpc_conn_idle(zv_httpc_conn_t *c);
/* Takes it out of the pool: 1 when it can carry a request, 0 when the server closed it. */
int zv_httpc_conn_checkout(zv_httpc_conn_t *c);

/* Closes the connection (an operation in progress is dropped, not notified); the memory goes
 * when libuv is done with it. The owner forgets c: on_free is not called (it is only when the
 * loop's teardown closes c). */
void zv_httpc_conn_close(zv_httpc_conn_t *c);

#endif
