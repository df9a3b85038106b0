/*
 * parse.h: the strict RFC 9112 pieces of a request, one complete line (or field value) at a
 * time: the request line, a field line, Host, Content-Length, Transfer-Encoding, Connection and
 * a chunk-size line. conn.c finds the lines and keeps the state between reads; these functions
 * keep none, allocate nothing and never read outside the bytes they are given.
 *
 * It must not include lua.h or uv.h. Each check returns 0 when the bytes are valid, or the HTTP
 * status to answer before closing (400, 501, 505): a caller never guesses.
 *
 * A line is given without its terminator: the LF, and the CR before it when there is one. A CR
 * anywhere else in a line is a bare CR, which RFC 9112 §2.2 lets a server reject: it is a 400.
 */
#ifndef ZV_HTTP_PARSE_H
#define ZV_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The methods zever knows (http-parser's list, so that nothing routed before is refused now).
 * A method that is a valid token but not in the list is a 501; one that is not a token is a 400. */
#define ZV_HTTP_METHOD_MAP(X)                                                                 \
  X(GET, "GET") X(HEAD, "HEAD") X(POST, "POST") X(PUT, "PUT") X(DELETE, "DELETE")             \
  X(OPTIONS, "OPTIONS") X(PATCH, "PATCH") X(TRACE, "TRACE") X(CONNECT, "CONNECT")             \
  X(COPY, "COPY") X(LOCK, "LOCK") X(MKCOL, "MKCOL") X(MOVE, "MOVE") X(PROPFIND, "PROPFIND")   \
  X(PROPPATCH, "PROPPATCH") X(SEARCH, "SEARCH") X(UNLOCK, "UNLOCK") X(BIND, "BIND")           \
  X(REBIND, "REBIND") X(UNBIND, "UNBIND") X(ACL, "ACL") X(REPORT, "REPORT")                   \
  X(MKACTIVITY, "MKACTIVITY") X(CHECKOUT, "CHECKOUT") X(MERGE, "MERGE")                       \
  X(MSEARCH, "M-SEARCH") X(NOTIFY, "NOTIFY") X(SUBSCRIBE, "SUBSCRIBE")                        \
  X(UNSUBSCRIBE, "UNSUBSCRIBE") X(PURGE, "PURGE") X(MKCALENDAR, "MKCALENDAR") X(LINK, "LINK") \
  X(UNLINK, "UNLINK") X(SOURCE, "SOURCE")

enum zv_http_method {
#define ZV__M(id, name) ZV_HTTP_M_##id,
  ZV_HTTP_METHOD_MAP(ZV__M)
#undef ZV__M
  ZV_HTTP_METHODS /* how many there are */
};

/* The name of a method ("GET"); "UNKNOWN" out of range. */
const char *zv_http_method_name(int method);

/* RFC 9110 token characters (1) and everything else (0). */
extern const uint8_t zv__http_tchar[256];

/* True when v[0..n) holds no control character but HTAB (no CR, LF, NUL or DEL); bytes from
 * 0x80 (obs-text) pass. Eight bytes at a time. Inline: the response head builder (conn.c) checks
 * every header value with it, and the call cost more than the check (HttpResponseHead, 13
 * instructions of a 523-instruction head; BENCHMARKS.md, session 10). */
/* A word with no byte below 0x20 and no 0x7f passes at once; a word with one (a tab, most
 * likely) is looked at byte by byte. The tail of a value of 8 bytes or more is the word that
 * ends it (overlapping the one before), so no value takes a byte loop unless it holds a tab. */
static inline int zv__http_word_bad(const char *v) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  uint64_t x, d;
  memcpy(&x, v, 8);
  d = x ^ (ones * 0x7f);
  return (((x - ones * 0x20) & ~x & highs) | ((d - ones) & ~d & highs)) != 0;
}

static inline int zv__http_value_ok(const char *v, size_t n) {
  size_t i = 0;
  if (n >= 8) {
    for (; i + 8 <= n; i += 8)
      if (zv__http_word_bad(v + i)) goto bytes;
    if (i == n || !zv__http_word_bad(v + n - 8)) return 1;
  }
bytes:
  for (; i < n; i++) {
    unsigned char ch = (unsigned char)v[i];
    if ((ch < 0x20 && ch != '\t') || ch == 0x7f) return 0;
  }
  return 1;
}

/* What a request line says. Offsets are from the start of the buffer given. */
typedef struct {
  int method;          /* enum zv_http_method */
  int major, minor;    /* minor is 1 for any HTTP/1.x above 1.0 */
  uint32_t url_off, url_len; /* the target as routed: origin-form, or an absolute-form's path */
  int32_t query_at;    /* where its first "?" is, from url_off; -1 when it has none */
} zv_http_reqline_t;

/*
 * Parses the request line buf[off, end) (its terminator excluded): method SP target SP
 * HTTP/d.d, with exactly one SP between the parts. The target is origin-form ("/p?q"), "*" for
 * OPTIONS, or absolute-form ("http://host/p?q", scheme http or https, a valid authority and no
 * userinfo), whose path becomes the URL; when the path is empty, the last byte of the authority
 * is overwritten with "/" so that the URL stays one run of the buffer. CONNECT is a 400 (zever is
 * no proxy). Returns 0, 400, 501 (a method it does not know) or 505 (a major version but 1).
 * The query's place comes with the target's scan (query_at), so nobody searches the URL again.
 */
int zv_http_parse_request_line(char *buf, size_t off, size_t end, zv_http_reqline_t *out);

/*
 * Parses the field line p[0, n): a token, ":", OWS, a value of visible bytes, SP, HTAB and
 * obs-text, OWS. Whitespace before the colon or inside the name, an empty name, a line that
 * starts with whitespace (obs-fold) and any control byte but HTAB are a 400. On success sets
 * *name_len and the value's place (*value_at from p, *value_len, OWS trimmed both sides).
 */
int zv_http_parse_field(const char *p, size_t n, size_t *name_len, size_t *value_at,
                        size_t *value_len);

/* True when p[0, n) is a valid Host value: uri-host [":" port], not empty, no userinfo. */
int zv_http_host_ok(const char *p, size_t n);

/* Parses a Content-Length value: 1*DIGIT, nothing else (no sign, list or space). Returns 0 or
 * 400; a value too large for 62 bits is given as UINT64_MAX (the caller's limit answers 413). */
int zv_http_parse_length(const char *p, size_t n, uint64_t *out);

/*
 * Checks a Transfer-Encoding value (one header line; repeats are the caller's 400): a list of
 * codings whose last is "chunked" (any case) and which holds chunked only once. Returns 0 when
 * the value is exactly chunked, 400 when chunked is missing, not last, repeated or the list is
 * malformed (RFC 9112 §6.3: the body length cannot be known), 501 when chunked comes after a
 * coding zever does not decode ("gzip, chunked": RFC 9112 §6.1, as nginx answers).
 */
int zv_http_parse_te(const char *p, size_t n);

/* The tokens of a Connection value zever acts on. */
enum { ZV_HTTP_CONN_CLOSE = 1, ZV_HTTP_CONN_KEEP_ALIVE = 2, ZV_HTTP_CONN_UPGRADE = 4 };
int zv_http_parse_connection(const char *p, size_t n);

/*
 * Parses a chunk-size line p[0, n) (its CRLF excluded): 1*HEXDIG, then optional extensions
 * (BWS ";" ...) of visible bytes, SP and HTAB. Returns 0 or 400; a size too large for 60 bits
 * is given as UINT64_MAX (the caller's limit answers 413).
 */
int zv_http_parse_chunk_size(const char *p, size_t n, uint64_t *size);

#endif
