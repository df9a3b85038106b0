/*
 * ocsp.c: OCSP stapling (ocsp.h): load and check a DER response, staple it on request.
 *
 * It must not fetch anything over the network and must not staple a response past its
 * nextUpdate.
 */
#include "ocsp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/x509.h>

#include "../core/zv.h"

#define MAX_RESPONSE (64 * 1024)

/* What the client asked for: the response, copied into OpenSSL's memory (it frees it). */
static int status_cb(SSL *ssl, void *arg) {
  zv__tls_ocsp_t *o = arg;
  if (!o->der || (o->next_update && time(NULL) >= o->next_update)) return SSL_TLSEXT_ERR_NOACK;
  unsigned char *copy = OPENSSL_malloc(o->len);
  if (!copy) return SSL_TLSEXT_ERR_NOACK;
  memcpy(copy, o->der, o->len);
  if (SSL_set_tlsext_status_ocsp_resp(ssl, copy, (long)o->len) != 1) {
    OPENSSL_free(copy);
    return SSL_TLSEXT_ERR_NOACK;
  }
  return SSL_TLSEXT_ERR_OK;
}

/* The issuer of x among the chain certificates of s, or NULL. */
static X509 *find_issuer(SSL_CTX *s, X509 *x) {
  STACK_OF(X509) *chain = NULL;
  if (SSL_CTX_get0_chain_certs(s, &chain) != 1 || !chain) return NULL;
  for (int i = 0; i < sk_X509_num(chain); i++) {
    X509 *c = sk_X509_value(chain, i);
    if (X509_check_issued(c, x) == X509_V_OK) return c;
  }
  return NULL;
}

static int fail(char *err, size_t cap, const char *path, const char *why) {
  snprintf(err, cap, "tls: OCSP response %s: %s", path, why);
  ERR_clear_error();
  return -1;
}

int zv__tls_ocsp_load(SSL_CTX *s, const char *path, zv__tls_ocsp_t *o, char *err, size_t cap) {
  memset(o, 0, sizeof *o);
  FILE *f = fopen(path, "rb");
  if (!f) return fail(err, cap, path, strerror(errno));
  unsigned char *buf = zv_alloc(MAX_RESPONSE);
  if (!buf) {
    fclose(f);
    return fail(err, cap, path, "out of memory");
  }
  size_t n = fread(buf, 1, MAX_RESPONSE, f);
  int too_big = n == MAX_RESPONSE && fgetc(f) != EOF;
  fclose(f);
  if (too_big) {
    zv_free(buf);
    return fail(err, cap, path, "larger than 64 KiB");
  }
  const unsigned char *p = buf;
  OCSP_RESPONSE *resp = d2i_OCSP_RESPONSE(NULL, &p, (long)n);
  OCSP_BASICRESP *basic = NULL;
  OCSP_CERTID *id = NULL;
  const char *why = NULL;
  X509 *x = SSL_CTX_get0_certificate(s), *issuer = x ? find_issuer(s, x) : NULL;
  int status = -1, reason;
  ASN1_GENERALIZEDTIME *rev, *this_update, *next_update;
  if (!resp || p != buf + n) {
    why = "not a DER-encoded OCSP response";
  } else if (OCSP_response_status(resp) != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
    why = "the responder did not answer \"successful\"";
  } else if (!(basic = OCSP_response_get1_basic(resp))) {
    why = "not a basic OCSP response";
  } else if (!issuer) {
    why = "the certificate's issuer is not in the certificate file (the chain is needed to "
          "match the response)";
  } else if (!(id = OCSP_cert_to_id(NULL, x, issuer))) {
    why = "cannot make the certificate's id";
  } else if (OCSP_resp_find_status(basic, id, &status, &reason, &rev, &this_update,
                                   &next_update) != 1) {
    why = "it is not about this certificate";
  } else if (status != V_OCSP_CERTSTATUS_GOOD) {
    why = status == V_OCSP_CERTSTATUS_REVOKED ? "it says the certificate is revoked"
                                              : "it says the certificate's status is unknown";
  } else if (OCSP_check_validity(this_update, next_update, 300, -1) != 1) {
    why = "it has expired (or is not valid yet)";
  } else if (next_update) {
    struct tm tm;
    if (ASN1_TIME_to_tm(next_update, &tm) == 1) o->next_update = timegm(&tm);
  }
  OCSP_CERTID_free(id);
  OCSP_BASICRESP_free(basic);
  OCSP_RESPONSE_free(resp);
  if (why) {
    zv_free(buf);
    return fail(err, cap, path, why);
  }
  o->der = buf;
  o->len = n;
  SSL_CTX_set_tlsext_status_cb(s, status_cb);
  SSL_CTX_set_tlsext_status_arg(s, o);
  return 0;
}

void zv__tls_ocsp_free(zv__tls_ocsp_t *o) {
  zv_free(o->der);
  o->der = NULL;
}
