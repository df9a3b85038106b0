/*
 * ws_bench.c: the WebSocket frame core (host/http/ws.c). WsReadEcho64 is the server's per-message
 * work of a 64-byte echo without the socket: read one masked 64-byte text frame from a buffer
 * of 1024 of them (unmask in place, UTF-8 check), and write the reply's head. WsUtf8 validates
 * 64 KiB of mostly-ASCII text with some multibyte characters (MB/s); WsMask64KiB unmasks
 * 64 KiB (MB/s). None allocates.
 */
#include "bench.h"
#include "../host/http/ws.h"

#define FRAMES 1024
#define PAYLOAD 64
static uint8_t wire[FRAMES * (PAYLOAD + 6)], work[sizeof wire];

static void bench_read_echo(zv_bench_t *b) {
  static const uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};
  zv_ws_limits_t lim = {1u << 20, 1u << 20, 1, 0};
  zv_ws_reader_t r;
  size_t off = 0;
  for (int i = 0; i < FRAMES; i++) {
    uint8_t *p = wire + (size_t)i * (PAYLOAD + 6);
    size_t h = zv_ws_head(p, 1, 0, ZV_WS_TEXT, PAYLOAD, key);
    for (int j = 0; j < PAYLOAD; j++) p[h + j] = (uint8_t)('a' + (i + j) % 26);
    zv_ws_mask(p + h, PAYLOAD, key, 0);
  }
  memcpy(work, wire, sizeof wire);
  zv_ws_reader_init(&r, &lim);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_ws_event_t ev;
    uint64_t need;
    uint8_t head[ZV_WS_MAX_HEAD];
    int64_t used;
    if (off == sizeof work) {
      off = 0;
      /* Frames are unmasked in place: start again from a masked copy (a memcpy per 1024). */
      memcpy(work, wire, sizeof wire);
    }
    used = zv_ws_read(&r, work + off, sizeof work - off, &ev, &need);
    if (used <= 0) abort();
    off += (size_t)used;
    zv_bench_keep(zv_ws_head(head, 1, 0, ZV_WS_TEXT, ev.len, NULL) + ev.payload[0]);
  }
}

#define BIG (64 * 1024)
static uint8_t text[BIG];

static void bench_utf8(zv_bench_t *b) {
  for (size_t i = 0; i < BIG; i++) text[i] = (uint8_t)('a' + i % 26);
  for (size_t i = 0; i + 2 < BIG; i += 97) {
    text[i] = 0xC3;
    text[i + 1] = 0xA9;
  }
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    uint32_t st = 0;
    if (zv_ws_utf8(&st, text, BIG) || st) abort();
    zv_bench_keep(st);
  }
}

static void bench_mask(zv_bench_t *b) {
  static const uint8_t key[4] = {1, 2, 3, 4};
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_ws_mask(text, BIG, key, i);
    zv_bench_keep(text[i % BIG]);
  }
}

ZV_BENCH_MAIN(ZV_BENCH(WsReadEcho64, bench_read_echo) ZV_BENCH(WsUtf8_64KiB, bench_utf8)
              ZV_BENCH(WsMask64KiB, bench_mask))
