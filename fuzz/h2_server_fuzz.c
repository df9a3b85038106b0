/*
 * h2_server_fuzz.c: libFuzzer target for the HTTP/2 server path (host/h2/ over the HTTP
 * server, host/http/): whatever bytes a client sends after the HTTP/2 preface go through the
 * real server on a real loopback connection: nghttp2's session, our callbacks (headers, bodies,
 * resets, limits), each complete stream run as a virtual connection by the core, responses
 * parsed back onto the streams, GOAWAY and close.
 *
 * One server for the run (127.0.0.1, an ephemeral port, h2c with prior knowledge). Per input: a
 * client connects, sends the preface (unless the first byte says not to: HTTP/1.1 then passes
 * through the layer) and the input in chunks of a size the second byte picks, with turns of
 * the loop in between; the application answers each request in one of six ways (at once,
 * a large body past the flow-control window, later and in reverse order, streamed in chunks,
 * with a Content-Length stream, or not at all: aborted), chosen from the input and a counter.
 * The client reads what comes back and closes; the server must then close every connection of
 * the input (its streams' too). A crash, an ASan/UBSan report or a connection left open fails.
 * Run: make fuzz FUZZ_TIME=60 (or build/fuzz/h2_server_fuzz -max_total_time=60 DIR).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "h2/h2.h"
#include "http/server.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define MAX_DEFER 256

static uv_loop_t loop;
static zv_http_server_t srv;
static zv_h2_ctx_t *ctx;
static int started;
static unsigned mode;
static zv_http_sconn_t *deferred[MAX_DEFER];
static size_t ndefer;
static char big[100000];

static void check(int ok) {
  if (!ok) abort();
}

static const zv_http_str_t HDRS[2] = {{"Content-Type", 12}, {"text/plain", 10}};

static void answer(zv_http_sconn_t *c, size_t len) {
  zv_http_respond(c, 200, HDRS, 1, big, len);
}

static void on_request(zv_http_server_t *s, zv_http_sconn_t *c) {
  unsigned k = (unsigned)((s->requests + mode) % 6);
  switch (k) {
  case 0: answer(c, 2); break;
  case 1: answer(c, (size_t)(s->requests * 7919 % sizeof big)); break;
  case 2:
    if (ndefer < MAX_DEFER) {
      c->data = &deferred[ndefer];
      deferred[ndefer++] = c;
    } else {
      answer(c, 5);
    }
    break;
  case 3:
    if (zv_http_write_head(c, 200, HDRS, 1) == 0 && zv_http_write(c, big, 1000) == 0 &&
        zv_http_write(c, big, 70000) == 0)
      zv_http_finish(c);
    break;
  case 4:
    if (zv_http_write_head_len(c, 201, HDRS, 1, 300) == 0 && zv_http_write(c, big, 300) == 0)
      zv_http_finish(c);
    break;
  default: zv_http_abort(c); break;
  }
}

static void on_conn_close(zv_http_server_t *s, zv_http_sconn_t *c) {
  (void)s;
  if (c->data) {
    *(zv_http_sconn_t **)c->data = NULL;
    c->data = NULL;
  }
}

static void on_closed(zv_http_server_t *s) {
  (void)s;
}

static void start(void) {
  zv_http_server_opts_t o;
  zv_http_server_cb_t cb;
  memset(&cb, 0, sizeof cb);
  memset(big, 'x', sizeof big);
  uv_loop_init(&loop);
  ctx = zv_h2_ctx_new(NULL, NULL);
  check(ctx != NULL);
  zv_http_server_defaults(&o);
  o.host = "127.0.0.1";
  o.port = 0;
  o.reuseport = 0;
  o.limits.max_header_bytes = 4096;
  o.limits.max_body_bytes = 64 << 10;
  o.xport = zv_h2_xport();
  o.xport_ctx = ctx;
  cb.on_request = on_request;
  cb.on_conn_close = on_conn_close;
  cb.on_closed = on_closed;
  check(zv_http_server_start(&srv, &loop, &o, &cb, NULL) == 0);
  started = 1;
}

static void turn(int fd) {
  char sink[65536];
  uv_run(&loop, UV_RUN_NOWAIT);
  while (read(fd, sink, sizeof sink) > 0) {
  }
}

static void answer_deferred(void) {
  /* Later, and the last first: streams answer out of their order. */
  while (ndefer) {
    zv_http_sconn_t *c = deferred[--ndefer];
    if (c) {
      c->data = NULL;
      answer(c, ndefer * 131 % 3000);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct sockaddr_in a;
  size_t off = 2, chunk;
  int fd, i;
  if (size < 2) return 0;
  if (!started) start();
  mode = data[0] & 0x3f;
  chunk = 1 + (size_t)data[1] * 4;
  fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  check(fd >= 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)srv.port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(connect(fd, (struct sockaddr *)&a, sizeof a) == 0 || errno == EINPROGRESS);
  for (i = 0; i < 50 && srv.nconns == 0; i++) turn(fd);
  if (!(data[0] & 0x80) && write(fd, PREFACE, sizeof PREFACE - 1) < 0) {
  }
  while (off < size) {
    size_t n = size - off < chunk ? size - off : chunk;
    ssize_t w = write(fd, data + off, n);
    if (w <= 0) break;
    off += (size_t)w;
    turn(fd);
    turn(fd);
    if (data[0] & 0x40) answer_deferred();
  }
  for (i = 0; i < 4; i++) turn(fd);
  answer_deferred();
  for (i = 0; i < 4; i++) turn(fd);
  close(fd);
  for (i = 0; i < 200 && srv.nconns; i++) uv_run(&loop, UV_RUN_NOWAIT);
  /* Still open (a linger, a write the kernel holds): closed now, as a drain's deadline would. */
  while (srv.conns) zv_http_abort(srv.conns);
  for (i = 0; i < 20 && srv.nconns; i++) uv_run(&loop, UV_RUN_NOWAIT);
  check(srv.nconns == 0);
  check(ndefer == 0);
  return 0;
}
