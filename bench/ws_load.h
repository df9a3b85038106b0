/*
 * ws_load.h: what the WebSocket load clients share (bench/ws_echo_load.c, bench/ws_fanout_load.c):
 * the clock, the handshake, writing n copies of a masked frame, and reading the server's frames
 * (unmasked, payloads under 126 bytes: 2-byte heads) from one connection. Header-only: each
 * client is one C file built alone by its script (cc ... bench/X_load.c host/http/ws.c).
 */
#ifndef ZV_BENCH_WS_LOAD_H
#define ZV_BENCH_WS_LOAD_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

static double ws_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Connects to ws://127.0.0.1:port/path (extra: more request header lines, each ending in
 * \r\n, or ""), reads the 101 head and nothing more; the socket stays blocking (ws_nonblock).
 * Returns the descriptor, or -1. */
static int ws_connect(int port, const char *path, const char *extra) {
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
           "Sec-WebSocket-Version: 13\r\n%s\r\n", path, extra);
  if (write(fd, req, strlen(req)) < 0) return -1;
  /* Byte by byte up to the blank line: what follows the head is the caller's. */
  while (got < sizeof buf - 1) {
    ssize_t r = read(fd, buf + got, 1);
    if (r <= 0) return -1;
    got++;
    if (got >= 4 && !memcmp(buf + got - 4, "\r\n\r\n", 4)) break;
  }
  buf[got] = 0;
  if (strncmp(buf, "HTTP/1.1 101", 12)) return -1;
  return fd;
}

static void ws_nonblock(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Writes n (at most 64) copies of frame in one write. Small writes to a socket with room: a
 * short write would only mean a stalled server; it is an error (the counts stay honest). */
static int ws_send_frames(int fd, const uint8_t *frame, size_t frame_len, unsigned n) {
  uint8_t out[128 * 64];
  size_t len = 0;
  if (n > 64 || frame_len > 128) return -1;
  while (n--) {
    memcpy(out + len, frame, frame_len);
    len += frame_len;
  }
  return write(fd, out, len) == (ssize_t)len ? 0 : -1;
}

/* One read from a ready connection into in[*have..cap); consumes the whole frames that are
 * there and keeps the rest. Returns how many frames, 0 on EAGAIN, -1 when the connection was
 * lost (the message is printed). */
static long ws_read_frames(int fd, uint8_t *in, size_t cap, size_t *have) {
  ssize_t r = read(fd, in + *have, cap - *have);
  size_t off = 0;
  long frames = 0;
  if (r <= 0) {
    if (r < 0 && errno == EAGAIN) return 0;
    fprintf(stderr, "connection lost\n");
    return -1;
  }
  *have += (size_t)r;
  while (*have - off >= 2) {
    size_t len = in[off + 1] & 0x7F;
    if (*have - off < 2 + len) break;
    off += 2 + len;
    frames++;
  }
  memmove(in, in + off, *have - off);
  *have -= off;
  return frames;
}

#endif
