/*
 * l_crypto_core.c: the zever.crypto_core binding over crypto.c; lua/zever/crypto.lua wraps it
 * (keyrings, key ids, the sealed format) and applications require that.
 *
 *   core.random(n)                  -> n random bytes (a string)
 *   core.process_key()              -> the 32-byte random key of this process (crypto.h)
 *   core.equal(a, b)                -> boolean, constant time for equal lengths
 *   core.hmac(bits, key, msg)       -> the raw MAC (bits 256, 384 or 512)
 *   core.mac(bits, key)             -> m;  m:compute(msg) -> raw MAC   (keyed once)
 *   core.aead(key32)                -> a;  a:seal(iv, pt[, aad]) -> ct .. tag
 *                                          a:open(iv, ct_tag[, aad]) -> pt | nil
 *   core.sig_key(pem)               -> k | nil, msg; k:alg() -> "EdDSA" | "ES256",
 *                                          k:private() -> boolean, k:sign(msg) -> sig (64 bytes;
 *                                          raises for a public key), k:verify(msg, sig) -> boolean
 *   core.b64url(s)                  -> base64url text without padding
 *   core.unb64url(s)                -> bytes | nil (not canonical base64url)
 *
 * Wrong argument types, a key of the wrong size and an unknown bits raise (misuse); a failed
 * authentication or decoding returns nil. Buffers above a stack cap are Lua userdata, so a
 * raise never leaks; a key never appears in an error message.
 */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "crypto.h"
#include "sig.h"

#define MAC_MT "zever.crypto.mac"
#define AEAD_MT "zever.crypto.aead"
#define SIG_MT "zever.crypto.sig_key"
#define STACK_BYTES 4096

/* Room for n bytes: buf when it fits, else a userdata left on the stack. */
static unsigned char *scratch(lua_State *L, unsigned char *buf, size_t n) {
  return n <= STACK_BYTES ? buf : lua_newuserdata(L, n);
}

static int l_random(lua_State *L) {
  unsigned char buf[STACK_BYTES], *p;
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_argcheck(L, n >= 0 && n <= (1 << 20), 1, "want 0..1048576 bytes");
  p = scratch(L, buf, (size_t)n);
  if (zv_crypto_random(p, (size_t)n)) return luaL_error(L, "crypto: the random generator failed");
  lua_pushlstring(L, (const char *)p, (size_t)n);
  return 1;
}

static int l_process_key(lua_State *L) {
  unsigned char key[ZV_CRYPTO_KEY_BYTES];
  if (zv_crypto_process_key(key)) return luaL_error(L, "crypto: the random generator failed");
  lua_pushlstring(L, (const char *)key, sizeof key);
  memset(key, 0, sizeof key);
  return 1;
}

static int l_equal(lua_State *L) {
  size_t an, bn;
  const char *a = luaL_checklstring(L, 1, &an);
  const char *b = luaL_checklstring(L, 2, &bn);
  lua_pushboolean(L, an == bn && zv_crypto_equal(a, b, an));
  return 1;
}

static int l_hmac(lua_State *L) {
  unsigned char out[ZV_CRYPTO_MAC_MAX];
  size_t klen, n, olen;
  int bits = (int)luaL_checkinteger(L, 1);
  const char *key = luaL_checklstring(L, 2, &klen);
  const char *msg = luaL_checklstring(L, 3, &n);
  int rc = zv_crypto_hmac(bits, key, klen, msg, n, out, &olen);
  if (rc == ZV_EINVAL) return luaL_argerror(L, 1, "want 256, 384 or 512");
  if (rc) return luaL_error(L, "crypto: %s", zv_strerror(rc));
  lua_pushlstring(L, (const char *)out, olen);
  return 1;
}

static int l_digest(lua_State *L) {
  unsigned char out[ZV_CRYPTO_MAC_MAX];
  size_t n, olen;
  int bits = (int)luaL_checkinteger(L, 1);
  const char *msg = luaL_checklstring(L, 2, &n);
  int rc = zv_crypto_digest(bits, msg, n, out, &olen);
  if (rc == ZV_EINVAL) return luaL_argerror(L, 1, "want 256, 384 or 512");
  if (rc) return luaL_error(L, "crypto: %s", zv_strerror(rc));
  lua_pushlstring(L, (const char *)out, olen);
  return 1;
}

static int l_mac(lua_State *L) {
  size_t klen;
  int bits = (int)luaL_checkinteger(L, 1);
  const char *key = luaL_checklstring(L, 2, &klen);
  zv_crypto_mac_t **slot = lua_newuserdata(L, sizeof *slot);
  int rc;
  *slot = NULL;
  luaL_getmetatable(L, MAC_MT);
  lua_setmetatable(L, -2);
  rc = zv_crypto_mac_new(bits, key, klen, slot);
  if (rc == ZV_EINVAL) return luaL_argerror(L, 1, "want 256, 384 or 512");
  if (rc) return luaL_error(L, "crypto: %s", zv_strerror(rc));
  return 1;
}

static int l_mac_compute(lua_State *L) {
  zv_crypto_mac_t **slot = luaL_checkudata(L, 1, MAC_MT);
  unsigned char out[ZV_CRYPTO_MAC_MAX];
  size_t n, olen;
  const char *msg = luaL_checklstring(L, 2, &n);
  if (!*slot || zv_crypto_mac_compute(*slot, msg, n, out, &olen))
    return luaL_error(L, "crypto: HMAC failed");
  lua_pushlstring(L, (const char *)out, olen);
  return 1;
}

static int l_mac_gc(lua_State *L) {
  zv_crypto_mac_t **slot = luaL_checkudata(L, 1, MAC_MT);
  zv_crypto_mac_free(*slot);
  *slot = NULL;
  return 0;
}

static int l_aead(lua_State *L) {
  size_t klen;
  const char *key = luaL_checklstring(L, 1, &klen);
  zv_crypto_aead_t **slot;
  int rc;
  luaL_argcheck(L, klen == ZV_CRYPTO_KEY_BYTES, 1, "want a 32-byte key");
  slot = lua_newuserdata(L, sizeof *slot);
  *slot = NULL;
  luaL_getmetatable(L, AEAD_MT);
  lua_setmetatable(L, -2);
  rc = zv_crypto_aead_new(key, klen, slot);
  if (rc) return luaL_error(L, "crypto: %s", zv_strerror(rc));
  return 1;
}

static zv_crypto_aead_t *check_aead(lua_State *L) {
  zv_crypto_aead_t **slot = luaL_checkudata(L, 1, AEAD_MT);
  if (!*slot) luaL_error(L, "crypto: the AEAD context was released");
  return *slot;
}

static int l_aead_seal(lua_State *L) {
  zv_crypto_aead_t *a = check_aead(L);
  unsigned char buf[STACK_BYTES], *out;
  size_t ivlen, n, alen = 0;
  const char *iv = luaL_checklstring(L, 2, &ivlen);
  const char *pt = luaL_checklstring(L, 3, &n);
  const char *aad = luaL_optlstring(L, 4, "", &alen);
  luaL_argcheck(L, ivlen >= 1, 2, "want a non-empty IV");
  out = scratch(L, buf, n + ZV_CRYPTO_TAG_BYTES);
  if (zv_crypto_aead_seal(a, iv, ivlen, aad, alen, pt, n, out, out + n))
    return luaL_error(L, "crypto: AES-GCM encryption failed");
  lua_pushlstring(L, (const char *)out, n + ZV_CRYPTO_TAG_BYTES);
  return 1;
}

static int l_aead_open(lua_State *L) {
  zv_crypto_aead_t *a = check_aead(L);
  unsigned char buf[STACK_BYTES], *out;
  size_t ivlen, n, alen = 0;
  const char *iv = luaL_checklstring(L, 2, &ivlen);
  const char *ct = luaL_checklstring(L, 3, &n);
  const char *aad = luaL_optlstring(L, 4, "", &alen);
  if (ivlen < 1 || n < ZV_CRYPTO_TAG_BYTES) {
    lua_pushnil(L);
    return 1;
  }
  n -= ZV_CRYPTO_TAG_BYTES;
  out = scratch(L, buf, n ? n : 1);
  if (zv_crypto_aead_open(a, iv, ivlen, aad, alen, ct, n, (const unsigned char *)ct + n, out)) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushlstring(L, (const char *)out, n);
  if (n <= STACK_BYTES) memset(buf, 0, n);
  return 1;
}

static int l_aead_gc(lua_State *L) {
  zv_crypto_aead_t **slot = luaL_checkudata(L, 1, AEAD_MT);
  zv_crypto_aead_free(*slot);
  *slot = NULL;
  return 0;
}

static zv_sig_key_t *check_sig(lua_State *L) {
  zv_sig_key_t **slot = luaL_checkudata(L, 1, SIG_MT);
  if (!*slot) luaL_error(L, "crypto: the key was released");
  return *slot;
}

static int l_sig_key(lua_State *L) {
  size_t n;
  const char *pem = luaL_checklstring(L, 1, &n);
  zv_sig_key_t **slot = lua_newuserdata(L, sizeof *slot + 2 * sizeof(int));
  int *info = (int *)(slot + 1), rc;
  *slot = NULL;
  luaL_getmetatable(L, SIG_MT);
  lua_setmetatable(L, -2);
  rc = zv_sig_key_parse(pem, n, slot, &info[0], &info[1]);
  if (rc) {
    lua_pushnil(L);
    lua_pushstring(L, rc == ZV_EINVAL ? "not a PEM Ed25519 or P-256 key" : zv_strerror(rc));
    return 2;
  }
  return 1;
}

static int l_sig_alg(lua_State *L) {
  zv_sig_key_t **slot = luaL_checkudata(L, 1, SIG_MT);
  int *info = (int *)(slot + 1);
  check_sig(L);
  lua_pushstring(L, info[0] == ZV_SIG_ED25519 ? "EdDSA" : "ES256");
  return 1;
}

static int l_sig_private(lua_State *L) {
  zv_sig_key_t **slot = luaL_checkudata(L, 1, SIG_MT);
  int *info = (int *)(slot + 1);
  check_sig(L);
  lua_pushboolean(L, info[1]);
  return 1;
}

static int l_sig_sign(lua_State *L) {
  zv_sig_key_t *k = check_sig(L);
  zv_sig_key_t **slot = lua_touserdata(L, 1);
  int *info = (int *)(slot + 1);
  unsigned char out[ZV_SIG_MAX];
  size_t n, olen;
  const char *msg = luaL_checklstring(L, 2, &n);
  if (!info[1]) return luaL_error(L, "crypto: a public key cannot sign");
  if (zv_sig_sign(k, msg, n, out, &olen)) return luaL_error(L, "crypto: signing failed");
  lua_pushlstring(L, (const char *)out, olen);
  return 1;
}

static int l_sig_verify(lua_State *L) {
  zv_sig_key_t *k = check_sig(L);
  size_t n, slen;
  const char *msg = luaL_checklstring(L, 2, &n);
  const char *sig = luaL_checklstring(L, 3, &slen);
  lua_pushboolean(L, zv_sig_verify(k, msg, n, (const unsigned char *)sig, slen) == 0);
  return 1;
}

static int l_sig_gc(lua_State *L) {
  zv_sig_key_t **slot = luaL_checkudata(L, 1, SIG_MT);
  zv_sig_key_free(*slot);
  *slot = NULL;
  return 0;
}

static int l_b64url(lua_State *L) {
  char buf[STACK_BYTES], *out;
  size_t n, olen;
  const char *s = luaL_checklstring(L, 1, &n);
  olen = zv_crypto_b64url_len(n);
  out = olen <= STACK_BYTES ? buf : lua_newuserdata(L, olen);
  zv_crypto_b64url_encode(s, n, out);
  lua_pushlstring(L, out, olen);
  return 1;
}

static int l_unb64url(lua_State *L) {
  unsigned char buf[STACK_BYTES], *out;
  size_t n, olen;
  const char *s = luaL_checklstring(L, 1, &n);
  out = scratch(L, buf, n * 3 / 4 + 1);
  if (zv_crypto_b64url_decode(s, n, out, &olen)) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushlstring(L, (const char *)out, olen);
  return 1;
}

int luaopen_zever_crypto_core(lua_State *L);
int luaopen_zever_crypto_core(lua_State *L) {
  static const luaL_Reg mac_methods[] = {{"compute", l_mac_compute}, {NULL, NULL}};
  static const luaL_Reg aead_methods[] = {{"seal", l_aead_seal}, {"open", l_aead_open},
                                          {NULL, NULL}};
  static const luaL_Reg sig_methods[] = {{"alg", l_sig_alg}, {"private", l_sig_private},
                                         {"sign", l_sig_sign}, {"verify", l_sig_verify},
                                         {NULL, NULL}};
  static const luaL_Reg funcs[] = {
    {"random", l_random}, {"process_key", l_process_key}, {"equal", l_equal}, {"hmac", l_hmac}, {"digest", l_digest}, {"mac", l_mac},
    {"aead", l_aead}, {"sig_key", l_sig_key}, {"b64url", l_b64url}, {"unb64url", l_unb64url}, {NULL, NULL}};
  zv_l_newmeta(L, MAC_MT, mac_methods, l_mac_gc);
  zv_l_newmeta(L, AEAD_MT, aead_methods, l_aead_gc);
  zv_l_newmeta(L, SIG_MT, sig_methods, l_sig_gc);
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  return 1;
}
