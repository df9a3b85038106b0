/*
 * conn.c: HTTP/1.1 request parsing with limits, and response heads (see conn.h for the buffer
 * layout and the states, parse.h for the grammar of each piece).
 *
 * It must not touch sockets, libuv or Lua, and must not allocate per request: the only
 * allocations are the connection buffer's growth and shrinking, and a response buffer's growth.
 * Everything a client sends ends in a request, a wait for more bytes, or a status to answer
 * (400, 408 is the server's, 413, 414, 417, 431, 501, 505): never in a crash, an unbounded
 * buffer, or a request the bytes do not unambiguously frame.
 *
 * The head is parsed a line at a time: memchr finds the LF (glibc scans a vector at a time),
 * then the line is checked in one pass (names by a 256-entry table, values 8 bytes at a time).
 * A line that a read split is not looked at until its LF arrives: scan remembers where the
 * search stopped, so no byte is searched twice. The body is either counted (Content-Length) or
 * chunked, decoded in place:
 *
 *   chunked phases:  SIZE --"hex[;ext]\r\n"--> DATA --n bytes--> CR --> LF --> SIZE ...
 *                    SIZE --"0[;ext]\r\n"--> TRAILER --field lines, then an empty line--> done
 *
 * Bare LF ends a line of the head and of the trailer section (RFC 9112 §2.2 lets a server
 * accept it there, as nginx does) but never a line of the chunked framing, where only CRLF is
 * allowed: anything else right after chunk data is the classic smuggling hazard.
 */
#include "conn.h"

#include <string.h>
#include <strings.h>
#include <time.h>

#include "../core/zv.h"

#define READ_MIN 2048          /* read at least this much at a time when the buffer can grow */
#define SHRINK_ABOVE (64 << 10) /* a buffer larger than this returns to ZV_HTTP_BUF_MIN */
#define SLACK (16 << 10)       /* room beyond the limits: pipelined bytes, chunk framing */
#define CHUNK_LINE_MAX 1024    /* a chunk-size line with its extensions; longer: 400 */

enum phase { PH_HEAD, PH_LENGTH, PH_SIZE, PH_DATA, PH_CR, PH_LF, PH_TRAILER };

/* Internal results beside enum zv_http_event: a request line begins, the head is complete. */
enum { BEGIN = -1, HEAD_DONE = -2 };

static void reset_request(zv_http_conn_t *c) {
  c->status = 0;
  c->url_off = c->url_len = 0;
  c->path_len = 0;
  c->query_off = -1;
  c->query_len = 0;
  c->nheaders = 0;
  c->body_off = c->body_len = 0;
  c->body_started = 0;
  c->keep_alive = 0;
  c->expect_continue = 0;
  c->continue_due = 0;
  c->upgrade = 0;
  c->chunked = 0;
  c->streamed = c->buffer_all = c->continue_sent = 0;
  c->body_taken = 0;
  memset(&c->parser, 0, sizeof c->parser);
}

static int fail(zv_http_conn_t *c, int status) {
  c->status = status;
  c->state = ZV_HTTP_ERROR;
  return ZV_HTTP_FAIL;
}

static int name_is(const zv_http_conn_t *c, const zv_http_header_t *h, const char *name,
                   size_t len) {
  return h->name_len == len && !strncasecmp(c->buf + h->name_off, name, len);
}

static int value_is(const zv_http_conn_t *c, const zv_http_header_t *h, const char *value,
                    size_t len) {
  return h->value_len == len && !strncasecmp(c->buf + h->value_off, value, len);
}

/* True when the header's name (a token: parse_field checked it) is lc, a lower-case name of
 * letters and "-". Inline, without strncasecmp: for a token byte, ch | 0x20 is a lower-case
 * letter only when ch is that letter in either case, and "-" only when ch is "-". */
static int token_is(const zv_http_conn_t *c, const zv_http_header_t *h, const char *lc,
                    size_t len) {
  const char *p = c->buf + h->name_off;
  if (h->name_len != len) return 0;
  for (size_t i = 0; i < len; i++)
    if ((p[i] | 0x20) != lc[i]) return 0;
  return 1;
}

/* Parses the request line buf[off, end); 0 or the status to fail with. */
static int request_line(zv_http_conn_t *c, size_t off, size_t end) {
  zv_http_reqline_t rl;
  int rc = zv_http_parse_request_line(c->buf, off, end, &rl);
  if (rc) return rc;
  c->parser.method = (uint8_t)rl.method;
  c->parser.http_major = (uint8_t)rl.major;
  c->parser.http_minor = (uint8_t)rl.minor;
  c->parser.line_done = 1;
  c->url_off = rl.url_off;
  c->url_len = rl.url_len;
  c->path_len = rl.url_len;
  if (rl.query_at >= 0) {
    c->path_len = (uint32_t)rl.query_at;
    c->query_off = (int32_t)(rl.url_off + c->path_len + 1);
    c->query_len = rl.url_len - c->path_len - 1;
  }
  return 0;
}

/* Records the header h, whose line ends at end, and acts on the ones that decide framing; 0 or
 * the status to fail with. A repeat of Host, Content-Length or Transfer-Encoding is a 400
 * whatever the values. */
static int header_seen(zv_http_conn_t *c, const zv_http_header_t *h, size_t end) {
  zv_http_parser_t *ps = &c->parser;
  const char *v = c->buf + h->value_off;
  switch (h->name_len) {
  case 4:
    if (token_is(c, h, "host", 4)) {
      if (++ps->nhost > 1 || !zv_http_host_ok(v, h->value_len)) return 400;
    }
    break;
  case 6:
    /* An HTTP/1.0 client cannot wait for 100 Continue: RFC 9110 §10.1.1 ignores it there. */
    if (token_is(c, h, "expect", 6) && ps->http_minor >= 1) {
      if (!value_is(c, h, "100-continue", 12)) return 417;
      c->expect_continue = 1;
    }
    break;
  case 7:
    if (token_is(c, h, "upgrade", 7)) ps->has_upgrade = 1;
    break;
  case 10:
    if (token_is(c, h, "connection", 10))
      ps->conn_flags |= (uint8_t)zv_http_parse_connection(v, h->value_len);
    break;
  case 14:
    if (token_is(c, h, "content-length", 14)) {
      if (++ps->ncl > 1 || zv_http_parse_length(v, h->value_len, &ps->content_length)) return 400;
    }
    break;
  case 17:
    if (token_is(c, h, "transfer-encoding", 17)) {
      const char *colon = c->buf + h->name_off + h->name_len;
      if (++ps->nte > 1) return 400;
      ps->te_status = (uint16_t)zv_http_parse_te(v, h->value_len);
      /* RFC 9110 lets OWS be a tab, but nginx and other front ends do not see chunked in
       * "\tchunked": a back end that does is the other half of a desync. nginx answers 501. */
      if (memchr(colon, '\t', (size_t)(c->buf + end - colon))) ps->te_status = 400;
    }
    break;
  }
  return 0;
}

/* Parses the field line buf[off, end) of the head; 0 or the status to fail with. */
static int header_line(zv_http_conn_t *c, size_t off, size_t end) {
  size_t nlen, vat, vlen;
  zv_http_header_t *h;
  int rc;
  if (c->nheaders == ZV_HTTP_MAX_HEADERS) return 431;
  rc = zv_http_parse_field(c->buf + off, end - off, &nlen, &vat, &vlen);
  if (rc) return rc;
  h = &c->headers[c->nheaders++];
  h->name_off = (uint32_t)off;
  h->name_len = (uint32_t)nlen;
  h->value_off = (uint32_t)(off + vat);
  h->value_len = (uint32_t)vlen;
  return header_seen(c, h, end);
}

/* The most body bytes the current request may have: a streamed one's limit is the larger of
 * the two (the binding applies a route's own); a buffered one's max_body_bytes. */
static uint64_t body_limit(const zv_http_conn_t *c) {
  if (c->streamed && !c->buffer_all)
    return c->limits.max_stream_bytes > c->limits.max_body_bytes ? c->limits.max_stream_bytes
                                                                  : c->limits.max_body_bytes;
  return c->limits.max_body_bytes;
}

/* The head is complete (c->pos is the body's first byte): decides the framing. 0 or the status
 * to fail with. Order matters only for which status a request with several faults gets. */
static int head_done(zv_http_conn_t *c) {
  zv_http_parser_t *ps = &c->parser;
  if (ps->http_minor >= 1 ? ps->nhost != 1 : ps->nhost > 1) return 400;
  if (ps->nte) {
    /* RFC 9112 §6.1: HTTP/1.0 has no Transfer-Encoding (a 1.0 proxy may have passed it on
     * without decoding); §6.3: with Content-Length too, the framing is ambiguous. */
    if (ps->http_minor == 0 || ps->ncl) return 400;
    if (ps->te_status) return ps->te_status;
    c->chunked = 1;
  }
  if (c->limits.max_stream_bytes &&
      (c->chunked || ps->content_length > ZV_HTTP_STREAM_ABOVE ||
       (c->expect_continue && ps->content_length))) {
    c->streamed = 1;
    if (ps->content_length > body_limit(c)) return 413;
  } else if (ps->content_length > c->limits.max_body_bytes) {
    return 413;
  }
  c->upgrade = ps->has_upgrade && (ps->conn_flags & ZV_HTTP_CONN_UPGRADE);
  if (ps->http_minor >= 1) c->keep_alive = !(ps->conn_flags & ZV_HTTP_CONN_CLOSE);
  else c->keep_alive = (ps->conn_flags & (ZV_HTTP_CONN_CLOSE | ZV_HTTP_CONN_KEEP_ALIVE)) ==
                       ZV_HTTP_CONN_KEEP_ALIVE;
  if (c->upgrade) c->keep_alive = 0;
  c->body_off = (uint32_t)c->pos;
  c->body_started = 1;
  if (c->chunked) {
    ps->phase = PH_SIZE;
  } else {
    ps->phase = PH_LENGTH;
    ps->remaining = ps->content_length;
  }
  ps->line = ps->scan = c->pos;
  /* A streamed body's 100 Continue waits for its reader (the binding sends it). */
  if (c->expect_continue && !c->streamed && (c->chunked || ps->content_length))
    c->continue_due = 1;
  return 0;
}

/* Finds the next LF of the line at ps->line, from ps->scan on; its offset, or -1 (scan moves
 * to the end of the input). */
static long find_lf(zv_http_conn_t *c) {
  zv_http_parser_t *ps = &c->parser;
  const char *nl = memchr(c->buf + ps->scan, '\n', c->len - ps->scan);
  if (!nl) {
    ps->scan = c->len;
    return -1;
  }
  return nl - c->buf;
}

/* Parses head lines until the head ends (HEAD_DONE), the input does (NEED_MORE), or a line
 * fails (FAIL). */
static int parse_head(zv_http_conn_t *c) {
  zv_http_parser_t *ps = &c->parser;
  for (;;) {
    long lf = find_lf(c);
    size_t e, start = ps->line, end;
    int rc;
    if (lf < 0) {
      if (c->len - c->start > c->limits.max_header_bytes) return fail(c, ps->line_done ? 431 : 414);
      return ZV_HTTP_NEED_MORE;
    }
    e = (size_t)lf;
    if (e + 1 - c->start > c->limits.max_header_bytes) return fail(c, ps->line_done ? 431 : 414);
    end = e > start && c->buf[e - 1] == '\r' ? e - 1 : e;
    c->pos = ps->line = ps->scan = e + 1;
    if (!ps->line_done) {
      rc = request_line(c, start, end);
    } else if (end == start) {
      rc = head_done(c);
      if (!rc) return HEAD_DONE;
    } else {
      rc = header_line(c, start, end);
    }
    if (rc) return fail(c, rc);
  }
}

/* Parses a line of the trailer section; the body is done (DONE) at the empty line. Trailer
 * fields are checked like head fields and dropped: nothing reads them. */
static int trailer_line(zv_http_conn_t *c, size_t start, size_t end) {
  zv_http_parser_t *ps = &c->parser;
  size_t nlen, vat, vlen;
  if (end == start) {
    c->state = ZV_HTTP_DONE;
    return 0;
  }
  if (++ps->ntrailers > ZV_HTTP_MAX_HEADERS) return 431;
  return zv_http_parse_field(c->buf + start, end - start, &nlen, &vat, &vlen);
}

/* Parses body bytes until the request is complete (state DONE), the input ends (NEED_MORE) or
 * the framing fails. */
static int parse_body(zv_http_conn_t *c) {
  zv_http_parser_t *ps = &c->parser;
  while (c->state == ZV_HTTP_BODY) {
    size_t avail = c->len - c->pos, n, e, start = ps->line;
    long lf;
    int rc;
    switch (ps->phase) {
    case PH_LENGTH:
    case PH_DATA:
      n = avail < ps->remaining ? avail : (size_t)ps->remaining;
      if (n == 0 && ps->remaining) return ZV_HTTP_NEED_MORE;
      /* Chunked: decode in place by moving this piece down behind the previous one. */
      if (c->pos != (size_t)c->body_off + c->body_len)
        memmove(c->buf + c->body_off + c->body_len, c->buf + c->pos, n);
      c->body_len += (uint32_t)n;
      c->pos += n;
      ps->remaining -= n;
      if (ps->remaining == 0) {
        if (ps->phase == PH_LENGTH) c->state = ZV_HTTP_DONE;
        else ps->phase = PH_CR;
      }
      break;
    case PH_CR:
    case PH_LF:
      if (avail == 0) return ZV_HTTP_NEED_MORE;
      if (c->buf[c->pos] != (ps->phase == PH_CR ? '\r' : '\n')) return fail(c, 400);
      c->pos++;
      if (ps->phase == PH_CR) {
        ps->phase = PH_LF;
      } else {
        ps->phase = PH_SIZE;
        ps->line = ps->scan = c->pos;
      }
      break;
    case PH_SIZE:
      lf = find_lf(c);
      if (lf < 0) {
        if (c->len - start > CHUNK_LINE_MAX) return fail(c, 400);
        return ZV_HTTP_NEED_MORE;
      }
      e = (size_t)lf;
      /* Only CRLF ends a chunk-size line: a bare LF is refused at once, never waited on. */
      if (e - start > CHUNK_LINE_MAX || e == start || c->buf[e - 1] != '\r') return fail(c, 400);
      if (zv_http_parse_chunk_size(c->buf + start, e - 1 - start, &ps->remaining))
        return fail(c, 400);
      c->pos = ps->line = ps->scan = e + 1;
      if (ps->remaining == 0) {
        ps->phase = PH_TRAILER;
      } else {
        uint64_t seen = c->body_taken + c->body_len, limit = body_limit(c);
        if (seen > limit || ps->remaining > limit - seen) return fail(c, 413);
        ps->phase = PH_DATA;
      }
      break;
    case PH_TRAILER:
      lf = find_lf(c);
      if (lf < 0) {
        if (ps->trailer_bytes + (c->len - start) > c->limits.max_header_bytes) return fail(c, 431);
        return ZV_HTTP_NEED_MORE;
      }
      e = (size_t)lf;
      ps->trailer_bytes += (uint32_t)(e + 1 - start);
      if (ps->trailer_bytes > c->limits.max_header_bytes) return fail(c, 431);
      c->pos = ps->line = ps->scan = e + 1;
      rc = trailer_line(c, start, e > start && c->buf[e - 1] == '\r' ? e - 1 : e);
      if (rc) return fail(c, rc);
      break;
    }
  }
  return ZV_HTTP_REQUEST;
}

int zv_http_conn_init(zv_http_conn_t *c, const zv_http_limits_t *limits) {
  memset(c, 0, offsetof(zv_http_conn_t, headers));
  c->limits = *limits;
  if (c->limits.max_header_bytes > ZV_HTTP_MAX_HEADER_LIMIT)
    c->limits.max_header_bytes = ZV_HTTP_MAX_HEADER_LIMIT;
  if (c->limits.max_body_bytes > ZV_HTTP_MAX_BODY_LIMIT)
    c->limits.max_body_bytes = ZV_HTTP_MAX_BODY_LIMIT;
  if (c->limits.max_stream_bytes > ZV_HTTP_MAX_STREAM_LIMIT)
    c->limits.max_stream_bytes = ZV_HTTP_MAX_STREAM_LIMIT;
  c->buf = zv_alloc(ZV_HTTP_BUF_MIN);
  if (!c->buf) return ZV_ENOMEM;
  c->cap = ZV_HTTP_BUF_MIN;
  reset_request(c);
  c->state = ZV_HTTP_IDLE;
  return 0;
}

void zv_http_conn_reset(zv_http_conn_t *c) {
  c->len = c->pos = c->start = 0;
  if (c->cap > SHRINK_ABOVE) {
    char *nb = zv_realloc(c->buf, ZV_HTTP_BUF_MIN);
    if (nb) {
      c->buf = nb;
      c->cap = ZV_HTTP_BUF_MIN;
    }
  }
  reset_request(c);
  c->state = ZV_HTTP_IDLE;
}

void zv_http_conn_free(zv_http_conn_t *c) {
  zv_free(c->buf);
  c->buf = NULL;
  c->len = c->cap = c->pos = 0;
}

static size_t hard_cap(const zv_http_conn_t *c) {
  /* A streamed body that is taken piece by piece needs a window, not room for all of it. */
  if (c->streamed && !c->buffer_all && c->state == ZV_HTTP_BODY)
    return (size_t)c->body_off + ZV_HTTP_STREAM_WINDOW + SLACK;
  return (size_t)c->limits.max_header_bytes + c->limits.max_body_bytes + SLACK;
}

int zv_http_conn_space(zv_http_conn_t *c, char **p, size_t *n) {
  size_t avail, want, newcap;
  char *nb;
  if (c->state == ZV_HTTP_ERROR) {
    *n = 0;
    return 0;
  }
  avail = c->cap - c->len;
  /* Chunked framing already parsed is dead weight between the body and the unparsed rest. */
  if (avail < READ_MIN && c->state == ZV_HTTP_BODY && c->chunked) {
    size_t body_end = (size_t)c->body_off + c->body_len;
    if (c->pos > body_end) {
      size_t d = c->pos - body_end;
      memmove(c->buf + body_end, c->buf + c->pos, c->len - c->pos);
      c->len -= d;
      c->pos = body_end;
      /* A line being parsed (a chunk-size or trailer line) starts at pos; elsewhere line and
       * scan are not used until they are set again. */
      c->parser.line = c->pos;
      c->parser.scan = c->parser.scan >= c->pos + d ? c->parser.scan - d : c->pos;
      avail = c->cap - c->len;
    }
  }
  if ((avail >= READ_MIN || c->state == ZV_HTTP_DONE) &&
      !(c->streamed && !c->buffer_all && c->state == ZV_HTTP_BODY && c->cap < hard_cap(c))) {
    *p = c->buf + c->len;
    *n = avail;
    return 0;
  }
  want = c->cap * 2;
  /* A streamed body reads a window at a time (the buffer shrinks back after the request). */
  if (c->streamed && !c->buffer_all && c->state == ZV_HTTP_BODY) want = hard_cap(c);
  if (c->state == ZV_HTTP_BODY && !c->chunked && c->parser.content_length < hard_cap(c) &&
      c->pos + c->parser.content_length + READ_MIN > want)
    want = c->pos + (size_t)c->parser.content_length + READ_MIN;
  newcap = want < hard_cap(c) ? want : hard_cap(c);
  if (newcap > c->cap) {
    nb = zv_realloc(c->buf, newcap);
    if (!nb) return ZV_ENOMEM;
    c->buf = nb;
    c->cap = newcap;
    avail = c->cap - c->len;
  }
  *p = c->buf + c->len;
  *n = avail;
  return 0;
}

void zv_http_conn_commit(zv_http_conn_t *c, size_t n) {
  c->len += n;
}

/* Drops the empty lines RFC 9112 §2.2 lets a client send before a request line. Returns
 * BEGIN when a request line begins at pos, else NEED_MORE or FAIL. */
static int skip_blank(zv_http_conn_t *c) {
  while (c->pos < c->len) {
    char ch = c->buf[c->pos];
    if (ch == '\n') {
      c->pos++;
    } else if (ch == '\r') {
      if (c->pos + 1 == c->len) return ZV_HTTP_NEED_MORE;
      if (c->buf[c->pos + 1] != '\n') return fail(c, 400);
      c->pos += 2;
    } else {
      return BEGIN;
    }
  }
  c->pos = c->len = c->start = 0;
  return ZV_HTTP_NEED_MORE;
}

int zv_http_conn_parse(zv_http_conn_t *c) {
  int rc;
  if (c->state == ZV_HTTP_ERROR) return ZV_HTTP_FAIL;
  if (c->state == ZV_HTTP_DONE) return ZV_HTTP_NEED_MORE;
  if (c->state == ZV_HTTP_IDLE) {
    if ((rc = skip_blank(c)) != BEGIN) return rc;
    /* The request's fields were reset by init, reset or next. */
    c->start = c->pos;
    c->parser.line = c->parser.scan = c->pos;
    c->state = ZV_HTTP_HEAD;
  }
  if (c->state == ZV_HTTP_HEAD) {
    if ((rc = parse_head(c)) != HEAD_DONE) return rc;
    c->state = ZV_HTTP_BODY;
    if (c->continue_due) {
      c->continue_due = 0;
      return ZV_HTTP_CONTINUE;
    }
    if (c->streamed) return ZV_HTTP_HEADERS;
  }
  return parse_body(c);
}

void zv_http_conn_next(zv_http_conn_t *c) {
  size_t rest = c->len - c->pos;
  if (rest && c->pos) memmove(c->buf, c->buf + c->pos, rest);
  c->len = rest;
  c->pos = 0;
  c->start = 0;
  reset_request(c);
  c->state = ZV_HTTP_IDLE;
  if (c->cap > SHRINK_ABOVE && rest <= ZV_HTTP_BUF_MIN) {
    char *nb = zv_realloc(c->buf, ZV_HTTP_BUF_MIN);
    if (nb) {
      c->buf = nb;
      c->cap = ZV_HTTP_BUF_MIN;
    }
  }
}

void zv_http_conn_body_take(zv_http_conn_t *c, size_t n) {
  size_t from;
  if (n > c->body_len) n = c->body_len;
  if (n == 0) return;
  /* Everything behind the taken bytes (the rest of the body, unparsed input) moves down. */
  from = (size_t)c->body_off + n;
  memmove(c->buf + c->body_off, c->buf + from, c->len - from);
  c->len -= n;
  c->pos -= n;
  c->parser.line = c->parser.line >= from ? c->parser.line - n : c->pos;
  c->parser.scan = c->parser.scan >= from ? c->parser.scan - n : c->pos;
  c->body_len -= (uint32_t)n;
  c->body_taken += n;
}

int zv_http_conn_buffer_all(zv_http_conn_t *c) {
  c->buffer_all = 1;
  if (c->body_taken + c->body_len > c->limits.max_body_bytes ||
      c->parser.content_length > c->limits.max_body_bytes)
    return 413;
  return 0;
}

int zv_http_conn_pending(const zv_http_conn_t *c) {
  return c->len > c->pos;
}

const char *zv_http_conn_method(const zv_http_conn_t *c) {
  return zv_http_method_name(c->parser.method);
}

int zv_http_conn_is_head(const zv_http_conn_t *c) {
  return c->parser.method == ZV_HTTP_M_HEAD;
}

int zv_http_conn_header(const zv_http_conn_t *c, const char *name, size_t len, uint32_t *from) {
  for (uint32_t i = *from; i < c->nheaders; i++) {
    if (name_is(c, &c->headers[i], name, len)) {
      *from = i + 1;
      return (int)i;
    }
  }
  *from = c->nheaders;
  return -1;
}

/* --- responses ---------------------------------------------------------------------------- */

/* Makes room for n more bytes; false (and the sticky error set) when it cannot. */
static int buf_reserve(zv_http_buf_t *b, size_t n) {
  size_t cap;
  char *np;
  if (b->err) return 0;
  if (b->len + n <= b->cap) return 1;
  cap = b->cap ? b->cap * 2 : 256;
  while (cap < b->len + n) cap *= 2;
  np = zv_realloc(b->p, cap);
  if (!np) {
    b->err = ZV_ENOMEM;
    return 0;
  }
  b->p = np;
  b->cap = cap;
  return 1;
}

/* Appends n bytes after a buf_reserve that made room for them. */
static inline char *put(char *o, const char *s, size_t n) {
  memcpy(o, s, n);
  return o + n;
}

void zv_http_buf_add(zv_http_buf_t *b, const char *s, size_t n) {
  if (!buf_reserve(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

void zv_http_buf_free(zv_http_buf_t *b) {
  zv_free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
  b->err = 0;
}

const char *zv_http_reason(int status) {
  switch (status) {
  case 100: return "Continue";
  case 101: return "Switching Protocols";
  case 200: return "OK";
  case 201: return "Created";
  case 202: return "Accepted";
  case 204: return "No Content";
  case 206: return "Partial Content";
  case 301: return "Moved Permanently";
  case 302: return "Found";
  case 303: return "See Other";
  case 304: return "Not Modified";
  case 307: return "Temporary Redirect";
  case 308: return "Permanent Redirect";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 406: return "Not Acceptable";
  case 408: return "Request Timeout";
  case 409: return "Conflict";
  case 410: return "Gone";
  case 411: return "Length Required";
  case 412: return "Precondition Failed";
  case 413: return "Content Too Large";
  case 414: return "URI Too Long";
  case 415: return "Unsupported Media Type";
  case 416: return "Range Not Satisfiable";
  case 417: return "Expectation Failed";
  case 422: return "Unprocessable Content";
  case 425: return "Too Early";
  case 426: return "Upgrade Required";
  case 428: return "Precondition Required";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 502: return "Bad Gateway";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  case 505: return "HTTP Version Not Supported";
  default: return "Unknown";
  }
}

void zv_http_date(int64_t unix_seconds, char out[32]) {
  static const char days[] = "SunMonTueWedThuFriSat";
  static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  time_t t = (time_t)unix_seconds;
  struct tm tm;
  char *o = out;
  gmtime_r(&t, &tm);
  memcpy(o, days + 3 * tm.tm_wday, 3);
  o += 3;
  *o++ = ',';
  *o++ = ' ';
  *o++ = (char)('0' + tm.tm_mday / 10);
  *o++ = (char)('0' + tm.tm_mday % 10);
  *o++ = ' ';
  memcpy(o, months + 3 * tm.tm_mon, 3);
  o += 3;
  *o++ = ' ';
  int y = tm.tm_year + 1900;
  *o++ = (char)('0' + (y / 1000) % 10);
  *o++ = (char)('0' + (y / 100) % 10);
  *o++ = (char)('0' + (y / 10) % 10);
  *o++ = (char)('0' + y % 10);
  *o++ = ' ';
  *o++ = (char)('0' + tm.tm_hour / 10);
  *o++ = (char)('0' + tm.tm_hour % 10);
  *o++ = ':';
  *o++ = (char)('0' + tm.tm_min / 10);
  *o++ = (char)('0' + tm.tm_min % 10);
  *o++ = ':';
  *o++ = (char)('0' + tm.tm_sec / 10);
  *o++ = (char)('0' + tm.tm_sec % 10);
  memcpy(o, " GMT", 5);
}

int zv_http_check_header(const char *name, size_t nlen, const char *value, size_t vlen,
                         zv_http_hdrinfo_t *info) {
  info->skip = info->is_close = info->is_date = info->is_server = 0;
  if (nlen == 0) return ZV_EINVAL;
  for (size_t i = 0; i < nlen; i++)
    if (!zv__http_tchar[(unsigned char)name[i]]) return ZV_EINVAL;
  if (!zv__http_value_ok(value, vlen)) return ZV_EINVAL;
  switch (nlen) {
  case 4:
    info->is_date = !strncasecmp(name, "date", 4);
    break;
  case 6:
    info->is_server = !strncasecmp(name, "server", 6);
    break;
  case 10:
    if (!strncasecmp(name, "connection", 10)) {
      info->skip = 1;
      info->is_close = vlen == 5 && !strncasecmp(value, "close", 5);
    }
    break;
  case 14:
    info->skip = !strncasecmp(name, "content-length", 14);
    break;
  case 17:
    info->skip = !strncasecmp(name, "transfer-encoding", 17);
    break;
  }
  return 0;
}

void zv_http_head_begin(zv_http_buf_t *b, int status) {
  const char *reason = zv_http_reason(status);
  size_t rlen = strlen(reason);
  char *o;
  if (status < 100 || status > 999) status = 500;
  b->len = 0;
  b->err = 0;
  if (!buf_reserve(b, 15 + rlen)) return;
  o = put(b->p, "HTTP/1.1 ", 9);
  *o++ = (char)('0' + status / 100);
  *o++ = (char)('0' + (status / 10) % 10);
  *o++ = (char)('0' + status % 10);
  *o++ = ' ';
  o = put(o, reason, rlen);
  o = put(o, "\r\n", 2);
  b->len = (size_t)(o - b->p);
}

void zv_http_head_add(zv_http_buf_t *b, const char *name, size_t nlen, const char *value,
                      size_t vlen) {
  char *o;
  if (!buf_reserve(b, nlen + vlen + 4)) return;
  o = put(b->p + b->len, name, nlen);
  o = put(o, ": ", 2);
  o = put(o, value, vlen);
  o = put(o, "\r\n", 2);
  b->len = (size_t)(o - b->p);
}

/* The longest tail head_end writes: Content-Length (16 + 20 digits + 2), Transfer-Encoding (28),
 * Connection (19), Date (6 + 29 + 2), Server (15) and the blank line (2). */
#define HEAD_END_MAX 160

void zv_http_head_end(zv_http_buf_t *b, const zv_http_head_t *h, int server) {
  char *o;
  if (!buf_reserve(b, HEAD_END_MAX)) return;
  o = b->p + b->len;
  if (h->content_length >= 0) {
    char num[24], *e = num + sizeof num, *s = e;
    uint64_t v = (uint64_t)h->content_length;
    do {
      *--s = (char)('0' + v % 10);
      v /= 10;
    } while (v);
    o = put(o, "Content-Length: ", 16);
    o = put(o, s, (size_t)(e - s));
    o = put(o, "\r\n", 2);
  }
  if (h->chunked) o = put(o, "Transfer-Encoding: chunked\r\n", 28);
  if (h->close) o = put(o, "Connection: close\r\n", 19);
  if (h->date) {
    o = put(o, "Date: ", 6);
    o = put(o, h->date, 29);
    o = put(o, "\r\n", 2);
  }
  if (server) o = put(o, "Server: zever\r\n", 15);
  o = put(o, "\r\n", 2);
  b->len = (size_t)(o - b->p);
}
