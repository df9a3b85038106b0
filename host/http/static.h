/*
 * static.h: the decisions of static file serving (app:static), free of sockets, libuv and Lua:
 * which mount a path falls under, whether the rest of the path is a safe relative file name,
 * the MIME type, the validators (ETag, Last-Modified) and what the conditional and Range headers
 * ask for. stream.c's static section opens and sends the file; l_static.c builds the mounts.
 *
 * It must not include lua.h or uv.h (it is fuzzed on its own) and allocates only in
 * zv_static_add. Every parser here reads only the bytes it is given and keeps no state.
 *
 *   zv_static_t --mounts--> [ prefix "/assets" | root "/srv/app/public" (fd) | index | headers ]
 *                           [ prefix ""        | root ...                                     ]
 *   a request path "/assets/css/a.css": the longest prefix that ends at a "/" (or the path's
 *   end) wins; the rest "/css/a.css" is decoded into "css/a.css", opened beneath the root.
 */
#ifndef ZV_HTTP_STATIC_H
#define ZV_HTTP_STATIC_H

#include <stddef.h>
#include <stdint.h>

#define ZV_STATIC_PATH_MAX 1024  /* a decoded relative path longer than this is not served */
#define ZV_STATIC_MAX_RANGES 16  /* a Range header with more ranges is ignored (200) */
#define ZV_STATIC_MAX_MOUNTS 64

typedef struct {
  char *prefix;            /* "/assets", or "" for a mount at "/" */
  uint32_t prefix_len;
  char *root;              /* the root folder as given, made absolute (for messages) */
  int root_fd;             /* O_PATH descriptor of the root: files are opened beneath it; for a
                            * payload mount, a read-only descriptor of the bundle file */
  char *payload;           /* NULL, or the bundle folder served ("app/public"): the files come
                            * from the bundle's payload, never from disk (stream_static.c) */
  uint32_t payload_len;
  int64_t payload_mtime;   /* the bundle file's mtime: every payload file's Last-Modified */
  char *index;             /* the index file of a folder ("index.html"), or NULL: no index */
  char cache_control[64];  /* "public, max-age=N[, immutable]", or "" for none */
  uint8_t precompressed;   /* look for name.br / name.gz siblings */
} zv_static_mount_t;

typedef struct zv_static_s {
  zv_static_mount_t mounts[ZV_STATIC_MAX_MOUNTS];
  uint32_t n;
} zv_static_t;

/* Adds a mount. prefix: "/" or "/a/b" without a trailing "/"; root: an existing folder; index:
 * NULL or a plain file name; max_age < 0 means no Cache-Control. Opens the root (O_PATH).
 * Returns 0, ZV_EINVAL (a bad prefix or index, or a root that is not a folder: *why says
 * which), ZV_ERANGE (too many mounts) or ZV_ENOMEM. The strings are copied. */
int zv_static_add(zv_static_t *s, const char *prefix, const char *root, const char *index,
                  int64_t max_age, int immutable, int precompressed, const char **why);

/* Adds a mount served from a bundle's payload: dir is the payload folder ("app/public", no
 * trailing "/"), fd a read-only descriptor of the bundle file that the mount takes over (it is
 * closed by zv_static_free, or here on failure), root the folder the payload stands for (for
 * messages). Same checks and results as zv_static_add; nothing is opened beneath dir. */
int zv_static_add_payload(zv_static_t *s, const char *prefix, const char *root, const char *dir,
                          int fd, const char *index, int64_t max_age, int immutable,
                          int precompressed, const char **why);

/* Closes the roots and frees the strings; s may be added to again. */
void zv_static_free(zv_static_t *s);

/* The mount the path falls under (the longest prefix ending at "/" or at the path's end), or
 * NULL; *rest is the offset in path where the part after the prefix starts. */
const zv_static_mount_t *zv_static_find(const zv_static_t *s, const char *path, size_t len,
                                        size_t *rest);

/*
 * Decodes rest (the path after the prefix: "", "/" or "/a/b.css", percent-encoded) into out as
 * a relative name "a/b.css" (NUL-terminated). Sets *dir when the path ends with "/" or is
 * empty (a folder is asked for). Returns 0, or ZV_EINVAL when the path is one never served:
 * a "." or ".." segment, a segment starting with "." (dotfiles: .git, .env), an empty segment
 * ("a//b"), a NUL, backslash or control byte (encoded or not), a bad %-escape, or a name
 * longer than cap - 1.
 */
int zv_static_clean(const char *rest, size_t len, char *out, size_t cap, size_t *outlen,
                    int *dir);

/* Opens name (a cleaned relative name; "" is the root itself) read-only beneath the mount's
 * root with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): the kernel refuses "..",
 * absolute symlinks and symlinks that lead out of the root. Returns a descriptor or -1. */
int zv_static_open(const zv_static_mount_t *m, const char *name);

/* The Content-Type for a file name, by its extension (case-insensitive):
 * "text/html; charset=utf-8", ...; "application/octet-stream" when unknown. */
const char *zv_static_mime(const char *name, size_t len);

/* True when a type is already compressed (images, fonts, archives, audio, video). */
int zv_static_compressed_type(const char *type);

/* Writes the ETag of a file, nginx's format: "\"<mtime hex>-<size hex>\"" (NUL-terminated);
 * returns its length. */
size_t zv_static_etag(int64_t mtime, uint64_t size, char out[48]);

/* Parses an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") into seconds since the epoch;
 * 0 or ZV_EINVAL (other date formats are not honoured: the condition is then ignored). */
int zv_static_parse_date(const char *v, size_t len, int64_t *out);

/* True when an If-None-Match value ("*" or a list of entity tags) matches etag by the weak
 * comparison (W/ prefixes ignored). */
int zv_static_etag_match(const char *v, size_t len, const char *etag, size_t etag_len);

/*
 * The q-value the Accept-Encoding value v gives coding ("gzip", "br"), in thousandths:
 * an exact entry wins over "*"; 0 when it is refused or not listed (identity is not asked for
 * here). A malformed element is skipped.
 */
int zv_static_accept_q(const char *v, size_t len, const char *coding);

enum {
  ZV_STATIC_RANGE_NONE = 0, /* no usable Range: send the whole file (200) */
  ZV_STATIC_RANGE_ONE,      /* one range: 206 with *off, *cnt */
  ZV_STATIC_RANGE_UNSAT     /* nothing satisfiable: 416 with Content-Range: bytes * / size */
};

/*
 * Decides a Range header for a file of size bytes. "bytes=" then ranges "a-b", "a-", "-n",
 * comma-separated with optional whitespace. Ranges are sorted and merged when they overlap or
 * touch; one range left is ONE, several are NONE (the whole file, as RFC 9110 lets a server
 * do: no multipart/byteranges, and no amplification by many small ranges). A syntax error, an
 * other unit, a range with first > last or more than ZV_STATIC_MAX_RANGES ranges: NONE.
 * No range that starts before size (or a suffix of 0): UNSAT.
 */
int zv_static_range(const char *v, size_t len, uint64_t size, uint64_t *off, uint64_t *cnt);

#endif
