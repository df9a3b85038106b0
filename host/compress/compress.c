/*
 * compress.c: gzip and brotli in one call each (see compress.h). zlib and the brotli encoder
 * are Debian's (zlib1g-dev, libbrotli-dev); their working state goes through zv_alloc so that
 * benchmarks count it. Nothing is kept between calls.
 */
#include "compress.h"

#include <string.h>

#include <brotli/encode.h>
#include <zlib.h>

#include "../core/zv.h"

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  (void)opaque;
  return zv_alloc((size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p) {
  (void)opaque;
  zv_free(p);
}

size_t zv_compress_gzip_bound(size_t n) {
  /* deflateBound's formula for the default window and memLevel, plus the gzip wrapper
   * (10-byte header, 8-byte trailer), without a stream to ask. */
  return n + (n >> 12) + (n >> 14) + (n >> 25) + 13 + 18;
}

size_t zv_compress_brotli_bound(size_t n) {
  size_t b = BrotliEncoderMaxCompressedSize(n);
  return b ? b : n + 1024;
}

int zv_compress_gzip(const char *in, size_t n, int level, char *out, size_t cap, size_t *outlen) {
  z_stream z;
  int rc;
  if (level < 1 || level > 9) return ZV_EINVAL;
  memset(&z, 0, sizeof z);
  z.zalloc = z_alloc;
  z.zfree = z_free;
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return ZV_ENOMEM;
  z.next_in = (Bytef *)(uintptr_t)in;
  z.next_out = (Bytef *)out;
  /* A body over 4 GiB is fed in pieces (uInt is 32 bits). */
  do {
    size_t left_in = n - (size_t)((const char *)z.next_in - in);
    size_t left_out = cap - (size_t)((char *)z.next_out - out);
    z.avail_in = left_in > 0x40000000u ? 0x40000000u : (uInt)left_in;
    z.avail_out = left_out > 0x40000000u ? 0x40000000u : (uInt)left_out;
    rc = deflate(&z, z.avail_in == left_in ? Z_FINISH : Z_NO_FLUSH);
  } while (rc == Z_OK && z.avail_out > 0);
  *outlen = (size_t)((char *)z.next_out - out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return rc == Z_OK || rc == Z_BUF_ERROR ? ZV_ERANGE : ZV_ENOMEM;
  return 0;
}

static void *b_alloc(void *opaque, size_t size) {
  (void)opaque;
  return zv_alloc(size);
}

static void b_free(void *opaque, void *p) {
  (void)opaque;
  zv_free(p);
}

int zv_compress_brotli(const char *in, size_t n, int quality, char *out, size_t cap,
                       size_t *outlen) {
  BrotliEncoderState *s;
  const uint8_t *next_in = (const uint8_t *)in;
  uint8_t *next_out = (uint8_t *)out;
  size_t avail_in = n, avail_out = cap;
  int ok;
  if (quality < BROTLI_MIN_QUALITY || quality > BROTLI_MAX_QUALITY) return ZV_EINVAL;
  s = BrotliEncoderCreateInstance(b_alloc, b_free, NULL);
  if (!s) return ZV_ENOMEM;
  BrotliEncoderSetParameter(s, BROTLI_PARAM_QUALITY, (uint32_t)quality);
  BrotliEncoderSetParameter(s, BROTLI_PARAM_LGWIN, 22);
  BrotliEncoderSetParameter(s, BROTLI_PARAM_MODE, BROTLI_MODE_TEXT);
  BrotliEncoderSetParameter(s, BROTLI_PARAM_SIZE_HINT, n > (1u << 30) ? (1u << 30) : (uint32_t)n);
  ok = BrotliEncoderCompressStream(s, BROTLI_OPERATION_FINISH, &avail_in, &next_in, &avail_out,
                                   &next_out, NULL);
  ok = ok && BrotliEncoderIsFinished(s);
  *outlen = cap - avail_out;
  BrotliEncoderDestroyInstance(s);
  return ok ? 0 : ZV_ERANGE;
}

/* --- streaming inflate (the HTTP client's Content-Encoding: gzip / deflate) ---------------- */

struct zv_compress_inflate_s {
  z_stream z;
};

int zv_compress_inflate_new(zv_compress_inflate_t **out) {
  zv_compress_inflate_t *s = zv_alloc(sizeof *s);
  if (!s) return ZV_ENOMEM;
  memset(s, 0, sizeof *s);
  s->z.zalloc = z_alloc;
  s->z.zfree = z_free;
  /* 15 + 32: a gzip or a zlib header, detected from the first bytes. */
  if (inflateInit2(&s->z, 15 + 32) != Z_OK) {
    zv_free(s);
    return ZV_ENOMEM;
  }
  *out = s;
  return 0;
}

int zv_compress_inflate(zv_compress_inflate_t *s, const char *in, size_t n, size_t *used,
                        char *out, size_t cap, size_t *outlen, int *end) {
  int rc;
  s->z.next_in = (Bytef *)in;
  s->z.avail_in = (uInt)n;
  s->z.next_out = (Bytef *)out;
  s->z.avail_out = (uInt)cap;
  rc = inflate(&s->z, Z_NO_FLUSH);
  *used = n - s->z.avail_in;
  *outlen = cap - s->z.avail_out;
  *end = rc == Z_STREAM_END;
  if (rc == Z_OK || rc == Z_STREAM_END || (rc == Z_BUF_ERROR && *used == 0 && *outlen == 0))
    return 0;
  return rc == Z_MEM_ERROR ? ZV_ENOMEM : ZV_ESYNTAX;
}

void zv_compress_inflate_free(zv_compress_inflate_t *s) {
  if (!s) return;
  inflateEnd(&s->z);
  zv_free(s);
}

/* --- permessage-deflate (RFC 7692): raw deflate, a sync flush per message ------------------ */

struct zv_pmd_s {
  z_stream z;
  int deflating;
};

int zv_pmd_new(zv_pmd_t **out, int deflating, int window_bits, int level) {
  zv_pmd_t *s;
  int rc;
  if (deflating ? (window_bits < 9 || window_bits > 15 || level < 1 || level > 9)
                : (window_bits < 8 || window_bits > 15))
    return ZV_EINVAL;
  s = zv_alloc(sizeof *s);
  if (!s) return ZV_ENOMEM;
  memset(s, 0, sizeof *s);
  s->z.zalloc = z_alloc;
  s->z.zfree = z_free;
  s->deflating = deflating;
  /* Negative window bits: a raw stream. memLevel 8 is zlib's default (about 2^(w+2) + 2^(8+9)
   * bytes of state for a compressor: 256 KiB at w = 15). */
  rc = deflating ? deflateInit2(&s->z, level, Z_DEFLATED, -window_bits, 8, Z_DEFAULT_STRATEGY)
                 : inflateInit2(&s->z, -window_bits);
  if (rc != Z_OK) {
    zv_free(s);
    return rc == Z_MEM_ERROR ? ZV_ENOMEM : ZV_EINVAL;
  }
  *out = s;
  return 0;
}

size_t zv_pmd_bound(zv_pmd_t *s, size_t n) {
  /* deflateBound covers the blocks; a sync flush adds an empty stored block (5 bytes) and the
   * bits pending before it. */
  uLong b = deflateBound(&s->z, (uLong)(n > 0x40000000u ? 0x40000000u : n));
  return (n > 0x40000000u ? n : (size_t)b) + 64;
}

int zv_pmd_deflate(zv_pmd_t *s, const char *in, size_t n, char *out, size_t cap, size_t *outlen) {
  int rc;
  size_t len;
  *outlen = 0;
  if (!s->deflating || n > 0x40000000u || cap > 0xFFFFFFFFu) return ZV_ERANGE;
  s->z.next_in = (Bytef *)(uintptr_t)in;
  s->z.avail_in = (uInt)n;
  s->z.next_out = (Bytef *)out;
  s->z.avail_out = (uInt)cap;
  rc = deflate(&s->z, Z_SYNC_FLUSH);
  if (rc == Z_MEM_ERROR) return ZV_ENOMEM;
  if ((rc != Z_OK && rc != Z_BUF_ERROR) || s->z.avail_in || !s->z.avail_out) return ZV_ERANGE;
  len = cap - s->z.avail_out;
  /* A sync flush ends with an empty stored block: 00 00 FF FF, which the wire leaves out. */
  if (len < 4 || memcmp(out + len - 4, ZV_PMD_TAIL, 4)) return ZV_ERANGE;
  *outlen = len - 4;
  return 0;
}

int zv_pmd_inflate(zv_pmd_t *s, const char *in, size_t n, size_t *used, char *out, size_t cap,
                   size_t *outlen, int *end) {
  int rc;
  *used = *outlen = 0;
  *end = 0;
  if (s->deflating) return ZV_EINVAL;
  if (n > 0x40000000u) n = 0x40000000u;
  if (cap > 0x40000000u) cap = 0x40000000u;
  s->z.next_in = (Bytef *)(uintptr_t)in;
  s->z.avail_in = (uInt)n;
  s->z.next_out = (Bytef *)out;
  s->z.avail_out = (uInt)cap;
  rc = inflate(&s->z, Z_SYNC_FLUSH);
  *used = n - s->z.avail_in;
  *outlen = cap - s->z.avail_out;
  if (rc == Z_STREAM_END) {
    /* The sender closed its stream (a final block): what follows starts afresh. */
    *end = 1;
    *used = n;
    inflateReset(&s->z);
    return 0;
  }
  if (rc == Z_OK || (rc == Z_BUF_ERROR && *used == 0 && *outlen == 0)) return 0;
  return rc == Z_MEM_ERROR ? ZV_ENOMEM : ZV_ESYNTAX;
}

void zv_pmd_reset(zv_pmd_t *s) {
  if (s->deflating) deflateReset(&s->z);
  else inflateReset(&s->z);
}

void zv_pmd_free(zv_pmd_t *s) {
  if (!s) return;
  if (s->deflating) deflateEnd(&s->z);
  else inflateEnd(&s->z);
  zv_free(s);
}
