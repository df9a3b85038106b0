/*
 * http_parse_bench.c: the HTTP connection core (host/http/conn.c) on a typical request.
 *
 *   HttpParseGet        a GET with 8 headers, fed as one read, parsed, one header looked up,
 *                       then zv_http_conn_next: the per-request work of a keep-alive connection
 *   HttpParseHello      the request wrk sends for bench/http's /hello (two lines and Host)
 *   HttpParsePipelined  four such GETs in one read (pipelining)
 *   HttpParsePost       a POST with a 64-byte Content-Length body
 *   HttpResponseHead    the head of "200 OK, text/plain, 11 bytes" with Date and Server
 *
 * Steady state allocates nothing: the connection's buffer and the head buffer are reused.
 *
 * Instructions per request (load-independent): ZV_HTTP_PARSE_IR=N runs each parse scenario
 * exactly N times, untimed, and exits; under callgrind the slope between two N is the cost of one
 * feed (the setup drops out):
 *   for n in 1000 11000; do ZV_HTTP_PARSE_IR=$n valgrind --tool=callgrind \
 *     --callgrind-out-file=/tmp/cg.$n build/bench/http_parse_bench; done
 *   (Ir(11000) - Ir(1000)) / 10000 per scenario run; BENCH=HttpParseHello picks one.
 */
#include "bench.h"
#include "../host/http/conn.h"

static const char get_req[] =
    "GET /api/users/42?fields=name,email HTTP/1.1\r\n"
    "Host: localhost:8080\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
    "Accept-Language: en-US,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Connection: keep-alive\r\n"
    "Cookie: session=0123456789abcdef; theme=dark\r\n"
    "Cache-Control: max-age=0\r\n"
    "\r\n";

static const char hello_req[] = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

static const char post_req[] =
    "POST /api/users HTTP/1.1\r\n"
    "Host: localhost:8080\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: 64\r\n"
    "\r\n"
    "{\"name\":\"Ada Lovelace\",\"email\":\"ada@example.com\",\"admin\":false} ";

static const zv_http_limits_t limits = {8192, 1 << 20, 0};

/* Feeds len bytes of req as one read and parses every request in it. */
static int feed(zv_http_conn_t *c, const char *req, size_t len) {
  char *p;
  size_t n;
  int count = 0;
  uint32_t from;
  if (zv_http_conn_space(c, &p, &n) || n < len) abort();
  memcpy(p, req, len);
  zv_http_conn_commit(c, len);
  while (zv_http_conn_parse(c) == ZV_HTTP_REQUEST) {
    from = 0;
    count += zv_http_conn_header(c, "host", 4, &from) >= 0;
    zv_http_conn_next(c);
  }
  return count;
}

static void bench_get(zv_bench_t *b) {
  zv_http_conn_t c;
  if (zv_http_conn_init(&c, &limits)) abort();
  feed(&c, get_req, sizeof get_req - 1);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_bench_keep(feed(&c, get_req, sizeof get_req - 1));
  zv_http_conn_free(&c);
}

static void bench_hello(zv_bench_t *b) {
  zv_http_conn_t c;
  if (zv_http_conn_init(&c, &limits)) abort();
  feed(&c, hello_req, sizeof hello_req - 1);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_bench_keep(feed(&c, hello_req, sizeof hello_req - 1));
  zv_http_conn_free(&c);
}

static void bench_pipelined(zv_bench_t *b) {
  char four[4 * sizeof get_req];
  size_t len = 0;
  zv_http_conn_t c;
  for (int k = 0; k < 4; k++) {
    memcpy(four + len, get_req, sizeof get_req - 1);
    len += sizeof get_req - 1;
  }
  if (zv_http_conn_init(&c, &limits)) abort();
  feed(&c, four, len);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_bench_keep(feed(&c, four, len));
  zv_http_conn_free(&c);
}

static void bench_post(zv_bench_t *b) {
  zv_http_conn_t c;
  if (zv_http_conn_init(&c, &limits)) abort();
  feed(&c, post_req, sizeof post_req - 1);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) zv_bench_keep(feed(&c, post_req, sizeof post_req - 1));
  zv_http_conn_free(&c);
}

static void bench_head(zv_bench_t *b) {
  zv_http_buf_t buf = {0};
  zv_http_hdrinfo_t info;
  zv_http_head_t h = {200, 11, 0, 0, "Sun, 06 Nov 1994 08:49:37 GMT"};
  zv_http_head_begin(&buf, 200);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_http_head_begin(&buf, 200);
    if (zv_http_check_header("Content-Type", 12, "text/plain", 10, &info) == 0)
      zv_http_head_add(&buf, "Content-Type", 12, "text/plain", 10);
    zv_http_head_end(&buf, &h, 1);
    zv_bench_keep(buf.len);
  }
  zv_http_buf_free(&buf);
}

/* ZV_HTTP_PARSE_IR=N: each parse scenario N times, for callgrind (see the top). */
static int ir_mode(void) {
  const char *s = getenv("ZV_HTTP_PARSE_IR");
  const char *only = getenv("BENCH");
  zv_bench_t b = {0};
  if (!s) return 0;
  b.n = (uint64_t)strtoull(s, NULL, 10);
  if (!only || strstr("HttpParseGet", only)) bench_get(&b);
  if (!only || strstr("HttpParseHello", only)) bench_hello(&b);
  if (!only || strstr("HttpParsePipelined", only)) bench_pipelined(&b);
  if (!only || strstr("HttpParsePost", only)) bench_post(&b);
  return 1;
}

int main(int argc, char **argv) {
  static const zv_bench_case_t cases[] = {
    ZV_BENCH(HttpParseGet, bench_get) ZV_BENCH(HttpParseHello, bench_hello)
    ZV_BENCH(HttpParsePipelined, bench_pipelined)
    ZV_BENCH(HttpParsePost, bench_post) ZV_BENCH(HttpResponseHead, bench_head)};
  if (ir_mode()) return 0;
  return zv_bench_main(argc, argv, cases, sizeof cases / sizeof *cases);
}
