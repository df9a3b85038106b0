/*
 * conn.c: the HTTP client connection on libuv (see conn.h), with TLS through tlsx.h's hook.
 *
 *   zv_httpc_conn_t { uv_tcp_t, getaddrinfo, parser (resp.h), ibuf: plaintext not yet parsed,
 *                     cbuf: ciphertext just read (TLS only), TLS session (the hook's) }
 *
 * Lifetime: refs counts the owner (until close), the TCP handle (until its close callback)
 * and a pending getaddrinfo; the memory goes with the last. It must not call Lua, block, or
 * put anything but host:port in a message.
 */
#include <stdio.h>
#include <string.h>

#include "../core/zv.h"
#include "conn.h"

enum { OP_NONE, OP_CONNECT, OP_TLS, OP_SEND, OP_READ, OP_IDLE };

#define IBUF 65536
#define CBUF 16384

typedef struct {
  uv_write_t req;
  zv_httpc_conn_t *c;
  size_t n;
  char data[];
} wreq_t;

struct zv_httpc_conn_s {
  zv_loop_item_t item;
  zv_loop_t *loop;
  uv_tcp_t tcp;
  uv_getaddrinfo_t gai;
  uv_connect_t creq;
  zv_httpc_notify_fn notify;
  zv_httpc_free_fn on_free;
  void *user;
  int refs;
  int op;
  int sync;            /* inside an API call: a completion is returned, not notified */
  int closed, tcp_open, reading, eof, dead, gai_pending;
  int rerr;            /* a read error (libuv code) */
  int tls_failed;
  unsigned wpending;   /* uv_write requests in flight */
  int werr;
  int port;
  uint64_t got;        /* bytes parsed for the current response */
  const zv_httpc_tls_t *vt;
  void *tctx, *ts;
  char tls_err[200];
  char host[256];
  zv_httpc_result_t res;
  zv_httpc_resp_t resp;
  size_t ioff, ilen;
  char ibuf[IBUF];
  char cbuf[CBUF];
};

static const char *const kind_names[] = {
#define ZV__K(id, name) name,
  ZV_HTTPC_KIND_MAP(ZV__K)
#undef ZV__K
};

const char *zv_httpc_kind_name(int kind) {
  return kind >= 0 && kind < ZV_HTTPC_KINDS ? kind_names[kind] : "unknown";
}

static void unref(zv_httpc_conn_t *c) {
  if (--c->refs) return;
  if (c->ts) c->vt->close(c->ts);
  if (c->tctx) c->vt->release(c->tctx);
  if (c->on_free) c->on_free(c, c->user);
  zv_free(c);
}

static void tcp_closed(uv_handle_t *h) { unref(h->data); }

/* Ends the operation in progress with kind (and a message naming host:port). */
static int finish(zv_httpc_conn_t *c, int kind, const char *what, const char *detail) {
  c->res.kind = kind;
  c->res.why[0] = 0;
  if (kind != ZV_HTTPC_K_OK)
    snprintf(c->res.why, sizeof c->res.why, "%s:%d: %s%s%s", c->host, c->port, what,
             detail && *detail ? ": " : "", detail ? detail : "");
  if (kind != ZV_HTTPC_K_OK) c->dead = 1;
  c->op = OP_NONE;
  if (c->reading) {
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
  }
  if (!c->sync) c->notify(c, c->user);
  return 1;
}

static void close_conn(zv_httpc_conn_t *c);

/* The loop closes: the owner learns it through on_free. */
static void teardown(zv_loop_item_t *item) {
  close_conn((zv_httpc_conn_t *)item);
}

int zv_httpc_conn_new(zv_loop_t *loop, zv_httpc_notify_fn notify, zv_httpc_free_fn on_free,
                      void *user, zv_httpc_conn_t **out) {
  zv_httpc_conn_t *c = zv_alloc(sizeof *c);
  if (!c) return ZV_ENOMEM;
  memset(c, 0, offsetof(zv_httpc_conn_t, resp));
  c->loop = loop;
  c->notify = notify;
  c->on_free = on_free;
  c->user = user;
  c->refs = 1;
  c->item.teardown = teardown;
  c->item.prev = c->item.next = NULL;
  zv_httpc_resp_init(&c->resp, 0);
  c->ioff = c->ilen = 0; /* after resp: the memset above stops before the big buffers */
  zv_loop_add(loop, &c->item);
  *out = c;
  return 0;
}

/* --- connect ---------------------------------------------------------------------------- */

static void connect_cb(uv_connect_t *req, int status) {
  zv_httpc_conn_t *c = req->data;
  if (c->closed || c->op != OP_CONNECT) return;
  if (status < 0)
    finish(c, status == UV_ECONNREFUSED ? ZV_HTTPC_K_REFUSED : ZV_HTTPC_K_IO,
           "cannot connect", uv_strerror(status));
  else
    finish(c, ZV_HTTPC_K_OK, NULL, NULL);
}

static void gai_cb(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
  zv_httpc_conn_t *c = req->data;
  struct addrinfo *ai, *pick = NULL;
  int rc;
  c->gai_pending = 0;
  if (c->closed) {
    if (res) uv_freeaddrinfo(res);
    unref(c);
    return;
  }
  c->refs--; /* the getaddrinfo's reference; the owner's still holds */
  if (status < 0 || !res) {
    finish(c, ZV_HTTPC_K_DNS, "cannot resolve the host", uv_strerror(status));
    return;
  }
  for (ai = res; ai && !pick; ai = ai->ai_next)
    if (ai->ai_family == AF_INET) pick = ai;
  if (!pick) pick = res;
  rc = uv_tcp_init(&c->loop->uv, &c->tcp);
  if (rc) {
    uv_freeaddrinfo(res);
    finish(c, ZV_HTTPC_K_IO, "cannot open a socket", uv_strerror(rc));
    return;
  }
  c->tcp.data = c;
  c->tcp_open = 1;
  c->refs++;
  uv_tcp_nodelay(&c->tcp, 1);
  c->creq.data = c;
  rc = uv_tcp_connect(&c->creq, &c->tcp, pick->ai_addr, connect_cb);
  uv_freeaddrinfo(res);
  if (rc)
    finish(c, rc == UV_ECONNREFUSED ? ZV_HTTPC_K_REFUSED : ZV_HTTPC_K_IO, "cannot connect",
           uv_strerror(rc));
}

int zv_httpc_conn_connect(zv_httpc_conn_t *c, const char *host, int port) {
  char service[16];
  struct addrinfo hints;
  int rc;
  snprintf(c->host, sizeof c->host, "%s", host);
  c->port = port;
  if (c->closed || c->op != OP_NONE || c->tcp_open || c->gai_pending) {
    c->res.kind = ZV_HTTPC_K_CLOSED;
    snprintf(c->res.why, sizeof c->res.why, "the connection is busy or closed");
    return 1;
  }
  snprintf(service, sizeof service, "%d", port);
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  c->op = OP_CONNECT;
  c->gai.data = c;
  rc = uv_getaddrinfo(&c->loop->uv, &c->gai, gai_cb, host, service, &hints);
  if (rc) {
    c->sync = 1;
    finish(c, ZV_HTTPC_K_DNS, "cannot resolve the host", uv_strerror(rc));
    c->sync = 0;
    return 1;
  }
  c->gai_pending = 1;
  c->refs++;
  return 0;
}

/* --- writing ----------------------------------------------------------------------------- */

static void write_cb(uv_write_t *req, int status) {
  wreq_t *w = (wreq_t *)req;
  zv_httpc_conn_t *c = w->c;
  zv_free(w);
  c->wpending--;
  if (c->closed) return;
  if (status < 0 && !c->werr) c->werr = status;
  if (c->op == OP_SEND && (c->werr || !c->wpending)) {
    if (c->werr) finish(c, ZV_HTTPC_K_IO, "write failed", uv_strerror(c->werr));
    else finish(c, ZV_HTTPC_K_OK, NULL, NULL);
  }
}

/* Writes raw bytes: what the kernel does not take now is copied and queued. 0 or a uv code. */
static int write_raw(zv_httpc_conn_t *c, const char *p, size_t n) {
  wreq_t *w;
  uv_buf_t b;
  int rc;
  if (c->werr) return c->werr;
  if (!c->wpending) {
    b = uv_buf_init((char *)p, (unsigned)n);
    rc = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (rc >= 0) {
      p += rc;
      n -= (size_t)rc;
      if (!n) return 0;
    } else if (rc != UV_EAGAIN) {
      return c->werr = rc;
    }
  }
  w = zv_alloc(sizeof *w + n);
  if (!w) return UV_ENOMEM;
  w->c = c;
  w->n = n;
  memcpy(w->data, p, n);
  b = uv_buf_init(w->data, (unsigned)n);
  rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, write_cb);
  if (rc) {
    zv_free(w);
    return c->werr = rc;
  }
  c->wpending++;
  return 0;
}

/* Sends what the TLS session wants sent. 0 or a uv code. */
static int flush_tls(zv_httpc_conn_t *c) {
  char tmp[16384];
  size_t n;
  while (c->vt->pending(c->ts) > 0) {
    int rc;
    n = c->vt->drain(c->ts, tmp, sizeof tmp);
    if (!n) break;
    rc = write_raw(c, tmp, n);
    if (rc) return rc;
  }
  return 0;
}

/* --- reading ------------------------------------------------------------------------------ */

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  zv_httpc_conn_t *c = h->data;
  (void)hint;
  if (c->vt && c->ts) {
    *buf = uv_buf_init(c->cbuf, CBUF);
    return;
  }
  if (c->ioff) {
    memmove(c->ibuf, c->ibuf + c->ioff, c->ilen - c->ioff);
    c->ilen -= c->ioff;
    c->ioff = 0;
  }
  *buf = uv_buf_init(c->ibuf + c->ilen, (unsigned)(IBUF - c->ilen));
}

/* Takes plaintext out of the TLS session into ibuf. Returns the bytes taken. */
static size_t pull_tls(zv_httpc_conn_t *c) {
  size_t total = 0;
  if (c->ioff == c->ilen) c->ioff = c->ilen = 0;
  while (c->ilen < IBUF && !c->eof && !c->tls_failed) {
    ssize_t r = c->vt->read(c->ts, c->ibuf + c->ilen, IBUF - c->ilen, c->tls_err,
                            sizeof c->tls_err);
    if (r > 0) {
      c->ilen += (size_t)r;
      total += (size_t)r;
    } else if (r == 0) {
      break;
    } else {
      if (c->tls_err[0]) c->tls_failed = 1;
      else c->eof = 1; /* close_notify */
    }
  }
  flush_tls(c); /* a session may answer on its own (key updates) */
  return total;
}

/* Parses what ibuf holds up to one event. Returns 1 when the read finished. */
static int read_step(zv_httpc_conn_t *c) {
  for (;;) {
    size_t used = 0;
    int ev = zv_httpc_resp_feed(&c->resp, c->ibuf + c->ioff, c->ilen - c->ioff, &used);
    c->ioff += used;
    c->got += used;
    if (c->ioff == c->ilen) c->ioff = c->ilen = 0;
    if (ev < 0)
      return finish(c, ev == ZV_ETOOLONG ? ZV_HTTPC_K_TOO_LARGE : ZV_HTTPC_K_PROTOCOL,
                    "malformed response", ev == ZV_ETOOLONG ? "head or chunk line too long"
                                                            : zv_strerror(ev));
    if (ev > 0) {
      c->res.ev = ev;
      return finish(c, ZV_HTTPC_K_OK, NULL, NULL);
    }
    if (c->ts && pull_tls(c) > 0) continue;
    if (c->tls_failed) return finish(c, ZV_HTTPC_K_TLS, "TLS failed", c->tls_err);
    if (c->rerr) return finish(c, ZV_HTTPC_K_IO, "read failed", uv_strerror(c->rerr));
    if (c->eof) {
      ev = zv_httpc_resp_eof(&c->resp);
      if (ev > 0) {
        c->res.ev = ev;
        return finish(c, ZV_HTTPC_K_OK, NULL, NULL);
      }
      return finish(c, c->got ? ZV_HTTPC_K_IO : ZV_HTTPC_K_CLOSED,
                    "the server closed the connection before the response ended", NULL);
    }
    return 0;
  }
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static int start_reading(zv_httpc_conn_t *c) {
  int rc;
  if (c->reading) return 0;
  rc = uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
  if (rc) return rc;
  c->reading = 1;
  return 0;
}

static int tls_step(zv_httpc_conn_t *c) {
  int rc = c->vt->handshake(c->ts, c->tls_err, sizeof c->tls_err);
  int wr = flush_tls(c);
  if (rc < 0) return finish(c, ZV_HTTPC_K_TLS, "TLS handshake failed", c->tls_err);
  if (wr) return finish(c, ZV_HTTPC_K_IO, "write failed", uv_strerror(wr));
  if (rc == 1) return finish(c, ZV_HTTPC_K_OK, NULL, NULL);
  if (c->eof || c->rerr)
    return finish(c, ZV_HTTPC_K_TLS, "TLS handshake failed",
                  "the server closed the connection");
  wr = start_reading(c);
  if (wr) return finish(c, ZV_HTTPC_K_IO, "read failed", uv_strerror(wr));
  return 0;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  zv_httpc_conn_t *c = s->data;
  (void)buf;
  if (c->closed) return;
  if (nread < 0) {
    if (nread == UV_EOF) c->eof = 1;
    else c->rerr = (int)nread;
    uv_read_stop(s);
    c->reading = 0;
  } else if (nread > 0) {
    if (c->ts) {
      if (c->vt->feed(c->ts, buf->base, (size_t)nread)) c->rerr = UV_ENOMEM;
    } else {
      c->ilen += (size_t)nread;
    }
  } else {
    return;
  }
  switch (c->op) {
  case OP_TLS:
    tls_step(c);
    break;
  case OP_READ:
    read_step(c);
    break;
  case OP_IDLE:
    /* Anything but a TLS session's own records (a ticket) means the server is done with us. */
    if (c->ts && nread > 0 && !c->rerr) {
      char tmp[64];
      ssize_t r = c->vt->read(c->ts, tmp, sizeof tmp, c->tls_err, sizeof c->tls_err);
      flush_tls(c);
      if (r == 0) break;
    }
    c->dead = 1;
    if (c->reading) uv_read_stop(s);
    c->reading = 0;
    break;
  default:
    break;
  }
}

/* --- operations --------------------------------------------------------------------------- */

static int busy(zv_httpc_conn_t *c) {
  if (!c->closed && c->op == OP_NONE && c->tcp_open && !c->dead) return 0;
  c->res.kind = ZV_HTTPC_K_CLOSED;
  snprintf(c->res.why, sizeof c->res.why, "%s:%d: the connection is %s", c->host, c->port,
           c->op != OP_NONE ? "busy" : "closed");
  return 1;
}

int zv_httpc_conn_tls(zv_httpc_conn_t *c, const zv_httpc_tls_t *vt, void *ctx,
                      const char *servername) {
  int rc;
  if (busy(c) || c->ts) return 1;
  c->ts = vt->open(ctx, servername, c->tls_err, sizeof c->tls_err);
  c->sync = 1;
  if (!c->ts) {
    finish(c, ZV_HTTPC_K_TLS, "TLS failed", c->tls_err);
    c->sync = 0;
    return 1;
  }
  c->vt = vt;
  c->tctx = ctx;
  vt->retain(ctx);
  c->op = OP_TLS;
  rc = tls_step(c);
  c->sync = 0;
  return rc;
}

void zv_httpc_conn_expect(zv_httpc_conn_t *c, int no_body) {
  zv_httpc_resp_init(&c->resp, no_body);
  c->got = 0;
}

int zv_httpc_conn_send(zv_httpc_conn_t *c, const char *p, size_t n) {
  int rc;
  if (busy(c)) return 1;
  c->op = OP_SEND;
  c->sync = 1;
  if (c->ts) {
    rc = c->vt->write(c->ts, p, n) ? UV_ENOMEM : flush_tls(c);
  } else {
    rc = write_raw(c, p, n);
  }
  if (rc) rc = finish(c, ZV_HTTPC_K_IO, "write failed", uv_strerror(rc));
  else if (!c->wpending) rc = finish(c, ZV_HTTPC_K_OK, NULL, NULL);
  else rc = 0;
  c->sync = 0;
  return rc;
}

int zv_httpc_conn_read(zv_httpc_conn_t *c) {
  int rc;
  if (c->closed || c->op != OP_NONE || !c->tcp_open) return busy(c);
  c->op = OP_READ;
  c->sync = 1;
  rc = read_step(c);
  if (!rc) {
    int e = start_reading(c);
    if (e) rc = finish(c, ZV_HTTPC_K_IO, "read failed", uv_strerror(e));
  }
  c->sync = 0;
  return rc;
}

const zv_httpc_result_t *zv_httpc_conn_result(const zv_httpc_conn_t *c) { return &c->res; }
const zv_httpc_resp_t *zv_httpc_conn_resp(const zv_httpc_conn_t *c) { return &c->resp; }

void zv_httpc_conn_idle(zv_httpc_conn_t *c) {
  if (c->closed || c->dead || !c->tcp_open || c->op != OP_NONE) return;
  if (c->ilen > c->ioff || c->eof || c->rerr) { /* bytes nobody asked for: not reusable */
    c->dead = 1;
    return;
  }
  c->op = OP_IDLE;
  if (start_reading(c)) c->dead = 1;
  uv_unref((uv_handle_t *)&c->tcp);
}

int zv_httpc_conn_checkout(zv_httpc_conn_t *c) {
  if (c->op == OP_IDLE) {
    c->op = OP_NONE;
    if (c->reading) uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
    uv_ref((uv_handle_t *)&c->tcp);
  }
  return !c->closed && !c->dead && c->tcp_open && !c->eof && !c->rerr;
}

void zv_httpc_conn_close(zv_httpc_conn_t *c) {
  c->on_free = NULL; /* the owner forgets c itself */
  close_conn(c);
}

static void close_conn(zv_httpc_conn_t *c) {
  if (c->closed) return;
  c->closed = 1;
  c->op = OP_NONE;
  zv_loop_remove(&c->item);
  if (c->gai_pending) uv_cancel((uv_req_t *)&c->gai); /* its callback drops its reference */
  if (c->tcp_open) uv_close((uv_handle_t *)&c->tcp, tcp_closed);
  unref(c);
}
