/*
 * mime.h: the MIME builder of the mailer: RFC 5322 messages with RFC 2047 encoded words,
 * quoted-printable and base64 bodies, multipart/alternative and multipart/mixed, plus the
 * address parser and the JSON line of the log mailer.
 *
 * It must stay free of Lua and libuv: the binding (l_mime_core.c), the benchmark and the fuzz
 * target all call it directly. It reads no clock and no random source: the caller passes the
 * time (for Date) and a nonce (for a generated Message-ID), so the same input gives the same
 * bytes.
 *
 * Output goes to a zv_mime_buf_t, a sticky-error byte buffer (SQLite's StrAccum): after the
 * first failure every append does nothing, and the caller checks b->err once. zv_mime_build
 * computes an upper bound of the message size first and grows the buffer once; the writers
 * then append into reserved space.
 *
 *   message   = headers CRLF body
 *   body      = single part                                (text, html or empty text)
 *             | multipart/alternative (text, html)
 *             | multipart/mixed (body part, attachment...)  (base64 attachments)
 *
 * Boundaries are "=_zv" + 16 hex digits of a hash of the Message-ID + "_a" (alternative) or
 * "_m" (mixed). They cannot occur in content: every body is quoted-printable or base64, and
 * neither can produce "=_" (QP writes "=" only before two hex digits or a line break; base64's
 * alphabet has no "_" and "=" only as final padding); part headers are ours and every line of
 * them starts with a field name or a folding space.
 */
#ifndef ZV_MIME_H
#define ZV_MIME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mime_ffi.h"

#include "../core/zv.h"

#define ZV_MIME_MAX_BYTES (10u * 1024u * 1024u) /* default size cap of a rendered message */
#define ZV_MIME_LINE 76                          /* columns of folded headers and bodies */
#define ZV_MIME_MAX_FILENAME 255                 /* bytes of an attachment's filename */

/* A sticky-error buffer. Zero it (or zv_mime_buf_init) before use; free with zv_mime_buf_free. */
typedef struct {
  char *p;
  size_t len;
  size_t cap;
  int err; /* 0 or the first ZV_E* that happened */
} zv_mime_buf_t;

void zv_mime_buf_init(zv_mime_buf_t *b);
void zv_mime_buf_free(zv_mime_buf_t *b);
/* Makes room for n more bytes (one zv_realloc when cap is short). Sets b->err on failure. */
void zv_mime_buf_reserve(zv_mime_buf_t *b, size_t n);
void zv__mime_buf_put_slow(zv_mime_buf_t *b, const void *s, size_t n);

/* Appends n bytes (a no-op after an error). Inline: the renderers append many short pieces into
 * a buffer reserved up front, so the common case is a bounds check and a memcpy. */
static inline void zv_mime_buf_put(zv_mime_buf_t *b, const void *s, size_t n) {
  if (!b->err && b->cap - b->len >= n && n) {
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return;
  }
  zv__mime_buf_put_slow(b, s, n);
}

typedef struct {
  zv_mime_str_t name;  /* display name, UTF-8, may be absent */
  zv_mime_str_t email; /* addr-spec */
} zv_mime_addr_t;

typedef struct {
  zv_mime_str_t filename;     /* may be absent */
  zv_mime_str_t content_type; /* absent: application/octet-stream */
  zv_mime_str_t data;
} zv_mime_attachment_t;

typedef struct {
  zv_mime_str_t name;
  zv_mime_str_t value;
} zv_mime_header_t;

enum { ZV_MIME_FROM, ZV_MIME_TO, ZV_MIME_CC, ZV_MIME_BCC, ZV_MIME_REPLY_TO, ZV_MIME_NLISTS };

typedef struct {
  const zv_mime_addr_t *addrs[ZV_MIME_NLISTS]; /* by ZV_MIME_FROM.. */
  size_t naddrs[ZV_MIME_NLISTS];
  zv_mime_str_t subject, text, html;
  zv_mime_str_t date;       /* absent: rendered from now */
  zv_mime_str_t message_id; /* absent: generated from nonce, now and the From domain */
  const zv_mime_header_t *headers;
  size_t nheaders;
  const zv_mime_attachment_t *attachments;
  size_t nattachments;
  size_t max_bytes; /* 0: ZV_MIME_MAX_BYTES */
  int64_t now;      /* Unix seconds */
  uint64_t nonce;
  /* Bit i of checked[l]: addrs[l][i] came out of zv_mime_addr_parse (its email passed
   * zv_mime_addr_check, its name has no control, CR/LF or bad UTF-8), so validation does not
   * scan it again. 0 (memset) checks everything. */
  uint32_t checked[ZV_MIME_NLISTS];
} zv_mime_msg_t;

/* Why a message or an address was refused: code, the field, and the index within it. */
#define ZV_MIME_CAUSE_MAP(X)                                                    \
  X(ADDRESS, "is not a valid email address")                                    \
  X(NEWLINE, "contains CR or LF (header injection)")                            \
  X(CONTROL, "contains a control character")                                    \
  X(UTF8, "is not valid UTF-8")                                                 \
  X(NO_FROM, "is missing: a message needs exactly one From address")            \
  X(MANY_FROM, "has more than one address")                                     \
  X(NO_RECIPIENT, "is empty: a message needs at least one recipient")           \
  X(HEADER_NAME, "is not a valid header name")                                  \
  X(RESERVED, "is set by the builder: use the message's own field")             \
  X(CONTENT_TYPE, "is not a valid content type (type/subtype)")                 \
  X(TOO_LONG, "is too long")                                                    \
  X(TOO_LARGE, "exceeds the size cap")

enum {
  ZV_MIME_CNONE = 0,
#define ZV__X(name, msg) ZV_MIME_C##name,
  ZV_MIME_CAUSE_MAP(ZV__X)
#undef ZV__X
  ZV_MIME_CMAX
};

#define ZV_MIME_FIELD_MAP(X)                                                    \
  X(FFROM, "from") X(FTO, "to") X(FCC, "cc") X(FBCC, "bcc") X(FREPLY_TO, "reply_to") \
  X(FSUBJECT, "subject") X(FTEXT, "text") X(FHTML, "html") X(FDATE, "date")     \
  X(FMESSAGE_ID, "message_id") X(FHEADER, "headers") X(FATTACHMENT, "attachments") \
  X(FMESSAGE, "message")

enum {
#define ZV__X(name, str) ZV_MIME_##name,
  ZV_MIME_FIELD_MAP(ZV__X)
#undef ZV__X
  ZV_MIME_FMAX
};

typedef struct {
  int code;     /* ZV_MIME_C* */
  int field;    /* ZV_MIME_F* (address lists: ZV_MIME_FFROM + list) */
  size_t index; /* position in a list (address, header, attachment), else 0 */
  const char *part; /* for attachments and headers: "filename", "name", ... or NULL */
} zv_mime_cause_t;

/* Where things landed in the output, for the log line and the caller. */
typedef struct {
  size_t start;       /* offset of the message in the buffer */
  size_t header_len;  /* bytes of the top-level headers, up to and excluding the blank line */
  size_t msgid_at;    /* offset and length of the Message-ID value, brackets included */
  size_t msgid_len;
  size_t size;        /* bytes of the whole message (rendered or, for build_headers, measured) */
} zv_mime_info_t;

/*
 * Checks an addr-spec: a dot-atom local part of at most 64 bytes, "@", and a domain of
 * letter-digit-hyphen labels (1-63 bytes, no hyphen at either end, at most 253 bytes in all),
 * 254 bytes at most. Quoted local parts, address literals and non-ASCII are refused (they need
 * SMTPUTF8 or are not worth the risk). Returns 0 or ZV_EINVAL; never allocates.
 */
int zv_mime_addr_check(const char *s, size_t len);

/*
 * Parses "a@b.c", "Name <a@b.c>" or "\"Name, Jr.\" <a@b.c>" into out (spans into s; the name
 * span excludes the quotes; a quoted name with a backslash is refused). Returns 0, or ZV_EINVAL
 * with *code set to ZV_MIME_CNEWLINE, ZV_MIME_CCONTROL, ZV_MIME_CUTF8 or ZV_MIME_CADDRESS.
 */
int zv_mime_addr_parse(const char *s, size_t len, zv_mime_addr_t *out, int *code);

/*
 * Validates m and appends the rendered message to out. On success returns 0 and fills info
 * (may be NULL). On a refused message returns ZV_EINVAL (or ZV_ETOOLONG for the size cap) with
 * *cause filled and out->len unchanged; ZV_ENOMEM when the buffer cannot grow. Allocates at most
 * once (the buffer's growth to the estimate); with a buffer that is already large enough it
 * allocates nothing. Bcc addresses are validated but never rendered.
 */
int zv_mime_build(const zv_mime_msg_t *m, zv_mime_buf_t *out, zv_mime_info_t *info,
                  zv_mime_cause_t *cause);

/*
 * Validates m exactly as zv_mime_build does (the size cap included) and appends only the
 * top-level header block (info->header_len bytes). Bodies and attachments are measured, not
 * encoded: info->size is the exact size zv_mime_build would render (a spec holds them equal).
 * The log mailer's path. Allocates as zv_mime_build does, from a bound without the contents.
 */
int zv_mime_build_headers(const zv_mime_msg_t *m, zv_mime_buf_t *out, zv_mime_info_t *info,
                          zv_mime_cause_t *cause);

/* Writes "<field>[<index>]: <message>" for a cause into buf (NUL-terminated, truncated to
 * size); returns the length it wanted. */
size_t zv_mime_cause_text(const zv_mime_cause_t *c, char *buf, size_t size);

/* The name of a field ("reply_to"). */
const char *zv_mime_field_name(int field);

/*
 * Appends src base64-encoded in lines of 76 columns separated by CRLF, with no CRLF after the
 * last line. Writes straight into the buffer (one reserve).
 */
void zv_mime_base64(zv_mime_buf_t *b, const void *src, size_t n);

/*
 * Appends src quoted-printable encoded (RFC 2045): LF and CRLF become hard line breaks (CRLF),
 * lines are at most 76 columns, and the output ends with CRLF only when src ends with a line
 * break.
 */
void zv_mime_qp(zv_mime_buf_t *b, const void *src, size_t n);

/* 1 when s[0..n) is valid UTF-8 (no overlongs, no surrogates, at most U+10FFFF). */
int zv_mime_utf8_valid(const char *s, size_t n);

/*
 * Appends the log mailer's JSON line for a message whose headers zv_mime_build_headers (or
 * zv_mime_build) just rendered into msg (info describes it): time (from m->now), message_id, from, to, cc, bcc (emails), subject,
 * the rendered headers, size, text_bytes, html_bytes and attachments (filename, content_type,
 * bytes), then "\n". Reserves once from an upper bound, so a reused buffer stops allocating
 * once it has seen the largest line.
 */
void zv_mime_log_line(zv_mime_buf_t *line, const zv_mime_msg_t *m, const zv_mime_buf_t *msg,
                      const zv_mime_info_t *info);

/* Cross-file internals of the module (not for callers). */
void zv__mime_base64_text(zv_mime_buf_t *b, const char *src, size_t n);
size_t zv__mime_base64_text_size(const char *src, size_t n);
size_t zv__mime_base64_size(size_t n);
/* The size of zv_mime_qp's output, whether it ends with LF, and (escapes, may be NULL) the
 * count zv__mime_qp_escapes would return: one pass for the log mailer's measuring. */
size_t zv__mime_qp_size(const char *s, size_t n, int *ends_lf, size_t *escapes);
size_t zv__mime_qp_escapes(const char *s, size_t n);
void zv__mime_civil(int64_t t, int *y, int *mo, int *d, int *hh, int *mm, int *ss, int *wday);
void zv__mime_json_str(zv_mime_buf_t *b, const char *s, size_t n);

/* Internals shared by mime.c and check.c. zv__mime_validate returns 0 or ZV_EINVAL with *c set;
 * zv__mime_refuse fills *c and returns ZV_EINVAL (ZV_ETOOLONG for a message over the cap). */
int zv__mime_validate(const zv_mime_msg_t *m, zv_mime_cause_t *c, size_t max);
int zv__mime_refuse(zv_mime_cause_t *c, int code, int field, size_t index, const char *part);

#endif
