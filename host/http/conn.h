/*
 * conn.h: the socket-free core of an HTTP/1.1 server connection: bytes in, requests and
 * protocol errors out, response heads built into a reusable buffer.
 *
 * It must not include lua.h or uv.h: it is fuzzed and benchmarked on its own. It parses with
 * its own strict RFC 9112 parser (parse.c for the pieces, this file for the state between reads)
 * and enforces zever's limits; docs/http-server.md says why it no longer uses http-parser.
 *
 * One buffer holds everything a request needs, so the request is never copied:
 *
 *   buf: [ request N: line, headers, body ........ | pipelined bytes .... | free ...... ]
 *        0         ^url_off  ^headers[i] offsets    ^pos (parsed so far)  ^len         ^cap
 *
 * Header names and values, the URL and the body are (offset, length) pairs into buf, so the
 * buffer may grow (realloc) without invalidating them. A chunked body is decoded in place: each
 * decoded piece is moved down to follow the previous one, so the body is one contiguous run.
 * When a request is complete the parser pauses; the request stays valid until zv_http_conn_next
 * drops its bytes and moves the pipelined rest to the front. Nothing is allocated per request
 * once the buffer has grown to the connection's usual size.
 *
 * Life of a request:   IDLE --first byte--> HEAD --headers--> BODY --last byte--> DONE
 *                        ^                                                         |
 *                        +-------------------- zv_http_conn_next ------------------+
 * Any violation moves to ERROR with an HTTP status to answer before closing.
 */
#ifndef ZV_HTTP_CONN_H
#define ZV_HTTP_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "parse.h"

#define ZV_HTTP_MAX_HEADERS 100             /* more header lines: 431 */
#define ZV_HTTP_MAX_HEADER_LIMIT (64 << 10) /* the largest max_header_bytes accepted */
#define ZV_HTTP_MAX_BODY_LIMIT (1u << 30)   /* the largest max_body_bytes accepted */
#define ZV_HTTP_BUF_MIN 4096                /* a fresh connection's buffer */

typedef struct {
  uint32_t max_header_bytes; /* request line + headers; over: 431 (414 for the line alone) */
  uint32_t max_body_bytes;   /* decoded body; over: 413 */
  /* A body larger than ZV_HTTP_STREAM_ABOVE (or chunked, or announced with Expect:
   * 100-continue) is streamed: the request is reported at the end of its head (HEADERS) and
   * the body is taken piece by piece (zv_http_conn_body_take), up to this many bytes in all;
   * over: 413. 0: no streaming (every body is buffered whole under max_body_bytes). */
  uint64_t max_stream_bytes;
} zv_http_limits_t;

#define ZV_HTTP_STREAM_ABOVE (64u << 10) /* a Content-Length above this streams */
#define ZV_HTTP_STREAM_WINDOW (256u << 10) /* body bytes buffered ahead of a streaming reader */
#define ZV_HTTP_MAX_STREAM_LIMIT ((uint64_t)1 << 50) /* the largest max_stream_bytes */

typedef struct {
  uint32_t name_off, name_len, value_off, value_len;
} zv_http_header_t;

enum zv_http_state {
  ZV_HTTP_IDLE = 0, /* between requests: nothing of the next one parsed yet */
  ZV_HTTP_HEAD,     /* inside the request line or headers */
  ZV_HTTP_BODY,     /* headers done, body incomplete */
  ZV_HTTP_DONE,     /* a complete request waits for its response */
  ZV_HTTP_ERROR     /* the input is unusable: answer conn->status and close */
};

enum zv_http_event {
  ZV_HTTP_NEED_MORE = 0, /* all input parsed; read more */
  ZV_HTTP_REQUEST,       /* a complete request is ready (state DONE) */
  ZV_HTTP_CONTINUE,      /* send "100 Continue", then parse again */
  ZV_HTTP_FAIL,          /* answer conn->status and close (state ERROR) */
  ZV_HTTP_HEADERS        /* the head of a request whose body streams (state BODY, streamed):
                          * dispatch it now; later parses return NEED_MORE as body bytes come
                          * and REQUEST when the body is complete */
};

/* The parser's state between reads. The head is parsed one complete line at a time: a line
 * split by a read waits in the buffer (scan remembers how far it holds no LF), so nothing is
 * parsed twice and nothing is copied. */
typedef struct {
  uint8_t method;         /* enum zv_http_method */
  uint8_t http_major, http_minor;
  uint8_t phase;          /* what the bytes at pos are (conn.c's enum phase) */
  uint8_t line_done;      /* the request line is parsed */
  uint8_t ntrailers;
  uint8_t conn_flags;     /* ZV_HTTP_CONN_* of the Connection headers */
  uint8_t has_upgrade;    /* an Upgrade header */
  uint8_t nhost, ncl, nte;
  uint32_t trailer_bytes; /* the chunked body's trailer section so far */
  uint16_t te_status;     /* 0 (chunked), 400 or 501: the Transfer-Encoding's verdict */
  size_t line;            /* where the line being parsed starts */
  size_t scan;            /* bytes from line to scan hold no LF */
  uint64_t content_length;/* the declared Content-Length (0 when none) */
  uint64_t remaining;     /* body bytes still to come: of the Content-Length, or of the chunk */
} zv_http_parser_t;

typedef struct {
  zv_http_parser_t parser;
  zv_http_limits_t limits;
  char *buf;
  size_t len, cap, pos;
  size_t start;           /* where the current request began */
  int state;              /* enum zv_http_state */
  int status;             /* the status to answer in state ERROR */
  /* the current request */
  uint32_t url_off, url_len;
  uint32_t path_len;      /* the URL up to '?' */
  int32_t query_off;      /* offset of the query after '?', or -1 */
  uint32_t query_len;
  uint32_t nheaders;
  zv_http_header_t headers[ZV_HTTP_MAX_HEADERS];
  uint32_t body_off, body_len;
  uint8_t body_started;
  uint8_t keep_alive;     /* the request lets the connection stay open */
  uint8_t expect_continue;/* the client waits for "100 Continue" before its body */
  uint8_t continue_due;   /* CONTINUE is the next event */
  uint8_t upgrade;        /* the request asked for another protocol: close after it */
  uint8_t chunked;
  uint8_t streamed;       /* the body streams (HEADERS was reported) */
  uint8_t buffer_all;     /* a streamed body is to be buffered whole after all (not taken) */
  uint8_t continue_sent;  /* a streamed body's "100 Continue" went out */
  uint64_t body_taken;    /* bytes of a streamed body taken (and dropped) so far */
} zv_http_conn_t;

/* Prepares a connection with its limits; allocates the first buffer. 0 or ZV_ENOMEM. */
int zv_http_conn_init(zv_http_conn_t *c, const zv_http_limits_t *limits);

/* Makes an initialized connection fresh for a new client, keeping its buffer. */
void zv_http_conn_reset(zv_http_conn_t *c);

/* Frees the buffer; the struct may be initialized again. */
void zv_http_conn_free(zv_http_conn_t *c);

/*
 * Space to read into: *p and *n (0 when the connection should not read now: a request waits
 * for its response and the buffer is full, or the input already reached its limit). May grow
 * the buffer; returns 0 or ZV_ENOMEM.
 */
int zv_http_conn_space(zv_http_conn_t *c, char **p, size_t *n);

/* Records that n bytes were written at the pointer zv_http_conn_space gave. */
void zv_http_conn_commit(zv_http_conn_t *c, size_t n);

/*
 * Parses what was committed and returns the next event (enum zv_http_event). Call it again
 * after CONTINUE. After REQUEST, it returns NEED_MORE until zv_http_conn_next; after FAIL it
 * keeps returning FAIL.
 */
int zv_http_conn_parse(zv_http_conn_t *c);

/*
 * Drops the answered request and moves pipelined bytes to the front; the connection is IDLE
 * again (or HEAD when those bytes are already a partial request, which parse will find out).
 * May shrink a buffer that grew large for one request.
 */
void zv_http_conn_next(zv_http_conn_t *c);

/*
 * A streamed body: body_off/body_len hold the decoded bytes not taken yet. Take drops the first
 * n of them (n <= body_len), so the buffer makes room for more. Buffer-all turns a streamed body
 * into a buffered one (the route reads it whole): its limit becomes max_body_bytes again;
 * returns 0, or 413 when the bytes taken or announced are over that already.
 */
void zv_http_conn_body_take(zv_http_conn_t *c, size_t n);
int zv_http_conn_buffer_all(zv_http_conn_t *c);

/* True when bytes beyond the current request are buffered and not parsed yet. */
int zv_http_conn_pending(const zv_http_conn_t *c);

/* The request's method name ("GET") and HTTP minor version (0 or 1). */
const char *zv_http_conn_method(const zv_http_conn_t *c);
int zv_http_conn_is_head(const zv_http_conn_t *c);

/*
 * Finds a header by name (case-insensitive). Returns the index of the first match at or after
 * *from, or -1; set *from to 0 to begin and to index + 1 to find the next one.
 */
int zv_http_conn_header(const zv_http_conn_t *c, const char *name, size_t len, uint32_t *from);

/* --- responses ---------------------------------------------------------------------------- */

/* A growable byte buffer with a sticky error (ZV_ENOMEM after a failed growth). */
typedef struct {
  char *p;
  size_t len, cap;
  int err;
} zv_http_buf_t;

void zv_http_buf_add(zv_http_buf_t *b, const char *s, size_t n);
void zv_http_buf_free(zv_http_buf_t *b);

/* The reason phrase of a status ("Not Found"); "Unknown" for codes it does not know. */
const char *zv_http_reason(int status);

/* Formats an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT", 29 bytes and a NUL) into out. */
void zv_http_date(int64_t unix_seconds, char out[32]);

/* What a response head says about framing and the connection. */
typedef struct {
  int status;
  int64_t content_length; /* -1: none (streaming or no body) */
  int chunked;            /* Transfer-Encoding: chunked */
  int close;              /* Connection: close */
  const char *date;       /* 29 bytes, or NULL for no Date header */
} zv_http_head_t;

/*
 * Checks one response header given by the application: the name must be a token and the value
 * free of CR, LF and NUL. Returns 0 or ZV_EINVAL. Sets *skip when the header is one the server
 * computes itself (Content-Length, Transfer-Encoding, Connection), *is_close when it is
 * "Connection: close", and *is_date / *is_server when the application gives its own.
 */
typedef struct {
  int skip, is_close, is_date, is_server;
} zv_http_hdrinfo_t;
int zv_http_check_header(const char *name, size_t nlen, const char *value, size_t vlen,
                         zv_http_hdrinfo_t *info);

/* Appends "HTTP/1.1 <status> <reason>\r\n" to b (after clearing it). */
void zv_http_head_begin(zv_http_buf_t *b, int status);
/* Appends "name: value\r\n"; the caller checked the header with zv_http_check_header. */
void zv_http_head_add(zv_http_buf_t *b, const char *name, size_t nlen, const char *value,
                      size_t vlen);
/* Appends the framing and Date/Server headers and the blank line. server: add "Server: zever". */
void zv_http_head_end(zv_http_buf_t *b, const zv_http_head_t *h, int server);

#endif
