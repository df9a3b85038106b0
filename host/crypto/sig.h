/*
 * sig.h: public-key signatures for JWS (RFC 7518 ES256, RFC 8037 EdDSA with Ed25519) over
 * libcrypto. It must stay free of Lua and libuv headers.
 *
 * A key is parsed once from PEM (SubjectPublicKeyInfo or PKCS#8, the `openssl genpkey` output)
 * and pinned to one algorithm: a key is never used with another algorithm than its own type,
 * which is what makes algorithm confusion (an RSA/EC public key fed to HMAC, say) impossible
 * here. ES256 signatures are JOSE's fixed 64-byte R || S, not DER.
 */
#ifndef ZV_SIG_H
#define ZV_SIG_H

#include <stddef.h>

#define ZV_SIG_ED25519 1
#define ZV_SIG_ES256 2
#define ZV_SIG_MAX 72 /* ES256 DER at most; the JOSE forms are 64 bytes */

typedef struct zv_sig_key zv_sig_key_t;

/*
 * Parses pem[0..n): a private key (signs and verifies) or a public key (verifies). *alg is set
 * to ZV_SIG_ED25519 or ZV_SIG_ES256 (P-256 only); *has_private to 1 for a private key. Returns
 * 0, ZV_EINVAL (not a PEM key of a supported type) or ZV_ENOMEM. The key is the caller's
 * (zv_sig_key_free).
 */
int zv_sig_key_parse(const char *pem, size_t n, zv_sig_key_t **out, int *alg, int *has_private);
void zv_sig_key_free(zv_sig_key_t *k);

/* Signs msg[0..n) into out (64 bytes for both algorithms); *outlen is set. 0 or ZV_EINVAL. */
int zv_sig_sign(zv_sig_key_t *k, const void *msg, size_t n, unsigned char *out, size_t *outlen);

/* 0 when sig[0..siglen) is k's signature of msg[0..n), ZV_EINVAL otherwise. */
int zv_sig_verify(zv_sig_key_t *k, const void *msg, size_t n, const unsigned char *sig,
                  size_t siglen);

#endif
