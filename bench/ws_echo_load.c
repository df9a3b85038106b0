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
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <zlib.h>

#include "../host/http/ws.h"
#include "ws_load.h"

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
    conns[i].fd = ws_connect(port, argv[2], deflate_on ? "Sec-WebSocket-Extensions: "
                             "permessage-deflate; client_no_context_takeover\r\n" : "");
    if (conns[i].fd < 0) {
      fprintf(stderr, "connect/handshake %d failed\n", i);
      return 1;
    }
    /* The 101 head alone: the server sends nothing else before our first message. */
    ws_nonblock(conns[i].fd);
    e.events = EPOLLIN;
    e.data.ptr = &conns[i];
    epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &e);
    if (ws_send_frames(conns[i].fd, frame, frame_len, (unsigned)depth)) return 1;
    conns[i].inflight = (uint64_t)depth;
  }
  t0 = ws_now();
  t1 = t0 + secs;
  while (ws_now() < t1) {
    int n = epoll_wait(ep, evs, 256, 100);
    for (int i = 0; i < n; i++) {
      conn_t *c = evs[i].data.ptr;
      long done = ws_read_frames(c->fd, c->in, sizeof c->in, &c->have);
      if (done < 0) return 1;
      echoes += (uint64_t)done;
      if (done && ws_send_frames(c->fd, frame, frame_len, (unsigned)done)) return 1;
    }
  }
  printf("%.0f\n", (double)echoes / (ws_now() - t0));
  return 0;
}
