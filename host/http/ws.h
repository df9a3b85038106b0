/*
 * ws.h: the socket-free core of WebSockets (RFC 6455): frame heads parsed and encoded, payloads
 * unmasked, fragmented messages checked, UTF-8 of text validated incrementally, close payloads
 * checked, and the handshake's Sec-WebSocket-Accept computed (SHA-1 + base64, here, so that the
 * core links nothing).
 *
 * It must not include lua.h or uv.h: it is fuzzed (fuzz/ws_frame_fuzz.c) and benchmarked on its
 * own. It never allocates: the reader works in the caller's buffer, unmasking in place.
 *
 * A frame on the wire:
 *
 *   byte 0: FIN RSV1 RSV2 RSV3 opcode(4)     byte 1: MASK len7
 *   len7 = 126: 2 more length bytes; 127: 8 more (the top bit must be 0)
 *   MASK: 4 key bytes, then the payload XORed with the key (client to server: always)
 *
 *   buf: [ head | payload .............. | next frame ...
 *          ^ zv_ws_read consumes head + payload of one complete frame, or nothing (NEED)
 *
 * The reader's rules, each failing with the close code the peer gets:
 *   1002 protocol error: an unmasked frame from a client (or a masked one from a server), RSV
 *        bits not negotiated (RSV1 is permessage-deflate's, on a message's first frame only),
 *        a reserved opcode, a control frame fragmented or longer than 125, a continuation with
 *        no message open, a data frame while one is open, a 64-bit length with its top bit
 *        set, a close payload of 1 byte or with a code one may not send
 *   1007 invalid payload: text (or a close reason) that is not UTF-8; checked as fragments
 *        arrive, so a bad byte is refused without waiting for the message's end
 *   1009 too big: a frame over max_frame, a message over max_message
 * A compressed (RSV1) text message's UTF-8 is the caller's to check after inflating.
 */
#ifndef ZV_WS_H
#define ZV_WS_H

#include <stddef.h>
#include <stdint.h>

enum zv_ws_opcode {
  ZV_WS_CONT = 0x0, ZV_WS_TEXT = 0x1, ZV_WS_BINARY = 0x2,
  ZV_WS_CLOSE = 0x8, ZV_WS_PING = 0x9, ZV_WS_PONG = 0xA
};

#define ZV_WS_NEED 0          /* zv_ws_read: no complete frame yet */
#define ZV_WS_MAX_HEAD 14     /* the longest frame head: 2 + 8 + 4 */

typedef struct {
  uint64_t max_frame;   /* the largest payload of one frame; over: 1009 */
  uint64_t max_message; /* the largest message (fragments together); over: 1009 */
  uint8_t server;       /* reading a client's frames: they must be masked */
  uint8_t deflate;      /* permessage-deflate was negotiated: RSV1 allowed on a first frame */
} zv_ws_limits_t;

typedef struct {
  zv_ws_limits_t lim;
  uint8_t in_message;   /* a fragmented data message is open */
  uint8_t msg_opcode;   /* its opcode (TEXT or BINARY) */
  uint8_t msg_rsv1;     /* it is compressed */
  uint64_t msg_len;     /* its payload so far */
  uint32_t utf8;        /* the UTF-8 validator's state across its fragments */
} zv_ws_reader_t;

/* One frame read: payload points into the caller's buffer, unmasked. */
typedef struct {
  uint8_t opcode;       /* the frame's own (CONT for a continuation) */
  uint8_t message;      /* the message's opcode: TEXT or BINARY for data, else the control's */
  uint8_t fin;          /* the last frame of its message */
  uint8_t rsv1;         /* the message is compressed */
  uint8_t *payload;
  uint64_t len;
  uint16_t close_code;  /* CLOSE: the code sent (1005 when none) */
  const uint8_t *reason;/* CLOSE: the reason (UTF-8, checked) */
  size_t reason_len;
} zv_ws_event_t;

void zv_ws_reader_init(zv_ws_reader_t *r, const zv_ws_limits_t *lim);

/*
 * Reads one complete frame from buf[0..n): returns the bytes it took (head + payload) and fills
 * ev, unmasking the payload in place; ZV_WS_NEED (0) when buf holds no complete frame yet (read
 * more; *need says how many bytes the frame takes in all, when its head is complete, else 0);
 * or a negative value: -(close code) (-1002, -1007, -1009) after which the reader is unusable.
 */
int64_t zv_ws_read(zv_ws_reader_t *r, uint8_t *buf, size_t n, zv_ws_event_t *ev,
                   uint64_t *need);

/*
 * Writes a frame head into out (ZV_WS_MAX_HEAD bytes) and returns its length. mask is NULL for
 * a server's frames, else 4 key bytes (the caller masks the payload with zv_ws_mask).
 */
size_t zv_ws_head(uint8_t *out, int fin, int rsv1, int opcode, uint64_t len,
                  const uint8_t *mask);

/* XORs p[0..n) with key, starting at key position offset % 4 (masking is its own inverse). */
void zv_ws_mask(uint8_t *p, size_t n, const uint8_t key[4], uint64_t offset);

/* Validates UTF-8 incrementally: *state starts at 0; returns 0 while valid so far, -1 at the
 * first invalid byte. The text is complete and valid when the last call leaves *state == 0. */
int zv_ws_utf8(uint32_t *state, const uint8_t *p, size_t n);

/* Whether a close code may be sent on the wire (1000-1003, 1007-1011, 3000-4999). */
int zv_ws_close_code_ok(unsigned code);

/* Sec-WebSocket-Accept of a Sec-WebSocket-Key: base64(SHA-1(key + GUID)), 28 chars + NUL. */
void zv_ws_accept(const char *key, size_t len, char out[29]);

/* SHA-1 of p[0..n) (for the handshake only: not for anything that needs a secure hash). */
void zv_ws_sha1(const uint8_t *p, size_t n, uint8_t out[20]);

#endif
