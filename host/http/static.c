/*
 * static.c: mounts, path cleaning, MIME types, validators and Range decisions of static file
 * serving (see static.h). No sockets, no libuv, no Lua; nothing here allocates but
 * zv_static_add, and nothing reads outside the bytes it is given (fuzz/static_fuzz.c).
 *
 * Paths are checked twice: zv_static_clean refuses every name that could climb ("..", encoded
 * or not, backslashes, NUL), and stream.c opens the cleaned name beneath the root's descriptor
 * with openat2(RESOLVE_BENEATH), so a symlink that leads outside the root fails in the kernel.
 */
#include "static.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../core/zv.h"

static char *dup_str(const char *s) {
  size_t n = strlen(s);
  char *p = zv_alloc(n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}

/* Checks and fills the next mount of s around fd (taken over: closed on failure). */
static int add_mount(zv_static_t *s, const char *prefix, const char *root, const char *payload,
                     int fd, const char *index, int64_t max_age, int immutable,
                     int precompressed, const char **why) {
  zv_static_mount_t *m;
  size_t plen = strlen(prefix);
  *why = NULL;
  if (s->n == ZV_STATIC_MAX_MOUNTS) {
    close(fd);
    return ZV_ERANGE;
  }
  if (plen == 0 || prefix[0] != '/' || (plen > 1 && prefix[plen - 1] == '/') ||
      strstr(prefix, "//") || strchr(prefix, '?') || strchr(prefix, '%')) {
    close(fd);
    *why = "the prefix must start with / and not end with /";
    return ZV_EINVAL;
  }
  if (index && (!index[0] || strchr(index, '/') || strchr(index, '\\') || index[0] == '.')) {
    close(fd);
    *why = "index must be a plain file name";
    return ZV_EINVAL;
  }
  m = &s->mounts[s->n];
  memset(m, 0, sizeof *m);
  m->root_fd = fd;
  m->prefix = dup_str(plen == 1 ? "" : prefix);
  m->root = dup_str(root);
  m->index = index ? dup_str(index) : NULL;
  m->payload = payload ? dup_str(payload) : NULL;
  if (!m->prefix || !m->root || (index && !m->index) || (payload && !m->payload)) {
    zv_free(m->prefix);
    zv_free(m->root);
    zv_free(m->index);
    zv_free(m->payload);
    close(fd);
    return ZV_ENOMEM;
  }
  m->prefix_len = (uint32_t)strlen(m->prefix);
  m->payload_len = payload ? (uint32_t)strlen(payload) : 0;
  if (payload) {
    struct stat st;
    m->payload_mtime = fstat(fd, &st) ? 0 : (int64_t)st.st_mtime;
  }
  if (max_age >= 0)
    snprintf(m->cache_control, sizeof m->cache_control, "public, max-age=%lld%s",
             (long long)max_age, immutable ? ", immutable" : "");
  m->precompressed = (uint8_t)(precompressed != 0);
  s->n++;
  return 0;
}

int zv_static_add(zv_static_t *s, const char *prefix, const char *root, const char *index,
                  int64_t max_age, int immutable, int precompressed, const char **why) {
  struct stat st;
  int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) || !S_ISDIR(st.st_mode)) {
    if (fd >= 0) close(fd);
    *why = "the root is not a folder";
    return ZV_EINVAL;
  }
  return add_mount(s, prefix, root, NULL, fd, index, max_age, immutable, precompressed, why);
}

int zv_static_add_payload(zv_static_t *s, const char *prefix, const char *root, const char *dir,
                          int fd, const char *index, int64_t max_age, int immutable,
                          int precompressed, const char **why) {
  size_t dl = strlen(dir);
  if (dl == 0 || dir[dl - 1] == '/' || dl > 256) {
    close(fd);
    *why = "the payload folder must be a name without a trailing /";
    return ZV_EINVAL;
  }
  return add_mount(s, prefix, root, dir, fd, index, max_age, immutable, precompressed, why);
}

void zv_static_free(zv_static_t *s) {
  for (uint32_t i = 0; i < s->n; i++) {
    zv_static_mount_t *m = &s->mounts[i];
    if (m->root_fd >= 0) close(m->root_fd);
    zv_free(m->prefix);
    zv_free(m->root);
    zv_free(m->index);
    zv_free(m->payload);
  }
  s->n = 0;
}

const zv_static_mount_t *zv_static_find(const zv_static_t *s, const char *path, size_t len,
                                        size_t *rest) {
  const zv_static_mount_t *best = NULL;
  for (uint32_t i = 0; i < s->n; i++) {
    const zv_static_mount_t *m = &s->mounts[i];
    size_t pl = m->prefix_len;
    if (len < pl || memcmp(path, m->prefix, pl) || (len > pl && path[pl] != '/')) continue;
    if (!best || pl > best->prefix_len) best = m;
  }
  if (best) *rest = best->prefix_len;
  return best;
}

static int hexval(int ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  ch |= 0x20;
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  return -1;
}

int zv_static_clean(const char *rest, size_t len, char *out, size_t cap, size_t *outlen,
                    int *dir) {
  size_t o = 0, seg = 0; /* seg: where the current segment starts in out */
  size_t i = 0;
  *dir = 0;
  *outlen = 0;
  if (cap == 0) return ZV_EINVAL;
  if (len == 0 || (len == 1 && rest[0] == '/')) {
    out[0] = 0;
    *dir = 1;
    return 0;
  }
  if (rest[0] != '/') return ZV_EINVAL;
  i = 1;
  while (i <= len) {
    int ch;
    if (i == len || rest[i] == '/') {
      size_t sl = o - seg;
      /* The segment just ended: empty, ".", ".." and dotfiles are never served. */
      if (sl == 0) {
        if (i == len && o > 0) { /* "a/": a trailing slash asks for a folder */
          *dir = 1;
          break;
        }
        return ZV_EINVAL;
      }
      if (out[seg] == '.') return ZV_EINVAL;
      if (i == len) break;
      if (o + 1 >= cap) return ZV_EINVAL;
      out[o++] = '/';
      seg = o;
      i++;
      continue;
    }
    ch = (unsigned char)rest[i];
    if (ch == '%') {
      int h, l;
      if (i + 2 >= len) return ZV_EINVAL;
      h = hexval((unsigned char)rest[i + 1]);
      l = hexval((unsigned char)rest[i + 2]);
      if (h < 0 || l < 0) return ZV_EINVAL;
      ch = h * 16 + l;
      /* An encoded "/" would join segments after the checks above: refused. */
      if (ch == '/') return ZV_EINVAL;
      i += 3;
    } else {
      i++;
    }
    if (ch < 0x20 || ch == 0x7f || ch == '\\') return ZV_EINVAL;
    if (o + 1 >= cap) return ZV_EINVAL;
    out[o++] = (char)ch;
  }
  /* Strip the trailing "/" written for a folder path ("a/" ends with o at the segment). */
  if (o > 0 && out[o - 1] == '/') o--;
  out[o] = 0;
  *outlen = o;
  return 0;
}

int zv_static_open(const zv_static_mount_t *m, const char *name) {
  struct open_how how;
  int fd;
  memset(&how, 0, sizeof how);
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  do {
    fd = (int)syscall(SYS_openat2, m->root_fd, name[0] ? name : ".", &how, sizeof how);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

/* --- MIME types ------------------------------------------------------------------------------ */

static const struct {
  const char *ext, *type;
} mime_types[] = {
  {"html", "text/html; charset=utf-8"}, {"htm", "text/html; charset=utf-8"},
  {"css", "text/css; charset=utf-8"}, {"js", "text/javascript; charset=utf-8"},
  {"mjs", "text/javascript; charset=utf-8"}, {"json", "application/json"},
  {"map", "application/json"}, {"txt", "text/plain; charset=utf-8"},
  {"md", "text/markdown; charset=utf-8"}, {"csv", "text/csv; charset=utf-8"},
  {"xml", "application/xml"}, {"svg", "image/svg+xml"}, {"png", "image/png"},
  {"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"}, {"gif", "image/gif"},
  {"webp", "image/webp"}, {"avif", "image/avif"}, {"ico", "image/x-icon"},
  {"woff", "font/woff"}, {"woff2", "font/woff2"}, {"ttf", "font/ttf"}, {"otf", "font/otf"},
  {"pdf", "application/pdf"}, {"wasm", "application/wasm"}, {"zip", "application/zip"},
  {"gz", "application/gzip"}, {"br", "application/octet-stream"},
  {"tar", "application/x-tar"}, {"mp3", "audio/mpeg"}, {"ogg", "audio/ogg"},
  {"wav", "audio/wav"}, {"mp4", "video/mp4"}, {"webm", "video/webm"},
  {"webmanifest", "application/manifest+json"},
};

const char *zv_static_mime(const char *name, size_t len) {
  size_t i = len, el;
  while (i > 0 && name[i - 1] != '.' && name[i - 1] != '/') i--;
  if (i == 0 || name[i - 1] != '.') return "application/octet-stream";
  el = len - i;
  for (size_t k = 0; k < sizeof mime_types / sizeof mime_types[0]; k++)
    if (strlen(mime_types[k].ext) == el && !strncasecmp(name + i, mime_types[k].ext, el))
      return mime_types[k].type;
  return "application/octet-stream";
}

int zv_static_compressed_type(const char *type) {
  if (!strncmp(type, "image/", 6)) return strcmp(type, "image/svg+xml") != 0;
  if (!strncmp(type, "font/", 5)) return strcmp(type, "font/ttf") && strcmp(type, "font/otf");
  if (!strncmp(type, "audio/", 6) || !strncmp(type, "video/", 6)) return 1;
  return !strcmp(type, "application/zip") || !strcmp(type, "application/gzip") ||
         !strcmp(type, "application/pdf") || !strcmp(type, "application/octet-stream");
}

/* --- validators ------------------------------------------------------------------------------ */

size_t zv_static_etag(int64_t mtime, uint64_t size, char out[48]) {
  int n = snprintf(out, 48, "\"%llx-%llx\"", (unsigned long long)mtime,
                   (unsigned long long)size);
  return n > 0 ? (size_t)n : 0;
}

static int digits(const char *p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    v = v * 10 + (p[i] - '0');
  }
  *out = v;
  return 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  int64_t era, yoe, doy, doe;
  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;
  doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int zv_static_parse_date(const char *v, size_t len, int64_t *out) {
  static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  int day, year, hh, mm, ss, mon = -1;
  /* "Sun, 06 Nov 1994 08:49:37 GMT": 29 bytes at fixed places. */
  if (len != 29 || v[3] != ',' || v[4] != ' ' || v[7] != ' ' || v[11] != ' ' || v[16] != ' ' ||
      v[19] != ':' || v[22] != ':' || v[25] != ' ' || memcmp(v + 26, "GMT", 3))
    return ZV_EINVAL;
  if (digits(v + 5, 2, &day) || digits(v + 12, 4, &year) || digits(v + 17, 2, &hh) ||
      digits(v + 20, 2, &mm) || digits(v + 23, 2, &ss))
    return ZV_EINVAL;
  for (int i = 0; i < 12; i++)
    if (!memcmp(v + 8, months + 3 * i, 3)) mon = i + 1;
  if (mon < 0 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60) return ZV_EINVAL;
  *out = days_from_civil(year, mon, day) * 86400 + hh * 3600 + mm * 60 + ss;
  return 0;
}

static int ows(int ch) {
  return ch == ' ' || ch == '\t';
}

int zv_static_etag_match(const char *v, size_t len, const char *etag, size_t etag_len) {
  size_t i = 0;
  const char *e = etag;
  size_t el = etag_len;
  if (el >= 2 && e[0] == 'W' && e[1] == '/') e += 2, el -= 2;
  while (i < len) {
    size_t start, n;
    while (i < len && (ows(v[i]) || v[i] == ',')) i++;
    if (i == len) break;
    if (v[i] == '*') return 1;
    if (i + 1 < len && v[i] == 'W' && v[i + 1] == '/') i += 2;
    if (i == len || v[i] != '"') return 0; /* malformed: no match */
    start = i++;
    while (i < len && v[i] != '"') i++;
    if (i == len) return 0;
    n = ++i - start;
    if (n == el && !memcmp(v + start, e, n)) return 1;
  }
  return 0;
}

int zv_static_accept_q(const char *v, size_t len, const char *coding) {
  size_t cl = strlen(coding), i = 0;
  int exact = -1, star = -1;
  while (i < len) {
    size_t ts, tl;
    int q = 1000;
    while (i < len && (ows(v[i]) || v[i] == ',')) i++;
    ts = i;
    while (i < len && v[i] != ',' && v[i] != ';' && !ows(v[i])) i++;
    tl = i - ts;
    /* Parameters: only q matters; "q=0.5" with up to three decimals. */
    while (i < len && v[i] != ',') {
      while (i < len && (ows(v[i]) || v[i] == ';')) i++;
      if (i + 1 < len && (v[i] | 0x20) == 'q' && v[i + 1] == '=') {
        size_t j = i + 2;
        int val = 0, scale = 1000, ok = 1;
        if (j < len && v[j] == '0') {
          j++;
        } else if (j < len && v[j] == '1') {
          val = 1000;
          j++;
        } else {
          ok = 0;
        }
        if (ok && j < len && v[j] == '.') {
          j++;
          for (int k = 0; k < 3 && j < len && v[j] >= '0' && v[j] <= '9'; k++, j++) {
            scale /= 10;
            if (val < 1000) val += (v[j] - '0') * scale;
            else if (v[j] != '0') ok = 0;
          }
        }
        q = ok ? val : -1;
        i = j;
      }
      while (i < len && v[i] != ',' && v[i] != ';') i++;
    }
    if (tl == 0 || q < 0) continue;
    if (tl == cl && !strncasecmp(v + ts, coding, cl)) exact = q;
    else if (tl == 1 && v[ts] == '*') star = q;
  }
  if (exact >= 0) return exact;
  return star > 0 ? star : 0;
}

/* --- Range ----------------------------------------------------------------------------------- */

/* Parses a decimal at v[*i]; -1 when none or when it overflows 2^62. */
static int64_t number(const char *v, size_t len, size_t *i) {
  int64_t n = 0;
  size_t start = *i;
  while (*i < len && v[*i] >= '0' && v[*i] <= '9') {
    if (n > ((int64_t)1 << 62) / 10) return -1;
    n = n * 10 + (v[*i] - '0');
    (*i)++;
  }
  return *i == start ? -1 : n;
}

int zv_static_range(const char *v, size_t len, uint64_t size, uint64_t *off, uint64_t *cnt) {
  uint64_t first[ZV_STATIC_MAX_RANGES], last[ZV_STATIC_MAX_RANGES];
  int n = 0, any = 0;
  size_t i = 6;
  if (len < 6 || strncasecmp(v, "bytes=", 6)) return ZV_STATIC_RANGE_NONE;
  for (;;) {
    int64_t a = -1, b = -1;
    while (i < len && ows(v[i])) i++;
    if (i < len && v[i] == ',') { /* empty list elements are allowed */
      i++;
      continue;
    }
    if (i == len) break;
    if (v[i] == '-') {
      i++;
      b = number(v, len, &i);
      if (b < 0) return ZV_STATIC_RANGE_NONE;
    } else {
      a = number(v, len, &i);
      if (a < 0 || i == len || v[i] != '-') return ZV_STATIC_RANGE_NONE;
      i++;
      if (i < len && v[i] >= '0' && v[i] <= '9') {
        b = number(v, len, &i);
        if (b < 0 || b < a) return ZV_STATIC_RANGE_NONE;
      }
    }
    while (i < len && ows(v[i])) i++;
    if (i < len && v[i] != ',') return ZV_STATIC_RANGE_NONE;
    any = 1;
    /* Satisfiable? Then record it, clipped to the file. */
    if (a < 0) { /* suffix: the last b bytes */
      if (b > 0 && size > 0) {
        if (n == ZV_STATIC_MAX_RANGES) return ZV_STATIC_RANGE_NONE;
        first[n] = (uint64_t)b >= size ? 0 : size - (uint64_t)b;
        last[n++] = size - 1;
      }
    } else if ((uint64_t)a < size) {
      if (n == ZV_STATIC_MAX_RANGES) return ZV_STATIC_RANGE_NONE;
      first[n] = (uint64_t)a;
      last[n++] = b < 0 || (uint64_t)b >= size ? size - 1 : (uint64_t)b;
    }
  }
  if (!any) return ZV_STATIC_RANGE_NONE;
  if (n == 0) return ZV_STATIC_RANGE_UNSAT;
  /* Sort (insertion: at most 16) and merge overlapping or touching ranges. */
  for (int k = 1; k < n; k++) {
    uint64_t f = first[k], l = last[k];
    int j = k - 1;
    while (j >= 0 && first[j] > f) {
      first[j + 1] = first[j];
      last[j + 1] = last[j];
      j--;
    }
    first[j + 1] = f;
    last[j + 1] = l;
  }
  {
    uint64_t f = first[0], l = last[0];
    for (int k = 1; k < n; k++) {
      if (first[k] > l + 1) return ZV_STATIC_RANGE_NONE; /* two disjoint ranges: whole file */
      if (last[k] > l) l = last[k];
    }
    *off = f;
    *cnt = l - f + 1;
  }
  return ZV_STATIC_RANGE_ONE;
}
