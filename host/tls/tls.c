/*
 * tls.c: the TLS transport of the HTTP server (see tls.h and host/http/xport.h).
 *
 * Each connection has an SSL with two memory BIOs: reads take the socket's bytes (recv(2) into
 * a stack buffer, then the input BIO) and return plaintext; what the SSL produces (handshake
 * records, tickets, alerts, encrypted responses) is taken from the output BIO and sent with
 * zv__http_conn_send, which queues what the kernel does not take under the server's write
 * deadline and limits. So a handshake advances one step per socket event and never blocks.
 *
 * A client that speaks plain HTTP to the TLS port (its first byte is not a TLS handshake
 * record, 0x16) is closed without an answer; any other handshake failure sends OpenSSL's alert
 * and closes. Nothing here prints or keeps key material beyond OpenSSL's own objects.
 */
#include "tls.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/buffer.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "../core/zv.h"
#include "../http/server.h"
#include "ocsp.h"

#define RAW_READ (16u * 1024 + 512) /* one full TLS record and its header per recv */
#define SMALL_WRITE 4096            /* buffers up to this much in all go as one record */
#define ALPN_MAX 256
#define WBIO_KEEP (64u << 10)       /* an output BIO grown past this is replaced after a send */

struct zv_tls_ctx_s {
  SSL_CTX *ssl;
  int refs;
  unsigned char alpn[ALPN_MAX]; /* wire format: length-prefixed names */
  unsigned alpn_len;
  zv__tls_ocsp_t ocsp;          /* the stapled response, when configured */
};

typedef struct {
  SSL *ssl;
  BIO *rbio, *wbio;
  uint8_t started;              /* the first bytes arrived (checked for a handshake record) */
} tconn_t;

/* --- session ticket keys: the process's, rotating ------------------------------------------- */

typedef struct {
  unsigned char name[16], aes[32], hmac[32];
  int set;
} tkey_t;

static pthread_mutex_t tk_lock = PTHREAD_MUTEX_INITIALIZER;
static tkey_t tk_cur, tk_prev;
static time_t tk_born;

static time_t mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

/* Under tk_lock: a first key, or a new one when the current one is ZV_TLS_TICKET_ROTATE old. */
static int tk_rotate(void) {
  time_t now = mono_now();
  tkey_t k;
  if (tk_cur.set && now - tk_born < ZV_TLS_TICKET_ROTATE) return 0;
  if (RAND_bytes(k.name, sizeof k.name) != 1 || RAND_bytes(k.aes, sizeof k.aes) != 1 ||
      RAND_bytes(k.hmac, sizeof k.hmac) != 1)
    return -1;
  k.set = 1;
  tk_prev = tk_cur;
  tk_cur = k;
  tk_born = now;
  OPENSSL_cleanse(&k, sizeof k);
  return 0;
}

static int tk_hmac(EVP_MAC_CTX *h, unsigned char *key) {
  OSSL_PARAM p[3];
  p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key, 32);
  p[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"sha256", 0);
  p[2] = OSSL_PARAM_construct_end();
  return EVP_MAC_CTX_set_params(h, p) == 1;
}

static int ticket_cb(SSL *s, unsigned char name[16], unsigned char iv[EVP_MAX_IV_LENGTH],
                     EVP_CIPHER_CTX *ectx, EVP_MAC_CTX *hctx, int enc) {
  int rc = -1;
  (void)s;
  pthread_mutex_lock(&tk_lock);
  if (tk_rotate()) goto done;
  if (enc) {
    if (RAND_bytes(iv, 16) != 1) goto done;
    memcpy(name, tk_cur.name, 16);
    if (EVP_EncryptInit_ex(ectx, EVP_aes_256_cbc(), NULL, tk_cur.aes, iv) != 1) goto done;
    rc = tk_hmac(hctx, tk_cur.hmac) ? 1 : -1;
  } else {
    tkey_t *k = !memcmp(name, tk_cur.name, 16) ? &tk_cur
              : tk_prev.set && !memcmp(name, tk_prev.name, 16) ? &tk_prev : NULL;
    if (!k) {
      rc = 0; /* an unknown (or expired) key: a full handshake */
      goto done;
    }
    if (EVP_DecryptInit_ex(ectx, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1) goto done;
    if (!tk_hmac(hctx, k->hmac)) goto done;
    rc = k == &tk_cur ? 1 : 2; /* 2: valid, but issue a ticket under the current key */
  }
done:
  pthread_mutex_unlock(&tk_lock);
  return rc;
}

/* --- the context ----------------------------------------------------------------------------- */

static int no_password(char *buf, int size, int rwflag, void *u) {
  (void)buf;
  (void)size;
  (void)rwflag;
  (void)u;
  return 0;
}

static int alpn_select(SSL *s, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned inlen, void *arg) {
  zv_tls_ctx_t *ctx = arg;
  unsigned char *o;
  (void)s;
  if (SSL_select_next_proto(&o, outlen, ctx->alpn, ctx->alpn_len, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK; /* no protocol in common: go on without ALPN */
  *out = o;
  return SSL_TLSEXT_ERR_OK;
}

/* The reason of OpenSSL's last error (a short phrase, never key bytes), and the queue cleared. */
static const char *ssl_reason(void) {
  unsigned long e = ERR_peek_last_error();
  const char *r = e ? ERR_reason_error_string(e) : NULL;
  ERR_clear_error();
  return r ? r : "unknown error";
}

static int alpn_parse(zv_tls_ctx_t *ctx, const char *list, int h2, char *err, size_t cap) {
  const char *p = list;
  ctx->alpn_len = 0;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    while (n && *p == ' ') p++, n--;
    while (n && p[n - 1] == ' ') n--;
    if (n == 0 || n > 255 || ctx->alpn_len + 1 + n > ALPN_MAX) {
      snprintf(err, cap, "tls: alpn: bad protocol list \"%s\"", list);
      return -1;
    }
    if (!(n == 8 && !memcmp(p, "http/1.1", 8)) && !(h2 && n == 2 && !memcmp(p, "h2", 2))) {
      snprintf(err, cap, "tls: alpn: \"%.*s\" is not served (this server speaks %s)", (int)n,
               p, h2 ? "h2 and http/1.1" : "http/1.1; h2 with http.h2");
      return -1;
    }
    ctx->alpn[ctx->alpn_len++] = (unsigned char)n;
    memcpy(ctx->alpn + ctx->alpn_len, p, n);
    ctx->alpn_len += (unsigned)n;
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

/* Whether the PEM file at path holds an encrypted key (PKCS#8 or the legacy Proc-Type header):
 * OpenSSL would ask for a passphrase, which a server cannot answer. Only headers are looked at. */
static int key_encrypted(const char *path) {
  char line[256];
  int enc = 0;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  while (!enc && fgets(line, sizeof line, f))
    enc = !strncmp(line, "-----BEGIN ENCRYPTED PRIVATE KEY", 32) ||
          !strncmp(line, "Proc-Type: 4,ENCRYPTED", 22);
  fclose(f);
  return enc;
}

zv_tls_ctx_t *zv_tls_ctx_new(const zv_tls_opts_t *o, char *err, size_t cap) {
  zv_tls_ctx_t *ctx;
  SSL_CTX *s;
  X509 *x;
  int minv = TLS1_2_VERSION;
  ERR_clear_error();
  if (!o->cert || !*o->cert || !o->key || !*o->key) {
    snprintf(err, cap, "tls: a certificate and a key are both needed (cert and key)");
    return NULL;
  }
  if (o->min_version && *o->min_version) {
    if (!strcmp(o->min_version, "1.2")) minv = TLS1_2_VERSION;
    else if (!strcmp(o->min_version, "1.3")) minv = TLS1_3_VERSION;
    else {
      snprintf(err, cap, "tls: min_version must be \"1.2\" or \"1.3\", got \"%s\"",
               o->min_version);
      return NULL;
    }
  }
  for (int i = 0; i < 2; i++) {
    const char *path = i ? o->key : o->cert;
    FILE *f = fopen(path, "r");
    if (!f) {
      snprintf(err, cap, "tls: cannot read the %s %s: %s", i ? "key" : "certificate", path,
               strerror(errno));
      return NULL;
    }
    fclose(f);
  }
  ctx = zv_alloc(sizeof *ctx);
  if (!ctx) {
    snprintf(err, cap, "tls: out of memory");
    return NULL;
  }
  memset(ctx, 0, sizeof *ctx);
  ctx->refs = 1;
  if (alpn_parse(ctx, o->alpn && *o->alpn ? o->alpn : o->h2 ? "h2,http/1.1" : "http/1.1", o->h2,
                 err, cap)) {
    zv_free(ctx);
    return NULL;
  }
  s = ctx->ssl = SSL_CTX_new(TLS_server_method());
  if (!s) {
    snprintf(err, cap, "tls: %s", ssl_reason());
    zv_free(ctx);
    return NULL;
  }
  SSL_CTX_set_default_passwd_cb(s, no_password);
  SSL_CTX_set_min_proto_version(s, minv);
  SSL_CTX_set_options(s, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                             SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(s, SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_use_certificate_chain_file(s, o->cert) != 1) {
    snprintf(err, cap, "tls: certificate %s: %s", o->cert, ssl_reason());
    goto fail;
  }
  if (key_encrypted(o->key)) {
    snprintf(err, cap, "tls: key %s is encrypted: the key must be an unencrypted PEM file "
             "(openssl pkey -in KEY -out PLAIN.key)", o->key);
    goto fail;
  }
  if (SSL_CTX_use_PrivateKey_file(s, o->key, SSL_FILETYPE_PEM) != 1) {
    const char *r = ssl_reason();
    if (strstr(r, "mismatch"))
      snprintf(err, cap, "tls: the key %s does not match the certificate %s", o->key, o->cert);
    else
      snprintf(err, cap, "tls: key %s: %s", o->key, r);
    goto fail;
  }
  if (SSL_CTX_check_private_key(s) != 1) {
    ERR_clear_error();
    snprintf(err, cap, "tls: the key %s does not match the certificate %s", o->key, o->cert);
    goto fail;
  }
  x = SSL_CTX_get0_certificate(s);
  if (x && X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
    snprintf(err, cap, "tls: the certificate %s has expired", o->cert);
    goto fail;
  }
  if (x && X509_cmp_current_time(X509_get0_notBefore(x)) >= 0) {
    snprintf(err, cap, "tls: the certificate %s is not valid yet", o->cert);
    goto fail;
  }
  if (o->ocsp && *o->ocsp && zv__tls_ocsp_load(s, o->ocsp, &ctx->ocsp, err, cap)) goto fail;
  if (o->ciphers && *o->ciphers && SSL_CTX_set_cipher_list(s, o->ciphers) != 1) {
    ERR_clear_error();
    snprintf(err, cap, "tls: ciphers \"%s\": no cipher matches", o->ciphers);
    goto fail;
  }
  /* Tickets only: stateless, and the same keys in every worker (see tls.h). */
  SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(s, 1);
  SSL_CTX_set_timeout(s, ZV_TLS_TICKET_ROTATE);
  SSL_CTX_set_tlsext_ticket_key_evp_cb(s, ticket_cb);
  SSL_CTX_set_alpn_select_cb(s, alpn_select, ctx);
  pthread_mutex_lock(&tk_lock);
  if (tk_rotate()) {
    pthread_mutex_unlock(&tk_lock);
    snprintf(err, cap, "tls: no random bytes for the session ticket keys");
    goto fail;
  }
  pthread_mutex_unlock(&tk_lock);
  return ctx;
fail:
  SSL_CTX_free(s);
  zv__tls_ocsp_free(&ctx->ocsp);
  zv_free(ctx);
  return NULL;
}

void zv_tls_ctx_retain(zv_tls_ctx_t *ctx) {
  __atomic_add_fetch(&ctx->refs, 1, __ATOMIC_RELAXED);
}

void zv_tls_ctx_release(zv_tls_ctx_t *ctx) {
  if (__atomic_sub_fetch(&ctx->refs, 1, __ATOMIC_ACQ_REL)) return;
  SSL_CTX_free(ctx->ssl); /* connections still open hold the SSL_CTX by their SSL */
  zv__tls_ocsp_free(&ctx->ocsp);
  zv_free(ctx);
}

void zv_tls_ctx_info(zv_tls_ctx_t *ctx, char *subject, size_t cap, int64_t *not_after) {
  X509 *x = SSL_CTX_get0_certificate(ctx->ssl);
  struct tm tm;
  subject[0] = 0;
  *not_after = 0;
  if (!x) return;
  X509_NAME_oneline(X509_get_subject_name(x), subject, (int)cap);
  if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1) *not_after = (int64_t)timegm(&tm);
}

const char *zv_tls_version(void) {
  return OpenSSL_version(OPENSSL_VERSION);
}

/* --- the transport --------------------------------------------------------------------------- */

static void x_retain(void *ctx) {
  zv_tls_ctx_retain(ctx);
}

static void x_release(void *ctx) {
  zv_tls_ctx_release(ctx);
}

static void *x_open(void *vctx, zv_http_sconn_t *c) {
  zv_tls_ctx_t *ctx = vctx;
  tconn_t *t = zv_alloc(sizeof *t);
  (void)c;
  if (!t) return NULL;
  memset(t, 0, sizeof *t);
  t->ssl = SSL_new(ctx->ssl);
  t->rbio = BIO_new(BIO_s_mem());
  t->wbio = BIO_new(BIO_s_mem());
  if (!t->ssl || !t->rbio || !t->wbio) {
    SSL_free(t->ssl);
    BIO_free(t->rbio);
    BIO_free(t->wbio);
    zv_free(t);
    ERR_clear_error();
    return NULL;
  }
  BIO_set_mem_eof_return(t->rbio, -1); /* empty: "retry", not the end */
  BIO_set_mem_eof_return(t->wbio, -1);
  SSL_set_bio(t->ssl, t->rbio, t->wbio);
  SSL_set_accept_state(t->ssl);
  return t;
}

static void x_close(zv_http_sconn_t *c, void *xp) {
  tconn_t *t = xp;
  (void)c;
  SSL_free(t->ssl); /* and its BIOs */
  zv_free(t);
  ERR_clear_error();
}

/* Sends what the SSL wrote. 0, or -1 when the connection closed (t is freed then).
 * The output BIO is emptied by a reset, which clears its whole buffer (memset of its capacity):
 * cheap while it is record-sized; after a large response the BIO is replaced instead, which
 * also gives its memory back while the connection idles. */
static int flush(zv_http_sconn_t *c, tconn_t *t) {
  char *p;
  long n = BIO_get_mem_data(t->wbio, &p);
  BUF_MEM *m = NULL;
  uv_buf_t b;
  if (n <= 0) return 0;
  b = uv_buf_init(p, (unsigned)n);
  if (zv__http_conn_send(c, &b, 1) || c->closing) return -1;
  BIO_get_mem_ptr(t->wbio, &m);
  if (m && m->max > WBIO_KEEP) {
    BIO *nb = BIO_new(BIO_s_mem());
    if (nb) {
      BIO_set_mem_eof_return(nb, -1);
      SSL_set0_wbio(t->ssl, nb); /* frees the old one */
      t->wbio = nb;
      return 0;
    }
    ERR_clear_error();
  }
  (void)BIO_reset(t->wbio);
  return 0;
}

static ssize_t x_read(zv_http_sconn_t *c, void *xp, char *p, size_t n) {
  tconn_t *t = xp;
  char raw[RAW_READ];
  int recvd = 0, drained = 0;
  for (;;) {
    int k = SSL_read(t->ssl, p, n > INT_MAX ? INT_MAX : (int)n), e;
    ssize_t r;
    if (k > 0) {
      /* What the SSL wrote meanwhile (a TLS 1.3 session ticket after the client's Finished)
       * waits in the output BIO for the response, which carries it in the same send. */
      /* More may be buffered in the SSL, or still in the socket unless it just came up short. */
      if (recvd)
        c->rd_ready = (uint8_t)(!drained || SSL_pending(t->ssl) > 0 ||
                                BIO_ctrl_pending(t->rbio) > 0);
      return k;
    }
    e = SSL_get_error(t->ssl, k);
    if (BIO_ctrl_pending(t->wbio) && flush(c, t)) {
      errno = ECONNRESET;
      return -1;
    }
    if (e == SSL_ERROR_WANT_READ) {
      if (drained) {
        errno = EAGAIN;
        return -1;
      }
      r = recv(c->fd, raw, sizeof raw, 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        return -1; /* EAGAIN: the caller waits for the socket */
      }
      if (r == 0) return 0;
      if (!t->started) {
        t->started = 1;
        if ((unsigned char)raw[0] != 0x16) { /* not a TLS handshake: plain HTTP, or noise */
          errno = EPROTO;
          return -1;
        }
      }
      recvd = 1;
      if ((size_t)r < sizeof raw && !c->rd_eof) drained = 1;
      if (BIO_write(t->rbio, raw, (int)r) != (int)r) {
        ERR_clear_error();
        errno = ENOMEM;
        return -1;
      }
      continue;
    }
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN) return 0; /* the client's close_notify */
    errno = EPROTO;
    return -1;
  }
}

static int x_write(zv_http_sconn_t *c, void *xp, const uv_buf_t *bufs, unsigned n) {
  tconn_t *t = xp;
  char small[SMALL_WRITE];
  size_t total = 0;
  for (unsigned i = 0; i < n; i++) total += bufs[i].len;
  if (total == 0) return 0;
  if (n > 1 && total <= sizeof small) {
    /* One record for a head and a small body. */
    size_t off = 0;
    for (unsigned i = 0; i < n; i++) {
      memcpy(small + off, bufs[i].base, bufs[i].len);
      off += bufs[i].len;
    }
    if (SSL_write(t->ssl, small, (int)total) != (int)total) goto fail;
  } else {
    for (unsigned i = 0; i < n; i++) {
      const char *b = bufs[i].base;
      size_t left = bufs[i].len;
      while (left) {
        int chunk = left > (1u << 30) ? (1 << 30) : (int)left;
        if (SSL_write(t->ssl, b, chunk) != chunk) goto fail;
        b += chunk;
        left -= (size_t)chunk;
      }
    }
  }
  return flush(c, t) ? ZV_EIO : 0;
fail:
  ERR_clear_error();
  zv_http_abort(c);
  return ZV_EIO;
}

static void x_shutdown(zv_http_sconn_t *c, void *xp) {
  tconn_t *t = xp;
  if (!SSL_is_init_finished(t->ssl)) return;
  if (SSL_shutdown(t->ssl) < 0) ERR_clear_error(); /* 0: close_notify written, not answered */
  (void)flush(c, t);
}

static const zv_http_xport_t XPORT = {x_retain, x_release,  x_open,  x_read,
                                      x_write,  x_shutdown, x_close, NULL};

const zv_http_xport_t *zv_tls_xport(void) {
  return &XPORT;
}
