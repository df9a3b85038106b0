/*
 * crypto.h: the primitives of the crypto battery over OpenSSL's libcrypto: AES-256-GCM, HMAC
 * (SHA-256/384/512), secure random bytes, constant-time comparison and base64url. It must stay
 * free of Lua and libuv headers, and it never logs or keeps a copy of a key outside the
 * OpenSSL contexts it owns (which clear it when freed).
 *
 * Contexts are keyed once and reused: a zv_crypto_mac_t or zv_crypto_aead_t holds an OpenSSL
 * context with its key schedule, so a per-request call does no key setup. A context is not
 * shared between threads (each worker's Lua state has its own).
 */
#ifndef ZV_CRYPTO_H
#define ZV_CRYPTO_H

#include <stddef.h>

#define ZV_CRYPTO_KEY_BYTES 32   /* AES-256 */
#define ZV_CRYPTO_IV_BYTES 12    /* the GCM nonce zever writes (any length >= 1 is read) */
#define ZV_CRYPTO_TAG_BYTES 16
#define ZV_CRYPTO_MAC_MAX 64     /* SHA-512 */

typedef struct zv_crypto_mac zv_crypto_mac_t;
typedef struct zv_crypto_aead zv_crypto_aead_t;

/*
 * An HMAC context over SHA-<bits> (256, 384 or 512) keyed with key[0..klen). *out is owned by
 * the caller (zv_crypto_mac_free). Returns 0, ZV_EINVAL for another bits, ZV_ENOMEM.
 */
int zv_crypto_mac_new(int bits, const void *key, size_t klen, zv_crypto_mac_t **out);
/* The MAC of msg[0..n) into out (ZV_CRYPTO_MAC_MAX bytes of room), its length in *outlen. */
int zv_crypto_mac_compute(zv_crypto_mac_t *m, const void *msg, size_t n, unsigned char *out,
                          size_t *outlen);
void zv_crypto_mac_free(zv_crypto_mac_t *m);

/* The SHA-2 digest (bits 256, 384 or 512) of msg into out (up to ZV_CRYPTO_MAC_MAX bytes);
 * *outlen its length. Returns 0, ZV_EINVAL (bits) or ZV_ENOMEM. */
int zv_crypto_digest(int bits, const void *msg, size_t n, unsigned char *out, size_t *outlen);

/* One-shot HMAC (test vectors, key derivation): as mac_new + mac_compute + mac_free. */
int zv_crypto_hmac(int bits, const void *key, size_t klen, const void *msg, size_t n,
                   unsigned char *out, size_t *outlen);

/* An AES-256-GCM context keyed with key[0..32). Returns 0, ZV_EINVAL (key length), ZV_ENOMEM. */
int zv_crypto_aead_new(const void *key, size_t klen, zv_crypto_aead_t **out);
void zv_crypto_aead_free(zv_crypto_aead_t *a);
/*
 * Encrypts pt[0..n) with iv[0..ivlen) and additional data aad[0..alen) into ct[0..n) and
 * tag[0..16). Returns 0 or ZV_EINVAL. Never allocates.
 */
int zv_crypto_aead_seal(zv_crypto_aead_t *a, const void *iv, size_t ivlen, const void *aad,
                        size_t alen, const void *pt, size_t n, unsigned char *ct,
                        unsigned char *tag);
/*
 * Decrypts ct[0..n) into pt[0..n) when tag[0..16) authenticates it with iv and aad; returns 0,
 * or ZV_EINVAL when it does not (pt is then zeroed: unauthenticated plaintext never leaves).
 */
int zv_crypto_aead_open(zv_crypto_aead_t *a, const void *iv, size_t ivlen, const void *aad,
                        size_t alen, const void *ct, size_t n, const unsigned char *tag,
                        unsigned char *pt);

/* n bytes from OpenSSL's CSPRNG into buf. Returns 0 or ZV_EIO. */
int zv_crypto_random(void *buf, size_t n);

/*
 * The process key: 32 random bytes drawn once per process (the first call, thread-safe) and the
 * same for every thread after; what signs and encrypts when no key is configured. Returns 0 or
 * ZV_EIO when the generator failed (then every call fails).
 */
int zv_crypto_process_key(unsigned char out[ZV_CRYPTO_KEY_BYTES]);

/* 1 when a[0..n) equals b[0..n), in time that depends on n only (CRYPTO_memcmp). */
int zv_crypto_equal(const void *a, const void *b, size_t n);

/* The length of the base64url text (no padding) of n bytes. */
size_t zv_crypto_b64url_len(size_t n);
/* Writes the base64url text of s[0..n) (no padding, no NUL) into out; returns its length. */
size_t zv_crypto_b64url_encode(const void *s, size_t n, char *out);
/*
 * Decodes base64url text s[0..n) into out (room for n * 3 / 4 bytes), the length in *outlen.
 * Strict: only the URL-safe alphabet, no padding or blanks, and the unused low bits of the last
 * character must be zero (one text per byte string). Returns 0 or ZV_EINVAL.
 */
int zv_crypto_b64url_decode(const char *s, size_t n, unsigned char *out, size_t *outlen);

#endif
