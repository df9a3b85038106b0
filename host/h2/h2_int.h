/*
 * h2_int.h: what the files of the HTTP/2 layer share (not for use outside host/h2): the states
 * of a connection (hconn_t), of a request stream as nghttp2 delivers it (req_t) and of the
 * virtual connection that runs it (stream_t), the growable buffer, and the cross-file calls.
 *
 *   h2.c          the transport (x_*: sniffing, reads, writes, drain, close) and the context
 *     |-> h2_recv.c   client -> core: nghttp2's receive callbacks, a complete request handed to
 *     |                a virtual connection as HTTP/1.1 bytes (deliver, zv__h2_stream_read)
 *     |-> h2_send.c   core -> client: a stream's HTTP/1.1 response parsed back into a head
 *     |                and DATA (zv__h2_stream_write, nghttp2's data source)
 *     +-> h2_io.c     frames in and out: the lower transport, zv__h2_feed, zv__h2_pump
 *
 * Calls go down that picture only: h2.c calls the three below it; h2_recv.c, h2_send.c and
 * h2_io.c call no other file of the layer (they share the buffer helpers below). nghttp2 calls
 * h2_recv.c's callbacks from inside zv__h2_feed and h2_send.c's data source from inside
 * zv__h2_pump: through the session, not by a call of h2_io.c's own.
 *
 * It must not include lua.h; the public interface is h2.h.
 */
#ifndef ZV_H2_H2_INT_H
#define ZV_H2_H2_INT_H

#include <string.h>
#include <sys/types.h>

#include <nghttp2/nghttp2.h>

#include "../core/zv.h"
#include "../http/server.h"
#include "h2.h"

#define PREFACE_LEN 24 /* "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" */
#define MAX_STREAMS 128

struct zv_h2_ctx_s {
  const zv_http_xport_t *lower;
  void *lower_ctx;
  int refs;
};

typedef struct {
  char *p;
  size_t len, cap, off;
} buf_t;

enum { K_CONN, K_STREAM }; /* the first field of both states: what x_* was given */

typedef struct stream_s stream_t;
typedef struct hconn_s hconn_t;

typedef struct req_s {
  int32_t id;
  buf_t head;                 /* fields, as HTTP/1.1 lines */
  buf_t cookie;               /* cookie crumbs, joined with "; " */
  buf_t body;
  buf_t out;                  /* the response body not yet taken by nghttp2 */
  char method[16];
  char *path, *authority;
  size_t hbytes;              /* header block bytes (names + values) */
  uint8_t complete;           /* END_STREAM seen: ready for the core */
  uint8_t delivered, closed, out_eof, deferred, is_head, bad;
  stream_t *st;               /* the virtual connection running it, while it runs */
  struct req_s *aprev, *anext; /* every stream of the connection (nghttp2 frees none of them) */
} req_t;

/* A request stream's virtual connection: its state (xp) in the server. */
struct stream_s {
  int kind;                   /* K_STREAM */
  hconn_t *h;                 /* NULL once the connection closed */
  req_t *q;                   /* NULL once the stream closed */
  zv_http_sconn_t *c;         /* the virtual connection */
  buf_t deliver;              /* the request as HTTP/1.1 bytes, read by the core */
  /* The response parser. */
  int rstate;
  buf_t rhead;
  uint64_t rleft;
  uint8_t done;               /* the response was parsed to its end */
  stream_t *prev, *next;      /* the connection's running streams */
};

enum { M_SNIFF, M_PASS, M_H2 };
enum { R_HEAD, R_BODY, R_CSIZE, R_CDATA, R_CCRLF, R_TRAILER, R_DONE };

struct hconn_s {
  int kind;                   /* K_CONN */
  zv_h2_ctx_t *ctx;
  zv_http_sconn_t *c;
  void *lower_xp;
  nghttp2_session *s;
  int mode;
  char sniff[PREFACE_LEN];
  size_t nsniff, sniff_off;   /* bytes read while sniffing; given back in PASS */
  req_t *all;
  stream_t *running;          /* streams handed to the core (virtual connections) */
  uint32_t nrunning;
  uint32_t active;            /* streams handed to the core and not closed: busy while > 0 */
  size_t body_waiting;        /* request body bytes held, all streams */
  size_t out_waiting;         /* response bytes held, all streams */
  uint64_t resets, answered;
  uint8_t fatal;              /* the session failed or was told to go away: close after pump */
  uint8_t in_pump, in_recv;
  uint8_t goaway;             /* the drain's GOAWAY was sent */
  uint8_t flush_wanted;       /* a stream wrote: pump at the end of the idle pass (x_flush) */
};

/* --- buffers (inline: the receive callbacks and the response parser append to them per
 * header and per chunk) ------------------------------------------------------------------------ */

static inline int buf_add(buf_t *b, const void *p, size_t n) {
  if (n == 0) return 0; /* (an empty value: b->p may be NULL, no memcpy from or to it) */
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    char *np;
    while (cap < b->len + n) cap *= 2;
    np = zv_realloc(b->p, cap);
    if (!np) return -1;
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
  return 0;
}

static inline int buf_str(buf_t *b, const char *s) {
  return buf_add(b, s, strlen(s));
}

static inline void buf_free(buf_t *b) {
  zv_free(b->p);
  memset(b, 0, sizeof *b);
}

/* --- h2_io.c ---------------------------------------------------------------------------------- */

/* Reads plaintext from below (the lower transport, or the socket as stream.c would). */
ssize_t zv__h2_lower_read(zv_http_sconn_t *c, hconn_t *h, char *p, size_t n);
int zv__h2_lower_write(zv_http_sconn_t *c, hconn_t *h, const uv_buf_t *bufs, unsigned n);
/* Sends what the session has to send. 0, or -1 when the connection closed (h is freed). */
int zv__h2_pump(zv_http_sconn_t *c, hconn_t *h);
/* Feeds n bytes of input to the session and sends what it answers. 0, or -1 (errno set; the
 * connection may be closed). */
int zv__h2_feed(zv_http_sconn_t *c, hconn_t *h, const char *p, size_t n);

/* --- h2_recv.c -------------------------------------------------------------------------------- */

/* The server session of h with the receive callbacks and zever's SETTINGS; 0, or -1. */
int zv__h2_session_start(zv_http_sconn_t *c, hconn_t *h);
/* Frees q and unlinks it from h (and from its stream, if one runs it). */
void zv__h2_req_free(hconn_t *h, req_t *q);
void zv__h2_stream_free(stream_t *st);
/* A stream's request, as HTTP/1.1 bytes, for the core. */
ssize_t zv__h2_stream_read(zv_http_sconn_t *c, stream_t *st, char *p, size_t n);

/* --- h2_send.c -------------------------------------------------------------------------------- */

/* A stream's HTTP/1.1 response from the core, parsed onto the stream. */
int zv__h2_stream_write(zv_http_sconn_t *c, stream_t *st, const uv_buf_t *bufs, unsigned n);

#endif
