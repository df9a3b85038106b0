/*
 * multipart.h: a streaming multipart/form-data parser (RFC 7578 over RFC 2046 framing): fed the
 * body in chunks of any size, it calls back for each part's header fields, its data and its
 * end. The caller decides what to keep (zever.multipart keeps fields in memory and spools large
 * files to temporary files).
 *
 * It must not include lua.h or uv.h, and allocates nothing: its state is one struct the caller
 * owns (the header line buffer is inside it). Data is handed out as pointers into the chunk
 * given, never copied; only the bytes of a delimiter that a chunk split are replayed from the
 * delimiter itself (they are known).
 *
 *   body:  preamble CRLF? "--" boundary CRLF  headers CRLF CRLF  data
 *          CRLF "--" boundary CRLF            headers CRLF CRLF  data
 *          CRLF "--" boundary "--"  epilogue
 *
 *   states: PREAMBLE --delimiter--> AFTER --CRLF--> HEADERS --empty line--> DATA --delimiter--> AFTER
 *           AFTER --"--"--> EPILOGUE (done)
 */
#ifndef ZV_HTTP_MULTIPART_H
#define ZV_HTTP_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#define ZV_MULTIPART_BOUNDARY_MAX 70   /* RFC 2046 §5.1.1 */
#define ZV_MULTIPART_HEADER_MAX 8192   /* one part's header section; more: HEADER_TOO_LARGE */

/* The parser's failures, in one X-macro table: name, message. */
#define ZV_MULTIPART_ERR_MAP(X)                                                            \
  X(BOUNDARY, "the boundary parameter is missing or invalid")                             \
  X(HEADER_TOO_LARGE, "a part's header section is too large")                             \
  X(HEADER_SYNTAX, "a part's header line is malformed")                                   \
  X(TOO_MANY_PARTS, "too many parts")                                                     \
  X(DELIMITER, "a boundary delimiter is followed by something other than CRLF or \"--\"") \
  X(TRUNCATED, "the body ends before the final boundary")                                 \
  X(ABORTED, "the receiver stopped the parse")

enum zv_multipart_err {
  ZV_MULTIPART_OK = 0,
#define ZV__X(name, msg) ZV_MULTIPART_E_##name,
  ZV_MULTIPART_ERR_MAP(ZV__X)
#undef ZV__X
  ZV_MULTIPART_E_MAX
};

/* The message of an error code ("too many parts"). */
const char *zv_multipart_strerror(int err);

/* The callbacks; each returns 0 to go on, anything else to stop the parse (ABORTED). ud is the
 * caller's. Header names and values are trimmed of surrounding white space. */
typedef struct {
  int (*on_header)(void *ud, const char *name, size_t nlen, const char *value, size_t vlen);
  int (*on_headers_done)(void *ud);
  int (*on_data)(void *ud, const char *p, size_t n);
  int (*on_part_end)(void *ud);
} zv_multipart_cb_t;

typedef struct {
  int state;
  int err;                  /* sticky: once set, feed does nothing and returns it */
  uint32_t parts, max_parts;
  size_t match;             /* bytes of the delimiter matched so far */
  size_t dlen;              /* "\r\n--" + boundary */
  size_t hlen;              /* bytes in hbuf (the current header line) */
  size_t hsize;             /* bytes of the current part's header section so far */
  int after;                /* bytes seen after a delimiter (the "--" or CRLF check) */
  char delim[4 + ZV_MULTIPART_BOUNDARY_MAX];
  char hbuf[ZV_MULTIPART_HEADER_MAX];
} zv_multipart_t;

/*
 * Prepares m for a body whose boundary is b[0, n) (the Content-Type parameter, quotes removed).
 * max_parts: more parts fail with TOO_MANY_PARTS (0: no limit). Returns 0 or
 * ZV_MULTIPART_E_BOUNDARY (empty, longer than 70, a character RFC 2046 does not allow, or a
 * trailing space).
 */
int zv_multipart_init(zv_multipart_t *m, const char *b, size_t n, uint32_t max_parts);

/*
 * Parses the next n bytes of the body, calling cb. Returns 0 or an error code (which sticks).
 * Bytes after the final delimiter (the epilogue) are ignored.
 */
int zv_multipart_feed(zv_multipart_t *m, const char *p, size_t n, const zv_multipart_cb_t *cb,
                      void *ud);

/* The body ended: 0 when the final delimiter was seen, else TRUNCATED (or the sticky error). */
int zv_multipart_finish(zv_multipart_t *m);

/*
 * Finds the boundary parameter of a Content-Type value ("multipart/form-data; boundary=xyz",
 * quoted or not); sets *b, *n (inside v; a quoted value is returned without its quotes and must
 * hold no escapes). Returns 0 or ZV_MULTIPART_E_BOUNDARY.
 */
int zv_multipart_boundary(const char *v, size_t len, const char **b, size_t *n);

/*
 * Reads the name and filename parameters of a Content-Disposition value ("form-data;
 * name=\"a\"; filename=\"b.txt\""). Quoted values may hold backslash escapes, which are
 * removed; filename* (RFC 5987, UTF-8'') wins over filename. Writes NUL-terminated values into
 * name (cap nc) and filename (cap fc); *has_filename says whether a filename parameter was
 * there (an empty filename is a file input left empty). Returns 0, or -1 when the value is not
 * form-data, has no name, or a value does not fit.
 */
int zv_multipart_disposition(const char *v, size_t len, char *name, size_t nc, char *filename,
                             size_t fc, int *has_filename);

#endif
