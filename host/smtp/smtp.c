/*
 * smtp.c: the SMTP reply parser, dot-stuffing and the client state machine (see smtp.h).
 *
 * It must not do I/O, read clocks or know about TLS beyond "the caller did a handshake". The
 * only allocations are the session's buffers, which grow to the largest reply/message and are
 * reused across transactions.
 */
#include <stdio.h>
#include <string.h>

#include "../core/zv.h"
#include "smtp.h"

enum {
  S_GREETING, S_EHLO, S_STARTTLS, S_TLS, S_AUTH, S_LOGIN_USER, S_LOGIN_PASS,
  S_IDLE, S_MAIL, S_RCPT, S_DATA, S_BODY, S_RSET, S_QUIT, S_DEAD
};

static const char *const step_names[] = {
  "greeting", "EHLO", "STARTTLS", "TLS handshake", "AUTH", "AUTH LOGIN", "AUTH LOGIN",
  "idle", "MAIL FROM", "RCPT TO", "DATA", "end of data", "RSET", "QUIT", "closed"
};

/* --- buffers ---------------------------------------------------------------------------------- */

void zv_smtp_buf_put(zv_smtp_buf_t *b, const char *p, size_t n) {
  if (b->err || n == 0) return;
  if (b->cap - b->len < n) {
    size_t cap = b->cap ? b->cap : 256;
    char *np;
    while (cap - b->len < n) {
      if (cap > ((size_t)-1) / 2) { b->err = ZV_ENOMEM; return; }
      cap *= 2;
    }
    np = zv_realloc(b->p, cap);
    if (!np) { b->err = ZV_ENOMEM; return; }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

static void buf_str(zv_smtp_buf_t *b, const char *s) { zv_smtp_buf_put(b, s, strlen(s)); }

void zv_smtp_buf_free(zv_smtp_buf_t *b) {
  zv_free(b->p);
  memset(b, 0, sizeof *b);
}

static void wipe(void *p, size_t n) {
  volatile unsigned char *v = p;
  while (n--) *v++ = 0;
}

/* --- replies ---------------------------------------------------------------------------------- */

int zv_smtp_reply_parse(const char *p, size_t n, zv_smtp_reply_t *r) {
  size_t pos = 0;
  int code = 0, lines = 0;
  while (pos < n) {
    size_t start = pos, end;
    const char *nl = memchr(p + pos, '\n', n - pos);
    int c;
    if (!nl) {
      if (n - start > ZV_SMTP_LINE_MAX || n > ZV_SMTP_REPLY_MAX) return ZV_ETOOLONG;
      /* Refuse a bad start early rather than waiting for a line that will not parse. */
      for (size_t i = start; i < n && i < start + 3; i++)
        if (p[i] < '0' || p[i] > '9') return ZV_ESYNTAX;
      if (n - start >= 4 && p[start + 3] != ' ' && p[start + 3] != '-' && p[start + 3] != '\r')
        return ZV_ESYNTAX;
      return 0;
    }
    end = (size_t)(nl - p); /* index of LF */
    if (end - start + 1 > ZV_SMTP_LINE_MAX) return ZV_ETOOLONG;
    if (end == start || p[end - 1] != '\r' || end - start < 4) return ZV_ESYNTAX;
    if (p[start] < '2' || p[start] > '5' || p[start + 1] < '0' || p[start + 1] > '5' ||
        p[start + 2] < '0' || p[start + 2] > '9')
      return ZV_ESYNTAX;
    c = (p[start] - '0') * 100 + (p[start + 1] - '0') * 10 + (p[start + 2] - '0');
    if (lines && c != code) return ZV_ESYNTAX;
    code = c;
    for (size_t i = start + 3; i < end - 1; i++)
      if (p[i] == '\0' || p[i] == '\r') return ZV_ESYNTAX;
    if (lines == 0) {
      if (end - 1 == start + 3) {
        r->text = p + start + 3;
        r->text_len = 0;
      } else {
        r->text = p + start + 4;
        r->text_len = end - 1 - (start + 4);
      }
    }
    lines++;
    pos = end + 1;
    if (pos > ZV_SMTP_REPLY_MAX) return ZV_ETOOLONG;
    if (end - 1 == start + 3 || p[start + 3] == ' ') {
      r->code = code;
      r->lines = lines;
      r->consumed = pos;
      return 1;
    }
    if (p[start + 3] != '-') return ZV_ESYNTAX;
  }
  return 0;
}

/* --- dot-stuffing ----------------------------------------------------------------------------- */

void zv_smtp_dot_stuff(zv_smtp_buf_t *b, const char *data, size_t n) {
  size_t i = 0;
  while (i < n) {
    const char *nl = memchr(data + i, '\n', n - i);
    size_t end = nl ? (size_t)(nl - data) + 1 : n;
    if (data[i] == '.') zv_smtp_buf_put(b, ".", 1);
    zv_smtp_buf_put(b, data + i, end - i);
    i = end;
  }
  if (n < 2 || data[n - 2] != '\r' || data[n - 1] != '\n') zv_smtp_buf_put(b, "\r\n", 2);
  zv_smtp_buf_put(b, ".\r\n", 3);
}

/* --- base64 for AUTH ------------------------------------------------------------------------- */

static void b64(zv_smtp_buf_t *b, const unsigned char *p, size_t n) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char q[4];
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16;
    if (i + 1 < n) v |= (unsigned)p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    q[0] = tab[(v >> 18) & 63];
    q[1] = tab[(v >> 12) & 63];
    q[2] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
    q[3] = i + 2 < n ? tab[v & 63] : '=';
    zv_smtp_buf_put(b, q, 4);
  }
}

/* --- the machine ------------------------------------------------------------------------------ */

int zv_smtp_init(zv_smtp_t *s, int encryption, const char *helo, const char *user,
                 size_t user_len, const char *pass, size_t pass_len) {
  memset(s, 0, sizeof *s);
  s->encryption = encryption;
  s->state = S_GREETING;
  snprintf(s->helo, sizeof s->helo, "%s", helo && *helo ? helo : "localhost");
  if (user && user_len) {
    s->user = zv_alloc(user_len + 1);
    s->pass = zv_alloc(pass_len + 1);
    if (!s->user || !s->pass) {
      zv_smtp_free(s);
      return ZV_ENOMEM;
    }
    memcpy(s->user, user, user_len);
    s->user[user_len] = '\0';
    if (pass_len) memcpy(s->pass, pass, pass_len);
    s->pass[pass_len] = '\0';
    s->user_len = user_len;
    s->pass_len = pass_len;
  }
  return 0;
}

void zv_smtp_free(zv_smtp_t *s) {
  if (s->pass) wipe(s->pass, s->pass_len);
  if (s->out.p) wipe(s->out.p, s->out.cap); /* may hold an AUTH line */
  zv_free(s->user);
  zv_free(s->pass);
  zv_smtp_buf_free(&s->in);
  zv_smtp_buf_free(&s->out);
  zv_smtp_buf_free(&s->env);
  zv_smtp_buf_free(&s->body);
  memset(s, 0, sizeof *s);
  s->state = S_DEAD;
}

int zv_smtp_waiting(const zv_smtp_t *s) {
  return s->state != S_IDLE && s->state != S_DEAD && s->state != S_TLS;
}

int zv_smtp_idle(const zv_smtp_t *s) { return s->state == S_IDLE; }

const char *zv_smtp_step(const zv_smtp_t *s) { return step_names[s->state]; }

/* Appends "what: 550 text" (the first line of the reply) to why, separated by "; ". */
static void note(zv_smtp_t *s, const char *what, const zv_smtp_reply_t *r) {
  size_t len = strlen(s->why);
  int tl = (int)(r->text_len > 200 ? 200 : r->text_len);
  if (len >= sizeof s->why - 1) return;
  snprintf(s->why + len, sizeof s->why - len, "%s%s: %d %.*s", len ? "; " : "", what, r->code,
           tl, r->text);
}

static int dead(zv_smtp_t *s, const char *fmt, const char *a) {
  snprintf(s->why, sizeof s->why, fmt, a);
  s->state = S_DEAD;
  s->kind = ZV_SMTP_UNAVAILABLE;
  return ZV_SMTP_DEAD;
}

static int dead_reply(zv_smtp_t *s, const char *what, const zv_smtp_reply_t *r) {
  s->why[0] = '\0';
  note(s, what, r);
  s->state = S_DEAD;
  s->kind = ZV_SMTP_UNAVAILABLE;
  return ZV_SMTP_DEAD;
}

static void cmd(zv_smtp_t *s, const char *a, const char *b, const char *c) {
  buf_str(&s->out, a);
  if (b) buf_str(&s->out, b);
  if (c) buf_str(&s->out, c);
  zv_smtp_buf_put(&s->out, "\r\n", 2);
}

static const char *env_from(const zv_smtp_t *s) { return s->env.p; }

static const char *env_rcpt(const zv_smtp_t *s, size_t i) {
  const char *p = s->env.p + s->rcpt_off;
  while (i--) p += strlen(p) + 1;
  return p;
}

static void ehlo(zv_smtp_t *s) {
  s->ext = 0;
  cmd(s, "EHLO ", s->helo, NULL);
  s->state = S_EHLO;
}

/* The session is authenticated (or needs no AUTH): start a waiting transaction or idle. */
static int ready(zv_smtp_t *s) {
  if (s->txn) {
    char size[32] = "";
    if (s->ext & ZV_SMTP_EXT_SIZE) snprintf(size, sizeof size, " SIZE=%zu", s->body.len);
    buf_str(&s->out, "MAIL FROM:<");
    buf_str(&s->out, env_from(s));
    buf_str(&s->out, ">");
    cmd(s, size, NULL, NULL);
    s->state = S_MAIL;
    s->retry_ok = 1;
  } else {
    s->state = S_IDLE;
  }
  return s->out.err ? dead(s, "%s", "out of memory") : ZV_SMTP_MORE;
}

static int after_ehlo(zv_smtp_t *s) {
  if (s->encryption == ZV_SMTP_STARTTLS && !s->tls) {
    if (!(s->ext & ZV_SMTP_EXT_STARTTLS))
      return dead(s, "%s", "the server does not offer STARTTLS");
    cmd(s, "STARTTLS", NULL, NULL);
    s->state = S_STARTTLS;
    return ZV_SMTP_MORE;
  }
  if (s->user) {
    if (s->ext & ZV_SMTP_EXT_PLAIN) {
      zv_smtp_buf_t tmp = {0};
      zv_smtp_buf_put(&tmp, "\0", 1);
      zv_smtp_buf_put(&tmp, s->user, s->user_len);
      zv_smtp_buf_put(&tmp, "\0", 1);
      zv_smtp_buf_put(&tmp, s->pass, s->pass_len);
      buf_str(&s->out, "AUTH PLAIN ");
      if (tmp.err) s->out.err = tmp.err;
      else b64(&s->out, (const unsigned char *)tmp.p, tmp.len);
      zv_smtp_buf_put(&s->out, "\r\n", 2);
      if (tmp.p) wipe(tmp.p, tmp.cap);
      zv_smtp_buf_free(&tmp);
      s->state = S_AUTH;
    } else if (s->ext & ZV_SMTP_EXT_LOGIN) {
      cmd(s, "AUTH LOGIN", NULL, NULL);
      s->state = S_LOGIN_USER;
    } else {
      return dead(s, "%s", "the server offers neither AUTH PLAIN nor AUTH LOGIN");
    }
    return s->out.err ? dead(s, "%s", "out of memory") : ZV_SMTP_MORE;
  }
  return ready(s);
}

static int word_eq(const char *p, size_t n, const char *w) {
  size_t k = strlen(w);
  if (n < k) return 0;
  for (size_t i = 0; i < k; i++) {
    char c = p[i];
    if (c >= 'a' && c <= 'z') c = (char)(c - 32);
    if (c != w[i]) return 0;
  }
  return n == k || p[k] == ' ' || p[k] == '=';
}

/* Reads the extension keywords of a 250 reply to EHLO (lines after the first). */
static void parse_ext(zv_smtp_t *s, const char *p, size_t n) {
  size_t pos = 0;
  int first = 1;
  while (pos < n) {
    const char *nl = memchr(p + pos, '\n', n - pos);
    size_t end = (size_t)(nl - p) - 1; /* index of CR; the parser checked the shape */
    const char *t = p + pos + 4;
    size_t tn = end > pos + 4 ? end - (pos + 4) : 0;
    if (!first) {
      if (word_eq(t, tn, "STARTTLS")) s->ext |= ZV_SMTP_EXT_STARTTLS;
      else if (word_eq(t, tn, "SIZE")) s->ext |= ZV_SMTP_EXT_SIZE;
      else if (word_eq(t, tn, "AUTH")) {
        size_t i = 4;
        while (i < tn) {
          size_t j;
          while (i < tn && (t[i] == ' ' || t[i] == '=')) i++;
          j = i;
          while (j < tn && t[j] != ' ') j++;
          if (word_eq(t + i, j - i, "PLAIN")) s->ext |= ZV_SMTP_EXT_PLAIN;
          if (word_eq(t + i, j - i, "LOGIN")) s->ext |= ZV_SMTP_EXT_LOGIN;
          i = j;
        }
      }
    }
    first = 0;
    pos = (size_t)(nl - p) + 1;
  }
}

/* The transaction failed at a step the server answered: reset and report after RSET. */
static int refuse(zv_smtp_t *s, const char *what, const zv_smtp_reply_t *r) {
  s->why[0] = '\0';
  note(s, what, r);
  s->kind = r->code >= 500 ? ZV_SMTP_REJECTED : ZV_SMTP_UNAVAILABLE;
  cmd(s, "RSET", NULL, NULL);
  s->state = S_RSET;
  return ZV_SMTP_MORE;
}

static int next_rcpt(zv_smtp_t *s) {
  if (s->cur < s->nrcpt) {
    buf_str(&s->out, "RCPT TO:<");
    buf_str(&s->out, env_rcpt(s, s->cur));
    cmd(s, ">", NULL, NULL);
    s->state = S_RCPT;
    return ZV_SMTP_MORE;
  }
  if (s->refused) {
    s->kind = s->refused_5xx ? ZV_SMTP_REJECTED : ZV_SMTP_UNAVAILABLE;
    cmd(s, "RSET", NULL, NULL);
    s->state = S_RSET;
    return ZV_SMTP_MORE;
  }
  cmd(s, "DATA", NULL, NULL);
  s->state = S_DATA;
  return ZV_SMTP_MORE;
}

static int on_reply(zv_smtp_t *s, const zv_smtp_reply_t *r, const char *raw) {
  char what[300];
  if (r->code == 421 && s->state != S_QUIT) return dead_reply(s, step_names[s->state], r);
  s->retry_ok = 0;
  switch (s->state) {
  case S_GREETING:
    if (r->code != 220) return dead_reply(s, "greeting", r);
    ehlo(s);
    return ZV_SMTP_MORE;
  case S_EHLO:
    if (r->code != 250) return dead_reply(s, "EHLO", r);
    parse_ext(s, raw, r->consumed);
    return after_ehlo(s);
  case S_STARTTLS:
    if (r->code != 220) return dead_reply(s, "STARTTLS", r);
    /* Bytes after the 220 were sent in clear before TLS: a command injection attempt. */
    if (s->in.len > r->consumed) return dead(s, "%s", "data after the STARTTLS reply");
    s->state = S_TLS;
    return ZV_SMTP_TLS;
  case S_LOGIN_USER:
    if (r->code != 334) return dead_reply(s, "AUTH LOGIN", r);
    b64(&s->out, (const unsigned char *)s->user, s->user_len);
    zv_smtp_buf_put(&s->out, "\r\n", 2);
    s->state = S_LOGIN_PASS;
    return ZV_SMTP_MORE;
  case S_LOGIN_PASS:
    if (r->code != 334) return dead_reply(s, "AUTH LOGIN", r);
    b64(&s->out, (const unsigned char *)s->pass, s->pass_len);
    zv_smtp_buf_put(&s->out, "\r\n", 2);
    s->state = S_AUTH;
    return ZV_SMTP_MORE;
  case S_AUTH:
    if (r->code != 235) return dead_reply(s, "AUTH", r);
    return ready(s);
  case S_MAIL:
    if (r->code != 250) {
      snprintf(what, sizeof what, "MAIL FROM:<%s>", env_from(s));
      return refuse(s, what, r);
    }
    s->cur = 0;
    return next_rcpt(s);
  case S_RCPT:
    if (r->code != 250 && r->code != 251) {
      snprintf(what, sizeof what, "RCPT TO:<%s>", env_rcpt(s, s->cur));
      if (!s->refused) s->why[0] = '\0';
      note(s, what, r);
      s->refused++;
      if (r->code >= 500) s->refused_5xx = 1;
    }
    s->cur++;
    return next_rcpt(s);
  case S_DATA:
    if (r->code != 354) return refuse(s, "DATA", r);
    {
      zv_smtp_buf_t t = s->out; /* the body goes out without another copy */
      s->out = s->body;
      s->body = t;
      s->body.len = 0;
    }
    s->state = S_BODY;
    return ZV_SMTP_MORE;
  case S_BODY:
    s->txn = 0;
    s->state = S_IDLE;
    if (r->code != 250) {
      s->why[0] = '\0';
      note(s, "end of data", r);
      s->kind = r->code >= 500 ? ZV_SMTP_REJECTED : ZV_SMTP_UNAVAILABLE;
    } else {
      s->kind = ZV_SMTP_OK;
    }
    return ZV_SMTP_DONE;
  case S_RSET:
    if (r->code != 250) {
      int kind = s->kind;
      s->state = S_DEAD;
      s->kind = kind; /* the transaction's own failure is what the caller reports */
      return ZV_SMTP_DEAD;
    }
    s->txn = 0;
    s->state = S_IDLE;
    return ZV_SMTP_DONE;
  case S_QUIT:
    s->state = S_DEAD;
    return ZV_SMTP_BYE;
  default: /* idle, TLS or dead: nobody asked */
    return dead_reply(s, "unexpected reply", r);
  }
}

int zv_smtp_feed(zv_smtp_t *s, const char *p, size_t n) {
  zv_smtp_reply_t r;
  int rc, ev;
  if (s->state == S_DEAD) return ZV_SMTP_DEAD;
  zv_smtp_buf_put(&s->in, p, n);
  if (s->in.err) return dead(s, "%s", "out of memory");
  rc = zv_smtp_reply_parse(s->in.p, s->in.len, &r);
  if (rc == 0) return ZV_SMTP_MORE;
  if (rc < 0) {
    return dead(s, "a malformed reply while waiting for %s",
                rc == ZV_ETOOLONG ? "a reply (too long)" : step_names[s->state]);
  }
  ev = on_reply(s, &r, s->in.p);
  if (s->out.err) return dead(s, "%s", "out of memory");
  if (ev == ZV_SMTP_TLS) { s->in.len = 0; return ev; }
  memmove(s->in.p, s->in.p + r.consumed, s->in.len - r.consumed);
  s->in.len -= r.consumed;
  /* Without pipelining a second reply is only legal after another command; keep it. */
  if (ev == ZV_SMTP_MORE && s->in.len) return zv_smtp_feed(s, NULL, 0);
  return ev;
}

int zv_smtp_tls_ready(zv_smtp_t *s) {
  s->tls = 1;
  if (s->state == S_TLS) ehlo(s);
  return s->out.err ? dead(s, "%s", "out of memory") : ZV_SMTP_MORE;
}

int zv_smtp_send(zv_smtp_t *s, const char *from, size_t from_len, const char *const *rcpts,
                 const size_t *rcpt_lens, size_t nrcpt, const char *data, size_t data_len) {
  if (s->txn || s->state == S_DEAD || s->state == S_QUIT) return ZV_EINVAL;
  s->env.len = s->env.err = 0;
  s->body.len = s->body.err = 0;
  zv_smtp_buf_put(&s->env, from, from_len);
  zv_smtp_buf_put(&s->env, "", 1);
  s->rcpt_off = s->env.len;
  for (size_t i = 0; i < nrcpt; i++) {
    zv_smtp_buf_put(&s->env, rcpts[i], rcpt_lens[i]);
    zv_smtp_buf_put(&s->env, "", 1);
  }
  zv_smtp_dot_stuff(&s->body, data, data_len);
  if (s->env.err || s->body.err) return ZV_ENOMEM;
  s->nrcpt = nrcpt;
  s->cur = s->refused = 0;
  s->refused_5xx = 0;
  s->kind = ZV_SMTP_OK;
  s->why[0] = '\0';
  s->txn = 1;
  if (s->state == S_IDLE) ready(s);
  return s->out.err ? ZV_ENOMEM : 0;
}

int zv_smtp_retryable(const zv_smtp_t *s) { return s->txn && s->retry_ok; }

int zv_smtp_move_txn(zv_smtp_t *dst, zv_smtp_t *src) {
  zv_smtp_buf_t t;
  if (!src->txn || dst->txn) return ZV_EINVAL;
  t = dst->env; dst->env = src->env; src->env = t;
  t = dst->body; dst->body = src->body; src->body = t;
  dst->rcpt_off = src->rcpt_off;
  dst->nrcpt = src->nrcpt;
  dst->cur = dst->refused = 0;
  dst->refused_5xx = dst->retry_ok = 0;
  dst->kind = ZV_SMTP_OK;
  dst->why[0] = '\0';
  dst->txn = 1;
  src->txn = src->retry_ok = 0;
  if (dst->state == S_IDLE) ready(dst);
  return 0;
}

int zv_smtp_quit(zv_smtp_t *s) {
  if (s->state != S_IDLE) return 0;
  cmd(s, "QUIT", NULL, NULL);
  s->state = S_QUIT;
  return 1;
}
