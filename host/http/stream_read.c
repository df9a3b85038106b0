/*
 * stream_read.c: reading a connection's socket and dispatching its requests. recv(2) from the
 * server's edge-triggered epoll set (zv__http_events_cb), the bytes go to the parser (conn.c),
 * each complete request to on_request (or a static mount); pipelined requests wait in the
 * buffer and are parsed from the idle callback once the response before them is out.
 *
 * It must not call into Lua, must not write a response itself beyond the parser's errors (400,
 * 413, ... through zv_http_respond) and the interim 100 Continue, and must not allocate per
 * request: it reads into the parser's buffer, whose size the limits bound.
 */
#include "stream_int.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "../core/zv.h"

#define EVENTS_MAX 256          /* epoll events taken from epfd per epoll_wait */
#define READS_MAX 32            /* reads in a row on one connection before the others' turn */

/* --- connections: reading and dispatch ----------------------------------------------------- */

static void idle_cb(uv_idle_t *h);
static void conn_process(zv_http_sconn_t *c);

/* Puts c on the server's list for the idle callback (see want_process and want_read). */
static void enqueue(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  if (c->ready || c->closing) return;
  c->ready = 1;
  c->ready_next = s->ready;
  s->ready = c;
  uv_idle_start(&s->idle, idle_cb);
}

/*
 * Reads while the socket may hold bytes and the connection wants them. Edge-triggered: epfd
 * reports a socket again only when new bytes (or EOF) arrive, so a read that filled the space
 * given leaves rd_ready set, and a shorter one means the socket is empty (unless the peer shut
 * down: then it reads on to the end, which recv reports as 0). After READS_MAX reads in a row
 * it goes on from the idle callback, so that one busy client does not hold up the others.
 */
static void conn_readable(zv_http_sconn_t *c) {
  int reads = 0;
  if (c->in_read) return;
  c->in_read = 1;
  while (c->reading && c->rd_ready && !c->closing) {
    char *p;
    size_t n;
    ssize_t r;
    if (reads++ == READS_MAX) {
      c->want_read = 1;
      enqueue(c);
      break;
    }
    if (c->lingering) {
      p = c->core.buf;
      n = c->core.cap;
    } else if (c->upgraded) {
      /* Another protocol's bytes (zv_http_upgrade): appended after what its owner has not
       * consumed yet; the buffer grows up to up_cap, then reading waits for a consume. */
      if (c->core.len == c->core.cap) {
        size_t ncap = c->core.cap * 2 < c->up_cap ? c->core.cap * 2 : c->up_cap;
        char *nb = ncap > c->core.cap ? zv_realloc(c->core.buf, ncap) : NULL;
        if (!nb) {
          c->reading = 0;
          break;
        }
        c->core.buf = nb;
        c->core.cap = ncap;
      }
      p = c->core.buf + c->core.len;
      n = c->core.cap - c->core.len;
    } else if (zv_http_conn_space(&c->core, &p, &n) || n == 0) {
      /* No room now (a request waits for its answer, or the input reached its limit): the
       * bytes stay in the socket until start_reading asks again. */
      c->reading = 0;
      break;
    }
    r = c->xp ? c->srv->opts.xport->read(c, c->xp, p, n) : recv(c->fd, p, n, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        c->rd_ready = 0;
        break;
      }
      zv__http_conn_close_now(c);
      break;
    }
    if (r == 0) {
      /* EOF: the client is gone, even if a request still waits for its answer. */
      zv__http_conn_close_now(c);
      break;
    }
    if ((size_t)r < n && !c->rd_eof && !c->xp) c->rd_ready = 0;
    if (c->lingering || c->shutting) continue;
    if (c->upgraded) {
      c->core.len += (size_t)r;
      if (c->srv->cb.on_upgraded_data) {
        /* Corked: what the owner writes while it handles these bytes (an echo per message)
         * collects in c->head and goes out in one send when it is done. */
        c->corked = 1;
        c->srv->cb.on_upgraded_data(c->srv, c);
        c->corked = 0;
        if (!c->closing && !c->shutting && zv__http_conn_uncork(c)) break;
        c->head.len = 0;
      }
      continue;
    }
    zv_http_conn_commit(&c->core, (size_t)r);
    if (c->core.state == ZV_HTTP_DONE) continue;
    conn_process(c);
  }
  c->in_read = 0;
}

/* epfd has events: take them and read the sockets they name. */
void zv__http_events_cb(uv_poll_t *h, int status, int events) {
  zv_http_server_t *s = h->data;
  struct epoll_event ev[EVENTS_MAX];
  int n;
  (void)status;
  (void)events;
  do {
    n = epoll_wait(s->epfd, ev, EVENTS_MAX, 0);
    for (int i = 0; i < n; i++) {
      zv_http_sconn_t *c = ev[i].data.ptr;
      uint32_t e = ev[i].events;
      if (c->closing) continue;
      if ((e & (EPOLLOUT | EPOLLHUP | EPOLLERR)) && c->file_wait) {
        zv__http_file_continue(c);
        if (c->closing) continue;
      }
      if (!(e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) continue;
      c->rd_ready = 1;
      if (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->rd_eof = 1;
      conn_readable(c);
    }
  } while (n == EVENTS_MAX);
}

/* The connection wants bytes again; reads what the socket already holds from the idle
 * callback, never from the caller's stack (it may be inside zv_http_respond). */
void zv__http_start_reading(zv_http_sconn_t *c) {
  if (c->reading || c->closing) return;
  c->reading = 1;
  if (c->rd_ready) {
    c->want_read = 1;
    enqueue(c);
  }
}

static void send_error(zv_http_sconn_t *c, int status) {
  zv_http_str_t hdrs[2] = {{"Content-Type", 12}, {"application/json", 16}};
  const char *body = zv_http_error_body(status);
  c->resp = ZV_HTTP_RESP_NONE;
  c->must_close = 1;
  c->is_head = 0;
  zv_http_respond(c, status, hdrs, 1, body, strlen(body));
}

/* The connection's next pipelined request is buffered: parse it from the idle callback. */
static void schedule(zv_http_sconn_t *c) {
  if (c->closing) return;
  c->want_process = 1;
  enqueue(c);
}

/* The response is complete and flushed: go on with the next request on this connection. */
void zv__http_next_request(zv_http_sconn_t *c) {
  zv_http_conn_next(&c->core);
  c->resp = ZV_HTTP_RESP_NONE;
  c->fresh = 0;
  if (zv_http_conn_pending(&c->core)) {
    schedule(c);
  } else {
    if (c->srv->stopping) { /* its head went out before close or drain: it ends here */
      zv__http_conn_close_now(c);
      return;
    }
    zv__http_arm(c, T_KEEPALIVE);
    /* A connection waits in the listener: this idle one may make room for it. */
    if (c->srv->paused) c->srv->on_conn_change(c->srv);
  }
  if (!c->closing) zv__http_start_reading(c);
}


static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

/* A reader of a streamed body waited (zv_http_body_want) and something came: bytes, the end,
 * or a failure. The timer goes back to what the request waits for otherwise. */
void zv__http_body_notify(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  if (!c->body_wait) return;
  c->body_wait = 0;
  if (c->timer_mode == T_BODY) {
    if (c->resp == ZV_HTTP_RESP_NONE && (c->handler_ms || s->opts.handler_timeout_ms))
      zv__http_arm(c, T_HANDLER);
    else
      zv__http_arm(c, T_NONE);
  }
  if (s->cb.on_body) s->cb.on_body(s, c);
}

/* An event of a streamed body (after HEADERS dispatched its request). Returns 1 when the loop
 * of conn_process goes on (the body ended and the response is out: the next request). */
static int body_event(zv_http_sconn_t *c, int ev) {
  if (ev == ZV_HTTP_NEED_MORE) {
    if (c->core.body_len) zv__http_body_notify(c);
    return 0;
  }
  c->body_streaming = 0;
  if (ev == ZV_HTTP_FAIL) {
    /* Over the limit or malformed framing: 413/400 when nothing was answered yet. */
    if (c->resp == ZV_HTTP_RESP_NONE) send_error(c, c->core.status);
    else zv__http_conn_close_now(c);
    zv__http_body_notify(c);
    return 0;
  }
  zv__http_body_notify(c); /* REQUEST: the body is complete */
  return !c->closing && c->resp == ZV_HTTP_RESP_DONE && !c->writes && !c->shutting;
}

static void conn_process(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  c->in_dispatch = 1;
  while (!c->closing) {
    int ev = zv_http_conn_parse(&c->core);
    if (c->body_streaming) {
      if (!body_event(c, ev)) break;
      goto next;
    }
    if (ev == ZV_HTTP_NEED_MORE) {
      if (c->core.state != ZV_HTTP_IDLE) c->fresh = 0;
      zv__http_arm_for_state(c);
      break;
    }
    if (ev == ZV_HTTP_CONTINUE) {
      uv_buf_t b = uv_buf_init((char *)cont, sizeof cont - 1);
      zv__http_conn_write(c, &b, 1);
      continue;
    }
    if (ev == ZV_HTTP_FAIL) {
      zv__http_arm(c, T_NONE);
      send_error(c, c->core.status);
      break;
    }
    /* A complete request, or the head of one whose body streams (HEADERS). */
    zv__http_arm(c, T_NONE);
    s->requests++;
    c->resp = ZV_HTTP_RESP_NONE;
    c->is_head = (uint8_t)zv_http_conn_is_head(&c->core);
    c->must_close = (uint8_t)!c->core.keep_alive;
    c->stream_raw = c->want_writable = 0;
    c->handler_ms = 0;
    c->body_streaming = ev == ZV_HTTP_HEADERS;
    c->body_wait = 0;
    if (c->body_streaming || !s->opts.statics || !zv__http_serve_static(c))
      s->cb.on_request(s, c);
    if (c->resp == ZV_HTTP_RESP_NONE && !c->closing &&
        (c->handler_ms || s->opts.handler_timeout_ms) && c->timer_mode != T_BODY)
      zv__http_arm(c, T_HANDLER);
    if (c->closing || c->resp != ZV_HTTP_RESP_DONE || c->writes || c->shutting) break;
  next:
    zv_http_conn_next(&c->core);
    c->resp = ZV_HTTP_RESP_NONE;
    c->fresh = 0;
    if (s->stopping && !zv_http_conn_pending(&c->core)) {
      zv__http_conn_close_now(c);
      break;
    }
  }
  c->in_dispatch = 0;
  if (!c->closing && !c->shutting && c->core.state != ZV_HTTP_ERROR) zv__http_start_reading(c);
}

/* --- streamed request bodies (the binding's side) ------------------------------------------- */

int zv_http_body_want(zv_http_sconn_t *c) {
  if (c->closing || c->shutting) return ZV_EIO;
  if (!c->body_streaming) return 0;
  if (c->core.expect_continue && !c->core.continue_sent && c->resp == ZV_HTTP_RESP_NONE) {
    uv_buf_t b = uv_buf_init((char *)cont, sizeof cont - 1);
    c->core.continue_sent = 1;
    if (zv__http_conn_write(c, &b, 1)) return ZV_EIO;
  }
  c->body_wait = 1;
  zv__http_arm(c, T_BODY);
  /* Bytes read with the head (or before the window filled) wait unparsed: parse them from the
   * idle callback, as a pipelined request's. */
  if (zv_http_conn_pending(&c->core)) schedule(c);
  zv__http_start_reading(c);
  return 0;
}

void zv_http_body_take(zv_http_sconn_t *c, size_t n) {
  zv_http_conn_body_take(&c->core, n);
  if (!c->closing && !c->shutting) zv__http_start_reading(c);
}

int zv_http_body_buffer_all(zv_http_sconn_t *c) {
  if (!c->body_streaming) return 0;
  return zv_http_conn_buffer_all(&c->core);
}

void zv__http_conn_busy(zv_http_sconn_t *c, int busy) {
  if (c->closing) return;
  c->xp_busy = (uint8_t)!!busy;
  if (busy) {
    zv__http_arm(c, T_NONE);
  } else if (c->shutting) {
    /* A graceful close waited for the streams: it goes on from the idle callback. */
    c->want_shutdown = 1;
    enqueue(c);
  } else {
    c->fresh = 0;
    zv__http_arm(c, T_KEEPALIVE);
  }
}

void zv__http_conn_drained(zv_http_sconn_t *c) {
  if (c->closing || !c->want_writable || c->pending > c->low_water) return;
  c->want_notify = 1;
  enqueue(c);
}

void zv__http_conn_flush_later(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  if (c->want_flush || c->closing) return;
  c->want_flush = 1;
  c->flush_next = s->flushq;
  s->flushq = c;
  uv_idle_start(&s->idle, idle_cb);
}

static void idle_cb(uv_idle_t *h) {
  zv_http_server_t *s = h->data;
  /* Connections enqueued from here wait for the next turn, as a list of their own. */
  zv_http_sconn_t *list = s->ready;
  s->ready = NULL;
  while (list) {
    zv_http_sconn_t *c = list;
    int process = c->want_process, read = c->want_read, shut = c->want_shutdown;
    int notify = c->want_notify;
    list = c->ready_next;
    c->ready = 0;
    c->want_process = c->want_read = c->want_shutdown = c->want_notify = 0;
    if (!c->closing && notify && c->want_writable && c->pending <= c->low_water &&
        c->resp == ZV_HTTP_RESP_STREAM) {
      c->want_writable = 0;
      if (s->cb.on_writable) s->cb.on_writable(s, c);
    }
    if (!c->closing && shut && c->shutting && !c->xp_busy) {
      c->shutting = 0;
      zv__http_conn_close_graceful(c);
    }
    if (!c->closing && process) conn_process(c);
    if (!c->closing && read) conn_readable(c);
  }
  /* What the pass wrote through a transport that gathers (HTTP/2: the frames of every stream
   * that answered) goes out now, once per connection. A flush may close its connection (which
   * leaves the list by itself) or ask again (then it waits for the next pass). */
  list = s->flushq;
  s->flushq = NULL;
  while (list) {
    zv_http_sconn_t *c = list;
    list = c->flush_next;
    c->flush_next = NULL;
    c->want_flush = 0;
    if (c->closing) continue;
    if (c->upgraded && !c->shutting && zv__http_conn_uncork(c)) continue;
    if (s->opts.xport && s->opts.xport->flush) s->opts.xport->flush(c, c->xp);
  }
  if (!s->ready && !s->flushq) uv_idle_stop(h);
}

