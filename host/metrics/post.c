/*
 * post.c: the blocking POST of post.h: getaddrinfo, a non-blocking connect, writes and reads
 * each bounded by poll against one deadline, and the status line of the answer. It reads the
 * answer until the end of its head and closes the connection (Connection: close).
 */
#include "post.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../core/zv.h"

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline; 0 when ready, ZV_EIO on timeout or error. */
static int wait_fd(int fd, short events, long long deadline) {
  for (;;) {
    long long left = deadline - now_ms();
    if (left <= 0) return ZV_EIO;
    struct pollfd p = {fd, events, 0};
    int n = poll(&p, 1, (int)left);
    if (n > 0) return (p.revents & (POLLERR | POLLNVAL)) && !(p.revents & events) ? ZV_EIO : 0;
    if (n < 0 && errno != EINTR) return ZV_EIO;
  }
}

static int connect_to(const char *host, int port, long long deadline) {
  char service[16];
  snprintf(service, sizeof service, "%d", port);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, service, &hints, &res) != 0 || !res) return ZV_EIO;
  int fd = -1;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    int err = 0;
    socklen_t elen = sizeof err;
    if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 0 &&
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err == 0) {
      break;
    }
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd < 0 ? ZV_EIO : fd;
}

static int write_all(int fd, const char *p, size_t n, long long deadline) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
    } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (wait_fd(fd, POLLOUT, deadline)) return ZV_EIO;
    } else {
      return ZV_EIO;
    }
  }
  return 0;
}

int zv_post(const char *host, int port, const char *path, const char *content_type,
            const char *body, size_t len, int timeout_ms, int *status) {
  if (!host || !*host || port <= 0 || port > 65535 || !path || path[0] != '/' || timeout_ms <= 0 ||
      strpbrk(host, "\r\n ") || strpbrk(path, "\r\n ") || strpbrk(content_type, "\r\n")) {
    return ZV_EINVAL;
  }
  long long deadline = now_ms() + timeout_ms;
  int fd = connect_to(host, port, deadline);
  if (fd < 0) return fd;
  char head[1024];
  int n = snprintf(head, sizeof head,
                   "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: %s\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                   path, host, port, content_type, len);
  int rc = n > 0 && (size_t)n < sizeof head ? 0 : ZV_EINVAL;
  if (!rc) rc = write_all(fd, head, (size_t)n, deadline);
  if (!rc) rc = write_all(fd, body, len, deadline);
  char buf[512];
  size_t got = 0;
  while (!rc && got < sizeof buf - 1) {
    ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
    if (r > 0) {
      got += (size_t)r;
      buf[got] = '\0';
      if (strstr(buf, "\r\n")) break; /* the status line is all we read */
    } else if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
      rc = wait_fd(fd, POLLIN, deadline);
    } else {
      break;
    }
  }
  close(fd);
  if (rc) return rc;
  buf[got] = '\0';
  int code;
  if (sscanf(buf, "HTTP/1.%*d %3d", &code) != 1) return ZV_EIO;
  *status = code;
  return 0;
}
