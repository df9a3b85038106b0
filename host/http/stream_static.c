/*
 * stream_static.c: static files (app:static, opts.statics): a GET or HEAD under a mount is
 * answered here before on_request when the file exists (anything else goes on to the
 * application). static.c decides (path, conditional and range headers, MIME type); this file
 * sends. The head goes out with MSG_MORE, the body with sendfile(2) straight from the page
 * cache; when the socket is full the connection adds EPOLLOUT to its epfd entry and goes on
 * when it drains, under the same write deadline as queued writes (bytes sent by sendfile count
 * as progress). Through a transport (TLS) the file is read and written in chunks.
 *
 * In a bundle a mount can serve the bundle's payload instead of a folder (m->payload, set by
 * zever.app when the bundle carries the root's files): the same decisions, the validators from
 * the content hash and the bundle file's mtime, small bodies written from the read-only
 * mapping and large ones sendfile(2)d from the bundle file.
 *
 * It must not call into Lua and must not read a file whole into memory (a small one excepted).
 */
#include "stream_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/zv.h"
#include "../sys/bundle.h"
#include "static.h"

#define FILE_CHUNK (2u << 20)   /* bytes per sendfile(2) call (nginx: sendfile_max_chunk 2m) */
#define FILE_SMALL (16u << 10)  /* a body up to this size is read and sent with the head */

/* Sets whether c's epfd entry asks for EPOLLOUT (a static body waits for room). */
static int want_out(zv_http_sconn_t *c, int on) {
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET | (on ? EPOLLOUT : 0);
  ev.data.ptr = c;
  return epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Through a transport (TLS) there is no sendfile: the file is read in chunks and written while
 * the kernel takes them all; once a write is queued, write_cb comes back here when it is out. */
static void file_continue_xp(zv_http_sconn_t *c) {
  char buf[32u << 10];
  while (c->file_off < c->file_end && c->writes == 0) {
    uint64_t left = c->file_end - c->file_off;
    ssize_t got = pread(c->file_fd, buf, left < sizeof buf ? (size_t)left : sizeof buf,
                        (off_t)c->file_off);
    uv_buf_t b;
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) { /* an error, or the file shrank: the announced length cannot be kept */
      zv__http_conn_close_now(c);
      return;
    }
    c->file_off += (uint64_t)got;
    b = uv_buf_init(buf, (unsigned)got);
    if (zv__http_conn_write(c, &b, 1)) return; /* closed (and the file with it) */
  }
  if (c->file_off < c->file_end) return;
  close(c->file_fd);
  c->file_fd = -1;
  zv__http_response_done(c);
}

/* Sends what is left of the static file with sendfile(2) until it is all out (the response is
 * then done), the socket is full (wait for EPOLLOUT), or something fails (close: the head
 * announced a length that can no longer be kept). */
void zv__http_file_continue(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  if (c->xp) {
    file_continue_xp(c);
    return;
  }
  while (c->file_off < c->file_end) {
    off_t off = (off_t)c->file_off;
    uint64_t left = c->file_end - c->file_off;
    ssize_t n = sendfile(c->fd, c->file_fd, &off, left > FILE_CHUNK ? FILE_CHUNK : left);
    if (n > 0) {
      c->file_off += (uint64_t)n;
      c->queued += (uint64_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      uint64_t now = uv_now(s->loop);
      if (!c->file_wait) {
        if (want_out(c, 1)) break;
        c->file_wait = 1;
        c->wmark = c->queued;
        c->koutq = zv__http_kernel_outq(c);
      }
      /* Each wait starts the write deadline again: the bytes just sent were progress. */
      c->wdeadline = now + s->opts.write_timeout_ms;
      zv__http_rearm(c, now);
      return;
    }
    /* An error, or the file shrank under us (0 bytes before its end). */
    break;
  }
  if (c->file_off < c->file_end) {
    zv__http_conn_close_now(c);
    return;
  }
  close(c->file_fd);
  c->file_fd = -1;
  if (c->file_wait) {
    c->file_wait = 0;
    if (want_out(c, 0)) {
      zv__http_conn_close_now(c);
      return;
    }
  }
  zv__http_response_done(c);
}

/* The value of header name in c's request, or NULL (*len 0). */
static const char *req_header(zv_http_sconn_t *c, const char *name, size_t nlen, size_t *len) {
  uint32_t from = 0;
  int i = zv_http_conn_header(&c->core, name, nlen, &from);
  if (i < 0) {
    *len = 0;
    return NULL;
  }
  *len = c->core.headers[i].value_len;
  return c->core.buf + c->core.headers[i].value_off;
}

/* What is sent for a request: a file on disk (fd) or in the bundle's payload (data). */
typedef struct {
  int fd;                     /* the open file on disk, or -1 for a payload file */
  const unsigned char *data;  /* a payload file's bytes in the bundle's mapping */
  uint64_t base;              /* a payload file's offset in the bundle file (for sendfile) */
  uint64_t size;
  int64_t mtime;
  const char *coding;         /* "br", "gzip" or NULL */
} rep_t;

/* The order in which the precompressed siblings are tried (ext[i], cod[i]), best first;
 * returns how many the client accepts (0, 1 or 2). Brotli wins a tie. */
static const char *const SIB_EXT[2] = {".br", ".gz"}, *const SIB_COD[2] = {"br", "gzip"};
static int sibling_order(zv_http_sconn_t *c, int order[2]) {
  size_t alen;
  const char *ae = req_header(c, "accept-encoding", 15, &alen);
  int q[2], n = 0;
  if (!ae) return 0;
  q[0] = zv_static_accept_q(ae, alen, "br");
  q[1] = zv_static_accept_q(ae, alen, "gzip");
  if (q[1] > q[0]) {
    if (q[1] > 0) order[n++] = 1;
    if (q[0] > 0) order[n++] = 0;
  } else {
    if (q[0] > 0) order[n++] = 0;
    if (q[1] > 0) order[n++] = 1;
  }
  return n;
}

/* Opens the precompressed sibling of name (".br" or ".gz") when the client accepts its coding;
 * returns its descriptor (and fills *st and *coding) or -1. */
static int open_sibling(zv_http_sconn_t *c, const zv_static_mount_t *m, char *name, size_t nlen,
                        struct stat *st, const char **coding) {
  int order[2], n = sibling_order(c, order);
  for (int k = 0; k < n; k++) {
    int i = order[k], fd;
    memcpy(name + nlen, SIB_EXT[i], 4);
    fd = zv_static_open(m, name);
    name[nlen] = 0;
    if (fd < 0) continue;
    if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
      close(fd);
      continue;
    }
    *coding = SIB_COD[i];
    return fd;
  }
  return -1;
}

/* --- the bundle's payload ------------------------------------------------------------------
 * A payload mount (m->payload "app/public") serves the bundle's entries named
 * "app/public/<cleaned name>": a binary search of the index the host read at start
 * (zv_bundle_find, no allocation), the bytes straight from the read-only mapping. Every
 * entry's hash was checked before the command ran (the bundle's full check), so none is
 * hashed again per request. The disk is never consulted. */

/* The payload entry for name (nlen bytes, "" for the mount's folder itself) plus suffix. */
static const zv_bundle_entry_t *payload_find(const zv_bundle_t *b, const zv_static_mount_t *m,
                                             const char *name, size_t nlen, const char *suffix) {
  char full[256 + ZV_STATIC_PATH_MAX + 80];
  size_t sl = strlen(suffix), n = m->payload_len;
  if (n + 1 + nlen + sl > sizeof full) return NULL;
  memcpy(full, m->payload, n);
  full[n++] = '/';
  memcpy(full + n, name, nlen);
  n += nlen;
  memcpy(full + n, suffix, sl);
  return zv_bundle_find(b, full, n + sl);
}

static void payload_rep(const zv_bundle_t *b, const zv_static_mount_t *m,
                        const zv_bundle_entry_t *e, const char *coding, rep_t *r) {
  r->fd = -1;
  r->data = zv_bundle_data(b, e);
  r->base = b->host_len + e->off;
  r->size = e->size;
  r->mtime = m->payload_mtime;
  r->coding = coding;
}

/* The ETag of a payload file: its content hash and size ("\"<hash hex>-<size hex>\""): the
 * same in every copy of the bundle and in every later bundle of the same bytes. */
static void payload_etag(const zv_bundle_entry_t *e, char out[48]) {
  snprintf(out, 48, "\"%016llx-%llx\"", (unsigned long long)e->hash,
           (unsigned long long)e->size);
}

/* 301 to the request's path with a "/" added (the query kept). */
static int redirect_slash(zv_http_sconn_t *c) {
  const zv_http_conn_t *core = &c->core;
  char loc[ZV_STATIC_PATH_MAX * 3 + 8];
  size_t n = core->url_len;
  zv_http_str_t hdrs[4] = {{"Location", 8}, {loc, 0}, {"Content-Type", 12},
                           {"text/plain; charset=utf-8", 25}};
  if (core->url_len + 2 > sizeof loc) return 0;
  memcpy(loc, core->buf + core->url_off, core->path_len);
  loc[core->path_len] = '/';
  memcpy(loc + core->path_len + 1, core->buf + core->url_off + core->path_len,
         n - core->path_len);
  hdrs[1].n = n + 1;
  zv_http_respond(c, 301, hdrs, 2, "", 0);
  return 1;
}

/* Sends r's status, head and body (or no body: HEAD, 304, 416, empty) for [off, off + cnt).
 * Takes over r->fd. Returns 1 (answered, or the connection closed trying). */
static int respond(zv_http_sconn_t *c, const zv_static_mount_t *m, rep_t *r, int status,
                   const zv_http_str_t *hdrs, size_t nh, uint64_t off, uint64_t cnt) {
  uv_buf_t b;
  int fd = r->fd;
  if (zv__http_build_head(c, status, hdrs, nh, status == 304 ? -1 : (int64_t)cnt, 0)) {
    if (fd >= 0) close(fd);
    zv__http_conn_close_now(c);
    return 1;
  }
  b = uv_buf_init(c->head.p, (unsigned)c->head.len);
  if (status == 304 || status == 416 || c->is_head || cnt == 0) {
    if (fd >= 0) close(fd);
    if (zv__http_conn_write(c, &b, 1) == 0) zv__http_response_done(c);
    return 1;
  }
  if (cnt <= FILE_SMALL) {
    /* Head and body in one send(2): from the mapping for a payload file (no copy unless the
     * socket is full), through one pread for a disk file; for a small file that costs less
     * than a MSG_MORE send followed by sendfile (bench/http/static.sh). */
    char small[FILE_SMALL];
    uv_buf_t bufs[2];
    if (fd >= 0) {
      ssize_t got;
      do {
        got = pread(fd, small, (size_t)cnt, (off_t)off);
      } while (got < 0 && errno == EINTR);
      close(fd);
      if (got != (ssize_t)cnt) { /* the file changed under us: the head is not sent yet */
        zv__http_conn_close_now(c);
        return 1;
      }
      bufs[1] = uv_buf_init(small, (unsigned)cnt);
    } else {
      bufs[1] = uv_buf_init((char *)(uintptr_t)(r->data + off), (unsigned)cnt);
    }
    bufs[0] = b;
    if (zv__http_conn_write(c, bufs, 2) == 0) zv__http_response_done(c);
    return 1;
  }
  if (fd < 0) {
    /* A large payload file goes out with sendfile(2) from the bundle file's page cache, on a
     * descriptor of its own (the send path closes it when done). */
    fd = fcntl(m->root_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
      zv__http_conn_close_now(c);
      return 1;
    }
    off += r->base;
  }
  c->file_fd = fd;
  c->file_off = off;
  c->file_end = off + cnt;
  c->resp = ZV_HTTP_RESP_STREAM;
  if (zv__http_conn_write(c, &b, 1)) return 1; /* closed: conn_close_now closed the file */
  if (c->writes == 0) zv__http_file_continue(c);
  return 1;
}

/* Finds what a payload mount serves for name (the index file added for a folder already):
 * 1 with *r filled, 0 to let the application answer, 2 when a 301 to the path with a "/" was
 * sent (a folder with an index file asked for without it). */
static int find_payload(zv_http_sconn_t *c, const zv_static_mount_t *m, char *name, size_t nlen,
                        int dir, rep_t *r, char etag[48]) {
  const zv_bundle_t *b = zv_bundle_self();
  const zv_bundle_entry_t *e = b ? payload_find(b, m, name, nlen, "") : NULL, *z;
  const char *type;
  if (!b) return 0;
  if (!e) {
    size_t il;
    /* No such file: maybe a folder with an index file, asked for without its "/". */
    if (dir || !m->index) return 0;
    il = strlen(m->index);
    if (nlen + 1 + il + 1 > ZV_STATIC_PATH_MAX + 8) return 0;
    if (nlen) name[nlen++] = '/';
    memcpy(name + nlen, m->index, il + 1);
    if (!payload_find(b, m, name, nlen + il, "")) return 0;
    return redirect_slash(c) ? 2 : 0;
  }
  z = e;
  r->coding = NULL;
  type = zv_static_mime(name, nlen);
  if (m->precompressed && !zv_static_compressed_type(type)) {
    int order[2], n = sibling_order(c, order);
    for (int k = 0; k < n; k++) {
      const zv_bundle_entry_t *s = payload_find(b, m, name, nlen, SIB_EXT[order[k]]);
      if (s) {
        z = s;
        r->coding = SIB_COD[order[k]];
        break;
      }
    }
  }
  payload_rep(b, m, z, r->coding, r);
  payload_etag(z, etag);
  return 1;
}

/*
 * Answers c's request from a static mount when it is a GET or HEAD of a regular file under
 * one; returns 1 when answered (or the connection closed trying), 0 to let the application
 * answer (no mount, a name never served, no such file, a folder without an index file).
 */
int zv__http_serve_static(zv_http_sconn_t *c) {
  zv_http_conn_t *core = &c->core;
  const zv_static_mount_t *m;
  const char *path = core->buf + core->url_off, *type, *v;
  char name[ZV_STATIC_PATH_MAX + 8], etag[48], lastmod[32], crange[80];
  zv_http_str_t hdrs[20];
  size_t rest, nlen, vlen, nh = 0;
  struct stat st;
  int dir, fd, status = 200, not_modified = 0;
  uint64_t off = 0, cnt;
  int method = core->parser.method;
  rep_t r;
  if (method != ZV_HTTP_M_GET && method != ZV_HTTP_M_HEAD) return 0;
  m = zv_static_find(c->srv->opts.statics, path, core->path_len, &rest);
  if (!m) return 0;
  /* name has room for the index file or a ".br" suffix beyond ZV_STATIC_PATH_MAX - 64. */
  if (zv_static_clean(path + rest, core->path_len - rest, name, ZV_STATIC_PATH_MAX - 64, &nlen,
                      &dir))
    return 0;
  if (dir) {
    size_t il;
    if (!m->index) return 0;
    if (rest == core->path_len) { /* the bare prefix "/assets": its folder, with a "/" */
      nlen = 0;
      name[0] = 0;
      dir = 0;
      goto open_file;
    }
    il = strlen(m->index);
    if (nlen + 1 + il + 4 > sizeof name) return 0;
    if (nlen) name[nlen++] = '/';
    memcpy(name + nlen, m->index, il + 1);
    nlen += il;
  }
open_file:
  if (m->payload) {
    int found = find_payload(c, m, name, nlen, dir, &r, etag);
    if (found != 1) return found ? 1 : 0;
    type = zv_static_mime(name, nlen);
    goto decide;
  }
  fd = zv_static_open(m, name);
  if (fd < 0) return 0;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    int folder = !dir && S_ISDIR(st.st_mode) && m->index;
    close(fd);
    /* A folder asked for without its "/" (or the bare prefix): 301 to the path with it, so
     * that the index file's relative links resolve, when the folder has an index file. */
    if (folder) {
      size_t il = strlen(m->index);
      if (nlen + 1 + il + 1 > sizeof name) return 0;
      if (nlen) name[nlen++] = '/';
      memcpy(name + nlen, m->index, il + 1);
      fd = zv_static_open(m, name);
      if (fd < 0) return 0;
      close(fd);
      return redirect_slash(c);
    }
    return 0;
  }
  type = zv_static_mime(name, nlen);
  r.coding = NULL;
  if (m->precompressed && !zv_static_compressed_type(type)) {
    struct stat zst;
    int zfd = open_sibling(c, m, name, nlen, &zst, &r.coding);
    if (zfd >= 0) {
      close(fd);
      fd = zfd;
      st = zst;
    }
  }
  r.fd = fd;
  r.data = NULL;
  r.base = 0;
  r.size = (uint64_t)st.st_size;
  r.mtime = (int64_t)st.st_mtime;
  zv_static_etag(r.mtime, r.size, etag);
decide:
  zv_http_date(r.mtime, lastmod);
  cnt = r.size;
  /* RFC 9110 §13.2.2: If-None-Match first; If-Modified-Since only without it. */
  if ((v = req_header(c, "if-none-match", 13, &vlen))) {
    not_modified = zv_static_etag_match(v, vlen, etag, strlen(etag));
  } else if ((v = req_header(c, "if-modified-since", 17, &vlen))) {
    int64_t since;
    not_modified = !zv_static_parse_date(v, vlen, &since) && r.mtime <= since;
  }
  if (not_modified) {
    status = 304;
  } else if ((v = req_header(c, "range", 5, &vlen))) {
    size_t irl;
    const char *ir = req_header(c, "if-range", 8, &irl);
    /* If-Range: the range holds only for the same representation (a strong ETag or the exact
     * Last-Modified date); otherwise the whole file goes out. */
    int honour = !ir || (irl == strlen(etag) && !memcmp(ir, etag, irl)) ||
                 (irl == 29 && !memcmp(ir, lastmod, 29));
    if (honour) {
      int rr = zv_static_range(v, vlen, r.size, &off, &cnt);
      if (rr == ZV_STATIC_RANGE_ONE) {
        status = 206;
        snprintf(crange, sizeof crange, "bytes %llu-%llu/%llu", (unsigned long long)off,
                 (unsigned long long)(off + cnt - 1), (unsigned long long)r.size);
      } else if (rr == ZV_STATIC_RANGE_UNSAT) {
        status = 416;
        cnt = 0;
        snprintf(crange, sizeof crange, "bytes */%llu", (unsigned long long)r.size);
      }
    }
  }
#define H(k, val) (hdrs[nh].p = (k), hdrs[nh].n = strlen(k), hdrs[nh + 1].p = (val), \
                   hdrs[nh + 1].n = strlen(val), nh += 2)
  if (status != 304 && status != 416) H("Content-Type", type);
  if (status == 416) H("Content-Type", "text/plain; charset=utf-8");
  H("ETag", etag);
  H("Last-Modified", lastmod);
  if (m->cache_control[0]) H("Cache-Control", m->cache_control);
  if (status != 304) H("Accept-Ranges", "bytes");
  if (r.coding) H("Content-Encoding", r.coding);
  if (m->precompressed && !zv_static_compressed_type(type)) H("Vary", "Accept-Encoding");
  if (status == 206 || status == 416) H("Content-Range", crange);
#undef H
  return respond(c, m, &r, status, hdrs, nh / 2, off, cnt);
}
