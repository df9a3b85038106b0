/*
 * multipart.c: the streaming multipart/form-data parser (see multipart.h for the grammar and
 * the states). No allocation, no Lua, no libuv; reads only the bytes it is given
 * (fuzz/multipart_fuzz.c).
 *
 * Finding the delimiter "\r\n--boundary" in data: a boundary holds no CR or LF (RFC 2046's
 * bchars), so the delimiter's only CR is its first byte and a failed partial match can restart
 * only at the byte that failed (no KMP table needed). Data runs are found with memchr for CR and
 * handed out as pointers into the chunk; a delimiter prefix that a chunk boundary split is kept
 * as a count (m->match) and, when it turns out to be data after all, replayed from m->delim.
 */
#include "multipart.h"

#include <string.h>
#include <strings.h>

enum { S_PREAMBLE, S_AFTER, S_AFTER_DASH, S_AFTER_PAD, S_AFTER_CR, S_HEADERS, S_DATA, S_EPILOGUE };

#define PAD_MAX 64 /* white space allowed between a delimiter and its CRLF */

static const char *const messages[] = {
  "ok",
#define ZV__X(name, msg) msg,
  ZV_MULTIPART_ERR_MAP(ZV__X)
#undef ZV__X
};

const char *zv_multipart_strerror(int err) {
  if (err < 0 || err >= ZV_MULTIPART_E_MAX) return "unknown error";
  return messages[err];
}

static int bchar(int ch) {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch && strchr("'()+_,-./:=? ", ch) != NULL);
}

int zv_multipart_init(zv_multipart_t *m, const char *b, size_t n, uint32_t max_parts) {
  memset(m, 0, offsetof(zv_multipart_t, hbuf));
  if (n == 0 || n > ZV_MULTIPART_BOUNDARY_MAX || b[n - 1] == ' ') return ZV_MULTIPART_E_BOUNDARY;
  for (size_t i = 0; i < n; i++)
    if (!bchar((unsigned char)b[i])) return ZV_MULTIPART_E_BOUNDARY;
  memcpy(m->delim, "\r\n--", 4);
  memcpy(m->delim + 4, b, n);
  m->dlen = n + 4;
  m->max_parts = max_parts;
  m->state = S_PREAMBLE;
  /* The body may start with "--boundary" at once: as if a CRLF came before it. */
  m->match = 2;
  return 0;
}

static int fail(zv_multipart_t *m, int err) {
  m->err = err;
  return err;
}

/*
 * Scans p[*i, n) for the delimiter. Bytes that are data (state DATA) go to on_data; in the
 * preamble they are dropped. Returns 1 when the delimiter was found (*i is after it), 0 when
 * the chunk ended (*i == n), -1 when on_data stopped the parse.
 */
static int scan(zv_multipart_t *m, const char *p, size_t n, size_t *i, int emit,
                const zv_multipart_cb_t *cb, void *ud) {
  size_t run = *i, j = *i, carried = m->match;
  long mstart = m->match ? -1 : 0; /* where the pending match began in this chunk; -1: before */
  while (j < n) {
    if (m->match == 0) {
      const char *cr = memchr(p + j, '\r', n - j);
      if (!cr) {
        j = n;
        break;
      }
      j = (size_t)(cr - p);
      mstart = (long)j;
      m->match = 1;
      j++;
      continue;
    }
    if (p[j] == m->delim[m->match]) {
      m->match++;
      j++;
      if (m->match == m->dlen) {
        m->match = 0;
        *i = j;
        if (emit && mstart > (long)run && cb->on_data(ud, p + run, (size_t)mstart - run))
          return -1;
        return 1;
      }
      continue;
    }
    /* A mismatch: what was matched is data. A prefix carried from the previous chunk comes
     * before everything in this one; a prefix begun here is part of the run already. */
    if (mstart < 0 && carried && emit && cb->on_data(ud, m->delim, carried)) return -1;
    mstart = 0;
    carried = 0;
    m->match = 0;
    /* p[j] is looked at again from state 0 (it may be the CR of a new match). */
  }
  *i = n;
  {
    size_t end = n;
    if (m->match) end = mstart >= 0 ? (size_t)mstart : run;
    if (emit && end > run && cb->on_data(ud, p + run, end - run)) return -1;
  }
  return 0;
}

/* One complete header line hbuf[0, hlen) (its CR included, LF not): 0 or an error. */
static int header_line(zv_multipart_t *m, const zv_multipart_cb_t *cb, void *ud) {
  size_t len = m->hlen, colon, vs, ve;
  const char *h = m->hbuf;
  if (len == 0 || h[len - 1] != '\r') return ZV_MULTIPART_E_HEADER_SYNTAX;
  len--;
  if (len == 0) { /* the empty line: the part's data follows */
    m->state = S_DATA;
    m->match = 0;
    return cb->on_headers_done(ud) ? ZV_MULTIPART_E_ABORTED : 0;
  }
  for (colon = 0; colon < len && h[colon] != ':'; colon++) {
    unsigned char ch = (unsigned char)h[colon];
    /* A token (RFC 9110): no white space, controls or separators; no obsolete folding. */
    if (ch <= 32 || ch >= 127 || strchr("\"(),/;<=>?@[\\]{}", ch)) {
      return ZV_MULTIPART_E_HEADER_SYNTAX;
    }
  }
  if (colon == 0 || colon == len) return ZV_MULTIPART_E_HEADER_SYNTAX;
  vs = colon + 1;
  ve = len;
  while (vs < ve && (h[vs] == ' ' || h[vs] == '\t')) vs++;
  while (ve > vs && (h[ve - 1] == ' ' || h[ve - 1] == '\t')) ve--;
  for (size_t k = vs; k < ve; k++) {
    unsigned char ch = (unsigned char)h[k];
    if ((ch < 32 && ch != '\t') || ch == 127) return ZV_MULTIPART_E_HEADER_SYNTAX;
  }
  return cb->on_header(ud, h, colon, h + vs, ve - vs) ? ZV_MULTIPART_E_ABORTED : 0;
}

int zv_multipart_feed(zv_multipart_t *m, const char *p, size_t n, const zv_multipart_cb_t *cb,
                      void *ud) {
  size_t i = 0;
  if (m->err) return m->err;
  while (i < n) {
    int r;
    char ch;
    switch (m->state) {
    case S_PREAMBLE:
    case S_DATA:
      r = scan(m, p, n, &i, m->state == S_DATA, cb, ud);
      if (r < 0) return fail(m, ZV_MULTIPART_E_ABORTED);
      if (r == 1) {
        m->state = S_AFTER;
        m->after = 0;
      }
      break;
    case S_AFTER:
      ch = p[i++];
      if (ch == '-') m->state = S_AFTER_DASH;
      else if (ch == '\r') m->state = S_AFTER_CR;
      else if (ch == ' ' || ch == '\t') m->state = S_AFTER_PAD;
      else return fail(m, ZV_MULTIPART_E_DELIMITER);
      break;
    case S_AFTER_DASH:
      if (p[i++] != '-') return fail(m, ZV_MULTIPART_E_DELIMITER);
      if (m->parts && cb->on_part_end(ud)) return fail(m, ZV_MULTIPART_E_ABORTED);
      m->state = S_EPILOGUE;
      break;
    case S_AFTER_PAD:
      ch = p[i++];
      if (ch == '\r') m->state = S_AFTER_CR;
      else if ((ch != ' ' && ch != '\t') || ++m->after > PAD_MAX)
        return fail(m, ZV_MULTIPART_E_DELIMITER);
      break;
    case S_AFTER_CR:
      if (p[i++] != '\n') return fail(m, ZV_MULTIPART_E_DELIMITER);
      if (m->parts && cb->on_part_end(ud)) return fail(m, ZV_MULTIPART_E_ABORTED);
      if (m->max_parts && m->parts == m->max_parts) return fail(m, ZV_MULTIPART_E_TOO_MANY_PARTS);
      m->parts++;
      m->state = S_HEADERS;
      m->hlen = m->hsize = 0;
      break;
    case S_HEADERS: {
      const char *lf = memchr(p + i, '\n', n - i);
      size_t take = lf ? (size_t)(lf - (p + i)) : n - i;
      if (m->hsize + take + (lf ? 1 : 0) > ZV_MULTIPART_HEADER_MAX)
        return fail(m, ZV_MULTIPART_E_HEADER_TOO_LARGE);
      memcpy(m->hbuf + m->hlen, p + i, take);
      m->hlen += take;
      m->hsize += take;
      i += take;
      if (lf) {
        i++;
        m->hsize++;
        r = header_line(m, cb, ud);
        if (r) return fail(m, r);
        m->hlen = 0;
      }
      break;
    }
    default: /* S_EPILOGUE: ignored */
      i = n;
      break;
    }
  }
  return 0;
}

int zv_multipart_finish(zv_multipart_t *m) {
  if (m->err) return m->err;
  if (m->state != S_EPILOGUE) return fail(m, ZV_MULTIPART_E_TRUNCATED);
  return 0;
}

/* --- header values ----------------------------------------------------------------------- */

static int ows(int ch) {
  return ch == ' ' || ch == '\t';
}

static int tchar(int ch) {
  return ch > 32 && ch < 127 && !strchr("\"(),/;<=>?@[\\]{}", ch);
}

/*
 * The next parameter of a header value at v[*i]: "; name=value" with value a token or a
 * quoted-string. Sets the name and the raw value (quotes included); returns 1, 0 at the end,
 * -1 on a syntax error.
 */
static int next_param(const char *v, size_t len, size_t *i, const char **name, size_t *nlen,
                      const char **val, size_t *vlen) {
  size_t k = *i;
  while (k < len && ows(v[k])) k++;
  if (k == len) return 0;
  if (v[k] != ';') return -1;
  k++;
  while (k < len && ows(v[k])) k++;
  if (k == len) return 0; /* a trailing ";" */
  *name = v + k;
  while (k < len && tchar((unsigned char)v[k]) && v[k] != '=') k++;
  *nlen = (size_t)(v + k - *name);
  while (k < len && ows(v[k])) k++;
  if (*nlen == 0 || k == len || v[k] != '=') return -1;
  k++;
  while (k < len && ows(v[k])) k++;
  *val = v + k;
  if (k < len && v[k] == '"') {
    k++;
    while (k < len && v[k] != '"') {
      if (v[k] == '\\') k++;
      k++;
    }
    if (k >= len) return -1;
    k++;
  } else {
    while (k < len && tchar((unsigned char)v[k])) k++;
  }
  *vlen = (size_t)(v + k - *val);
  if (*vlen == 0) return -1;
  *i = k;
  return 1;
}

int zv_multipart_boundary(const char *v, size_t len, const char **b, size_t *n) {
  size_t i = 0;
  const char *name, *val;
  size_t nlen, vlen;
  int r;
  while (i < len && v[i] != ';') i++;
  while ((r = next_param(v, len, &i, &name, &nlen, &val, &vlen)) == 1) {
    if (nlen != 8 || strncasecmp(name, "boundary", 8)) continue;
    if (val[0] == '"') {
      if (memchr(val, '\\', vlen)) return ZV_MULTIPART_E_BOUNDARY;
      val++;
      vlen -= 2;
    }
    if (vlen == 0) return ZV_MULTIPART_E_BOUNDARY;
    *b = val;
    *n = vlen;
    return 0;
  }
  return ZV_MULTIPART_E_BOUNDARY;
}

/* Copies a parameter value into out (cap bytes with the NUL): a quoted-string loses its quotes
 * and escapes. Returns 0 or -1 when it does not fit or holds a NUL or control byte. */
static int copy_value(const char *val, size_t vlen, char *out, size_t cap) {
  size_t o = 0;
  size_t k = 0, end = vlen;
  if (val[0] == '"') {
    k = 1;
    end = vlen - 1;
  }
  for (; k < end; k++) {
    unsigned char ch = (unsigned char)val[k];
    if (ch == '\\' && val[0] == '"' && k + 1 < end) ch = (unsigned char)val[++k];
    if (ch < 32 || ch == 127) return -1;
    if (o + 1 >= cap) return -1;
    out[o++] = (char)ch;
  }
  out[o] = 0;
  return 0;
}

static int hexval(int ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  ch |= 0x20;
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  return -1;
}

/* RFC 5987 ext-value "UTF-8''%e2%82%ac.txt" into out; 0 or -1. */
static int copy_ext_value(const char *val, size_t vlen, char *out, size_t cap) {
  size_t o = 0, k;
  if (vlen < 7 || strncasecmp(val, "UTF-8'", 6)) return -1;
  k = 6;
  while (k < vlen && val[k] != '\'') k++; /* the language tag */
  if (k == vlen) return -1;
  for (k++; k < vlen; k++) {
    int ch = (unsigned char)val[k];
    if (ch == '%') {
      int h = k + 2 < vlen ? hexval((unsigned char)val[k + 1]) : -1;
      int l = k + 2 < vlen ? hexval((unsigned char)val[k + 2]) : -1;
      if (h < 0 || l < 0) return -1;
      ch = h * 16 + l;
      k += 2;
    }
    if (ch < 32 || ch == 127 || o + 1 >= cap) return -1;
    out[o++] = (char)ch;
  }
  out[o] = 0;
  return 0;
}

int zv_multipart_disposition(const char *v, size_t len, char *name, size_t nc, char *filename,
                             size_t fc, int *has_filename) {
  size_t i = 0;
  const char *pn, *pv;
  size_t pnl, pvl;
  int r, has_name = 0, has_ext = 0;
  *has_filename = 0;
  if (nc) name[0] = 0;
  if (fc) filename[0] = 0;
  while (i < len && ows(v[i])) i++;
  if (len - i < 9 || strncasecmp(v + i, "form-data", 9)) return -1;
  i += 9;
  while ((r = next_param(v, len, &i, &pn, &pnl, &pv, &pvl)) == 1) {
    if (pnl == 4 && !strncasecmp(pn, "name", 4)) {
      if (copy_value(pv, pvl, name, nc)) return -1;
      has_name = 1;
    } else if (pnl == 8 && !strncasecmp(pn, "filename", 8)) {
      *has_filename = 1;
      if (!has_ext && copy_value(pv, pvl, filename, fc)) return -1;
    } else if (pnl == 9 && !strncasecmp(pn, "filename*", 9)) {
      if (pv[0] == '"' || copy_ext_value(pv, pvl, filename, fc)) return -1;
      *has_filename = 1;
      has_ext = 1;
    }
  }
  if (r < 0 || !has_name) return -1;
  return 0;
}
