/*
 * ws_fanout_load.c: a WebSocket broadcast (fan-out) load client for bench/ws_fanout.sh.
 * RECEIVERS connections to ws://127.0.0.1:PORT/room (the app joins each to one room) and one
 * sender on /pub (the app answers each of its messages with app:broadcast to the room). The
 * sender keeps DEPTH broadcasts in flight: a broadcast is done once EVERY receiver has it (so
 * no worker's queue grows without bound); it sends the next as one completes. Runs SECONDS,
 * then prints one line: "deliveries/s broadcasts/s lost", lost being messages a receiver
 * never got (none expected: the bus's queues are far larger than DEPTH).
 *
 *   build/bench/ws_fanout_load PORT RECEIVERS DEPTH SECONDS
 *
 * One thread, epoll, no library beyond the frame core's head encoder (host/http/ws.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "../host/http/ws.h"

#define MSG 64
#define MAXC 8192

typedef struct {
  int fd;
  size_t have;       /* bytes of unparsed input */
  uint64_t got;      /* broadcasts received */
  uint8_t in[16384];
} conn_t;

static conn_t conns[MAXC];
static uint8_t frame[MSG + 16];
static size_t frame_len;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_ws(int port, const char *path) {
  struct sockaddr_in a;
  char req[512], buf[4096];
  size_t got = 0;
  int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) return -1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           "Sec-WebSocket-Version: 13\r\n\r\n", path);
  if (write(fd, req, strlen(req)) < 0) return -1;
  /* The 101 head, then the app's one-byte "j" text frame: the connection is in the room. */
  while (got < sizeof buf - 1) {
    ssize_t r = read(fd, buf + got, 1);
    if (r <= 0) return -1;
    got++;
    if (got >= 4 && !memcmp(buf + got - 4, "\r\n\r\n", 4)) break;
  }
  buf[got] = 0;
  if (strncmp(buf, "HTTP/1.1 101", 12)) return -1;
  if (!strcmp(path, "/room") && (read(fd, buf, 3) != 3 || buf[2] != 'j')) return -1;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

static int send_msgs(int fd, unsigned n) {
  uint8_t out[(MSG + 16) * 64];
  size_t len = 0;
  while (n--) {
    memcpy(out + len, frame, frame_len);
    len += frame_len;
  }
  return write(fd, out, len) == (ssize_t)len ? 0 : -1;
}

int main(int argc, char **argv) {
  static const uint8_t key[4] = {1, 2, 3, 4};
  int port, nrecv, depth, ep, sender;
  double secs, t0, t1, t;
  uint64_t deliveries = 0, sent = 0, done = 0, lost = 0;
  struct epoll_event evs[256];
  if (argc != 5) {
    fprintf(stderr, "usage: %s PORT RECEIVERS DEPTH SECONDS\n", argv[0]);
    return 2;
  }
  port = atoi(argv[1]);
  nrecv = atoi(argv[2]);
  depth = atoi(argv[3]);
  secs = atof(argv[4]);
  if (nrecv < 1 || nrecv > MAXC || depth < 1 || depth > 64) return 2;
  frame_len = zv_ws_head(frame, 1, 0, ZV_WS_TEXT, MSG, key);
  memset(frame + frame_len, 'a', MSG);
  zv_ws_mask(frame + frame_len, MSG, key, 0);
  frame_len += MSG;
  ep = epoll_create1(0);
  for (int i = 0; i < nrecv; i++) {
    struct epoll_event e;
    conns[i].fd = connect_ws(port, "/room");
    if (conns[i].fd < 0) {
      fprintf(stderr, "connect/handshake %d failed\n", i);
      return 1;
    }
    e.events = EPOLLIN;
    e.data.ptr = &conns[i];
    epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &e);
  }
  sender = connect_ws(port, "/pub");
  if (sender < 0) {
    fprintf(stderr, "sender: connect/handshake failed\n");
    return 1;
  }
  if (send_msgs(sender, (unsigned)depth)) return 1;
  sent = (uint64_t)depth;
  t0 = now();
  t1 = t0 + secs;
  while ((t = now()) < t1) {
    int n = epoll_wait(ep, evs, 256, 100);
    uint64_t low;
    for (int i = 0; i < n; i++) {
      conn_t *c = evs[i].data.ptr;
      ssize_t r = read(c->fd, c->in + c->have, sizeof c->in - c->have);
      size_t off = 0;
      if (r <= 0) {
        if (r < 0 && errno == EAGAIN) continue;
        fprintf(stderr, "connection lost\n");
        return 1;
      }
      c->have += (size_t)r;
      /* Server frames: unmasked, 64-byte payloads: 2-byte heads. */
      while (c->have - off >= 2) {
        size_t len = c->in[off + 1] & 0x7F;
        if (c->have - off < 2 + len) break;
        off += 2 + len;
        c->got++;
        deliveries++;
      }
      memmove(c->in, c->in + off, c->have - off);
      c->have -= off;
    }
    /* A broadcast is done when the slowest receiver has it. */
    low = conns[0].got;
    for (int i = 1; i < nrecv; i++)
      if (conns[i].got < low) low = conns[i].got;
    if (low > done) {
      unsigned more = (unsigned)(low - done);
      done = low;
      while (more) {
        unsigned k = more > 64 ? 64 : more;
        if (send_msgs(sender, k)) return 1;
        sent += k;
        more -= k;
      }
    }
  }
  t = now() - t0;
  for (int i = 0; i < nrecv; i++)
    if (conns[i].got + (uint64_t)depth < sent) lost += sent - (uint64_t)depth - conns[i].got;
  printf("%.0f %.0f %llu\n", (double)deliveries / t, (double)done / t, (unsigned long long)lost);
  return 0;
}
