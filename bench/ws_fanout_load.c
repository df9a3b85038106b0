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
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "../host/http/ws.h"
#include "ws_load.h"

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

/* A receiver: ws_connect, then the app's one-byte "j" text frame (the connection is in the
 * room). Returns the descriptor, non-blocking, or -1. */
static int connect_room(int port) {
  uint8_t buf[3];
  int fd = ws_connect(port, "/room", "");
  if (fd < 0 || read(fd, buf, 3) != 3 || buf[2] != 'j') return -1;
  ws_nonblock(fd);
  return fd;
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
    conns[i].fd = connect_room(port);
    if (conns[i].fd < 0) {
      fprintf(stderr, "connect/handshake %d failed\n", i);
      return 1;
    }
    e.events = EPOLLIN;
    e.data.ptr = &conns[i];
    epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &e);
  }
  sender = ws_connect(port, "/pub", "");
  if (sender >= 0) ws_nonblock(sender);
  if (sender < 0) {
    fprintf(stderr, "sender: connect/handshake failed\n");
    return 1;
  }
  if (ws_send_frames(sender, frame, frame_len, (unsigned)depth)) return 1;
  sent = (uint64_t)depth;
  t0 = ws_now();
  t1 = t0 + secs;
  while ((t = ws_now()) < t1) {
    int n = epoll_wait(ep, evs, 256, 100);
    uint64_t low;
    for (int i = 0; i < n; i++) {
      conn_t *c = evs[i].data.ptr;
      long got = ws_read_frames(c->fd, c->in, sizeof c->in, &c->have);
      if (got < 0) return 1;
      c->got += (uint64_t)got;
      deliveries += (uint64_t)got;
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
        if (ws_send_frames(sender, frame, frame_len, k)) return 1;
        sent += k;
        more -= k;
      }
    }
  }
  t = ws_now() - t0;
  for (int i = 0; i < nrecv; i++)
    if (conns[i].got + (uint64_t)depth < sent) lost += sent - (uint64_t)depth - conns[i].got;
  printf("%.0f %.0f %llu\n", (double)deliveries / t, (double)done / t, (unsigned long long)lost);
  return 0;
}
