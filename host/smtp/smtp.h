/*
 * smtp.h: the SMTP client as a socket-free state machine, and the strict reply parser.
 *
 * The caller (conn.c: libuv + OpenSSL) feeds the bytes it reads and writes out what the machine
 * queues in s->out; the machine never touches a socket, a clock or TLS. It must not include
 * lua.h or uv.h: the fuzz target and the specs' golden rows drive it directly.
 *
 *   greeting --220--> EHLO --250--> [STARTTLS --220--> (caller: handshake) --> EHLO again]
 *        --> [AUTH PLAIN | AUTH LOGIN user/pass] --235--> idle
 *   idle --send--> MAIL FROM --250--> RCPT TO (one per recipient) --> DATA --354--> body
 *        --250--> idle (DONE)
 *   a refused MAIL, RCPT or DATA --> RSET --250--> idle (DONE with s->kind set)
 *   421, a broken reply, a refused EHLO/AUTH/STARTTLS --> dead (DEAD: the caller closes)
 *
 * No pipelining: one command, one reply. A message is all or nothing: when any recipient is
 * refused the transaction is reset and nothing is delivered; s->why names each refused one.
 * Messages in s->why quote the server's replies and never contain the password.
 */
#ifndef ZV_SMTP_H
#define ZV_SMTP_H

#include <stddef.h>

/* A growable byte buffer with a sticky error (after a failed grow, appends do nothing). */
typedef struct {
  char *p;
  size_t len, cap;
  int err;
} zv_smtp_buf_t;

void zv_smtp_buf_put(zv_smtp_buf_t *b, const char *p, size_t n);
void zv_smtp_buf_free(zv_smtp_buf_t *b);

/* One complete reply found by zv_smtp_reply_parse; text points into the parsed bytes. */
typedef struct {
  int code;          /* 200..599 */
  int lines;         /* number of lines (a multi-line reply has several) */
  const char *text;  /* the text of the first line (after "250 " or "250-"), without CRLF */
  size_t text_len;
  size_t consumed;   /* bytes of the whole reply, final CRLF included */
} zv_smtp_reply_t;

#define ZV_SMTP_LINE_MAX 2048   /* a longer reply line is refused (RFC 5321 says 512) */
#define ZV_SMTP_REPLY_MAX 65536 /* a longer multi-line reply is refused */

/*
 * Parses the first reply of p[0..n): every line "ddd-text CRLF" but the last "ddd text CRLF"
 * (or "ddd CRLF"), all with the same code, first digit 2-5, second 0-5. Returns 1 and fills r
 * when a whole reply is there, 0 when more bytes are needed, ZV_ESYNTAX on a malformed line
 * (a bare LF, a NUL, a bad code, codes that differ) and ZV_ETOOLONG beyond the limits above.
 * Allocates nothing.
 */
int zv_smtp_reply_parse(const char *p, size_t n, zv_smtp_reply_t *r);

/*
 * Appends data to b dot-stuffed for DATA (a line starting with "." gets another one), ending
 * with CRLF "." CRLF (a CRLF is added first when data does not end with one). Bare CR or LF
 * are copied as they are: the MIME builder writes CRLF only. Sticky error in b.
 */
void zv_smtp_dot_stuff(zv_smtp_buf_t *b, const char *data, size_t n);

enum { ZV_SMTP_PLAIN = 0, ZV_SMTP_STARTTLS = 1, ZV_SMTP_IMPLICIT_TLS = 2 };

/* What zv_smtp_feed and friends ask of the caller. */
enum {
  ZV_SMTP_MORE = 0, /* write s->out (may be empty) and feed more bytes */
  ZV_SMTP_TLS,      /* write s->out, then run the TLS handshake and call zv_smtp_tls_ready */
  ZV_SMTP_DONE,     /* the transaction ended: s->kind 0 = delivered, else refused (s->why) */
  ZV_SMTP_DEAD,     /* the connection is unusable: close it (a transaction, if any, failed) */
  ZV_SMTP_BYE       /* the server answered QUIT */
};

/* Why a transaction failed (s->kind). */
enum { ZV_SMTP_OK = 0, ZV_SMTP_UNAVAILABLE = 1, ZV_SMTP_REJECTED = 2 };

/* Extensions seen in the last EHLO reply. */
#define ZV_SMTP_EXT_STARTTLS 1u
#define ZV_SMTP_EXT_PLAIN 2u
#define ZV_SMTP_EXT_LOGIN 4u
#define ZV_SMTP_EXT_SIZE 8u

typedef struct {
  int state;
  int encryption;    /* ZV_SMTP_PLAIN, _STARTTLS, _IMPLICIT_TLS */
  int tls;           /* the caller finished a handshake on this connection */
  int txn;           /* a transaction is active (from zv_smtp_send to DONE or DEAD) */
  int kind;          /* of the last transaction: ZV_SMTP_OK, _UNAVAILABLE, _REJECTED */
  unsigned ext;
  char helo[256];
  char *user, *pass; /* owned copies; the password is wiped when freed */
  size_t user_len, pass_len;
  zv_smtp_buf_t in;  /* bytes read and not yet parsed */
  zv_smtp_buf_t out; /* bytes to write; the caller empties it (len = 0) after taking them */
  zv_smtp_buf_t env; /* the transaction's from and recipients, NUL-separated */
  zv_smtp_buf_t body;/* the dot-stuffed message; swapped into out on 354 */
  size_t rcpt_off, nrcpt, cur, refused;
  int refused_5xx;
  int retry_ok;      /* MAIL FROM is out and unanswered (or answered 421): nothing was accepted */
  char why[512];     /* the last failure, "RCPT TO:<a@b.c>: 550 no such user; ..." */
} zv_smtp_t;

/*
 * Prepares s for a new connection. helo is the EHLO name; user and pass may be NULL (no AUTH).
 * Copies them; returns 0 or ZV_ENOMEM. The first reply fed must be the greeting (for implicit
 * TLS, after the handshake).
 */
int zv_smtp_init(zv_smtp_t *s, int encryption, const char *helo, const char *user,
                 size_t user_len, const char *pass, size_t pass_len);

/* Frees every buffer and wipes the password. s can be init'ed again. */
void zv_smtp_free(zv_smtp_t *s);

/*
 * Starts a transaction (copies from, rcpts and the dot-stuffed data). If the session is idle it
 * writes MAIL FROM now; otherwise it starts when the session becomes ready. Returns ZV_EINVAL
 * when a transaction is already active or the connection is dead, ZV_ENOMEM.
 */
int zv_smtp_send(zv_smtp_t *s, const char *from, size_t from_len, const char *const *rcpts,
                 const size_t *rcpt_lens, size_t nrcpt, const char *data, size_t data_len);

/* Feeds bytes read from the server (after TLS decryption). Returns a ZV_SMTP_* event. */
int zv_smtp_feed(zv_smtp_t *s, const char *p, size_t n);

/* The TLS handshake after STARTTLS (or before the greeting, implicit) succeeded. */
int zv_smtp_tls_ready(zv_smtp_t *s);

/*
 * True when the active transaction failed before the server accepted any part of it (MAIL
 * FROM unanswered or answered 421): on a reused connection the caller may retry it on a new one.
 */
int zv_smtp_retryable(const zv_smtp_t *s);

/*
 * Moves the active transaction of src (which can then be freed) to dst, a fresh session that
 * starts it when ready. Allocates nothing. Returns ZV_EINVAL when src has none or dst has one.
 */
int zv_smtp_move_txn(zv_smtp_t *dst, zv_smtp_t *src);

/* Writes QUIT when idle; returns 1 when it did. */
int zv_smtp_quit(zv_smtp_t *s);

/* True while the machine waits for a reply (the caller keeps a deadline running). */
int zv_smtp_waiting(const zv_smtp_t *s);

/* True when idle and ready for zv_smtp_send to start at once. */
int zv_smtp_idle(const zv_smtp_t *s);

/* A short name of the current step ("greeting", "EHLO", "RCPT TO", "DATA", ...). */
const char *zv_smtp_step(const zv_smtp_t *s);

#endif
