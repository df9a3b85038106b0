/*
 * web_bench.c: the cores of issue 18's web essentials: the streaming multipart parser
 * (host/http/multipart.c), the static-file decisions (host/http/static.c) and one-shot
 * compression (host/compress/compress.c).
 *
 *   MultipartParse1MB      a 1 MiB body of 16 parts (64 KiB each), fed whole: bytes/s and
 *                          allocations (the parser allocates nothing)
 *   MultipartParseChunked  the same body fed in 1460-byte chunks (a TCP segment each)
 *   StaticClean            zv_static_clean of "/css/app%20v2/site.min.css"
 *   StaticRange            zv_static_range of "bytes=0-99, 50-199" on a 1 MiB file
 *   GzipJSON16K / BrotliJSON16K   16 KiB of JSON-like text at gzip 6 / brotli 4
 */
#include "bench.h"

#include "../host/compress/compress.h"
#include "../host/http/multipart.h"
#include "../host/http/static.h"

#define PARTS 16
#define PART_BYTES (64 << 10)

static char *body;
static size_t body_len;

static int on_header(void *ud, const char *n, size_t nl, const char *v, size_t vl) {
  (void)ud, (void)n, (void)nl, (void)v, (void)vl;
  return 0;
}
static int on_done(void *ud) {
  (void)ud;
  return 0;
}
static int on_data(void *ud, const char *p, size_t n) {
  (void)p;
  *(size_t *)ud += n;
  return 0;
}
static int on_end(void *ud) {
  (void)ud;
  return 0;
}
static const zv_multipart_cb_t cb = {on_header, on_done, on_data, on_end};

static void make_body(void) {
  size_t cap = PARTS * (PART_BYTES + 200) + 64, o = 0;
  if (body) return;
  body = malloc(cap);
  for (int p = 0; p < PARTS; p++) {
    o += (size_t)snprintf(body + o, cap - o,
                          "--XyZzy\r\nContent-Disposition: form-data; name=\"f%d\"; "
                          "filename=\"f%d.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                          p, p);
    for (int i = 0; i < PART_BYTES; i++) body[o++] = (char)("abc\r\n-XyZ"[(i * 7 + p) % 10]);
    memcpy(body + o, "\r\n", 2);
    o += 2;
  }
  memcpy(body + o, "--XyZzy--\r\n", 11);
  body_len = o + 11;
}

static void parse(zv_bench_t *b, size_t chunk) {
  zv_multipart_t *m = malloc(sizeof *m);
  make_body();
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    size_t got = 0;
    zv_multipart_init(m, "XyZzy", 5, 0);
    for (size_t off = 0; off < body_len; off += chunk)
      zv_multipart_feed(m, body + off, off + chunk > body_len ? body_len - off : chunk, &cb, &got);
    if (zv_multipart_finish(m) || got != (size_t)PARTS * PART_BYTES) abort();
    zv_bench_keep(got);
  }
  free(m);
}

static void bench_mp_whole(zv_bench_t *b) { parse(b, (size_t)1 << 30); }
static void bench_mp_chunked(zv_bench_t *b) { parse(b, 1460); }

static void bench_clean(zv_bench_t *b) {
  static const char path[] = "/css/app%20v2/site.min.css";
  char out[256];
  size_t n;
  int dir;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_static_clean(path, sizeof path - 1, out, sizeof out, &n, &dir);
    zv_bench_keep(n);
  }
}

static void bench_range(zv_bench_t *b) {
  static const char v[] = "bytes=0-99, 50-199";
  uint64_t off, cnt;
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_bench_keep(zv_static_range(v, sizeof v - 1, 1 << 20, &off, &cnt));
    zv_bench_keep(cnt);
  }
}

static char json[16 << 10];
static void make_json(void) {
  size_t o = 0;
  for (int i = 0; o + 64 < sizeof json; i++)
    o += (size_t)snprintf(json + o, sizeof json - o, "{\"id\":%d,\"name\":\"item %d\"},", i, i);
  while (o < sizeof json) json[o++] = ' ';
}

static void bench_gzip(zv_bench_t *b) {
  size_t cap = zv_compress_gzip_bound(sizeof json), n = 0;
  char *out = malloc(cap);
  make_json();
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_compress_gzip(json, sizeof json, 6, out, cap, &n);
    zv_bench_keep(n);
  }
  free(out);
}

static void bench_brotli(zv_bench_t *b) {
  size_t cap = zv_compress_brotli_bound(sizeof json), n = 0;
  char *out = malloc(cap);
  make_json();
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_compress_brotli(json, sizeof json, 4, out, cap, &n);
    zv_bench_keep(n);
  }
  free(out);
}

ZV_BENCH_MAIN(ZV_BENCH(MultipartParse1MB, bench_mp_whole)
                  ZV_BENCH(MultipartParseChunked, bench_mp_chunked)
                  ZV_BENCH(StaticClean, bench_clean)
                  ZV_BENCH(StaticRange, bench_range)
                  ZV_BENCH(GzipJSON16K, bench_gzip)
                  ZV_BENCH(BrotliJSON16K, bench_brotli))
