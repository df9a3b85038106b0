/*
 * conn.c: the SMTP client on libuv and OpenSSL (see conn.h). A client owns a timer and at most
 * one live session (one TCP connection with its TLS state and state machine); a failed session
 * is detached and closes on its own while the next send opens a new one.
 *
 *   zv_smtp_conn_t --sess--> sess_t { uv_tcp_t, SSL + memory BIOs, zv_smtp_t, write buffers }
 *        timer (the deadline of the step in progress)
 *
 * TLS runs over memory BIOs: bytes read go into rbio, SSL_read gives plaintext to the machine;
 * the machine's output goes through SSL_write and wbio's bytes are written to the socket. It
 * must not block, call Lua, or put the password in any message.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "../core/zv.h"
#include "conn.h"

typedef struct sess_s sess_t;

struct zv_smtp_conn_s {
  zv_loop_item_t item;
  zv_loop_t *loop;
  uv_timer_t timer;
  sess_t *sess;          /* the live connection, NULL when none */
  SSL_CTX *ctx;          /* NULL for plain SMTP */
  zv_smtp_opts_t o;      /* strings point into strs */
  char *strs;
  zv_smtp_done_fn on_done;
  zv_smtp_free_fn on_free;
  void *user;
  void *token;           /* of the send in progress */
  int busy, closed;
  unsigned long connects;
};

struct sess_s {
  uv_tcp_t tcp;
  uv_connect_t creq;
  uv_write_t wreq;
  uv_getaddrinfo_t gai;
  zv_smtp_conn_t *c;     /* NULL once detached */
  zv_smtp_t sm;
  SSL *ssl;
  BIO *rbio, *wbio;
  int handshaking;
  int writing;
  int refs;              /* the TCP handle + a pending getaddrinfo */
  unsigned long txns;    /* transactions finished on this connection */
  zv_smtp_buf_t pending, inflight;
  char rbuf[65536];
};

/* --- sessions --------------------------------------------------------------------------------- */

static void sess_unref(sess_t *s) {
  if (--s->refs) return;
  if (s->ssl) SSL_free(s->ssl); /* frees the BIOs */
  zv_smtp_free(&s->sm);
  if (s->pending.p) memset(s->pending.p, 0, s->pending.cap);
  if (s->inflight.p) memset(s->inflight.p, 0, s->inflight.cap);
  zv_smtp_buf_free(&s->pending);
  zv_smtp_buf_free(&s->inflight);
  zv_free(s);
}

static void tcp_closed(uv_handle_t *h) { sess_unref(h->data); }

/* Detaches the session from its client and closes it (pending writes are cancelled). */
static void sess_drop(sess_t *s) {
  zv_smtp_conn_t *c = s->c;
  if (!c) return;
  s->c = NULL;
  c->sess = NULL;
  uv_timer_stop(&c->timer);
  uv_cancel((uv_req_t *)&s->gai); /* harmless when it is not pending */
  uv_close((uv_handle_t *)&s->tcp, tcp_closed);
}

/* Ends the send in progress, if any. */
static void complete(zv_smtp_conn_t *c, int kind, const char *why) {
  void *token = c->token;
  if (!c->busy) return;
  c->busy = 0;
  c->token = NULL;
  if (c->sess) uv_unref((uv_handle_t *)&c->sess->tcp);
  c->on_done(c, kind, why, token);
}

static int sess_open(zv_smtp_conn_t *c);

/*
 * A reused connection failed before the server accepted anything of the message (it closed
 * the idle connection while the loop was not running, say): move the transaction to a new
 * connection, once. Returns 1 when it did; s is dropped either way when it returns 1.
 */
static int retry(sess_t *s) {
  zv_smtp_conn_t *c = s->c;
  if (!c || !c->busy || c->closed || !s->txns || !zv_smtp_retryable(&s->sm)) return 0;
  sess_drop(s);
  if (sess_open(c)) return 0;
  zv_smtp_move_txn(&c->sess->sm, &s->sm);
  return 1;
}

/* The session failed: the send in progress (if any) gets why, the connection is dropped. */
static void fail(sess_t *s, const char *why) {
  zv_smtp_conn_t *c = s->c;
  if (!c) return;
  if (retry(s)) return;
  sess_drop(s);
  complete(c, ZV_SMTP_UNAVAILABLE, why);
}

static void fail_step(sess_t *s, const char *what, const char *detail) {
  char why[400];
  snprintf(why, sizeof why, "%s:%d: %s%s%s", s->c->o.host, s->c->o.port, what,
           detail ? ": " : "", detail ? detail : "");
  fail(s, why);
}

static void write_cb(uv_write_t *req, int status);

static void write_failed(sess_t *s, int rc) {
  char what[80];
  snprintf(what, sizeof what, "write failed during the %s", zv_smtp_step(&s->sm));
  fail_step(s, what, uv_strerror(rc));
}

static void flush(sess_t *s) {
  zv_smtp_buf_t t;
  uv_buf_t b;
  int rc;
  if (s->writing || !s->pending.len || !s->c) return;
  t = s->inflight;
  s->inflight = s->pending;
  s->pending = t;
  s->pending.len = 0;
  b = uv_buf_init(s->inflight.p, (unsigned)s->inflight.len);
  s->wreq.data = s;
  rc = uv_write(&s->wreq, (uv_stream_t *)&s->tcp, &b, 1, write_cb);
  if (rc) {
    write_failed(s, rc);
    return;
  }
  s->writing = 1;
}

static void write_cb(uv_write_t *req, int status) {
  sess_t *s = req->data;
  s->writing = 0;
  s->inflight.len = 0;
  if (!s->c) return;
  if (status < 0) {
    write_failed(s, status);
    return;
  }
  flush(s);
}

/* Moves what wbio holds (TLS records) to the pending writes. */
static void drain_wbio(sess_t *s) {
  char tmp[16384];
  int n;
  while ((n = BIO_read(s->wbio, tmp, sizeof tmp)) > 0) zv_smtp_buf_put(&s->pending, tmp, (size_t)n);
}

/* Takes the machine's output: through TLS when it is on, and queues it for writing. */
static int take_out(sess_t *s) {
  zv_smtp_buf_t *o = &s->sm.out;
  if (o->len) {
    if (s->ssl && !s->handshaking && s->sm.tls) {
      int n = SSL_write(s->ssl, o->p, (int)o->len);
      memset(o->p, 0, o->len);
      o->len = 0;
      if (n <= 0) {
        fail_step(s, "TLS write failed", NULL);
        return -1;
      }
      drain_wbio(s);
    } else if (!s->pending.len) {
      zv_smtp_buf_t t = s->pending;
      s->pending = *o;
      *o = t;
      o->len = 0;
    } else {
      zv_smtp_buf_put(&s->pending, o->p, o->len);
      o->len = 0;
    }
  }
  if (s->pending.err) {
    fail_step(s, "out of memory", NULL);
    return -1;
  }
  flush(s);
  return s->c ? 0 : -1;
}

static void timer_cb(uv_timer_t *t) {
  zv_smtp_conn_t *c = t->data;
  sess_t *s = c->sess;
  char why[64];
  if (!s) return;
  snprintf(why, sizeof why, "timed out waiting for the %s",
           s->handshaking ? "TLS handshake" : zv_smtp_step(&s->sm));
  fail_step(s, why, NULL);
}

static void arm_deadline(sess_t *s) {
  zv_smtp_conn_t *c = s->c;
  uint64_t ms;
  if (!c) return;
  ms = c->o.timeout > 0 ? (uint64_t)(c->o.timeout * 1000.0 + 0.5) : 0;
  if (!ms) return;
  /* Count from now: the loop's cached time is stale after Lua ran long outside the loop. */
  uv_update_time(&c->loop->uv);
  uv_timer_start(&c->timer, timer_cb, ms, 0);
}

/* --- the machine's events ------------------------------------------------------------------- */

static void start_tls(sess_t *s);

static void handle(sess_t *s, const char *p, size_t n) {
  zv_smtp_conn_t *c = s->c;
  int ev = zv_smtp_feed(&s->sm, p, n);
  if (take_out(s)) return;
  switch (ev) {
  case ZV_SMTP_MORE:
    if (zv_smtp_waiting(&s->sm)) arm_deadline(s);
    else uv_timer_stop(&c->timer);
    break;
  case ZV_SMTP_TLS:
    start_tls(s);
    break;
  case ZV_SMTP_DONE:
    s->txns++;
    uv_timer_stop(&c->timer);
    complete(c, s->sm.kind, s->sm.kind ? s->sm.why : NULL);
    break;
  case ZV_SMTP_DEAD: {
    char why[600];
    if (retry(s)) break;
    snprintf(why, sizeof why, "%s:%d: %s", c->o.host, c->o.port, s->sm.why);
    sess_drop(s);
    complete(c, s->sm.kind ? s->sm.kind : ZV_SMTP_UNAVAILABLE, why);
    break;
  }
  default: /* BYE */
    sess_drop(s);
    break;
  }
}

static void tls_error(sess_t *s, const char *what) {
  char detail[300];
  unsigned long e = ERR_get_error();
  long v = SSL_get_verify_result(s->ssl);
  if (v != X509_V_OK) snprintf(detail, sizeof detail, "%s", X509_verify_cert_error_string(v));
  else if (e) ERR_error_string_n(e, detail, sizeof detail);
  else snprintf(detail, sizeof detail, "the connection failed");
  ERR_clear_error();
  fail_step(s, what, detail);
}

/* Reads every decrypted byte available and feeds it to the machine. */
static void tls_read(sess_t *s) {
  char tmp[16384];
  while (s->c && !s->handshaking) {
    int n = SSL_read(s->ssl, tmp, sizeof tmp);
    if (n <= 0) {
      int e = SSL_get_error(s->ssl, n);
      if (e == SSL_ERROR_WANT_READ) break;
      if (e == SSL_ERROR_ZERO_RETURN) fail_step(s, "the server closed the TLS session", NULL);
      else tls_error(s, "TLS read failed");
      return;
    }
    handle(s, tmp, (size_t)n);
  }
  if (s->c) {
    drain_wbio(s);
    flush(s);
  }
}

static void handshake(sess_t *s) {
  int rc = SSL_do_handshake(s->ssl);
  drain_wbio(s);
  flush(s);
  if (!s->c) return;
  if (rc == 1) {
    s->handshaking = 0;
    zv_smtp_tls_ready(&s->sm);
    if (take_out(s)) return;
    arm_deadline(s);
    tls_read(s); /* the greeting may have come with the last handshake record */
    return;
  }
  if (SSL_get_error(s->ssl, rc) == SSL_ERROR_WANT_READ) {
    arm_deadline(s);
    return;
  }
  tls_error(s, "TLS handshake failed");
}

static void start_tls(sess_t *s) {
  zv_smtp_conn_t *c = s->c;
  const char *host = c->o.host;
  int is_ip = strchr(host, ':') != NULL;
  struct in_addr a4;
  if (!is_ip) is_ip = uv_inet_pton(AF_INET, host, &a4) == 0;
  s->ssl = SSL_new(c->ctx);
  s->rbio = BIO_new(BIO_s_mem());
  s->wbio = BIO_new(BIO_s_mem());
  if (!s->ssl || !s->rbio || !s->wbio) {
    BIO_free(s->rbio);
    BIO_free(s->wbio);
    s->rbio = s->wbio = NULL;
    fail_step(s, "out of memory", NULL);
    return;
  }
  SSL_set_bio(s->ssl, s->rbio, s->wbio);
  SSL_set_connect_state(s->ssl);
  if (!is_ip) SSL_set_tlsext_host_name(s->ssl, host);
  if (c->o.verify) {
    X509_VERIFY_PARAM *vp = SSL_get0_param(s->ssl);
    if (is_ip) X509_VERIFY_PARAM_set1_ip_asc(vp, host);
    else SSL_set1_host(s->ssl, host);
  }
  s->handshaking = 1;
  handshake(s);
}

/* --- TCP ------------------------------------------------------------------------------------ */

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  sess_t *s = h->data;
  (void)hint;
  *buf = uv_buf_init(s->rbuf, sizeof s->rbuf);
}

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  sess_t *s = st->data;
  if (!s->c || nread == 0) return;
  if (nread < 0) {
    if (!s->c->busy) {
      sess_drop(s); /* an idle connection the server closed: the next send reconnects */
      return;
    }
    {
      char what[120];
      snprintf(what, sizeof what, "the connection %s during the %s",
               nread == UV_EOF ? "was closed by the server" : "failed",
               s->handshaking ? "TLS handshake" : zv_smtp_step(&s->sm));
      fail_step(s, what, nread == UV_EOF ? NULL : uv_strerror((int)nread));
    }
    return;
  }
  if (s->ssl) {
    if (BIO_write(s->rbio, buf->base, (int)nread) != (int)nread) {
      fail_step(s, "out of memory", NULL);
      return;
    }
    if (s->handshaking) handshake(s);
    else tls_read(s);
    return;
  }
  handle(s, buf->base, (size_t)nread);
}

static void connect_cb(uv_connect_t *req, int status) {
  sess_t *s = req->data;
  int rc;
  if (!s->c) return;
  if (status < 0) {
    fail_step(s, "connect failed", uv_strerror(status));
    return;
  }
  s->c->connects++;
  rc = uv_read_start((uv_stream_t *)&s->tcp, alloc_cb, read_cb);
  if (rc) {
    fail_step(s, "read failed", uv_strerror(rc));
    return;
  }
  arm_deadline(s);
  if (s->c->o.encryption == ZV_SMTP_IMPLICIT_TLS) start_tls(s);
}

static void resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
  sess_t *s = req->data;
  int rc;
  if (!s->c) {
    if (res) uv_freeaddrinfo(res);
    sess_unref(s);
    return;
  }
  s->refs--;
  if (status < 0 || !res) {
    if (res) uv_freeaddrinfo(res);
    fail_step(s, "cannot resolve the host", uv_strerror(status));
    return;
  }
  s->creq.data = s;
  rc = uv_tcp_connect(&s->creq, &s->tcp, res->ai_addr, connect_cb);
  uv_freeaddrinfo(res);
  if (rc) fail_step(s, "connect failed", uv_strerror(rc));
  else arm_deadline(s);
}

/* Opens a session: resolve, connect; the machine waits for the greeting. Returns 0 or an error
 * (nothing is left open then). */
static int sess_open(zv_smtp_conn_t *c) {
  sess_t *s = zv_alloc(sizeof *s);
  struct addrinfo hints;
  char port[16];
  int rc;
  if (!s) return ZV_ENOMEM;
  memset(s, 0, sizeof *s);
  rc = zv_smtp_init(&s->sm, c->o.encryption, c->o.helo, c->o.username,
                    c->o.username ? strlen(c->o.username) : 0, c->o.password,
                    c->o.password ? strlen(c->o.password) : 0);
  if (rc) {
    zv_free(s);
    return rc;
  }
  uv_tcp_init(&c->loop->uv, &s->tcp);
  s->tcp.data = s;
  s->c = c;
  s->refs = 2;
  c->sess = s;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  snprintf(port, sizeof port, "%d", c->o.port);
  s->gai.data = s;
  rc = uv_getaddrinfo(&c->loop->uv, &s->gai, resolved, c->o.host, port, &hints);
  if (rc) {
    s->refs--;
    sess_drop(s);
    return ZV_EIO;
  }
  arm_deadline(s);
  return 0;
}

/* --- the client ----------------------------------------------------------------------------- */

static void timer_closed(uv_handle_t *h) {
  zv_smtp_conn_t *c = h->data;
  if (c->on_free) c->on_free(c);
  if (c->o.password) memset((char *)c->o.password, 0, strlen(c->o.password));
  zv_free(c->strs);
  if (c->ctx) SSL_CTX_free(c->ctx);
  zv_free(c);
}

static void teardown(zv_loop_item_t *item) {
  zv_smtp_conn_t *c = ZV_CONTAINER_OF(item, zv_smtp_conn_t, item);
  zv_smtp_conn_close(c);
}

static SSL_CTX *make_ctx(const zv_smtp_opts_t *o, char *why, size_t why_len) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) goto fail;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (o->verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (o->ca_file && *o->ca_file) {
      if (SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) != 1) goto fail;
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      goto fail;
    }
  }
  return ctx;
fail:
  snprintf(why, why_len, "TLS setup failed: %s", ERR_reason_error_string(ERR_get_error()));
  ERR_clear_error();
  if (ctx) SSL_CTX_free(ctx);
  return NULL;
}

int zv_smtp_conn_new(zv_loop_t *loop, const zv_smtp_opts_t *opts, zv_smtp_done_fn on_done,
                     zv_smtp_free_fn on_free, void *user, zv_smtp_conn_t **out, char *why,
                     size_t why_len) {
  const char *src[5] = {opts->host, opts->username, opts->password, opts->helo, opts->ca_file};
  const char **dst[5];
  size_t total = 0, off = 0;
  zv_smtp_conn_t *c = zv_alloc(sizeof *c);
  if (!c) return ZV_ENOMEM;
  memset(c, 0, sizeof *c);
  c->o = *opts;
  dst[0] = &c->o.host; dst[1] = &c->o.username; dst[2] = &c->o.password;
  dst[3] = &c->o.helo; dst[4] = &c->o.ca_file;
  for (int i = 0; i < 5; i++) total += src[i] ? strlen(src[i]) + 1 : 0;
  c->strs = zv_alloc(total ? total : 1);
  if (!c->strs) {
    zv_free(c);
    return ZV_ENOMEM;
  }
  for (int i = 0; i < 5; i++) {
    if (!src[i]) { *dst[i] = NULL; continue; }
    memcpy(c->strs + off, src[i], strlen(src[i]) + 1);
    *dst[i] = c->strs + off;
    off += strlen(src[i]) + 1;
  }
  if (c->o.username && !*c->o.username) c->o.username = NULL;
  if (opts->encryption != ZV_SMTP_PLAIN) {
    c->ctx = make_ctx(&c->o, why, why_len);
    if (!c->ctx) {
      zv_free(c->strs);
      zv_free(c);
      return ZV_EIO;
    }
  }
  c->loop = loop;
  c->on_done = on_done;
  c->on_free = on_free;
  c->user = user;
  uv_timer_init(&loop->uv, &c->timer);
  c->timer.data = c;
  uv_unref((uv_handle_t *)&c->timer);
  c->item.teardown = teardown;
  zv_loop_add(loop, &c->item);
  *out = c;
  return 0;
}

int zv_smtp_conn_send(zv_smtp_conn_t *c, const char *from, size_t from_len,
                      const char *const *rcpts, const size_t *rcpt_lens, size_t nrcpt,
                      const char *data, size_t data_len, void *data_token) {
  int rc;
  if (c->closed || c->busy) return ZV_EINVAL;
  if (!c->sess) {
    rc = sess_open(c);
    if (rc) return rc;
  }
  rc = zv_smtp_send(&c->sess->sm, from, from_len, rcpts, rcpt_lens, nrcpt, data, data_len);
  if (rc) {
    sess_drop(c->sess);
    return rc;
  }
  c->busy = 1;
  c->token = data_token;
  uv_ref((uv_handle_t *)&c->sess->tcp);
  if (take_out(c->sess)) return 0; /* failed already: on_done was called */
  if (c->sess && zv_smtp_waiting(&c->sess->sm)) arm_deadline(c->sess);
  return 0;
}

void zv_smtp_conn_close(zv_smtp_conn_t *c) {
  sess_t *s = c->sess;
  if (c->closed) return;
  c->closed = 1;
  zv_loop_remove(&c->item);
  /* QUIT is best effort: uv_write tries the socket at once, and the close cancels the rest. */
  if (s && !c->busy && zv_smtp_quit(&s->sm)) take_out(s);
  if (c->sess) sess_drop(c->sess);
  complete(c, ZV_SMTP_UNAVAILABLE, "the client is closed");
  uv_close((uv_handle_t *)&c->timer, timer_closed);
}

void *zv_smtp_conn_user(const zv_smtp_conn_t *c) { return c->user; }
void zv_smtp_conn_set_user(zv_smtp_conn_t *c, void *user) { c->user = user; }
unsigned long zv_smtp_conn_connects(const zv_smtp_conn_t *c) { return c->connects; }
int zv_smtp_conn_connected(const zv_smtp_conn_t *c) { return c->sess != NULL; }
