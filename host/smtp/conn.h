/*
 * conn.h: an SMTP connection on a zever loop: libuv TCP, OpenSSL (STARTTLS or implicit TLS
 * through memory BIOs) and the state machine of smtp.h, with a deadline on every step.
 *
 * No Lua here: the binding (l_smtp_core.c) maps results and resumes the waiting coroutine. One
 * transaction at a time (the Lua adapter queues senders). The connection is kept after a
 * message and reused by the next send; it is dropped when the server closes it, on any
 * failure that leaves it unusable, and when the client is closed (QUIT first if idle).
 *
 *   zv_smtp_conn_send --> (no connection) resolve --> connect --> [TLS] --> greeting ... idle
 *                     --> (idle connection) MAIL FROM ...
 *   every wait for the server (connect, handshake, reply) has opts.timeout seconds.
 *
 * Handles: the timer lives as long as the client; the TCP handle per connection. Neither keeps
 * the loop alive while nothing is being sent (the idle connection is unref'd).
 */
#ifndef ZV_SMTP_CONN_H
#define ZV_SMTP_CONN_H

#include <uv.h>

#include "../loop/loop.h"
#include "smtp.h"

typedef struct zv_smtp_conn_s zv_smtp_conn_t;

/* Called once per zv_smtp_conn_send: kind ZV_SMTP_OK or a failure with why (no password). */
typedef void (*zv_smtp_done_fn)(zv_smtp_conn_t *c, int kind, const char *why, void *data);
/* Called once, just before the client's memory is freed. */
typedef void (*zv_smtp_free_fn)(zv_smtp_conn_t *c);

typedef struct {
  const char *host;
  int port;
  int encryption;       /* ZV_SMTP_PLAIN, ZV_SMTP_STARTTLS, ZV_SMTP_IMPLICIT_TLS */
  const char *username; /* NULL or "": no AUTH */
  const char *password;
  const char *helo;     /* NULL: "localhost" */
  const char *ca_file;  /* NULL: the system's trust store */
  int verify;           /* check the certificate and the host name (default in the binding: 1) */
  double timeout;       /* seconds per step */
} zv_smtp_opts_t;

/*
 * Allocates a client, registers it with the loop (closed with it). Copies opts. Connects on the
 * first send. Returns 0, ZV_ENOMEM, or ZV_EIO when OpenSSL cannot make a context (why says).
 */
int zv_smtp_conn_new(zv_loop_t *loop, const zv_smtp_opts_t *opts, zv_smtp_done_fn on_done,
                     zv_smtp_free_fn on_free, void *user, zv_smtp_conn_t **out, char *why,
                     size_t why_len);

/*
 * Sends one message (copied). On 0, on_done is called exactly once, later, from the loop (or
 * from zv_smtp_conn_close). ZV_EINVAL: a send is in progress or the client is closed.
 */
int zv_smtp_conn_send(zv_smtp_conn_t *c, const char *from, size_t from_len,
                      const char *const *rcpts, const size_t *rcpt_lens, size_t nrcpt,
                      const char *data, size_t data_len, void *data_token);

/*
 * Closes the client: a send in progress gets on_done(..., ZV_SMTP_UNAVAILABLE, "closed") now;
 * an idle connection says QUIT (best effort, not awaited); on_free runs from the close
 * callbacks. Calling it twice is harmless.
 */
void zv_smtp_conn_close(zv_smtp_conn_t *c);

void *zv_smtp_conn_user(const zv_smtp_conn_t *c);
void zv_smtp_conn_set_user(zv_smtp_conn_t *c, void *user);
/* Connections made so far, and whether one is open now. */
unsigned long zv_smtp_conn_connects(const zv_smtp_conn_t *c);
int zv_smtp_conn_connected(const zv_smtp_conn_t *c);

#endif
