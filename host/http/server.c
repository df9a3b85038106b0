/*
 * server.c: the HTTP/1.1 server on libuv (see server.h for the structures): defaults,
 * listening and accepting (with max_connections), draining, closing and teardown. The
 * connections themselves (timers, reading, dispatch, responses) are stream.c's; this file calls
 * stream.c through stream.h and is called back only through s->on_conn_change.
 *
 * max_connections: at the cap, the oldest idle keep-alive connection is closed to admit the new
 * one (nginx's reusable connections); with none idle, the new connection is left in the
 * listener, which pauses libuv's accepting until a connection closes or goes idle. Each pause
 * is counted (refused) and logged at most once a second.
 *
 * It must not call into Lua, and must not allocate per connection beyond the pool stream.c keeps.
 */
#include "server.h"

#include <stdio.h>
#include <sys/resource.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "../core/zv.h"
#include "stream.h"

void zv_http_server_defaults(zv_http_server_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->host = "127.0.0.1";
  o->port = 0;
  o->reuseport = 1;
  o->fd = -1;
  o->backlog = 511;
  o->limits.max_header_bytes = 8192;
  o->limits.max_body_bytes = 1 << 20;
  o->header_timeout_ms = 10000;
  o->body_timeout_ms = 30000;
  o->keepalive_timeout_ms = 75000;
  o->write_timeout_ms = 60000;
  o->handler_timeout_ms = 0;
  o->max_connections = 10000;
}

int zv_http_nofile(uint64_t want, uint64_t *soft, uint64_t *hard) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl)) return ZV_EIO;
  if (rl.rlim_cur < want && rl.rlim_cur != rl.rlim_max) {
    struct rlimit up = rl;
    up.rlim_cur = rl.rlim_max;
    if (up.rlim_cur != RLIM_INFINITY && up.rlim_cur > want) up.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl.rlim_cur = up.rlim_cur;
  }
  *soft = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
  *hard = rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_max;
  return 0;
}

/* --- accepting ----------------------------------------------------------------------------- */

static void free_handle(uv_handle_t *h) {
  zv_free(h);
}

static void log_refused(zv_http_server_t *s);

static void log_refused_cb(uv_timer_t *t) {
  log_refused(t->data);
}

/* Logs the refusals not logged yet, at most once a second: one that comes sooner is logged by
 * the server's timer when the second is over (the timer is the drain's, idle until a drain, which
 * takes it over: a server that drains has no refusals left to report). */
static void log_refused(zv_http_server_t *s) {
  uint64_t now = uv_now(s->loop);
  if (s->refused == s->refused_logged) return;
  if (s->refused_log_at && now - s->refused_log_at < 1000) {
    if (!s->draining && !s->finishing && !uv_is_active((uv_handle_t *)&s->timer))
      uv_timer_start(&s->timer, log_refused_cb, 1000 - (now - s->refused_log_at), 0);
    return;
  }
  fprintf(stderr, "zever: http: max_connections (%u) reached: accept paused, %llu connection(s) "
          "waited (%llu in total, %llu idle ones closed to admit new ones)\n",
          s->opts.max_connections, (unsigned long long)(s->refused - s->refused_logged),
          (unsigned long long)s->refused, (unsigned long long)s->evicted);
  fflush(stderr);
  s->refused_logged = s->refused;
  s->refused_log_at = now;
}

/* Accepts the connection waiting in the listener, closing the oldest idle keep-alive
 * connection to make room at the cap; with none idle, leaves it there: libuv stops polling the
 * listener until uv_accept is called (from here, when a connection closes or goes idle). */
static void accept_one(zv_http_server_t *s) {
  if (s->nlive >= s->opts.max_connections && zv__http_conn_evict(s)) {
    if (!s->paused) {
      s->paused = 1;
      s->refused++;
      log_refused(s);
    }
    return;
  }
  s->paused = 0;
  if (zv__http_conn_accept(s, (uv_stream_t *)&s->listener)) {
    /* Out of memory: take the socket and close it rather than stall the listener. */
    uv_tcp_t *t = zv_alloc(sizeof *t);
    s->refused++;
    log_refused(s);
    if (!t) return;
    uv_tcp_init(s->loop, t);
    uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)t);
    uv_close((uv_handle_t *)t, free_handle);
  }
}

static void on_connection(uv_stream_t *l, int status) {
  zv_http_server_t *s = l->data;
  if (status < 0 || !s->listening) return;
  accept_one(s);
}

/* --- the server ---------------------------------------------------------------------------- */

static void server_handle_closed(uv_handle_t *h) {
  zv_http_server_t *s = h->data;
  if (--s->nhandles > 0) return;
  if (s->epfd >= 0) {
    close(s->epfd);
    s->epfd = -1;
  }
  zv__http_pool_free(s);
  if (s->opts.xport) s->opts.xport->release(s->opts.xport_ctx);
  if (s->cb.on_closed) s->cb.on_closed(s);
}

/* Once nothing listens and no connection is open, the server's own handles close. */
static void maybe_finish(zv_http_server_t *s) {
  if (s->draining && !s->drained && s->nconns == 0) {
    s->drained = 1;
    uv_timer_stop(&s->timer);
    if (s->cb.on_drained && !s->torn_down) s->cb.on_drained(s);
  }
  if (s->listening || s->nconns || s->finishing) return;
  s->finishing = 1;
  uv_close((uv_handle_t *)&s->events, server_handle_closed);
  uv_close((uv_handle_t *)&s->idle, server_handle_closed);
  uv_close((uv_handle_t *)&s->timer, server_handle_closed);
}

/* stream.c: a connection closed or went idle. */
static void conn_change(zv_http_server_t *s) {
  if (s->paused && s->listening) accept_one(s);
  maybe_finish(s);
}

static void drain_cb(uv_timer_t *t) {
  zv_http_server_t *s = t->data;
  /* The deadline: whatever is still open goes now. */
  while (s->conns) zv__http_conn_close_now(s->conns);
  maybe_finish(s);
}

static int resolve(const char *host, int port, struct sockaddr_storage *ss) {
  if (!strcmp(host, "localhost")) host = "127.0.0.1";
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0) return 0;
  if (uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss) == 0) return 0;
  return ZV_EINVAL;
}

int zv_http_server_start(zv_http_server_t *s, uv_loop_t *loop, const zv_http_server_opts_t *o,
                         const zv_http_server_cb_t *cb, void *data) {
  struct sockaddr_storage ss;
  int len = sizeof ss, rc;
  memset(s, 0, sizeof *s);
  s->loop = loop;
  s->opts = *o;
  s->cb = *cb;
  s->data = data;
  s->on_conn_change = conn_change;
  if (o->fd >= 0) {
    /* An inherited listener (socket activation): TCP only, its address read back. */
    socklen_t sl = sizeof ss;
    if (getsockname(o->fd, (struct sockaddr *)&ss, &sl) != 0 ||
        (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
      return ZV_EINVAL;
  } else if (resolve(o->host, o->port, &ss)) {
    return ZV_EINVAL;
  }
  if (o->xport) o->xport->retain(o->xport_ctx);
  /* Writing to a socket the peer closed must be an error, not the end of the process. */
  signal(SIGPIPE, SIG_IGN);
  uv_idle_init(loop, &s->idle);
  uv_timer_init(loop, &s->timer);
  s->idle.data = s->timer.data = s->listener.data = s->events.data = s;
  s->epfd = epoll_create1(EPOLL_CLOEXEC);
  rc = s->epfd < 0 ? uv_translate_sys_error(errno) : uv_poll_init(loop, &s->events, s->epfd);
  if (!rc) rc = uv_poll_start(&s->events, UV_READABLE, zv__http_events_cb);
  if (!rc) rc = uv_tcp_init_ex(loop, &s->listener, o->fd >= 0 ? AF_UNSPEC : ss.ss_family);
  if (rc) {
    /* The listener never became a handle (nor, maybe, events): close the others only. */
    s->nhandles = 2;
    s->uverr = rc;
    s->finishing = 1;
    if (s->events.loop == loop) {
      s->nhandles = 3;
      uv_close((uv_handle_t *)&s->events, server_handle_closed);
    }
    uv_close((uv_handle_t *)&s->idle, server_handle_closed);
    uv_close((uv_handle_t *)&s->timer, server_handle_closed);
    if (s->nhandles == 2 && s->epfd >= 0) {
      close(s->epfd);
      s->epfd = -1;
    }
    return ZV_EIO;
  }
  s->nhandles = 4;
  s->listening = 1;
  if (o->fd >= 0) {
    /* Each worker's loop owns a duplicate, so that closing one listener (a drain) leaves the
     * socket open for the others and for the service manager. */
    int fd = fcntl(o->fd, F_DUPFD_CLOEXEC, 3);
    rc = fd < 0 ? uv_translate_sys_error(errno) : uv_tcp_open(&s->listener, fd);
    if (rc && fd >= 0) close(fd);
  } else {
    if (o->reuseport) {
      uv_os_fd_t fd;
      int one = 1;
      if (uv_fileno((uv_handle_t *)&s->listener, &fd) == 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    }
    rc = uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0);
  }
  if (!rc) rc = uv_listen((uv_stream_t *)&s->listener, o->backlog, on_connection);
  if (!rc) rc = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &len);
  if (rc) {
    s->uverr = rc;
    zv_http_server_close(s, 0);
    return ZV_EIO;
  }
  s->opts.host = NULL; /* the caller's string; not needed after the bind */
  s->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                     : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return 0;
}

void zv_http_server_close(zv_http_server_t *s, uint64_t grace_ms) {
  if (s->listening) {
    s->listening = 0;
    uv_close((uv_handle_t *)&s->listener, server_handle_closed);
  }
  s->stopping = 1;
  if (!s->draining && !s->torn_down) zv__http_conn_close_idle(s, grace_ms);
  maybe_finish(s);
}

void zv_http_server_drain(zv_http_server_t *s, uint64_t deadline_ms) {
  if (s->draining) return;
  s->draining = 1;
  s->stopping = 1;
  if (s->listening) {
    s->listening = 0;
    uv_close((uv_handle_t *)&s->listener, server_handle_closed);
  }
  zv__http_conn_close_idle(s, 0);
  if (s->nconns == 0) {
    /* Nothing to wait for: report on the next loop iteration, not from inside this call. */
    uv_timer_start(&s->timer, drain_cb, 0, 0);
  } else {
    uv_timer_start(&s->timer, drain_cb, deadline_ms, 0);
  }
}

void zv_http_server_teardown(zv_http_server_t *s) {
  s->torn_down = 1;
  s->stopping = 1;
  if (s->listening) {
    s->listening = 0;
    uv_close((uv_handle_t *)&s->listener, server_handle_closed);
  }
  while (s->conns) zv__http_conn_close_now(s->conns);
  maybe_finish(s);
}
