/*
 * stream_static.c: static files (app:static, opts.statics): a GET or HEAD under a mount is
 * answered here before on_request when the file exists (anything else goes on to the
 * application). static.c decides (path, conditional and range headers, MIME type); this file
 * sends. The head goes out with MSG_MORE, the body with sendfile(2) straight from the page
 * cache; when the socket is full the connection adds EPOLLOUT to its epfd entry and goes on
 * when it drains, under the same write deadline as queued writes (bytes sent by sendfile count
 * as progress). Through a transport (TLS) the file is read and written in chunks.
 *
 * It must not call into Lua and must not read a file whole into memory (a small one excepted).
 */
#include "stream_int.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/zv.h"
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

/* Opens the precompressed sibling of name (".br" or ".gz") when the client accepts its coding;
 * returns its descriptor (and fills *st and *coding) or -1. Brotli wins a tie. */
static int open_sibling(zv_http_sconn_t *c, const zv_static_mount_t *m, char *name, size_t nlen,
                        struct stat *st, const char **coding) {
  static const char *const ext[2] = {".br", ".gz"}, *const cod[2] = {"br", "gzip"};
  size_t alen;
  const char *ae = req_header(c, "accept-encoding", 15, &alen);
  int q[2], order[2] = {0, 1};
  if (!ae) return -1;
  q[0] = zv_static_accept_q(ae, alen, "br");
  q[1] = zv_static_accept_q(ae, alen, "gzip");
  if (q[1] > q[0]) order[0] = 1, order[1] = 0;
  for (int k = 0; k < 2; k++) {
    int i = order[k], fd;
    if (q[i] <= 0) continue;
    memcpy(name + nlen, ext[i], 4);
    fd = zv_static_open(m, name);
    name[nlen] = 0;
    if (fd < 0) continue;
    if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
      close(fd);
      continue;
    }
    *coding = cod[i];
    return fd;
  }
  return -1;
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

/*
 * Answers c's request from a static mount when it is a GET or HEAD of a regular file under
 * one; returns 1 when answered (or the connection closed trying), 0 to let the application
 * answer (no mount, a name never served, no such file, a folder without an index file).
 */
int zv__http_serve_static(zv_http_sconn_t *c) {
  zv_http_conn_t *core = &c->core;
  const zv_static_mount_t *m;
  const char *path = core->buf + core->url_off, *type, *coding = NULL, *v;
  char name[ZV_STATIC_PATH_MAX + 8], etag[48], lastmod[32], crange[80];
  zv_http_str_t hdrs[20];
  size_t rest, nlen, vlen, nh = 0;
  struct stat st;
  int dir, fd, status = 200, not_modified = 0;
  uint64_t off = 0, cnt;
  int method = core->parser.method;
  uv_buf_t b;
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
  if (m->precompressed && !zv_static_compressed_type(type)) {
    struct stat zst;
    int zfd = open_sibling(c, m, name, nlen, &zst, &coding);
    if (zfd >= 0) {
      close(fd);
      fd = zfd;
      st = zst;
    }
  }
  zv_static_etag((int64_t)st.st_mtime, (uint64_t)st.st_size, etag);
  zv_http_date((int64_t)st.st_mtime, lastmod);
  cnt = (uint64_t)st.st_size;
  /* RFC 9110 §13.2.2: If-None-Match first; If-Modified-Since only without it. */
  if ((v = req_header(c, "if-none-match", 13, &vlen))) {
    not_modified = zv_static_etag_match(v, vlen, etag, strlen(etag));
  } else if ((v = req_header(c, "if-modified-since", 17, &vlen))) {
    int64_t since;
    not_modified = !zv_static_parse_date(v, vlen, &since) && (int64_t)st.st_mtime <= since;
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
      int r = zv_static_range(v, vlen, (uint64_t)st.st_size, &off, &cnt);
      if (r == ZV_STATIC_RANGE_ONE) {
        status = 206;
        snprintf(crange, sizeof crange, "bytes %llu-%llu/%llu", (unsigned long long)off,
                 (unsigned long long)(off + cnt - 1), (unsigned long long)st.st_size);
      } else if (r == ZV_STATIC_RANGE_UNSAT) {
        status = 416;
        cnt = 0;
        snprintf(crange, sizeof crange, "bytes */%llu", (unsigned long long)st.st_size);
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
  if (coding) H("Content-Encoding", coding);
  if (m->precompressed && !zv_static_compressed_type(type)) H("Vary", "Accept-Encoding");
  if (status == 206 || status == 416) H("Content-Range", crange);
#undef H
  if (zv__http_build_head(c, status, hdrs, nh / 2, status == 304 ? -1 : (int64_t)cnt, 0)) {
    close(fd);
    zv__http_conn_close_now(c);
    return 1;
  }
  b = uv_buf_init(c->head.p, (unsigned)c->head.len);
  if (status == 304 || status == 416 || c->is_head || cnt == 0) {
    close(fd);
    if (zv__http_conn_write(c, &b, 1) == 0) zv__http_response_done(c);
    return 1;
  }
  if (cnt <= FILE_SMALL) {
    /* One pread and one send(2) of head + body: for a small file that costs less than a
     * MSG_MORE send followed by sendfile (bench/http/static.sh). */
    char small[FILE_SMALL];
    uv_buf_t bufs[2];
    ssize_t got;
    do {
      got = pread(fd, small, (size_t)cnt, (off_t)off);
    } while (got < 0 && errno == EINTR);
    close(fd);
    if (got != (ssize_t)cnt) { /* the file changed under us: the head is not sent yet */
      zv__http_conn_close_now(c);
      return 1;
    }
    bufs[0] = b;
    bufs[1] = uv_buf_init(small, (unsigned)cnt);
    if (zv__http_conn_write(c, bufs, 2) == 0) zv__http_response_done(c);
    return 1;
  }
  c->file_fd = fd;
  c->file_off = off;
  c->file_end = off + cnt;
  c->resp = ZV_HTTP_RESP_STREAM;
  if (zv__http_conn_write(c, &b, 1)) return 1; /* closed: conn_close_now closed the file */
  if (c->writes == 0) zv__http_file_continue(c);
  return 1;
}
