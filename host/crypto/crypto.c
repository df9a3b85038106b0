/*
 * crypto.c: AES-256-GCM, HMAC, random, constant-time compare and base64url over libcrypto
 * (crypto.h). Contexts are allocated with OpenSSL's allocator when created and freed by their
 * *_free; the per-call functions allocate nothing of their own.
 */
#include <pthread.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "../core/zv.h"
#include "crypto.h"

struct zv_crypto_mac {
  EVP_MAC_CTX *ctx;
};

struct zv_crypto_aead {
  EVP_CIPHER_CTX *enc;
  EVP_CIPHER_CTX *dec;
};

static const char *digest_name(int bits) {
  switch (bits) {
  case 256: return "SHA256";
  case 384: return "SHA384";
  case 512: return "SHA512";
  default: return NULL;
  }
}

int zv_crypto_mac_new(int bits, const void *key, size_t klen, zv_crypto_mac_t **out) {
  const char *dn = digest_name(bits);
  EVP_MAC *mac;
  OSSL_PARAM params[2];
  zv_crypto_mac_t *m;
  static const unsigned char empty[1] = {0};
  *out = NULL;
  if (!dn) return ZV_EINVAL;
  m = zv_alloc(sizeof *m);
  if (!m) return ZV_ENOMEM;
  mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  m->ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
  EVP_MAC_free(mac);
  if (!m->ctx) {
    zv_free(m);
    return ZV_ENOMEM;
  }
  params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)dn, 0);
  params[1] = OSSL_PARAM_construct_end();
  /* An empty key is valid HMAC; OpenSSL wants a non-NULL pointer for it. */
  if (!EVP_MAC_init(m->ctx, klen ? key : empty, klen, params)) {
    zv_crypto_mac_free(m);
    return ZV_EINVAL;
  }
  *out = m;
  return 0;
}

int zv_crypto_mac_compute(zv_crypto_mac_t *m, const void *msg, size_t n, unsigned char *out,
                          size_t *outlen) {
  /* A NULL key re-initialises with the key already set: no key schedule per call. */
  if (!EVP_MAC_init(m->ctx, NULL, 0, NULL)) return ZV_EINVAL;
  if (n && !EVP_MAC_update(m->ctx, msg, n)) return ZV_EINVAL;
  if (!EVP_MAC_final(m->ctx, out, outlen, ZV_CRYPTO_MAC_MAX)) return ZV_EINVAL;
  return 0;
}

void zv_crypto_mac_free(zv_crypto_mac_t *m) {
  if (!m) return;
  EVP_MAC_CTX_free(m->ctx);
  zv_free(m);
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

static int b64val(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

int zv_crypto_b64url_decode(const char *s, size_t n, unsigned char *out, size_t *outlen) {
  size_t i = 0, o = 0;
  unsigned v = 0;
  int bits = 0;
  if (n % 4 == 1) return ZV_EINVAL;
  for (; i < n; i++) {
    int d = b64val((unsigned char)s[i]);
    if (d < 0) return ZV_EINVAL;
    v = (v << 6) | (unsigned)d;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (unsigned char)(v >> bits);
      v &= (1u << bits) - 1;
    }
  }
  if (v != 0) return ZV_EINVAL; /* non-canonical: unused bits set */
  *outlen = o;
  return 0;
}
