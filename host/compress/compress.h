/*
 * compress.h: one-shot gzip (zlib) and brotli compression of a response body into a buffer
 * the caller provides (zever.middleware.compress through l_compress.c).
 *
 * It must not include lua.h or uv.h. The output buffer is the caller's (sized with the bound
 * functions), so the only allocations are the encoders' own working state, made and freed
 * inside one call.
 */
#ifndef ZV_COMPRESS_H
#define ZV_COMPRESS_H

#include <stddef.h>

/* The most bytes gzip / brotli output can take for n input bytes. */
size_t zv_compress_gzip_bound(size_t n);
size_t zv_compress_brotli_bound(size_t n);

/* Compresses in[0, n) into out (cap bytes) as a gzip member (RFC 1952) at level 1..9; *outlen
 * is its length. Returns 0, ZV_EINVAL (a bad level), ZV_ENOMEM or ZV_ERANGE (cap too small). */
int zv_compress_gzip(const char *in, size_t n, int level, char *out, size_t cap, size_t *outlen);

/* The same as brotli (RFC 7932) at quality 0..11 (text mode, a 4 MiB window). */
int zv_compress_brotli(const char *in, size_t n, int quality, char *out, size_t cap,
                       size_t *outlen);

/*
 * Streaming decompression of a gzip (RFC 1952) or zlib/deflate body (the HTTP client's
 * Content-Encoding), one piece at a time: the state is zv_alloc'd by new and freed by free.
 * gunzip: consumes in[0, n) while out has room; *used and *outlen say how much was taken and
 * made; *end is set at the end of the stream. Returns 0, ZV_ESYNTAX (corrupt data) or
 * ZV_ENOMEM. A caller loops while *used < n or out came back full.
 */
typedef struct zv_compress_inflate_s zv_compress_inflate_t;
int zv_compress_inflate_new(zv_compress_inflate_t **out);
int zv_compress_inflate(zv_compress_inflate_t *z, const char *in, size_t n, size_t *used,
                        char *out, size_t cap, size_t *outlen, int *end);
void zv_compress_inflate_free(zv_compress_inflate_t *z);

#endif
