/*
 * tls.h: the HTTP client's TLS (OpenSSL), as the hook of host/httpc/tlsx.h. Built into the
 * lazy lib/zever/httpc_tls.so so that the core binary does not link OpenSSL.
 *
 *   zv_httpc_tls_ctx_new(opts) --> ctx (refcounted) --> conn:tls(ctx, servername)
 *                                                       open(): SSL over two memory BIOs
 *
 * Verification is on unless opts say otherwise: the chain against the system's trust store
 * (or ca_file), the name (or IP address) the caller connects to, and the validity dates.
 * Nothing here blocks or touches a socket; it must not put key material in a message.
 */
#ifndef ZV_HTTPC_TLS_TLS_H
#define ZV_HTTPC_TLS_TLS_H

#include <stddef.h>

#include "../httpc/tlsx.h"

typedef struct {
  const char *ca_file; /* PEM bundle to trust instead of the system's store, or NULL */
  const char *cert;    /* a client certificate (PEM), or NULL */
  const char *key;     /* its key (PEM), or NULL */
  int verify;          /* 0: accept any certificate (tests against self-signed servers) */
} zv_httpc_tls_opts_t;

/* A context with one reference, or NULL with a message in err. */
void *zv_httpc_tls_ctx_new(const zv_httpc_tls_opts_t *o, char *err, size_t cap);

/* The hook table (tlsx.h); retain/release manage the context. */
const zv_httpc_tls_t *zv_httpc_tls_hook(void);

#endif
