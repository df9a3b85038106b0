/*
 * tls.c: OpenSSL client sessions over memory BIOs for the HTTP client (see tls.h).
 *
 * A session is an SSL whose input BIO the connection fills (feed) and whose output BIO it
 * empties (drain); nothing here knows about sockets or the loop. A failed verification is
 * reported with OpenSSL's verification message ("certificate has expired", "hostname
 * mismatch", "self-signed certificate"), which is what a user needs to fix it.
 */
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "../core/zv.h"
#include "tls.h"

typedef struct {
  SSL_CTX *ssl_ctx;
  int refs;
  int verify;
} ctx_t;

typedef struct {
  SSL *ssl;
  BIO *rbio, *wbio;
} sess_t;

static void describe(SSL *ssl, char *err, size_t cap, const char *fallback) {
  unsigned long e = ERR_get_error();
  long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
  if (v != X509_V_OK) snprintf(err, cap, "certificate verify failed: %s", X509_verify_cert_error_string(v));
  else if (e) ERR_error_string_n(e, err, cap);
  else snprintf(err, cap, "%s", fallback);
  ERR_clear_error();
}

void *zv_httpc_tls_ctx_new(const zv_httpc_tls_opts_t *o, char *err, size_t cap) {
  static const unsigned char alpn[] = "\x08http/1.1";
  ctx_t *c = zv_alloc(sizeof *c);
  if (!c) {
    snprintf(err, cap, "out of memory");
    return NULL;
  }
  c->refs = 1;
  c->verify = o->verify;
  c->ssl_ctx = SSL_CTX_new(TLS_client_method());
  if (!c->ssl_ctx) goto fail;
  SSL_CTX_set_min_proto_version(c->ssl_ctx, TLS1_2_VERSION);
  SSL_CTX_set_alpn_protos(c->ssl_ctx, alpn, sizeof alpn - 1);
  SSL_CTX_set_mode(c->ssl_ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
  if (o->verify) {
    SSL_CTX_set_verify(c->ssl_ctx, SSL_VERIFY_PEER, NULL);
    if (o->ca_file && *o->ca_file) {
      if (SSL_CTX_load_verify_locations(c->ssl_ctx, o->ca_file, NULL) != 1) {
        ERR_clear_error();
        snprintf(err, cap, "cannot load the CA file %s", o->ca_file);
        SSL_CTX_free(c->ssl_ctx);
        zv_free(c);
        return NULL;
      }
    } else if (SSL_CTX_set_default_verify_paths(c->ssl_ctx) != 1) {
      goto fail;
    }
  } else {
    SSL_CTX_set_verify(c->ssl_ctx, SSL_VERIFY_NONE, NULL);
  }
  if (o->cert && *o->cert) {
    if (SSL_CTX_use_certificate_chain_file(c->ssl_ctx, o->cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(c->ssl_ctx, o->key ? o->key : o->cert, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(c->ssl_ctx) != 1) {
      ERR_clear_error();
      snprintf(err, cap, "cannot load the client certificate %s", o->cert);
      SSL_CTX_free(c->ssl_ctx);
      zv_free(c);
      return NULL;
    }
  }
  return c;
fail:
  describe(NULL, err, cap, "TLS setup failed");
  if (c->ssl_ctx) SSL_CTX_free(c->ssl_ctx);
  zv_free(c);
  return NULL;
}

static void retain(void *ctx) { __atomic_add_fetch(&((ctx_t *)ctx)->refs, 1, __ATOMIC_RELAXED); }

static void release(void *ctx) {
  ctx_t *c = ctx;
  if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL)) return;
  SSL_CTX_free(c->ssl_ctx);
  zv_free(c);
}

static void *open_sess(void *ctx, const char *name, char *err, size_t cap) {
  ctx_t *c = ctx;
  sess_t *s = zv_alloc(sizeof *s);
  unsigned char a[16];
  int is_ip = inet_pton(AF_INET, name, a) == 1 || inet_pton(AF_INET6, name, a) == 1;
  if (!s) {
    snprintf(err, cap, "out of memory");
    return NULL;
  }
  s->ssl = SSL_new(c->ssl_ctx);
  s->rbio = BIO_new(BIO_s_mem());
  s->wbio = BIO_new(BIO_s_mem());
  if (!s->ssl || !s->rbio || !s->wbio) {
    if (s->ssl) SSL_free(s->ssl);
    BIO_free(s->rbio);
    BIO_free(s->wbio);
    zv_free(s);
    snprintf(err, cap, "out of memory");
    return NULL;
  }
  SSL_set_bio(s->ssl, s->rbio, s->wbio);
  SSL_set_connect_state(s->ssl);
  if (!is_ip) SSL_set_tlsext_host_name(s->ssl, name);
  if (c->verify) {
    if (is_ip) X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s->ssl), name);
    else SSL_set1_host(s->ssl, name);
  }
  return s;
}

static int feed(void *sp, const char *p, size_t n) {
  sess_t *s = sp;
  return BIO_write(s->rbio, p, (int)n) == (int)n ? 0 : -1;
}

static int handshake(void *sp, char *err, size_t cap) {
  sess_t *s = sp;
  int rc = SSL_do_handshake(s->ssl);
  if (rc == 1) return 1;
  if (SSL_get_error(s->ssl, rc) == SSL_ERROR_WANT_READ) return 0;
  describe(s->ssl, err, cap, "the handshake failed");
  return -1;
}

static ssize_t sess_read(void *sp, char *p, size_t n, char *err, size_t cap) {
  sess_t *s = sp;
  int rc = SSL_read(s->ssl, p, n > 0x7fffffff ? 0x7fffffff : (int)n);
  int e;
  if (rc > 0) return rc;
  e = SSL_get_error(s->ssl, rc);
  if (e == SSL_ERROR_WANT_READ) return 0;
  err[0] = 0;
  if (e == SSL_ERROR_ZERO_RETURN) {
    ERR_clear_error();
    return -1;
  }
  describe(s->ssl, err, cap, "the TLS session failed");
  return -1;
}

static int sess_write(void *sp, const char *p, size_t n) {
  sess_t *s = sp;
  while (n) {
    int rc = SSL_write(s->ssl, p, n > 0x40000000 ? 0x40000000 : (int)n);
    if (rc <= 0) {
      ERR_clear_error();
      return -1;
    }
    p += rc;
    n -= (size_t)rc;
  }
  return 0;
}

static size_t pending(void *sp) { return BIO_ctrl_pending(((sess_t *)sp)->wbio); }

static size_t drain(void *sp, char *p, size_t n) {
  int rc = BIO_read(((sess_t *)sp)->wbio, p, n > 0x7fffffff ? 0x7fffffff : (int)n);
  return rc > 0 ? (size_t)rc : 0;
}

static void close_sess(void *sp) {
  sess_t *s = sp;
  SSL_free(s->ssl); /* frees the BIOs */
  zv_free(s);
}

static const zv_httpc_tls_t hook = {open_sess, feed,  handshake,  sess_read, sess_write,
                                    pending,   drain, close_sess, retain,    release};

const zv_httpc_tls_t *zv_httpc_tls_hook(void) { return &hook; }
