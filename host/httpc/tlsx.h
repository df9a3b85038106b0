/*
 * tlsx.h: the TLS hook of the HTTP client. host/httpc_tls/ (a lazy module linking OpenSSL)
 * fills this table; the client (conn.c, in the core binary) calls through it, so `zever`
 * itself never links OpenSSL and plain HTTP costs one pointer test.
 *
 *   socket bytes --> feed --> [TLS session] --> read  --> plaintext for the parser
 *   request      --> write --> [TLS session] --> drain --> socket
 *
 * The session runs over memory buffers (no socket, no blocking): everything it wants to send
 * (handshake records, alerts, the request) is taken with drain after each call. A message
 * written to err never holds key material.
 */
#ifndef ZV_HTTPC_TLSX_H
#define ZV_HTTPC_TLSX_H

#include <stddef.h>
#include <sys/types.h>

typedef struct zv_httpc_tls_s {
  /* A client session for servername (SNI and the name the certificate must match; an IP
   * literal is matched as an address). NULL with err on failure. */
  void *(*open)(void *ctx, const char *servername, char *err, size_t cap);
  /* Ciphertext from the socket: 0, or -1 (out of memory). */
  int (*feed)(void *s, const char *p, size_t n);
  /* One handshake step: 1 done, 0 wants more input, -1 failed (err: why, e.g. the
   * certificate's verification error). */
  int (*handshake)(void *s, char *err, size_t cap);
  /* Plaintext into p: > 0 bytes, 0 wants more input, -1 the session ended (err; "" for a
   * clean close_notify). */
  ssize_t (*read)(void *s, char *p, size_t n, char *err, size_t cap);
  /* Plaintext to send: 0, or -1. */
  int (*write)(void *s, const char *p, size_t n);
  /* Bytes waiting to go to the socket, and taking them (at most n into p). */
  size_t (*pending)(void *s);
  size_t (*drain)(void *s, char *p, size_t n);
  void (*close)(void *s);
  /* The context's lifetime: a connection retains its context while it lives. */
  void (*retain)(void *ctx);
  void (*release)(void *ctx);
} zv_httpc_tls_t;

/* The first fields of zever.httpc_tls's context userdata (the client reads them). */
typedef struct {
  const zv_httpc_tls_t *vt;
  void *ctx;
} zv_httpc_tls_ud_t;

#define ZV_HTTPC_TLS_MT "zever.httpc_tls.context"

#endif
