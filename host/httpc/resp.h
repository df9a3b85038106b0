/*
 * resp.h: the HTTP/1.1 client's pure core: an incremental response parser (RFC 9112) and the
 * request head writer.
 *
 * It must not include lua.h or uv.h: the fuzz target (fuzz/httpc_resp_fuzz.c) and the spec's
 * golden rows (through l_httpc.c) drive it with bytes alone.
 *
 * The parser is pulled: each call consumes input until it has one event to report, so a
 * caller that wants one body piece at a time (a streaming body) stops reading the socket
 * between events, and the body is never copied here (a BODY event points into the input).
 *
 *   zv_httpc_resp_t (the caller's memory; no allocation, ever)
 *   +-----------------------------+
 *   | state        STATUS..DONE   |    head[]: the status line and header lines, kept
 *   | head[ZV_HTTPC_HEAD_MAX]     |    until HEAD is reported: fields are (offset, length)
 *   | fields[] -> (off, len) x 4  |    pairs into it
 *   | framing: length / chunked / |
 *   |          until close / none |
 *   +-----------------------------+
 *
 *   feed(bytes) -> NONE (all taken, want more) | HEAD | BODY(p, n) | DONE | error
 *   eof()       -> DONE (a body delimited by the close) | error (truncated)
 *
 * Interim 1xx responses (100, 103) are skipped; 101 is reported as a final head (the caller
 * does not ask for an upgrade, so it is a protocol error for it).
 */
#ifndef ZV_HTTPC_RESP_H
#define ZV_HTTPC_RESP_H

#include <stddef.h>
#include <stdint.h>

#define ZV_HTTPC_HEAD_MAX 16384 /* status line + header lines, bytes */
#define ZV_HTTPC_FIELDS_MAX 100

enum {
  ZV_HTTPC_EV_NONE = 0, /* all input taken; feed more */
  ZV_HTTPC_EV_HEAD,     /* the head is complete: status, version, fields */
  ZV_HTTPC_EV_BODY,     /* ev_p, ev_n: body bytes (inside the input just fed) */
  ZV_HTTPC_EV_DONE      /* the message is complete; keep_alive says whether to reuse */
};

typedef struct {
  uint16_t name_off, name_len;
  uint16_t val_off, val_len;
} zv_httpc_field_t;

typedef struct {
  int state;
  int no_body;        /* set by the caller before feeding: a response to HEAD or CONNECT */
  int status;         /* 100..999 */
  int minor;          /* HTTP/1.<minor> */
  int keep_alive;     /* valid after HEAD: the connection may carry another request */
  int framing;        /* internal: how the body ends */
  uint64_t remaining; /* bytes left in the body (length) or in the chunk */
  uint64_t content_length; /* UINT64_MAX when the response has none */
  size_t line;        /* bytes of the current chunk-size or trailer line */
  size_t head_len;
  size_t nfields;
  zv_httpc_field_t fields[ZV_HTTPC_FIELDS_MAX];
  const char *ev_p;   /* BODY: the piece */
  size_t ev_n;
  char head[ZV_HTTPC_HEAD_MAX];
} zv_httpc_resp_t;

/* Readies r for a response (no_body: the request was HEAD, or CONNECT). Allocates nothing. */
void zv_httpc_resp_init(zv_httpc_resp_t *r, int no_body);

/*
 * Consumes p[0, n) up to the next event; *used is what it took (the rest is fed again after
 * the event is handled). Returns an event (>= 0) or ZV_ESYNTAX (a malformed response),
 * ZV_ETOOLONG (a head above ZV_HTTPC_HEAD_MAX, more than ZV_HTTPC_FIELDS_MAX fields, a chunk
 * line too long) or ZV_EINVAL (fed after DONE or an error). After an error r stays failed.
 */
int zv_httpc_resp_feed(zv_httpc_resp_t *r, const char *p, size_t n, size_t *used);

/* The peer closed: DONE for a body that runs until the close, ZV_EIO (truncated) otherwise. */
int zv_httpc_resp_eof(zv_httpc_resp_t *r);

/* The reason phrase of the status line (after HEAD). */
const char *zv_httpc_resp_reason(const zv_httpc_resp_t *r, size_t *len);

/*
 * Writes a request head into out (cap bytes): "<method> <target> HTTP/1.1\r\n", the fields
 * (names[i]: values[i]) and the empty line. *len is its length. Returns 0, ZV_EINVAL (a method
 * that is not a token, a target with a space or control byte, a name that is not a token, a
 * value with CR, LF or NUL: nothing a caller passes can split the request) or ZV_ERANGE (cap).
 */
int zv_httpc_write_head(char *out, size_t cap, size_t *len, const char *method, size_t mlen,
                        const char *target, size_t tlen, const char *const *names,
                        const size_t *nlens, const char *const *values, const size_t *vlens,
                        size_t nfields);

/* The bytes zv_httpc_write_head needs for these parts. */
size_t zv_httpc_head_size(size_t mlen, size_t tlen, const size_t *nlens, const size_t *vlens,
                          size_t nfields);

#endif
