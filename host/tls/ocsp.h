/*
 * ocsp.h: OCSP stapling for tls.c's contexts. A DER OCSP response (what `openssl ocsp -respout`
 * writes, or a CA's responder returns) is read from a file when the context is made, checked
 * (a successful response whose status for the context's certificate is "good", issued by the
 * certificate's issuer in the chain file, not expired), and handed to every client that asks
 * for it (the status_request extension) until its nextUpdate: past that the server staples
 * nothing rather than a stale answer. SIGHUP makes new contexts, so a fresh file is read then
 * (as nginx's ssl_stapling_file). zever does not fetch responses itself.
 *
 * Internal to host/tls/: no Lua, no libuv.
 */
#ifndef ZV_TLS_OCSP_H
#define ZV_TLS_OCSP_H

#include <stddef.h>
#include <time.h>

#include <openssl/ssl.h>

typedef struct {
  unsigned char *der;   /* zv_alloc'd; NULL: nothing to staple */
  size_t len;
  time_t next_update;   /* 0: the response has none (then it never goes stale here) */
} zv__tls_ocsp_t;

/* Reads and checks the response in path for s's certificate; installs the status callback on
 * s with o as its argument (o must outlive s). Returns 0, or -1 with a message in err. */
int zv__tls_ocsp_load(SSL_CTX *s, const char *path, zv__tls_ocsp_t *o, char *err, size_t cap);

void zv__tls_ocsp_free(zv__tls_ocsp_t *o);

#endif
