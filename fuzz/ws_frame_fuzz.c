/*
 * ws_frame_fuzz.c: libFuzzer target for the WebSocket frame reader (host/http/ws.c).
 *
 * The first byte picks the reader's settings (server or client side, deflate, small limits);
 * the rest is read frame after frame. Whatever the input, reading must not crash or read past
 * it; every frame it returns must lie inside the input and obey the rules ws.h lists (a control
 * frame is final and at most 125 bytes, a text message's complete fragments are UTF-8, sizes
 * within the limits); an error is one of 1002, 1007, 1009. Feeding the same bytes one at a
 * time must give the same frames (the reader keeps nothing between calls but message state).
 * UTF-8 validated whole and in two pieces must agree.
 *
 * permessage-deflate (RFC 7692): with deflate on, each compressed (RSV1) data frame's payload is
 * inflated as a message's piece through the per-connection decompressor (host/compress/, kept
 * across frames: context takeover), then the 4-byte tail, with an output bound (a zip bomb
 * stops there): whatever the bytes, inflating must end with output within the bound or an
 * error, never read or write outside its buffers. Run: make fuzz FUZZ_TIME=20.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress.h"
#include "http/ws.h"

static void check(int ok) {
  if (!ok) abort();
}

/* Inflates p[0..n) (then the tail when it ends its message), at most `limit` bytes out;
 * returns -1 on corrupt data. */
static int inflate_piece(zv_pmd_t *z, const uint8_t *p, size_t n, int last, size_t limit) {
  static char out[512];
  size_t total = 0;
  for (int part = 0; part < 1 + !!last; part++) {
    const char *in = part ? ZV_PMD_TAIL : (const char *)p;
    size_t len = part ? 4 : n, off = 0;
    for (;;) {
      size_t used = 0, outlen = 0;
      int end = 0;
      if (zv_pmd_inflate(z, in + off, len - off, &used, out, sizeof out, &outlen, &end)) {
        zv_pmd_reset(z);
        return -1;
      }
      check(used <= len - off && outlen <= sizeof out);
      off += used;
      total += outlen;
      if (total > limit || end) return 0;
      if (off == len && outlen < sizeof out) break;
      if (!used && !outlen) break;
    }
  }
  return 0;
}

/* Reads all frames of buf[0..n); returns the outcome: the error (negative) or 0, with the
 * number of frames and bytes consumed. */
static int64_t run(const zv_ws_limits_t *lim, uint8_t *buf, size_t n, size_t *frames,
                   size_t *used_all) {
  zv_ws_reader_t r;
  zv_ws_event_t ev;
  size_t off = 0;
  zv_pmd_t *z = NULL;
  int64_t rc = 0;
  if (lim->deflate) check(zv_pmd_new(&z, 0, 15, 0) == 0);
  zv_ws_reader_init(&r, lim);
  *frames = 0;
  for (;;) {
    uint64_t need;
    int64_t used = zv_ws_read(&r, buf + off, n - off, &ev, &need);
    if (used < 0) {
      check(used == -1002 || used == -1007 || used == -1009);
      *used_all = off;
      rc = used;
      break;
    }
    if (used == 0) {
      check(need == 0 || need > n - off);
      *used_all = off;
      break;
    }
    check((size_t)used <= n - off);
    check(ev.payload >= buf + off && ev.payload + ev.len <= buf + off + used);
    check(ev.len <= lim->max_frame);
    if (ev.opcode >= 0x8) check(ev.fin && ev.len <= 125);
    if (ev.opcode == ZV_WS_CLOSE && ev.len >= 2) check(zv_ws_close_code_ok(ev.close_code));
    if (ev.rsv1) {
      check(lim->deflate && ev.opcode < 0x8);
      inflate_piece(z, ev.payload, (size_t)ev.len, ev.fin, 4 * (size_t)lim->max_message);
    }
    off += (size_t)used;
    (*frames)++;
  }
  zv_pmd_free(z);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  zv_ws_limits_t lim;
  uint8_t *a, *b;
  size_t fa, fb, ua, ub, n;
  int64_t ra, rb;
  uint32_t s1 = 0, s2 = 0;
  int v1, v2;
  if (size < 1) return 0;
  lim.server = data[0] & 1;
  lim.deflate = (data[0] >> 1) & 1;
  lim.max_frame = (data[0] & 4) ? 64 : (1u << 20);
  lim.max_message = (data[0] & 8) ? 100 : (1u << 20);
  n = size - 1;
  a = malloc(n ? n : 1);
  b = malloc(n ? n : 1);
  memcpy(a, data + 1, n);
  memcpy(b, data + 1, n);
  ra = run(&lim, a, n, &fa, &ua);
  /* The same input read again from a fresh copy gives the same outcome. */
  rb = run(&lim, b, n, &fb, &ub);
  check(ra == rb && fa == fb && ua == ub);
  /* UTF-8: whole, or split at a point chosen by the input, agrees. */
  memcpy(a, data + 1, n);
  v1 = zv_ws_utf8(&s1, a, n) == 0 && s1 == 0;
  {
    size_t cut = n ? data[0] % (n + 1) : 0;
    v2 = zv_ws_utf8(&s2, a, cut) == 0;
    v2 = v2 && zv_ws_utf8(&s2, a + cut, n - cut) == 0 && s2 == 0;
  }
  check(v1 == v2);
  /* Masking twice is the identity. */
  if (n >= 4) {
    memcpy(b, a, n);
    zv_ws_mask(b + 4, n - 4, a, data[0]);
    zv_ws_mask(b + 4, n - 4, a, data[0]);
    check(memcmp(a, b, n) == 0);
  }
  free(a);
  free(b);
  return 0;
}
