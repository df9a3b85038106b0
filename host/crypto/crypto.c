/*
 * crypto.c: AES-256-GCM, HMAC, random, constant-time compare and base64url over libcrypto
 * (crypto.h). Contexts are allocated with OpenSSL's allocator when created and freed by their
 * *_free; the per-call functions allocate nothing of their own.
 */
/* HMAC runs on the SHA-2 block functions with the pads' states computed once per key (as
 * RFC 2104 section 4 suggests): OpenSSL 3 still ships them, marked deprecated in favour of
 * EVP_MAC, whose per-call provider dispatch costs several times the hashing of a JWT. */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <pthread.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "../core/zv.h"
#include "crypto.h"

/* The states after absorbing key ^ ipad and key ^ opad: one block each. */
struct zv_crypto_mac {
  int bits;
  union {
    SHA256_CTX s256;
    SHA512_CTX s512;
  } inner, outer;
};

struct zv_crypto_aead {
  EVP_CIPHER_CTX *enc;
  EVP_CIPHER_CTX *dec;
};

int zv_crypto_mac_new(int bits, const void *key, size_t klen, zv_crypto_mac_t **out) {
  unsigned char k[128], pad[128];
  size_t block = bits == 256 ? 64 : 128;
  zv_crypto_mac_t *m;
  *out = NULL;
  if (bits != 256 && bits != 384 && bits != 512) return ZV_EINVAL;
  m = zv_alloc(sizeof *m);
  if (!m) return ZV_ENOMEM;
  m->bits = bits;
  memset(k, 0, sizeof k);
  if (klen > block) { /* a long key is hashed first (RFC 2104) */
    if (bits == 256) SHA256(key, klen, k);
    else if (bits == 384) SHA384(key, klen, k);
    else SHA512(key, klen, k);
  } else if (klen) {
    memcpy(k, key, klen);
  }
  for (int pass = 0; pass < 2; pass++) {
    unsigned char x = pass ? 0x5c : 0x36;
    for (size_t i = 0; i < block; i++) pad[i] = k[i] ^ x;
    if (bits == 256) {
      SHA256_CTX *c = pass ? &m->outer.s256 : &m->inner.s256;
      SHA256_Init(c);
      SHA256_Update(c, pad, block);
    } else {
      SHA512_CTX *c = pass ? &m->outer.s512 : &m->inner.s512;
      if (bits == 384) SHA384_Init(c);
      else SHA512_Init(c);
      SHA512_Update(c, pad, block);
    }
  }
  OPENSSL_cleanse(k, sizeof k);
  OPENSSL_cleanse(pad, sizeof pad);
  *out = m;
  return 0;
}

int zv_crypto_mac_compute(zv_crypto_mac_t *m, const void *msg, size_t n, unsigned char *out,
                          size_t *outlen) {
  unsigned char h[64];
  if (m->bits == 256) {
    SHA256_CTX c = m->inner.s256;
    SHA256_Update(&c, msg, n);
    SHA256_Final(h, &c);
    c = m->outer.s256;
    SHA256_Update(&c, h, 32);
    SHA256_Final(out, &c);
    *outlen = 32;
  } else {
    size_t len = m->bits == 384 ? 48 : 64;
    SHA512_CTX c = m->inner.s512;
    SHA512_Update(&c, msg, n);
    if (m->bits == 384) SHA384_Final(h, &c);
    else SHA512_Final(h, &c);
    c = m->outer.s512;
    SHA512_Update(&c, h, len);
    if (m->bits == 384) SHA384_Final(out, &c);
    else SHA512_Final(out, &c);
    *outlen = len;
  }
  return 0;
}

void zv_crypto_mac_free(zv_crypto_mac_t *m) {
  if (!m) return;
  OPENSSL_cleanse(m, sizeof *m);
  zv_free(m);
}

int zv_crypto_digest(int bits, const void *msg, size_t n, unsigned char *out, size_t *outlen) {
  const EVP_MD *md = bits == 256 ? EVP_sha256() : bits == 384 ? EVP_sha384()
                   : bits == 512 ? EVP_sha512() : NULL;
  unsigned int len = 0;
  if (!md) return ZV_EINVAL;
  if (EVP_Digest(msg, n, out, &len, md, NULL) != 1) return ZV_ENOMEM;
  *outlen = len;
  return 0;
}

int zv_crypto_hmac(int bits, const void *key, size_t klen, const void *msg, size_t n,
                   unsigned char *out, size_t *outlen) {
  zv_crypto_mac_t *m;
  int rc = zv_crypto_mac_new(bits, key, klen, &m);
  if (rc) return rc;
  rc = zv_crypto_mac_compute(m, msg, n, out, outlen);
  zv_crypto_mac_free(m);
  return rc;
}

static EVP_CIPHER_CTX *gcm_ctx(const void *key, int enc) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  if (!c) return NULL;
  if (!EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, key, NULL, enc)) {
    EVP_CIPHER_CTX_free(c);
    return NULL;
  }
  return c;
}

int zv_crypto_aead_new(const void *key, size_t klen, zv_crypto_aead_t **out) {
  zv_crypto_aead_t *a;
  *out = NULL;
  if (klen != ZV_CRYPTO_KEY_BYTES) return ZV_EINVAL;
  a = zv_alloc(sizeof *a);
  if (!a) return ZV_ENOMEM;
  a->enc = gcm_ctx(key, 1);
  a->dec = gcm_ctx(key, 0);
  if (!a->enc || !a->dec) {
    zv_crypto_aead_free(a);
    return ZV_ENOMEM;
  }
  *out = a;
  return 0;
}

void zv_crypto_aead_free(zv_crypto_aead_t *a) {
  if (!a) return;
  EVP_CIPHER_CTX_free(a->enc);
  EVP_CIPHER_CTX_free(a->dec);
  zv_free(a);
}

/* Sets the IV length (when not 12) and the IV, keeping the key schedule. */
static int set_iv(EVP_CIPHER_CTX *c, const void *iv, size_t ivlen, int enc) {
  if (ivlen == 0 || ivlen > 1024) return 0;
  if (!EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, (int)ivlen, NULL)) return 0;
  return EVP_CipherInit_ex(c, NULL, NULL, NULL, iv, enc);
}

int zv_crypto_aead_seal(zv_crypto_aead_t *a, const void *iv, size_t ivlen, const void *aad,
                        size_t alen, const void *pt, size_t n, unsigned char *ct,
                        unsigned char *tag) {
  EVP_CIPHER_CTX *c = a->enc;
  int len = 0;
  if (n > 0x7fffffff || alen > 0x7fffffff || !set_iv(c, iv, ivlen, 1)) return ZV_EINVAL;
  if (alen && !EVP_EncryptUpdate(c, NULL, &len, aad, (int)alen)) return ZV_EINVAL;
  if (n && !EVP_EncryptUpdate(c, ct, &len, pt, (int)n)) return ZV_EINVAL;
  if (!EVP_EncryptFinal_ex(c, ct + (n ? len : 0), &len)) return ZV_EINVAL;
  if (!EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, ZV_CRYPTO_TAG_BYTES, tag)) return ZV_EINVAL;
  return 0;
}

int zv_crypto_aead_open(zv_crypto_aead_t *a, const void *iv, size_t ivlen, const void *aad,
                        size_t alen, const void *ct, size_t n, const unsigned char *tag,
                        unsigned char *pt) {
  EVP_CIPHER_CTX *c = a->dec;
  unsigned char t[ZV_CRYPTO_TAG_BYTES];
  int len = 0, ok;
  if (n > 0x7fffffff || alen > 0x7fffffff || !set_iv(c, iv, ivlen, 0)) return ZV_EINVAL;
  memcpy(t, tag, sizeof t);
  ok = !alen || EVP_DecryptUpdate(c, NULL, &len, aad, (int)alen);
  ok = ok && (!n || EVP_DecryptUpdate(c, pt, &len, ct, (int)n));
  ok = ok && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, ZV_CRYPTO_TAG_BYTES, t);
  ok = ok && EVP_DecryptFinal_ex(c, pt + (n ? len : 0), &len) > 0;
  if (!ok) {
    if (n) OPENSSL_cleanse(pt, n);
    return ZV_EINVAL;
  }
  return 0;
}

int zv_crypto_random(void *buf, size_t n) {
  if (n > 0x7fffffff) return ZV_EINVAL;
  if (n && RAND_bytes(buf, (int)n) != 1) return ZV_EIO;
  return 0;
}

static unsigned char process_key[ZV_CRYPTO_KEY_BYTES];
static int process_key_rc = ZV_EIO;
static pthread_once_t process_key_once = PTHREAD_ONCE_INIT;

static void draw_process_key(void) {
  process_key_rc = zv_crypto_random(process_key, sizeof process_key);
}

int zv_crypto_process_key(unsigned char out[ZV_CRYPTO_KEY_BYTES]) {
  pthread_once(&process_key_once, draw_process_key);
  if (process_key_rc) return process_key_rc;
  memcpy(out, process_key, sizeof process_key);
  return 0;
}

int zv_crypto_equal(const void *a, const void *b, size_t n) {
  return CRYPTO_memcmp(a, b, n) == 0;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t zv_crypto_b64url_len(size_t n) { return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0); }

size_t zv_crypto_b64url_encode(const void *src, size_t n, char *out) {
  const unsigned char *s = src;
  size_t i = 0, o = 0;
  for (; i + 3 <= n; i += 3) {
    unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
    out[o++] = B64[v >> 18];
    out[o++] = B64[(v >> 12) & 63];
    out[o++] = B64[(v >> 6) & 63];
    out[o++] = B64[v & 63];
  }
  if (n - i == 1) {
    unsigned v = (unsigned)s[i] << 16;
    out[o++] = B64[v >> 18];
    out[o++] = B64[(v >> 12) & 63];
  } else if (n - i == 2) {
    unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8;
    out[o++] = B64[v >> 18];
    out[o++] = B64[(v >> 12) & 63];
    out[o++] = B64[(v >> 6) & 63];
  }
  return o;
}

/* The value of each base64url character, 64 for anything else. */
static const unsigned char B64V[256] = {
#define X64 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64
  X64, X64,
  64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 62, 64, 64,
  52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 64, 64, 64, 64, 64, 64,
  64, 0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14,
  15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 64, 64, 64, 64, 63,
  64, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
  41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 64, 64, 64, 64, 64,
  X64, X64, X64, X64, X64, X64, X64, X64
#undef X64
};

int zv_crypto_b64url_decode(const char *src, size_t n, unsigned char *out, size_t *outlen) {
  const unsigned char *s = (const unsigned char *)src;
  size_t i = 0, o = 0, rest = n % 4;
  if (rest == 1) return ZV_EINVAL;
  for (; i + 4 <= n; i += 4) {
    unsigned a = B64V[s[i]], b = B64V[s[i + 1]], c = B64V[s[i + 2]], d = B64V[s[i + 3]];
    if ((a | b | c | d) & 64) return ZV_EINVAL;
    unsigned v = a << 18 | b << 12 | c << 6 | d;
    out[o++] = (unsigned char)(v >> 16);
    out[o++] = (unsigned char)(v >> 8);
    out[o++] = (unsigned char)v;
  }
  if (rest) {
    unsigned a = B64V[s[i]], b = B64V[s[i + 1]], c = rest == 3 ? B64V[s[i + 2]] : 0;
    if ((a | b | c) & 64) return ZV_EINVAL;
    unsigned v = a << 18 | b << 12 | c << 6;
    out[o++] = (unsigned char)(v >> 16);
    if (rest == 3) out[o++] = (unsigned char)(v >> 8);
    /* Canonical: the bits below the last whole byte must be zero. */
    if (rest == 2 ? (v & 0xffff) : (v & 0xff)) return ZV_EINVAL;
  }
  *outlen = o;
  return 0;
}
