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

/*
 * permessage-deflate (RFC 7692), one WebSocket connection's compressor or decompressor: raw
 * deflate (no zlib/gzip wrapper). A message is deflated with a sync flush and sent without the
 * flush's trailing 00 00 FF FF; the receiver appends those 4 bytes before inflating. With
 * context takeover the state (the LZ77 window) carries over from message to message; without
 * it, zv_pmd_reset between messages. The state is zv_alloc'd by new and freed by free.
 *
 *   new: deflating (1) or inflating (0); window_bits 9..15 for a compressor (zlib cannot make
 *        an 8-bit window: an offer asking for 8 is declined), 8..15 for a decompressor; level
 *        1..9 for a compressor. Returns 0, ZV_EINVAL or ZV_ENOMEM.
 *   deflate: one whole message in[0, n) into out (cap >= zv_pmd_bound(n)); *outlen without the
 *        trailing 00 00 FF FF. Returns 0, ZV_ERANGE (cap too small) or ZV_ENOMEM.
 *   inflate: takes in[0, n) (the message, then the 4-byte tail ZV_PMD_TAIL) while out has
 *        room; *used and *outlen say how much was taken and made; *end is set when the sender
 *        ended its deflate stream (a final block: the state was reset, the rest of in is
 *        ignored). Returns 0 or ZV_ESYNTAX (corrupt data) or ZV_ENOMEM. A caller loops while
 *        *used < n or out came back full, and bounds the total itself (a zip bomb stops there).
 */
typedef struct zv_pmd_s zv_pmd_t;
#define ZV_PMD_TAIL "\x00\x00\xff\xff"
int zv_pmd_new(zv_pmd_t **out, int deflating, int window_bits, int level);
size_t zv_pmd_bound(zv_pmd_t *z, size_t n);
int zv_pmd_deflate(zv_pmd_t *z, const char *in, size_t n, char *out, size_t cap, size_t *outlen);
int zv_pmd_inflate(zv_pmd_t *z, const char *in, size_t n, size_t *used, char *out, size_t cap,
                   size_t *outlen, int *end);
void zv_pmd_reset(zv_pmd_t *z);
void zv_pmd_free(zv_pmd_t *z);

#endif
