/*
 * password.h: argon2id password hashing over Debian's libargon2 (the reference implementation
 * of RFC 9106). It must stay free of Lua and libuv headers: the binding runs these functions
 * on libuv's thread pool, so each is a plain blocking call on its own arguments, thread-safe,
 * with no global state.
 *
 * An encoded hash is the PHC string "$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<tag>"
 * (salt and tag in unpadded base64), which carries its own parameters: verification needs no
 * configuration, and needs_rehash compares them with the current ones.
 */
#ifndef ZV_PASSWORD_H
#define ZV_PASSWORD_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint32_t t_cost;   /* passes over memory */
  uint32_t m_cost;   /* memory in KiB */
  uint32_t lanes;    /* parallelism (threads argon2 may use; zever uses 1 thread per hash) */
  uint32_t hash_len; /* tag bytes */
  uint32_t version;  /* 0x13 */
} zv_password_params_t;

/* Room for any encoded hash zever writes (hash_len <= 64, salt <= 64, 10-digit numbers). */
#define ZV_PASSWORD_ENCODED_MAX 256

/*
 * Hashes pw[0..n) with salt[0..saltlen) into out (cap bytes, NUL-terminated). Returns 0,
 * ZV_EINVAL for parameters argon2 refuses (t < 1, m < 8 * lanes, salt < 8 bytes, ...) or
 * ZV_ENOMEM. Allocates the m_cost KiB argon2 works in, and frees it before returning.
 */
int zv_password_hash(const zv_password_params_t *p, const void *pw, size_t n, const void *salt,
                     size_t saltlen, char *out, size_t cap);

/*
 * Checks pw[0..n) against an encoded hash, comparing tags in constant time. Returns 0 on a
 * match, ZV_ENOTFOUND on a mismatch, ZV_EINVAL when encoded is not an argon2id hash, ZV_ENOMEM.
 */
int zv_password_verify(const char *encoded, const void *pw, size_t n);

/* Reads the parameters of an encoded argon2id hash. Returns 0 or ZV_EINVAL. Never allocates. */
int zv_password_params(const char *encoded, zv_password_params_t *out);

/*
 * The raw argon2id tag (RFC 9106 section 3), with an optional secret and associated data: what
 * known-answer vectors check. Returns 0 or ZV_EINVAL / ZV_ENOMEM.
 */
int zv_password_raw(const zv_password_params_t *p, const void *pw, size_t n, const void *salt,
                    size_t saltlen, const void *secret, size_t secretlen, const void *ad,
                    size_t adlen, unsigned char *out);

#endif
