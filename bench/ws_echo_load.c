/*
 * ws_echo_load.c: a WebSocket echo load client for bench/ws_echo.sh: C connections to
 * ws://127.0.0.1:PORT/PATH, each keeping DEPTH masked 64-byte text messages in flight, for
 * SECONDS; prints the echoes received per second. One thread, epoll, no library beyond the
 * frame core's head encoder (host/http/ws.c).
 *
 *   build/bench/ws_echo_load PORT PATH CONNS DEPTH SECONDS [deflate]
 *
 * deflate: the handshake offers permessage-deflate with client_no_context_takeover and every
 * message is a 64-byte JSON text compressed alone (zlib, raw, sync flush, tail removed: the same
 * bytes each time), sent with RSV1; the server's answers are counted whatever their form.
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

#include <zlib.h>

#include "../host/http/ws.h"

#define MSG 64
#define MAXC 1024

typedef struct {
  int fd;
  size_t have;       /* bytes of unparsed input */
  uint64_t inflight;
  uint8_t in[65536];
} conn_t;

static conn_t conns[MAXC];
static uint8_t frame[MSG + 64];
static size_t frame_len;
static int deflate_on;
static const char json_msg[MSG + 1] =
  "{\"type\":\"chat\",\"room\":\"lobby\",\"text\":\"hello there, 01234567890\"}";

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
           "Sec-WebSocket-Version: 13\r\n%s\r\n", path,
           deflate_on ? "Sec-WebSocket-Extensions: permessage-deflate; "
                        "client_no_context_takeover\r\n" : "");
  if (write(fd, req, strlen(req)) < 0) return -1;
  /* The 101 head alone (the server sends nothing else before our first message). */
  while (got < sizeof buf - 1) {
    ssize_t r = read(fd, buf + got, 1);
    if (r <= 0) return -1;
    got++;
    if (got >= 4 && !memcmp(buf + got - 4, "\r\n\r\n", 4)) break;
  }
  buf[got] = 0;
  if (strncmp(buf, "HTTP/1.1 101", 12)) return -1;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

static int send_msgs(conn_t *c, unsigned n) {
  uint8_t out[(MSG + 64) * 64];
  size_t len = 0;
  while (n--) {
    memcpy(out + len, frame, frame_len);
    len += frame_len;
  }
  /* Small writes to a socket with room: a short write here would only mean a stalled
   * server; treat it as an error (the count stays honest). */
  return write(c->fd, out, len) == (ssize_t)len ? 0 : -1;
}

int main(int argc, char **argv) {
  static const uint8_t key[4] = {1, 2, 3, 4};
  int port, nconns, depth, ep;
  double secs, t0, t1;
  uint64_t echoes = 0;
  struct epoll_event evs[256];
  if (argc != 6 && argc != 7) {
    fprintf(stderr, "usage: %s PORT PATH CONNS DEPTH SECONDS [deflate]\n", argv[0]);
    return 2;
  }
  deflate_on = argc == 7 && !strcmp(argv[6], "deflate");
  port = atoi(argv[1]);
  nconns = atoi(argv[3]);
  depth = atoi(argv[4]);
  secs = atof(argv[5]);
  if (nconns < 1 || nconns > MAXC || depth < 1 || depth > 64) return 2;
  if (!deflate_on) {
    frame_len = zv_ws_head(frame, 1, 0, ZV_WS_TEXT, MSG, key);
    memset(frame + frame_len, 'a', MSG);
    zv_ws_mask(frame + frame_len, MSG, key, 0);
    frame_len += MSG;
  } else {
    uint8_t z[MSG + 32];
    size_t zlen, head;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (strlen(json_msg) != MSG || deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY))
      return 2;
    zs.next_in = (Bytef *)json_msg;
    zs.avail_in = MSG;
    zs.next_out = z;
    zs.avail_out = sizeof z;
    deflate(&zs, Z_SYNC_FLUSH);
    zlen = sizeof z - zs.avail_out - 4; /* without 00 00 FF FF */
    deflateEnd(&zs);
    head = zv_ws_head(frame, 1, 1, ZV_WS_TEXT, zlen, key);
    memcpy(frame + head, z, zlen);
    zv_ws_mask(frame + head, zlen, key, 0);
    frame_len = head + zlen;
  }
  ep = epoll_create1(0);
  for (int i = 0; i < nconns; i++) {
    struct epoll_event e;
    conns[i].fd = connect_ws(port, argv[2]);
    if (conns[i].fd < 0) {
      fprintf(stderr, "connect/handshake %d failed\n", i);
      return 1;
    }
    e.events = EPOLLIN;
    e.data.ptr = &conns[i];
    epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &e);
    if (send_msgs(&conns[i], (unsigned)depth)) return 1;
    conns[i].inflight = (uint64_t)depth;
  }
  t0 = now();
  t1 = t0 + secs;
  while (now() < t1) {
    int n = epoll_wait(ep, evs, 256, 100);
    for (int i = 0; i < n; i++) {
      conn_t *c = evs[i].data.ptr;
      ssize_t r = read(c->fd, c->in + c->have, sizeof c->in - c->have);
      size_t off = 0;
      unsigned done = 0;
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
        done++;
      }
      memmove(c->in, c->in + off, c->have - off);
      c->have -= off;
      echoes += done;
      if (done && send_msgs(c, done)) return 1;
    }
  }
  printf("%.0f\n", (double)echoes / (now() - t0));
  return 0;
}
