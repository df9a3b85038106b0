/*
 * conn.c: HTTP/1.1 request parsing with limits, and response heads (see conn.h for the buffer
 * layout and the states).
 *
 * It must not touch sockets, libuv or Lua, and must not allocate per request: the only
 * allocations are the connection buffer's growth and shrinking, and a response buffer's growth.
 * Everything a client sends ends in a request, a wait for more bytes, or a status to answer
 * (400, 408 is the server's, 413, 414, 417, 431, 505): never in a crash or an unbounded buffer.
 */
#include "conn.h"

#include <string.h>
#include <strings.h>
#include <time.h>

#include "../core/zv.h"

#define READ_MIN 2048          /* read at least this much at a time when the buffer can grow */
#define SHRINK_ABOVE (64 << 10) /* a buffer larger than this returns to ZV_HTTP_BUF_MIN */
#define SLACK (16 << 10)       /* room beyond the limits: pipelined bytes, chunk framing */

enum { CB_NONE, CB_FIELD, CB_VALUE };

static zv_http_conn_t *conn_of(http_parser *p) {
  return p->data;
}

static int fail_cb(zv_http_conn_t *c, int status) {
  c->status = status;
  return -1;
}

/* True when the request line and headers parsed so far, up to data + len, exceed the limit. */
static int over_head(zv_http_conn_t *c, const char *data, size_t len) {
  size_t end = (size_t)(data - c->buf) + len;
  return end - c->start > c->limits.max_header_bytes;
}

static void reset_request(zv_http_conn_t *c) {
  c->status = 0;
  c->url_off = c->url_len = 0;
  c->path_len = 0;
  c->query_off = -1;
  c->query_len = 0;
  c->nheaders = 0;
  c->body_off = c->body_len = 0;
  c->last_cb = CB_NONE;
  c->body_started = 0;
  c->keep_alive = 0;
  c->expect_continue = 0;
  c->continue_due = 0;
  c->upgrade = 0;
  c->chunked = 0;
}

static int on_message_begin(http_parser *p) {
  zv_http_conn_t *c = conn_of(p);
  reset_request(c);
  c->state = ZV_HTTP_HEAD;
  return 0;
}

static int on_url(http_parser *p, const char *data, size_t len) {
  zv_http_conn_t *c = conn_of(p);
  if (over_head(c, data, len)) return fail_cb(c, 414);
  if (c->url_len == 0) c->url_off = (uint32_t)(data - c->buf);
  c->url_len += (uint32_t)len;
  return 0;
}

static int on_header_field(http_parser *p, const char *data, size_t len) {
  zv_http_conn_t *c = conn_of(p);
  uint32_t off = (uint32_t)(data - c->buf);
  zv_http_header_t *h;
  if (over_head(c, data, len)) return fail_cb(c, 431);
  if (c->last_cb == CB_FIELD) {
    h = &c->headers[c->nheaders - 1];
    if (h->name_off + h->name_len != off) return fail_cb(c, 400);
    h->name_len += (uint32_t)len;
    return 0;
  }
  if (c->nheaders == ZV_HTTP_MAX_HEADERS) return fail_cb(c, 431);
  h = &c->headers[c->nheaders++];
  h->name_off = off;
  h->name_len = (uint32_t)len;
  h->value_off = off + (uint32_t)len;
  h->value_len = 0;
  c->last_cb = CB_FIELD;
  return 0;
}

static int on_header_value(http_parser *p, const char *data, size_t len) {
  zv_http_conn_t *c = conn_of(p);
  uint32_t off = (uint32_t)(data - c->buf);
  zv_http_header_t *h;
  if (over_head(c, data, len)) return fail_cb(c, 431);
  if (c->nheaders == 0) return fail_cb(c, 400);
  h = &c->headers[c->nheaders - 1];
  if (c->last_cb == CB_FIELD) {
    h->value_off = off;
    h->value_len = (uint32_t)len;
  } else {
    /* A value split by a read boundary continues right where it stopped; anything else is a
     * folded line (obs-fold), which RFC 9112 lets a server reject. */
    if (h->value_off + h->value_len != off) return fail_cb(c, 400);
    h->value_len += (uint32_t)len;
  }
  c->last_cb = CB_VALUE;
  return 0;
}

static int name_is(const zv_http_conn_t *c, const zv_http_header_t *h, const char *name,
                   size_t len) {
  return h->name_len == len && !strncasecmp(c->buf + h->name_off, name, len);
}

static int value_is(const zv_http_conn_t *c, const zv_http_header_t *h, const char *value,
                    size_t len) {
  return h->value_len == len && !strncasecmp(c->buf + h->value_off, value, len);
}

static int on_headers_complete(http_parser *p) {
  zv_http_conn_t *c = conn_of(p);
  int te = 0, cl = 0, host = 0;
  if (p->http_major != 1) return fail_cb(c, 505);
  if (p->method == HTTP_CONNECT) return fail_cb(c, 400);
  for (uint32_t i = 0; i < c->nheaders; i++) {
    zv_http_header_t *h = &c->headers[i];
    const char *v = c->buf + h->value_off;
    while (h->value_len && (v[h->value_len - 1] == ' ' || v[h->value_len - 1] == '\t'))
      h->value_len--;
    switch (h->name_len) {
    case 4:
      if (name_is(c, h, "host", 4)) host++;
      break;
    case 6:
      if (name_is(c, h, "expect", 6)) {
        if (!value_is(c, h, "100-continue", 12)) return fail_cb(c, 417);
        c->expect_continue = 1;
      }
      break;
    case 14:
      if (name_is(c, h, "content-length", 14)) cl++;
      break;
    case 17:
      if (name_is(c, h, "transfer-encoding", 17)) {
        /* Only "chunked" alone: anything else is a smuggling or decoding hazard. */
        if (!value_is(c, h, "chunked", 7)) return fail_cb(c, 400);
        te++;
      }
      break;
    }
  }
  if (te > 1 || cl > 1 || (te && cl)) return fail_cb(c, 400);
  if (p->http_minor >= 1 && host != 1) return fail_cb(c, 400);
  if (c->url_len == 0) return fail_cb(c, 400);
  c->path_len = c->url_len;
  for (uint32_t i = 0; i < c->url_len; i++) {
    if (c->buf[c->url_off + i] == '?') {
      c->path_len = i;
      c->query_off = (int32_t)(c->url_off + i + 1);
      c->query_len = c->url_len - i - 1;
      break;
    }
  }
  c->chunked = (p->flags & F_CHUNKED) != 0;
  if ((p->flags & F_CONTENTLENGTH) && p->content_length > c->limits.max_body_bytes)
    return fail_cb(c, 413);
  c->upgrade = p->upgrade;
  c->keep_alive = http_should_keep_alive(p) && !c->upgrade;
  if (c->expect_continue && (c->chunked || ((p->flags & F_CONTENTLENGTH) && p->content_length))) {
    c->continue_due = 1;
    http_parser_pause(p, 1);
  }
  c->state = ZV_HTTP_BODY;
  return 0;
}

static int on_body(http_parser *p, const char *data, size_t len) {
  zv_http_conn_t *c = conn_of(p);
  uint32_t off = (uint32_t)(data - c->buf);
  if ((uint64_t)c->body_len + len > c->limits.max_body_bytes) return fail_cb(c, 413);
  if (!c->body_started) {
    c->body_off = off;
    c->body_started = 1;
  } else if (off != c->body_off + c->body_len) {
    /* Chunked: decode in place by moving this piece down behind the previous one. */
    memmove(c->buf + c->body_off + c->body_len, data, len);
  }
  c->body_len += (uint32_t)len;
  return 0;
}

static int on_message_complete(http_parser *p) {
  zv_http_conn_t *c = conn_of(p);
  c->keep_alive = http_should_keep_alive(p) && !c->upgrade;
  c->state = ZV_HTTP_DONE;
  http_parser_pause(p, 1);
  return 0;
}

static const http_parser_settings settings = {
  .on_message_begin = on_message_begin,
  .on_url = on_url,
  .on_header_field = on_header_field,
  .on_header_value = on_header_value,
  .on_headers_complete = on_headers_complete,
  .on_body = on_body,
  .on_message_complete = on_message_complete,
};

int zv_http_conn_init(zv_http_conn_t *c, const zv_http_limits_t *limits) {
  memset(c, 0, offsetof(zv_http_conn_t, headers));
  c->limits = *limits;
  if (c->limits.max_header_bytes > ZV_HTTP_MAX_HEADER_LIMIT)
    c->limits.max_header_bytes = ZV_HTTP_MAX_HEADER_LIMIT;
  if (c->limits.max_body_bytes > ZV_HTTP_MAX_BODY_LIMIT)
    c->limits.max_body_bytes = ZV_HTTP_MAX_BODY_LIMIT;
  c->buf = zv_alloc(ZV_HTTP_BUF_MIN);
  if (!c->buf) return ZV_ENOMEM;
  c->cap = ZV_HTTP_BUF_MIN;
  http_parser_init(&c->parser, HTTP_REQUEST);
  c->parser.data = c;
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
  http_parser_init(&c->parser, HTTP_REQUEST);
  c->parser.data = c;
  reset_request(c);
  c->state = ZV_HTTP_IDLE;
}

void zv_http_conn_free(zv_http_conn_t *c) {
  zv_free(c->buf);
  c->buf = NULL;
  c->len = c->cap = c->pos = 0;
}

static size_t hard_cap(const zv_http_conn_t *c) {
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
  if (avail < READ_MIN && c->state == ZV_HTTP_BODY && c->body_started) {
    size_t body_end = (size_t)c->body_off + c->body_len;
    if (c->pos > body_end) {
      memmove(c->buf + body_end, c->buf + c->pos, c->len - c->pos);
      c->len -= c->pos - body_end;
      c->pos = body_end;
      avail = c->cap - c->len;
    }
  }
  if (avail >= READ_MIN || c->state == ZV_HTTP_DONE) {
    *p = c->buf + c->len;
    *n = avail;
    return 0;
  }
  want = c->cap * 2;
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

static int fail(zv_http_conn_t *c, int status) {
  c->status = status;
  c->state = ZV_HTTP_ERROR;
  return ZV_HTTP_FAIL;
}

static int status_of(enum http_errno err) {
  switch (err) {
  case HPE_HEADER_OVERFLOW: return 431;
  default: return 400;
  }
}

int zv_http_conn_parse(zv_http_conn_t *c) {
  size_t n;
  enum http_errno err;
  if (c->state == ZV_HTTP_ERROR) return ZV_HTTP_FAIL;
  if (c->state == ZV_HTTP_DONE) return ZV_HTTP_NEED_MORE;
  if (HTTP_PARSER_ERRNO(&c->parser) == HPE_PAUSED) http_parser_pause(&c->parser, 0);
  if (c->pos == c->len) return ZV_HTTP_NEED_MORE;
  if (c->state == ZV_HTTP_IDLE) c->start = c->pos;
  n = http_parser_execute(&c->parser, &settings, c->buf + c->pos, c->len - c->pos);
  c->pos += n;
  err = HTTP_PARSER_ERRNO(&c->parser);
  if (err == HPE_PAUSED) {
    if (c->state == ZV_HTTP_DONE) return ZV_HTTP_REQUEST;
    if (c->continue_due) {
      c->continue_due = 0;
      return ZV_HTTP_CONTINUE;
    }
    return ZV_HTTP_NEED_MORE;
  }
  if (err != HPE_OK) return fail(c, c->status ? c->status : status_of(err));
  if (c->state == ZV_HTTP_IDLE) {
    /* Only blank lines so far: nothing to keep. */
    if (c->pos == c->len) c->pos = c->len = c->start = 0;
  } else if (c->state == ZV_HTTP_HEAD && c->pos - c->start > c->limits.max_header_bytes) {
    return fail(c, c->nheaders == 0 && c->last_cb == CB_NONE ? 414 : 431);
  }
  return ZV_HTTP_NEED_MORE;
}

void zv_http_conn_next(zv_http_conn_t *c) {
  size_t rest = c->len - c->pos;
  if (rest && c->pos) memmove(c->buf, c->buf + c->pos, rest);
  c->len = rest;
  c->pos = 0;
  c->start = 0;
  reset_request(c);
  c->state = ZV_HTTP_IDLE;
  if (HTTP_PARSER_ERRNO(&c->parser) == HPE_PAUSED) http_parser_pause(&c->parser, 0);
  if (c->cap > SHRINK_ABOVE && rest <= ZV_HTTP_BUF_MIN) {
    char *nb = zv_realloc(c->buf, ZV_HTTP_BUF_MIN);
    if (nb) {
      c->buf = nb;
      c->cap = ZV_HTTP_BUF_MIN;
    }
  }
}

int zv_http_conn_pending(const zv_http_conn_t *c) {
  return c->len > c->pos;
}

const char *zv_http_conn_method(const zv_http_conn_t *c) {
  return http_method_str((enum http_method)c->parser.method);
}

int zv_http_conn_is_head(const zv_http_conn_t *c) {
  return c->parser.method == HTTP_HEAD;
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

/* RFC 9110 token characters: !#$%&'*+-.^_`|~ digits and letters. */
static const uint8_t tchar[256] = {
  ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
  ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
  ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
  ['8'] = 1, ['9'] = 1,
  ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
  ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
  ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
  ['Y'] = 1, ['Z'] = 1,
  ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
  ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
  ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
  ['y'] = 1, ['z'] = 1,
};

/* True when v[0..n) holds no control character but HTAB (no CR, LF, NUL or DEL). Eight bytes
 * at a time: a word with no byte below 0x20 and no 0x7f passes at once; a word with one (a tab,
 * most likely) is looked at byte by byte. */
static int value_ok(const char *v, size_t n) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x, d;
    memcpy(&x, v + i, 8);
    d = x ^ (ones * 0x7f);
    if (((x - ones * 0x20) & ~x & highs) | ((d - ones) & ~d & highs)) break;
  }
  for (; i < n; i++) {
    unsigned char ch = (unsigned char)v[i];
    if ((ch < 0x20 && ch != '\t') || ch == 0x7f) return 0;
  }
  return 1;
}

int zv_http_check_header(const char *name, size_t nlen, const char *value, size_t vlen,
                         zv_http_hdrinfo_t *info) {
  info->skip = info->is_close = info->is_date = info->is_server = 0;
  if (nlen == 0) return ZV_EINVAL;
  for (size_t i = 0; i < nlen; i++)
    if (!tchar[(unsigned char)name[i]]) return ZV_EINVAL;
  if (!value_ok(value, vlen)) return ZV_EINVAL;
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
