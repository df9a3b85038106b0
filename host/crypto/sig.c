/*
 * sig.c: Ed25519 and ES256 (P-256, SHA-256) signatures over libcrypto for JWS (sig.h). ES256
 * converts between OpenSSL's DER and JOSE's R || S. Keys are parsed once; the per-call
 * functions allocate only what libcrypto allocates for an EVP_MD_CTX and frees before return.
 */
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "../core/zv.h"
#include "sig.h"

struct zv_sig_key {
  EVP_PKEY *pkey;
  int alg;
};

static int alg_of(EVP_PKEY *p) {
  if (EVP_PKEY_get_base_id(p) == EVP_PKEY_ED25519) return ZV_SIG_ED25519;
  if (EVP_PKEY_get_base_id(p) == EVP_PKEY_EC) {
    char group[64];
    size_t glen = 0;
    if (EVP_PKEY_get_utf8_string_param(p, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                       &glen) &&
        strcmp(group, "prime256v1") == 0)
      return ZV_SIG_ES256;
  }
  return 0;
}

int zv_sig_key_parse(const char *pem, size_t n, zv_sig_key_t **out, int *alg, int *has_private) {
  BIO *bio;
  EVP_PKEY *p;
  zv_sig_key_t *k;
  *out = NULL;
  if (n > 16384) return ZV_EINVAL;
  bio = BIO_new_mem_buf(pem, (int)n);
  if (!bio) return ZV_ENOMEM;
  p = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
  *has_private = p != NULL;
  if (!p) {
    (void)BIO_reset(bio);
    p = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
  }
  BIO_free(bio);
  if (!p) return ZV_EINVAL;
  *alg = alg_of(p);
  if (!*alg) {
    EVP_PKEY_free(p);
    return ZV_EINVAL;
  }
  k = zv_alloc(sizeof *k);
  if (!k) {
    EVP_PKEY_free(p);
    return ZV_ENOMEM;
  }
  k->pkey = p;
  k->alg = *alg;
  *out = k;
  return 0;
}

void zv_sig_key_free(zv_sig_key_t *k) {
  if (!k) return;
  EVP_PKEY_free(k->pkey);
  zv_free(k);
}

int zv_sig_sign(zv_sig_key_t *k, const void *msg, size_t n, unsigned char *out, size_t *outlen) {
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  unsigned char der[ZV_SIG_MAX];
  size_t len = sizeof der;
  int ok;
  if (!c) return ZV_ENOMEM;
  ok = EVP_DigestSignInit(c, NULL, k->alg == ZV_SIG_ES256 ? EVP_sha256() : NULL, NULL, k->pkey) &&
       EVP_DigestSign(c, der, &len, msg, n);
  EVP_MD_CTX_free(c);
  if (!ok) return ZV_EINVAL;
  if (k->alg == ZV_SIG_ED25519) {
    memcpy(out, der, len);
    *outlen = len;
    return 0;
  }
  {
    const unsigned char *p = der;
    ECDSA_SIG *s = d2i_ECDSA_SIG(NULL, &p, (long)len);
    const BIGNUM *r, *sv;
    if (!s) return ZV_EINVAL;
    ECDSA_SIG_get0(s, &r, &sv);
    ok = BN_bn2binpad(r, out, 32) == 32 && BN_bn2binpad(sv, out + 32, 32) == 32;
    ECDSA_SIG_free(s);
    *outlen = 64;
    return ok ? 0 : ZV_EINVAL;
  }
}

int zv_sig_verify(zv_sig_key_t *k, const void *msg, size_t n, const unsigned char *sig,
                  size_t siglen) {
  EVP_MD_CTX *c;
  unsigned char der[ZV_SIG_MAX];
  const unsigned char *use = sig;
  size_t uselen = siglen;
  int ok;
  if (siglen != 64) return ZV_EINVAL;
  if (k->alg == ZV_SIG_ES256) {
    ECDSA_SIG *s = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, 32, NULL), *sv = BN_bin2bn(sig + 32, 32, NULL);
    unsigned char *p = der;
    int dlen;
    if (!s || !r || !sv) {
      ECDSA_SIG_free(s);
      BN_free(r);
      BN_free(sv);
      return ZV_ENOMEM;
    }
    ECDSA_SIG_set0(s, r, sv); /* s owns r and sv now */
    dlen = i2d_ECDSA_SIG(s, NULL);
    if (dlen <= 0 || dlen > (int)sizeof der) {
      ECDSA_SIG_free(s);
      return ZV_EINVAL;
    }
    i2d_ECDSA_SIG(s, &p);
    ECDSA_SIG_free(s);
    use = der;
    uselen = (size_t)dlen;
  }
  c = EVP_MD_CTX_new();
  if (!c) return ZV_ENOMEM;
  ok = EVP_DigestVerifyInit(c, NULL, k->alg == ZV_SIG_ES256 ? EVP_sha256() : NULL, NULL,
                            k->pkey) &&
       EVP_DigestVerify(c, use, uselen, msg, n) == 1;
  EVP_MD_CTX_free(c);
  return ok ? 0 : ZV_EINVAL;
}
