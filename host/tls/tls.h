/*
 * tls.h: TLS for the HTTP server (OpenSSL), as a transport of host/http (xport.h): a context
 * made from a certificate and key, and the hook that runs each connection's bytes through it.
 *
 *   zv_tls_ctx_new(opts) --> ctx (refcounted) --> http.listen{tls = ...} --> server retains it
 *                                                  accept: open() -> SSL with memory BIOs
 *
 * Handshakes run inside the connection's reads, one step per socket event (the socket is read
 * into the SSL's input BIO; what the SSL writes goes out through zv__http_conn_send), so a
 * handshake never blocks the loop. Session resumption is by tickets only (no server-side
 * cache); their keys are the process's, shared by every worker thread and every context (so a
 * SIGHUP's new workers resume the old ones' sessions), and rotate every ZV_TLS_TICKET_ROTATE
 * seconds: the previous key still decrypts (and its tickets are renewed).
 *
 * Not Lua, no libuv calls: the binding is l_tls_core.c.
 */
#ifndef ZV_TLS_TLS_H
#define ZV_TLS_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "../http/xport.h"

#define ZV_TLS_TICKET_ROTATE 3600

typedef struct zv_tls_ctx_s zv_tls_ctx_t;

typedef struct {
  const char *cert;        /* PEM file: the certificate, then its chain */
  const char *key;         /* PEM file: the private key (unencrypted) */
  const char *min_version; /* "1.2" (default) or "1.3" */
  const char *ciphers;     /* OpenSSL cipher list for TLS 1.2, or NULL for OpenSSL's default */
  const char *alpn;        /* protocols in preference order, comma-separated ("http/1.1") */
  int h2;                  /* an HTTP/2 layer runs over this context: "h2" may be offered */
  const char *ocsp;        /* DER OCSP response file to staple (ocsp.h), or NULL */
} zv_tls_opts_t;

/* Loads and checks the certificate and key (parse, match, validity dates), the version, the
 * ciphers and the ALPN list. Returns a context with one reference, or NULL with a message in
 * err (never key material). */
zv_tls_ctx_t *zv_tls_ctx_new(const zv_tls_opts_t *o, char *err, size_t cap);
void zv_tls_ctx_retain(zv_tls_ctx_t *ctx);
void zv_tls_ctx_release(zv_tls_ctx_t *ctx);

/* The certificate's subject (one line) and its notAfter as Unix time. */
void zv_tls_ctx_info(zv_tls_ctx_t *ctx, char *subject, size_t cap, int64_t *not_after);

/* The transport table for http.listen (xport.h). */
const zv_http_xport_t *zv_tls_xport(void);

/* OpenSSL's version text. */
const char *zv_tls_version(void);

#endif
