/*
 * password.c: argon2id hashing, verification and parameter parsing (password.h) over libargon2.
 * Every function is a blocking call that touches only its arguments, so the binding may run it
 * on any thread.
 */
#include <argon2.h>
#include <stdlib.h>
#include <string.h>

#include "../core/zv.h"
#include "password.h"

static int map(int rc) {
  switch (rc) {
  case ARGON2_OK: return 0;
  case ARGON2_MEMORY_ALLOCATION_ERROR: return ZV_ENOMEM;
  case ARGON2_VERIFY_MISMATCH: return ZV_ENOTFOUND;
  default: return ZV_EINVAL;
  }
}

int zv_password_hash(const zv_password_params_t *p, const void *pw, size_t n, const void *salt,
                     size_t saltlen, char *out, size_t cap) {
  if (p->hash_len < 4 || p->hash_len > 64 || saltlen > 64) return ZV_EINVAL;
  if (argon2_encodedlen(p->t_cost, p->m_cost, p->lanes, (uint32_t)saltlen, p->hash_len,
                        Argon2_id) > cap)
    return ZV_EINVAL;
  return map(argon2id_hash_encoded(p->t_cost, p->m_cost, p->lanes, pw, n, salt, saltlen,
                                   p->hash_len, out, cap));
}

int zv_password_verify(const char *encoded, const void *pw, size_t n) {
  zv_password_params_t p;
  /* Refuse what is not argon2id before libargon2 allocates for it (a hostile m= would). */
  if (zv_password_params(encoded, &p)) return ZV_EINVAL;
  return map(argon2id_verify(encoded, pw, n));
}

/* Reads a decimal uint32 at *s; advances *s. */
static int read_u32(const char **s, uint32_t *out) {
  const char *c = *s;
  unsigned long long v = 0;
  if (*c < '0' || *c > '9') return -1;
  while (*c >= '0' && *c <= '9') {
    v = v * 10 + (unsigned)(*c - '0');
    if (v > 0xffffffffull) return -1;
    c++;
  }
  *s = c;
  *out = (uint32_t)v;
  return 0;
}

static int expect(const char **s, const char *lit) {
  size_t n = strlen(lit);
  if (strncmp(*s, lit, n) != 0) return -1;
  *s += n;
  return 0;
}

int zv_password_params(const char *encoded, zv_password_params_t *out) {
  const char *s = encoded, *tag;
  size_t b64 = 0;
  memset(out, 0, sizeof *out);
  if (expect(&s, "$argon2id$v=") || read_u32(&s, &out->version)) return ZV_EINVAL;
  if (expect(&s, "$m=") || read_u32(&s, &out->m_cost)) return ZV_EINVAL;
  if (expect(&s, ",t=") || read_u32(&s, &out->t_cost)) return ZV_EINVAL;
  if (expect(&s, ",p=") || read_u32(&s, &out->lanes)) return ZV_EINVAL;
  if (*s++ != '$') return ZV_EINVAL;
  while (*s && *s != '$') s++; /* the salt */
  if (*s++ != '$') return ZV_EINVAL;
  tag = s;
  while (*s) {
    char c = *s++;
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
          c == '+' || c == '/'))
      return ZV_EINVAL;
    b64++;
  }
  (void)tag;
  out->hash_len = (uint32_t)(b64 * 3 / 4);
  /* Bounds a stored hash cannot push past (it may come from a tampered row): 4 GiB of memory;
   * 2^24 lanes is argon2's own limit. */
  if (out->version != ARGON2_VERSION_13 || out->t_cost < 1 || out->lanes < 1 ||
      out->lanes > 0xffffff || out->m_cost < 8 * out->lanes || out->m_cost > 4194304 ||
      out->hash_len < 4)
    return ZV_EINVAL;
  return 0;
}

int zv_password_raw(const zv_password_params_t *p, const void *pw, size_t n, const void *salt,
                    size_t saltlen, const void *secret, size_t secretlen, const void *ad,
                    size_t adlen, unsigned char *out) {
  argon2_context ctx;
  memset(&ctx, 0, sizeof ctx);
  if (n > 0xffffffffu || saltlen > 0xffffffffu || secretlen > 0xffffffffu || adlen > 0xffffffffu)
    return ZV_EINVAL;
  ctx.out = out;
  ctx.outlen = p->hash_len;
  ctx.pwd = (uint8_t *)(uintptr_t)pw;
  ctx.pwdlen = (uint32_t)n;
  ctx.salt = (uint8_t *)(uintptr_t)salt;
  ctx.saltlen = (uint32_t)saltlen;
  ctx.secret = (uint8_t *)(uintptr_t)secret;
  ctx.secretlen = (uint32_t)secretlen;
  ctx.ad = (uint8_t *)(uintptr_t)ad;
  ctx.adlen = (uint32_t)adlen;
  ctx.t_cost = p->t_cost;
  ctx.m_cost = p->m_cost;
  ctx.lanes = p->lanes;
  ctx.threads = p->lanes;
  ctx.version = p->version ? p->version : ARGON2_VERSION_13;
  ctx.flags = ARGON2_DEFAULT_FLAGS;
  return map(argon2_ctx(&ctx, Argon2_id));
}
