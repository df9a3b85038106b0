/*
 * parse.c: strict RFC 9112 request pieces (see parse.h): request line, field lines, and the
 * values that decide framing and routing (Host, Content-Length, Transfer-Encoding, Connection,
 * chunk sizes).
 *
 * It must not allocate, keep state, or read outside the bytes it is given. Whatever is not
 * allowed by the grammar is refused with the status nginx answers for it, or with 400 where the
 * RFC says so and nginx is lenient (those cases are listed in docs/http-server.md).
 */
#include "parse.h"

#include <string.h>
#include <strings.h>

static const char *const method_names[] = {
#define ZV__M(id, name) name,
  ZV_HTTP_METHOD_MAP(ZV__M)
#undef ZV__M
};

const char *zv_http_method_name(int method) {
  if (method < 0 || method >= ZV_HTTP_METHODS) return "UNKNOWN";
  return method_names[method];
}

/* RFC 9110 token characters: !#$%&'*+-.^_`|~ digits and letters. */
const uint8_t zv__http_tchar[256] = {
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

/* How many bytes from p[i] on, up to n, the table t takes (nonzero entries): four at a time
 * while a whole step is taken, then one by one (~4 instructions a byte instead of ~7). */
static inline size_t table_run(const uint8_t *t, const char *p, size_t i, size_t n) {
  const unsigned char *u = (const unsigned char *)p;
  while (i + 4 <= n && (t[u[i]] & t[u[i + 1]] & t[u[i + 2]] & t[u[i + 3]])) i += 4;
  while (i < n && t[u[i]]) i++;
  return i;
}

static int is_ows(char ch) {
  return ch == ' ' || ch == '\t';
}

static int lookup_method(const char *p, size_t n) {
  /* GET first: it is most of the traffic. */
  if (n == 3 && p[0] == 'G' && p[1] == 'E' && p[2] == 'T') return ZV_HTTP_M_GET;
  for (int m = 0; m < ZV_HTTP_METHODS; m++)
    if (strlen(method_names[m]) == n && !memcmp(method_names[m], p, n)) return m;
  return -1;
}

/* uri-host characters outside an IP-literal: unreserved, sub-delims and "%" (RFC 3986). */
static const uint8_t hostchar[256] = {
  ['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1, ['!'] = 1, ['$'] = 1, ['&'] = 1, ['\''] = 1,
  ['('] = 1, [')'] = 1, ['*'] = 1, ['+'] = 1, [','] = 1, [';'] = 1, ['='] = 1, ['%'] = 1,
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

static const uint8_t digit[256] = {
  ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
  ['8'] = 1, ['9'] = 1,
};

int zv_http_host_ok(const char *p, size_t n) {
  size_t i = 0;
  if (n == 0) return 0;
  if (p[0] == '[') {
    /* IP-literal: hex digits, ":" and "." (IPv6, IPv4 tail), or an IPvFuture's characters. */
    for (i = 1; i < n && p[i] != ']'; i++)
      if (!hostchar[(unsigned char)p[i]] && p[i] != ':') return 0;
    if (i == n || i == 1) return 0;
    i++;
  } else {
    /* ":" is not a host character: the run stops at the port, or at a byte to refuse. */
    i = table_run(hostchar, p, 0, n);
    if (i == 0) return 0;
  }
  if (i == n) return 1;
  if (p[i] != ':') return 0;
  return table_run(digit, p, i + 1, n) == n;
}

/* Parses an absolute-form target t[0, n) into the path's place; 0 or 400. */
static int absolute_form(char *t, size_t n, size_t *path_at) {
  size_t i = 0, a;
  while (i < n && ((t[i] | 0x20) >= 'a' && (t[i] | 0x20) <= 'z')) i++;
  if (!((i == 4 && !strncasecmp(t, "http", 4)) || (i == 5 && !strncasecmp(t, "https", 5))))
    return 400;
  if (n - i < 3 || memcmp(t + i, "://", 3)) return 400;
  a = i += 3;
  while (i < n && t[i] != '/' && t[i] != '?') {
    if (t[i] == '@') return 400; /* userinfo: RFC 9110 §4.2.4 */
    i++;
  }
  if (!zv_http_host_ok(t + a, i - a)) return 400;
  if (i < n && t[i] == '/') {
    *path_at = i;
  } else {
    t[i - 1] = '/'; /* "http://h" or "http://h?q": the path is "/" */
    *path_at = i - 1;
  }
  return 0;
}

/* Where the request target that starts at p ends (its first byte that is not visible ASCII or
 * obs-text: a SP, a control byte, DEL, or e), and in *q its first "?" (NULL when none). Eight
 * bytes at a time where the byte order allows (a target of up to 7 bytes and " HTTP/1.1" ends
 * in the first word): a word's lowest flagged byte is always a real one (a borrow only runs up
 * from a real one), so the first stop and the first "?" are exact. */
static char *target_end(char *p, const char *e, char **q) {
  char *qm = NULL;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  for (; e - p >= 8; p += 8) {
    uint64_t x, d, y, stop, mark;
    memcpy(&x, p, 8);
    d = x ^ (ones * 0x7f);
    stop = ((x - ones * 0x21) & ~x & highs) | ((d - ones) & ~d & highs);
    y = x ^ (ones * '?');
    mark = qm ? 0 : ((y - ones) & ~y & highs);
    if (stop | mark) {
      unsigned s = stop ? (unsigned)__builtin_ctzll(stop) >> 3 : 8;
      if (mark && ((unsigned)__builtin_ctzll(mark) >> 3) < s)
        qm = p + ((unsigned)__builtin_ctzll(mark) >> 3);
      if (stop) {
        *q = qm;
        return p + s;
      }
    }
  }
#endif
  for (; p < e && (unsigned char)*p > 0x20 && *p != 0x7f; p++)
    if (*p == '?' && !qm) qm = p;
  *q = qm;
  return p;
}

int zv_http_parse_request_line(char *buf, size_t off, size_t end, zv_http_reqline_t *out) {
  char *p = buf + off, *e = buf + end, *m = p, *t, *v, *q;
  size_t path_at = 0;
  /* GET first: it is most of the traffic (the same verdicts as the token loop below). */
  if (e - p > 4 && !memcmp(p, "GET ", 4)) {
    out->method = ZV_HTTP_M_GET;
    t = p + 4;
  } else {
    while (p < e && zv__http_tchar[(unsigned char)*p]) p++;
    if (p == m || p == e || *p != ' ') return 400;
    t = p + 1;
    out->method = -1;
  }
  /* The target: visible bytes and obs-text, up to the one SP before the version. */
  p = target_end(t, e, &q);
  if (p == t || p == e || *p != ' ') return 400;
  v = p + 1;
  if (e - v == 8 && !memcmp(v, "HTTP/1.1", 8)) {
    out->major = out->minor = 1;
  } else {
    if (e - v != 8 || memcmp(v, "HTTP/", 5) || v[5] < '0' || v[5] > '9' || v[6] != '.' ||
        v[7] < '0' || v[7] > '9')
      return 400;
    out->major = v[5] - '0';
    out->minor = v[7] - '0' > 0 ? 1 : 0;
  }
  if (out->method < 0 && (out->method = lookup_method(m, (size_t)(t - 1 - m))) < 0) return 501;
  if (out->major != 1) return 505;
  if (out->method == ZV_HTTP_M_CONNECT) return 400;
  if (*t == '/') {
    path_at = 0;
  } else if (*t == '*' && p - t == 1) {
    if (out->method != ZV_HTTP_M_OPTIONS) return 400;
  } else if (absolute_form(t, (size_t)(p - t), &path_at)) {
    return 400;
  }
  out->url_off = (uint32_t)(t + path_at - buf);
  out->url_len = (uint32_t)(p - t - (ptrdiff_t)path_at);
  /* An absolute-form's authority stops at "?", so the first "?" is inside the URL. */
  out->query_at = q ? (int32_t)(q - (t + path_at)) : -1;
  return 0;
}

int zv_http_parse_field(const char *p, size_t n, size_t *name_len, size_t *value_at,
                        size_t *value_len) {
  size_t i = table_run(zv__http_tchar, p, 0, n), e = n;
  if (i == 0 || i == n || p[i] != ':') return 400;
  *name_len = i;
  i++;
  while (i < e && is_ows(p[i])) i++;
  while (e > i && is_ows(p[e - 1])) e--;
  if (!zv__http_value_ok(p + i, e - i)) return 400;
  *value_at = i;
  *value_len = e - i;
  return 0;
}

int zv_http_parse_length(const char *p, size_t n, uint64_t *out) {
  uint64_t v = 0;
  if (n == 0) return 400;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return 400;
    if (v < (1ull << 62)) v = v * 10 + (uint64_t)(p[i] - '0');
  }
  *out = v >= (1ull << 62) ? UINT64_MAX : v;
  return 0;
}

/* Calls the list's elements (RFC 9110 §5.6.1: empty elements are skipped) one by one: at i,
 * returns the next element's place and length, or 0 when the list is done. */
static size_t next_element(const char *p, size_t n, size_t *i, size_t *at) {
  while (*i < n) {
    size_t s, e;
    while (*i < n && (is_ows(p[*i]) || p[*i] == ',')) (*i)++;
    s = *i;
    while (*i < n && p[*i] != ',') (*i)++;
    e = *i;
    while (e > s && is_ows(p[e - 1])) e--;
    if (e > s) {
      *at = s;
      return e - s;
    }
  }
  return 0;
}

static int is_chunked(const char *p, size_t n) {
  return n == 7 && !strncasecmp(p, "chunked", 7);
}

int zv_http_parse_te(const char *p, size_t n) {
  size_t i = 0, at = 0, len, count = 0, chunked = 0;
  int last_chunked = 0;
  while ((len = next_element(p, n, &i, &at))) {
    /* A coding is a token, maybe with parameters: the token part must be one. */
    size_t k = 0;
    while (k < len && zv__http_tchar[(unsigned char)p[at + k]]) k++;
    if (k == 0 || (k < len && !is_ows(p[at + k]) && p[at + k] != ';')) return 400;
    last_chunked = is_chunked(p + at, len);
    chunked += (size_t)last_chunked;
    count++;
  }
  if (!last_chunked || chunked > 1) return 400;
  return count == 1 ? 0 : 501;
}

int zv_http_parse_connection(const char *p, size_t n) {
  size_t i = 0, at = 0, len;
  int flags = 0;
  while ((len = next_element(p, n, &i, &at))) {
    if (len == 5 && !strncasecmp(p + at, "close", 5)) flags |= ZV_HTTP_CONN_CLOSE;
    else if (len == 10 && !strncasecmp(p + at, "keep-alive", 10)) flags |= ZV_HTTP_CONN_KEEP_ALIVE;
    else if (len == 7 && !strncasecmp(p + at, "upgrade", 7)) flags |= ZV_HTTP_CONN_UPGRADE;
  }
  return flags;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  ch = (char)(ch | 0x20);
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  return -1;
}

int zv_http_parse_chunk_size(const char *p, size_t n, uint64_t *size) {
  uint64_t v = 0;
  size_t i = 0;
  int d;
  while (i < n && (d = hexval(p[i])) >= 0) {
    if (v < (1ull << 60)) v = v * 16 + (uint64_t)d;
    i++;
  }
  if (i == 0) return 400;
  if (i < n) {
    /* chunk-ext: BWS ";" ...; its bytes must be visible, SP, HTAB or obs-text. */
    while (i < n && is_ows(p[i])) i++;
    if (i == n || p[i] != ';' || !zv__http_value_ok(p + i, n - i)) return 400;
  }
  *size = v >= (1ull << 60) ? UINT64_MAX : v;
  return 0;
}
