/*
 * resp.c: the HTTP/1.1 response parser and request head writer of the client (see resp.h).
 *
 * Framing follows RFC 9112 §6.3: no body for HEAD/CONNECT, 1xx, 204 and 304; then
 * Transfer-Encoding (chunked last: chunked; anything else: until the close); then
 * Content-Length (several must agree); then until the close. It must not allocate, read
 * outside the bytes it is given, or accept a head it cannot represent (obs-fold, bare CR in a
 * line, a non-token field name): a response it cannot frame for sure is a syntax error.
 */
#include <string.h>
#include <strings.h>

#include "../core/zv.h"
#include "resp.h"

enum {
  S_HEAD, S_BODY_LEN, S_EOF_BODY, S_CHUNK_SIZE, S_CHUNK_EXT, S_CHUNK_DATA, S_CHUNK_CR,
  S_CHUNK_LF, S_TRAILER, S_DONE_PENDING, S_FINISHED, S_ERROR
};

enum { F_NONE, F_LENGTH, F_CHUNKED, F_CLOSE };

#define LINE_MAX_CHUNK 4096

static int tchar(unsigned char c) {
  static const char extra[] = "!#$%&'*+-.^_`|~";
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c && strchr(extra, c) != NULL);
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void zv_httpc_resp_init(zv_httpc_resp_t *r, int no_body) {
  r->state = S_HEAD;
  r->no_body = no_body;
  r->status = 0;
  r->minor = 1;
  r->keep_alive = 0;
  r->framing = F_NONE;
  r->remaining = 0;
  r->content_length = UINT64_MAX;
  r->line = 0;
  r->head_len = 0;
  r->nfields = 0;
  r->ev_p = NULL;
  r->ev_n = 0;
}

static int fail(zv_httpc_resp_t *r, int rc) {
  r->state = S_ERROR;
  return rc;
}

static int name_is(const zv_httpc_resp_t *r, const zv_httpc_field_t *f, const char *name) {
  size_t n = strlen(name);
  return f->name_len == n && strncasecmp(r->head + f->name_off, name, n) == 0;
}

/* Does the comma-separated list v[0, n) hold token tok (case-insensitive)? last: only as its
 * last element. */
static int list_has(const char *v, size_t n, const char *tok, int last) {
  size_t tl = strlen(tok), i = 0;
  int found = 0;
  while (i < n) {
    size_t s, e;
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
    s = i;
    while (i < n && v[i] != ',') i++;
    e = i;
    while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
    if (e == s) continue;
    found = (e - s == tl && strncasecmp(v + s, tok, tl) == 0);
    if (found && !last) return 1;
  }
  return found;
}

/* Parses the status line and the fields of head[0, head_len) and decides the framing. */
static int parse_head(zv_httpc_resp_t *r) {
  const char *h = r->head, *end = h + r->head_len, *p, *nl;
  int has_te = 0, te_chunked = 0, conn_close = 0, conn_keep = 0;
  uint64_t cl = UINT64_MAX;
  size_t i;
  nl = memchr(h, '\n', r->head_len);
  if (!nl || nl - h < 12 || memcmp(h, "HTTP/1.", 7) != 0) return ZV_ESYNTAX;
  if (h[7] < '0' || h[7] > '9' || h[8] != ' ') return ZV_ESYNTAX;
  r->minor = h[7] - '0';
  for (i = 9; i < 12; i++)
    if (h[i] < '0' || h[i] > '9') return ZV_ESYNTAX;
  r->status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
  if (r->status < 100) return ZV_ESYNTAX;
  if (h + 12 < nl && h[12] != ' ' && !(h[12] == '\r' && h + 13 == nl)) return ZV_ESYNTAX;
  for (p = h + 12; p < nl - 1; p++)
    if (*p == '\r' || *p == 0) return ZV_ESYNTAX;
  r->nfields = 0;
  for (p = nl + 1; p < end;) {
    const char *le = memchr(p, '\n', (size_t)(end - p)), *ve, *c, *v;
    zv_httpc_field_t *f;
    ve = le;
    if (ve > p && ve[-1] == '\r') ve--;
    if (ve == p) break; /* the empty line */
    if (*p == ' ' || *p == '\t') return ZV_ESYNTAX; /* obs-fold */
    for (c = p; c < ve && *c != ':'; c++)
      if (!tchar((unsigned char)*c)) return ZV_ESYNTAX;
    if (c == ve || c == p) return ZV_ESYNTAX;
    for (v = c + 1; v < ve; v++)
      if (*v == '\r' || *v == 0) return ZV_ESYNTAX;
    if (r->nfields == ZV_HTTPC_FIELDS_MAX) return ZV_ETOOLONG;
    v = c + 1;
    while (v < ve && (*v == ' ' || *v == '\t')) v++;
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
    f = &r->fields[r->nfields++];
    f->name_off = (uint16_t)(p - h);
    f->name_len = (uint16_t)(c - p);
    f->val_off = (uint16_t)(v - h);
    f->val_len = (uint16_t)(ve - v);
    if (name_is(r, f, "content-length")) {
      /* Several values (or a list) must all agree. */
      size_t k = 0;
      while (k < f->val_len) {
        uint64_t x = 0;
        size_t d = 0;
        while (k < f->val_len && (v[k] == ' ' || v[k] == '\t' || v[k] == ',')) k++;
        if (k == f->val_len) break;
        while (k < f->val_len && v[k] >= '0' && v[k] <= '9') {
          if (x > (UINT64_MAX - 9) / 10 || ++d > 18) return ZV_ESYNTAX;
          x = x * 10 + (uint64_t)(v[k++] - '0');
        }
        if (!d) return ZV_ESYNTAX;
        while (k < f->val_len && (v[k] == ' ' || v[k] == '\t')) k++;
        if (k < f->val_len && v[k] != ',') return ZV_ESYNTAX;
        if (cl != UINT64_MAX && cl != x) return ZV_ESYNTAX;
        cl = x;
      }
      if (cl == UINT64_MAX) return ZV_ESYNTAX;
    } else if (name_is(r, f, "transfer-encoding")) {
      has_te = 1;
      if (f->val_len) te_chunked = list_has(v, f->val_len, "chunked", 1);
    } else if (name_is(r, f, "connection")) {
      if (list_has(v, f->val_len, "close", 0)) conn_close = 1;
      if (list_has(v, f->val_len, "keep-alive", 0)) conn_keep = 1;
    }
    p = le + 1;
  }
  r->content_length = cl;
  r->keep_alive = conn_close ? 0 : r->minor >= 1 ? 1 : conn_keep;
  if (r->no_body || r->status < 200 || r->status == 204 || r->status == 304) {
    r->framing = F_NONE;
  } else if (has_te) {
    r->framing = te_chunked ? F_CHUNKED : F_CLOSE;
    if (!te_chunked || cl != UINT64_MAX) r->keep_alive = 0; /* RFC 9112 §6.3 (3, 4) */
  } else if (cl != UINT64_MAX) {
    r->framing = F_LENGTH;
    r->remaining = cl;
  } else {
    r->framing = F_CLOSE;
    r->keep_alive = 0;
  }
  return 0;
}

/* After HEAD: the state the body starts in. */
static int body_state(const zv_httpc_resp_t *r) {
  switch (r->framing) {
  case F_LENGTH: return r->remaining ? S_BODY_LEN : S_DONE_PENDING;
  case F_CHUNKED: return S_CHUNK_SIZE;
  case F_CLOSE: return S_EOF_BODY;
  default: return S_DONE_PENDING;
  }
}

int zv_httpc_resp_feed(zv_httpc_resp_t *r, const char *p, size_t n, size_t *used) {
  size_t i = 0;
  *used = 0;
  for (;;) {
    switch (r->state) {
    case S_HEAD:
      while (i < n) {
        /* Copy up to the next LF at once (memchr, memcpy), then look at the line it ends. */
        const char *lf;
        size_t hl = r->head_len, k;
        if (hl == 0 && (p[i] == '\r' || p[i] == '\n')) { /* stray empty lines before */
          i++;
          continue;
        }
        lf = memchr(p + i, '\n', n - i);
        k = lf ? (size_t)(lf - (p + i)) + 1 : n - i;
        if (k > ZV_HTTPC_HEAD_MAX - hl) return fail(r, ZV_ETOOLONG);
        memcpy(r->head + hl, p + i, k);
        r->head_len = hl + k;
        i += k;
        if (!lf) break;
        hl = r->head_len - 1; /* the LF's index */
        if (hl >= 1 && (r->head[hl - 1] == '\n' ||
                        (r->head[hl - 1] == '\r' && hl >= 2 && r->head[hl - 2] == '\n'))) {
          int rc = parse_head(r);
          if (rc) return fail(r, rc);
          if (r->status < 200 && r->status != 101) { /* interim: skip it */
            r->head_len = 0;
            r->nfields = 0;
            continue;
          }
          r->state = body_state(r);
          *used = i;
          return ZV_HTTPC_EV_HEAD;
        }
      }
      *used = i;
      return ZV_HTTPC_EV_NONE;
    case S_BODY_LEN:
    case S_CHUNK_DATA:
    case S_EOF_BODY: {
      size_t k = n - i;
      if (!k) {
        *used = i;
        return ZV_HTTPC_EV_NONE;
      }
      if (r->state != S_EOF_BODY && k > r->remaining) k = (size_t)r->remaining;
      r->ev_p = p + i;
      r->ev_n = k;
      i += k;
      if (r->state != S_EOF_BODY) {
        r->remaining -= k;
        if (!r->remaining) r->state = r->state == S_BODY_LEN ? S_DONE_PENDING : S_CHUNK_CR;
      }
      *used = i;
      return ZV_HTTPC_EV_BODY;
    }
    case S_CHUNK_SIZE:
    case S_CHUNK_EXT:
      while (i < n) {
        unsigned char c = (unsigned char)p[i++];
        if (c == '\n') {
          if (!r->line) return fail(r, ZV_ESYNTAX); /* no digits */
          r->line = 0;
          if (r->remaining) {
            r->state = S_CHUNK_DATA;
          } else {
            r->state = S_TRAILER;
            r->remaining = ZV_HTTPC_HEAD_MAX; /* the trailer section's budget */
          }
          break;
        }
        if (r->state == S_CHUNK_SIZE) {
          int d = hexval(c);
          if (d >= 0) {
            if (r->remaining >> 59) return fail(r, ZV_ESYNTAX);
            r->remaining = (r->remaining << 4) | (uint64_t)d;
            r->line++;
            continue;
          }
          if (!r->line || (c != ';' && c != ' ' && c != '\t' && c != '\r'))
            return fail(r, ZV_ESYNTAX);
          r->state = S_CHUNK_EXT;
        }
        if (c == 0 || ++r->line > LINE_MAX_CHUNK) return fail(r, r->line > LINE_MAX_CHUNK ? ZV_ETOOLONG : ZV_ESYNTAX);
      }
      if (r->state == S_CHUNK_SIZE || r->state == S_CHUNK_EXT) {
        *used = i;
        return ZV_HTTPC_EV_NONE;
      }
      break;
    case S_CHUNK_CR:
    case S_CHUNK_LF:
      if (i == n) {
        *used = i;
        return ZV_HTTPC_EV_NONE;
      }
      if (p[i] == '\r' && r->state == S_CHUNK_CR) {
        r->state = S_CHUNK_LF;
        i++;
      } else if (p[i] == '\n') {
        r->state = S_CHUNK_SIZE;
        r->remaining = 0;
        r->line = 0;
        i++;
      } else {
        return fail(r, ZV_ESYNTAX);
      }
      break;
    case S_TRAILER:
      while (i < n) {
        char c = p[i++];
        if (!r->remaining--) return fail(r, ZV_ETOOLONG);
        if (c == '\n') {
          if (!r->line) {
            r->state = S_FINISHED;
            *used = i;
            return ZV_HTTPC_EV_DONE;
          }
          r->line = 0;
        } else if (c != '\r' || r->line) {
          if (c == 0) return fail(r, ZV_ESYNTAX);
          r->line++;
        }
      }
      *used = i;
      return ZV_HTTPC_EV_NONE;
    case S_DONE_PENDING:
      r->state = S_FINISHED;
      *used = i;
      return ZV_HTTPC_EV_DONE;
    default:
      *used = i;
      return ZV_EINVAL;
    }
  }
}

int zv_httpc_resp_eof(zv_httpc_resp_t *r) {
  if (r->state == S_EOF_BODY || r->state == S_DONE_PENDING) {
    r->state = S_FINISHED;
    return ZV_HTTPC_EV_DONE;
  }
  return fail(r, ZV_EIO);
}

const char *zv_httpc_resp_reason(const zv_httpc_resp_t *r, size_t *len) {
  const char *nl = memchr(r->head, '\n', r->head_len), *s = r->head + 13;
  if (!nl || nl <= s) {
    *len = 0;
    return r->head;
  }
  *len = (size_t)(nl - s) - (nl[-1] == '\r');
  return s;
}

size_t zv_httpc_head_size(size_t mlen, size_t tlen, const size_t *nlens, const size_t *vlens,
                          size_t nfields) {
  size_t n = mlen + 1 + tlen + 11 + 2;
  for (size_t i = 0; i < nfields; i++) n += nlens[i] + 2 + vlens[i] + 2;
  return n;
}

int zv_httpc_write_head(char *out, size_t cap, size_t *len, const char *method, size_t mlen,
                        const char *target, size_t tlen, const char *const *names,
                        const size_t *nlens, const char *const *values, const size_t *vlens,
                        size_t nfields) {
  size_t i, k, o = 0;
  if (!mlen || !tlen) return ZV_EINVAL;
  for (i = 0; i < mlen; i++)
    if (!tchar((unsigned char)method[i])) return ZV_EINVAL;
  for (i = 0; i < tlen; i++)
    if ((unsigned char)target[i] <= 0x20 || (unsigned char)target[i] == 0x7f) return ZV_EINVAL;
  for (i = 0; i < nfields; i++) {
    if (!nlens[i]) return ZV_EINVAL;
    for (k = 0; k < nlens[i]; k++)
      if (!tchar((unsigned char)names[i][k])) return ZV_EINVAL;
    for (k = 0; k < vlens[i]; k++) {
      char c = values[i][k];
      if (c == '\r' || c == '\n' || c == 0) return ZV_EINVAL;
    }
  }
  if (zv_httpc_head_size(mlen, tlen, nlens, vlens, nfields) > cap) return ZV_ERANGE;
  memcpy(out + o, method, mlen);
  o += mlen;
  out[o++] = ' ';
  memcpy(out + o, target, tlen);
  o += tlen;
  memcpy(out + o, " HTTP/1.1\r\n", 11);
  o += 11;
  for (i = 0; i < nfields; i++) {
    memcpy(out + o, names[i], nlens[i]);
    o += nlens[i];
    out[o++] = ':';
    out[o++] = ' ';
    memcpy(out + o, values[i], vlens[i]);
    o += vlens[i];
    out[o++] = '\r';
    out[o++] = '\n';
  }
  out[o++] = '\r';
  out[o++] = '\n';
  *len = o;
  return 0;
}
