/*
 * ws.c: WebSocket frames (RFC 6455): the reader's rules, frame heads, masking, incremental
 * UTF-8 validation and the handshake's accept key. ws.h says what each rule answers; nothing
 * here allocates or knows about sockets.
 */
#include "ws.h"

#include <string.h>

void zv_ws_reader_init(zv_ws_reader_t *r, const zv_ws_limits_t *lim) {
  memset(r, 0, sizeof *r);
  r->lim = *lim;
}

/* --- UTF-8 ---------------------------------------------------------------------------------
 * The state packs what the next byte must be: bits 0-7 how many continuation bytes are still
 * due, bits 8-15 and 16-23 the range the next one must fall in (narrower than 80..BF right after
 * E0, ED, F0 and F4: no overlong forms, no surrogates, nothing above U+10FFFF). */
#define U8(left, lo, hi) ((uint32_t)(left) | ((uint32_t)(lo) << 8) | ((uint32_t)(hi) << 16))

int zv_ws_utf8(uint32_t *state, const uint8_t *p, size_t n) {
  uint32_t s = *state;
  size_t i = 0;
  while (i < n) {
    uint8_t b = p[i];
    if (s == 0) {
      /* ASCII runs, 8 bytes at a time when aligned enough to matter. */
      while (i + 8 <= n) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ull) break;
        i += 8;
      }
      if (i >= n) break;
      b = p[i];
      if (b < 0x80) s = 0;
      else if (b >= 0xC2 && b <= 0xDF) s = U8(1, 0x80, 0xBF);
      else if (b == 0xE0) s = U8(2, 0xA0, 0xBF);
      else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) s = U8(2, 0x80, 0xBF);
      else if (b == 0xED) s = U8(2, 0x80, 0x9F);
      else if (b == 0xF0) s = U8(3, 0x90, 0xBF);
      else if (b >= 0xF1 && b <= 0xF3) s = U8(3, 0x80, 0xBF);
      else if (b == 0xF4) s = U8(3, 0x80, 0x8F);
      else {
        *state = s;
        return -1;
      }
    } else {
      uint32_t left = s & 0xFF, lo = (s >> 8) & 0xFF, hi = (s >> 16) & 0xFF;
      if (b < lo || b > hi) {
        *state = s;
        return -1;
      }
      s = left > 1 ? U8(left - 1, 0x80, 0xBF) : 0;
    }
    i++;
  }
  *state = s;
  return 0;
}

/* --- masking --------------------------------------------------------------------------------- */

void zv_ws_mask(uint8_t *p, size_t n, const uint8_t key[4], uint64_t offset) {
  uint8_t k[8];
  size_t i = 0;
  for (int j = 0; j < 8; j++) k[j] = key[(offset + (uint64_t)j) & 3];
  if (n >= 8) {
    uint64_t kw;
    memcpy(&kw, k, 8);
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      memcpy(&w, p + i, 8);
      w ^= kw;
      memcpy(p + i, &w, 8);
    }
  }
  for (; i < n; i++) p[i] ^= k[i & 7];
}

/* --- heads ----------------------------------------------------------------------------------- */

size_t zv_ws_head(uint8_t *out, int fin, int rsv1, int opcode, uint64_t len,
                  const uint8_t *mask) {
  size_t n = 2;
  out[0] = (uint8_t)((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | (opcode & 0x0F));
  if (len < 126) {
    out[1] = (uint8_t)len;
  } else if (len <= 0xFFFF) {
    out[1] = 126;
    out[2] = (uint8_t)(len >> 8);
    out[3] = (uint8_t)len;
    n = 4;
  } else {
    out[1] = 127;
    for (int i = 0; i < 8; i++) out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    n = 10;
  }
  if (mask) {
    out[1] |= 0x80;
    memcpy(out + n, mask, 4);
    n += 4;
  }
  return n;
}

int zv_ws_close_code_ok(unsigned code) {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
         (code >= 3000 && code <= 4999);
}

/* --- the reader ------------------------------------------------------------------------------ */

static int is_control(unsigned op) { return op >= 0x8; }

int64_t zv_ws_read(zv_ws_reader_t *r, uint8_t *buf, size_t n, zv_ws_event_t *ev,
                   uint64_t *need) {
  unsigned fin, rsv, op, masked;
  uint64_t len;
  size_t head = 2;
  uint8_t key[4] = {0, 0, 0, 0};
  *need = 0;
  if (n < 2) return ZV_WS_NEED;
  fin = buf[0] >> 7;
  rsv = (buf[0] >> 4) & 7;
  op = buf[0] & 0x0F;
  masked = buf[1] >> 7;
  len = buf[1] & 0x7F;
  /* The rules that the first two bytes decide, before waiting for the rest. */
  if (masked != r->lim.server) return -1002;
  if (op != ZV_WS_CONT && op != ZV_WS_TEXT && op != ZV_WS_BINARY && op != ZV_WS_CLOSE &&
      op != ZV_WS_PING && op != ZV_WS_PONG)
    return -1002;
  if (rsv & 3) return -1002;
  if ((rsv & 4) && (!r->lim.deflate || op == ZV_WS_CONT || is_control(op))) return -1002;
  if (is_control(op) && (!fin || len > 125)) return -1002;
  if (op == ZV_WS_CONT && !r->in_message) return -1002;
  if ((op == ZV_WS_TEXT || op == ZV_WS_BINARY) && r->in_message) return -1002;
  if (len == 126) {
    if (n < 4) return ZV_WS_NEED;
    len = ((uint64_t)buf[2] << 8) | buf[3];
    head = 4;
  } else if (len == 127) {
    if (n < 10) return ZV_WS_NEED;
    if (buf[2] & 0x80) return -1002;
    len = 0;
    for (int i = 0; i < 8; i++) len = (len << 8) | buf[2 + i];
    head = 10;
  }
  if (len > r->lim.max_frame) return -1009;
  if (!is_control(op)) {
    uint64_t so_far = op == ZV_WS_CONT ? r->msg_len : 0;
    if (len > r->lim.max_message || so_far > r->lim.max_message - len) return -1009;
  }
  if (masked) {
    if (n < head + 4) return ZV_WS_NEED;
    memcpy(key, buf + head, 4);
    head += 4;
  }
  *need = head + len;
  if ((uint64_t)(n - head) < len) return ZV_WS_NEED;
  /* A complete frame. */
  memset(ev, 0, sizeof *ev);
  ev->payload = buf + head;
  ev->len = len;
  ev->opcode = (uint8_t)op;
  ev->fin = (uint8_t)fin;
  if (masked) zv_ws_mask(ev->payload, (size_t)len, key, 0);
  if (is_control(op)) {
    ev->message = (uint8_t)op;
    if (op == ZV_WS_CLOSE) {
      ev->close_code = 1005;
      if (len == 1) return -1002;
      if (len >= 2) {
        uint32_t st = 0;
        unsigned code = ((unsigned)ev->payload[0] << 8) | ev->payload[1];
        if (!zv_ws_close_code_ok(code)) return -1002;
        ev->close_code = (uint16_t)code;
        ev->reason = ev->payload + 2;
        ev->reason_len = (size_t)len - 2;
        if (zv_ws_utf8(&st, ev->reason, ev->reason_len) || st) return -1007;
      }
    }
    return (int64_t)(head + len);
  }
  if (op != ZV_WS_CONT) {
    r->in_message = 1;
    r->msg_opcode = (uint8_t)op;
    r->msg_rsv1 = (uint8_t)((rsv & 4) != 0);
    r->msg_len = 0;
    r->utf8 = 0;
  }
  r->msg_len += len;
  ev->message = r->msg_opcode;
  ev->rsv1 = r->msg_rsv1;
  if (r->msg_opcode == ZV_WS_TEXT && !r->msg_rsv1) {
    if (zv_ws_utf8(&r->utf8, ev->payload, (size_t)len)) return -1007;
    if (fin && r->utf8) return -1007;
  }
  if (fin) r->in_message = 0;
  return (int64_t)(head + len);
}

/* --- the handshake: SHA-1 (FIPS 180-4) and base64 ---------------------------------------------- */

static uint32_t rol(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

static void sha1_block(uint32_t h[5], const uint8_t *p) {
  uint32_t w[80], a, b, c, d, e;
  for (int i = 0; i < 16; i++)
    w[i] = ((uint32_t)p[4 * i] << 24) | ((uint32_t)p[4 * i + 1] << 16) |
           ((uint32_t)p[4 * i + 2] << 8) | p[4 * i + 3];
  for (int i = 16; i < 80; i++) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4];
  for (int i = 0; i < 80; i++) {
    uint32_t f, k, t;
    if (i < 20) { f = (b & c) | (~b & d); k = 0x5A827999; }
    else if (i < 40) { f = b ^ c ^ d; k = 0x6ED9EBA1; }
    else if (i < 60) { f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC; }
    else { f = b ^ c ^ d; k = 0xCA62C1D6; }
    t = rol(a, 5) + f + e + k + w[i];
    e = d; d = c; c = rol(b, 30); b = a; a = t;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
}

void zv_ws_sha1(const uint8_t *p, size_t n, uint8_t out[20]) {
  uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  uint8_t last[128];
  size_t full = n / 64 * 64, rest = n - full, tail;
  uint64_t bits = (uint64_t)n * 8;
  for (size_t i = 0; i < full; i += 64) sha1_block(h, p + i);
  memset(last, 0, sizeof last);
  if (rest) memcpy(last, p + full, rest);
  last[rest] = 0x80;
  tail = rest + 1 + 8 <= 64 ? 64 : 128;
  for (int i = 0; i < 8; i++) last[tail - 1 - i] = (uint8_t)(bits >> (8 * i));
  sha1_block(h, last);
  if (tail == 128) sha1_block(h, last + 64);
  for (int i = 0; i < 5; i++) {
    out[4 * i] = (uint8_t)(h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(h[i] >> 8);
    out[4 * i + 3] = (uint8_t)h[i];
  }
}

void zv_ws_accept(const char *key, size_t len, char out[29]) {
  static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  uint8_t buf[128 + sizeof guid], d[21];
  size_t n = len > 128 ? 128 : len; /* a real key is 24 chars; a longer one cannot match */
  memcpy(buf, key, n);
  memcpy(buf + n, guid, sizeof guid - 1);
  zv_ws_sha1(buf, n + sizeof guid - 1, d);
  d[20] = 0;
  for (int i = 0, o = 0; i < 21; i += 3, o += 4) {
    uint32_t v = ((uint32_t)d[i] << 16) | ((uint32_t)(i + 1 < 21 ? d[i + 1] : 0) << 8) |
                 (i + 2 < 21 ? d[i + 2] : 0);
    out[o] = b64[(v >> 18) & 63];
    out[o + 1] = b64[(v >> 12) & 63];
    out[o + 2] = b64[(v >> 6) & 63];
    out[o + 3] = b64[v & 63];
  }
  out[27] = '=';
  out[28] = 0;
}
